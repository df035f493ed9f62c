//! `flymc hunt` sharded through a real Slurm, with the shipped deploy/slurm scripts.
//!
//! Each test starts a single-host Slurm of its own on loopback: munged with its own key and
//! socket, slurmctld and slurmd on free ports, one node (`localhost`, shaped as `slurmd -C`
//! reads this machine), no accounting, everything (config, state, spool, pid files, logs) in a
//! temporary folder. `deploy/slurm/submit.sh` then submits a job array of shards and the merge
//! behind it; the test waits for the merge job and compares what the merged shards found with
//! what one unsharded hunt finds. The cluster is stopped, and every process it started (jobs
//! included) killed, whatever happens: [`Slurm`]'s Drop. The tests then check that nothing of
//! theirs is left running.
//!
//! Needs root (slurmd starts each job as its user) and Debian's slurmctld, slurmd,
//! slurm-client and munge: `bash .ci/run` installs them.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The test cluster's one partition.
const PARTITION: &str = "flymc";
/// Set on every process the test starts for a cluster (to the cluster's folder), so that the
/// clean-up finds them all, the jobs' processes included: sbatch passes its environment on.
const MARK: &str = "FLYMC_SLURM_TEST";

fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn scripts() -> PathBuf {
    checkout().join("deploy/slurm")
}

/// An installed program, looked for on PATH and in the sbin folders (a non-root PATH lacks them).
fn program(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "`{name}` is not installed: run `bash .ci/run`, which installs Debian's slurmctld, \
                 slurmd, slurm-client and munge"
            )
        })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn tail(path: &Path, lines: usize) -> String {
    match fs::read_to_string(path) {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("({e})"),
    }
}

/// What a command printed, and how it ended (`None`: killed after its time ran out).
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Run `cmd` for at most `limit`; its output goes through files, so nothing can block on a pipe.
fn run_for(mut cmd: Command, limit: Duration, scratch: &Path) -> Ran {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (out, err) = (
        scratch.join(format!("cmd-{n}.out")),
        scratch.join(format!("cmd-{n}.err")),
    );
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out).unwrap())
        .stderr(fs::File::create(&err).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let start = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status.code().unwrap_or(-1));
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let ran = Ran {
        code,
        stdout: fs::read_to_string(&out).unwrap_or_default(),
        stderr: fs::read_to_string(&err).unwrap_or_default(),
    };
    let _ = (fs::remove_file(out), fs::remove_file(err));
    ran
}

/// A process's parent (0 once it is gone).
fn parent(pid: i32) -> i32 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("PPid:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

struct Daemon {
    name: &'static str,
    child: Child,
}

/// A running single-host Slurm; stopped, with everything it started, when dropped.
struct Slurm {
    dir: tempfile::TempDir,
    conf: PathBuf,
    daemons: Vec<Daemon>,
    stopped: bool,
}

impl Slurm {
    fn start() -> Slurm {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            panic!(
                "this test starts slurmd, which must run as root to start jobs as their users: \
                 run it as root (CI does)"
            );
        }
        let dir = tempfile::Builder::new()
            .prefix("flymc-slurm-")
            .tempdir()
            .unwrap();
        // munged wants everyone to be able to reach its socket's folder.
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let conf = dir.path().join("slurm.conf");
        let mut slurm = Slurm {
            dir,
            conf,
            daemons: Vec::new(),
            stopped: false,
        };
        slurm.start_munge();
        slurm.write_conf();
        let conf = slurm.conf.clone();
        let mut ctld = Command::new(program("slurmctld"));
        ctld.arg("-D").arg("-f").arg(&conf);
        slurm.spawn("slurmctld", ctld);
        let mut slurmd = Command::new(program("slurmd"));
        slurmd.args(["-D", "-N", "localhost", "-f"]).arg(&conf);
        slurm.spawn("slurmd", slurmd);
        slurm.wait_for("the node to be up and idle", Duration::from_secs(60), |s| {
            let ran = s.client("scontrol", &["show", "node", "localhost"]);
            ran.stdout.contains("State=IDLE")
        });
        slurm
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn start_munge(&mut self) {
        let key = self.path("munge.key");
        let mut bytes = vec![0u8; 1024];
        use std::io::Read;
        fs::File::open("/dev/urandom")
            .unwrap()
            .read_exact(&mut bytes)
            .unwrap();
        fs::write(&key, bytes).unwrap();
        fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
        let mut munged = Command::new(program("munged"));
        munged
            .arg("--foreground")
            .arg(format!("--socket={}", self.path("munge.socket").display()))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--pid-file={}", self.path("munged.pid").display()))
            .arg(format!("--log-file={}", self.path("munged.log").display()))
            .arg(format!(
                "--seed-file={}",
                self.path("munged.seed").display()
            ));
        self.spawn("munged", munged);
        let socket = self.path("munge.socket");
        self.wait_for("munged's socket", Duration::from_secs(20), |_| {
            socket.exists()
        });
    }

    fn write_conf(&self) {
        let d = self.dir.path().display();
        for sub in ["state", "spool"] {
            fs::create_dir(self.path(sub)).unwrap();
        }
        // This machine's shape as slurmd sees it, renamed `localhost`; its memory left out so
        // that a node with less free than it reported once is not drained.
        let probe = Command::new(program("slurmd")).arg("-C").output().unwrap();
        let shape = String::from_utf8_lossy(&probe.stdout);
        let node: Vec<&str> = shape
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .filter(|w| !w.starts_with("NodeName=") && !w.starts_with("RealMemory="))
            .collect();
        assert!(
            node.iter().any(|w| w.starts_with("CPUs=")),
            "`slurmd -C` said no CPUs: {shape}{}",
            String::from_utf8_lossy(&probe.stderr)
        );
        let (ctld_port, slurmd_port) = loop {
            let (a, b) = (free_port(), free_port());
            if a != b {
                break (a, b);
            }
        };
        let conf = format!(
            "# A single-host Slurm for one test, all on loopback and in {d}.
ClusterName=flymc
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
AuthInfo=socket={d}/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
ReturnToService=2
MinJobAge=3600
MailProg=/bin/true
NodeName=localhost NodeAddr=127.0.0.1 {} State=UNKNOWN
PartitionName={PARTITION} Nodes=localhost Default=YES MaxTime=INFINITE State=UP
",
            node.join(" ")
        );
        fs::write(&self.conf, conf).unwrap();
    }

    /// `cmd` with this cluster's environment: its config, the clean-up mark, and no Slurm
    /// variables inherited from elsewhere (a test run inside a job, say).
    fn command(&self, mut cmd: Command) -> Command {
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy();
            if k.starts_with("SLURM_") || k.starts_with("SBATCH_") || k.starts_with("SQUEUE_") {
                cmd.env_remove(&*k);
            }
        }
        cmd.env("SLURM_CONF", &self.conf).env(MARK, self.dir.path());
        cmd
    }

    fn spawn(&mut self, name: &'static str, cmd: Command) {
        let out = fs::File::create(self.path(&format!("{name}.stderr"))).unwrap();
        let mut cmd = self.command(cmd);
        cmd.stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        // SAFETY: prctl is async-signal-safe. The daemon is killed if this test dies without
        // running Drop (they run in the foreground, so they stay our children).
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        self.daemons.push(Daemon { name, child });
    }

    /// A Slurm client command, for at most 30 s.
    fn client(&self, prog: &str, args: &[&str]) -> Ran {
        let mut cmd = Command::new(program(prog));
        cmd.args(args);
        run_for(self.command(cmd), Duration::from_secs(30), self.dir.path())
    }

    /// Poll `cond` until it holds; fail with the daemons' logs if it does not in `limit`, or if
    /// a daemon ends meanwhile.
    fn wait_for(&mut self, what: &str, limit: Duration, mut cond: impl FnMut(&Slurm) -> bool) {
        let start = Instant::now();
        loop {
            if cond(self) {
                return;
            }
            for d in &mut self.daemons {
                if let Some(status) = d.child.try_wait().unwrap() {
                    let name = d.name;
                    panic!(
                        "{name} ended ({status}) while waiting for {what}\n{}",
                        self.diagnostics()
                    );
                }
            }
            if start.elapsed() > limit {
                panic!(
                    "no {what} after {} s\n{}",
                    limit.as_secs(),
                    self.diagnostics()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The logs' tails and the queue, for a failure message.
    fn diagnostics(&self) -> String {
        let mut s = String::new();
        // The daemons' stderr repeats their logs, but has what they said before opening them.
        for (name, lines) in [
            ("munged.stderr", 15),
            ("slurmctld.stderr", 5),
            ("slurmctld.log", 25),
            ("slurmd.stderr", 5),
            ("slurmd.log", 25),
        ] {
            s += &format!("--- {name} (tail)\n{}\n", tail(&self.path(name), lines));
        }
        if self.daemons.iter().any(|d| d.name == "slurmctld") {
            let q = self.client("squeue", &["--all"]);
            s += &format!("--- squeue\n{}{}\n", q.stdout, q.stderr);
            let j = self.client("scontrol", &["show", "job", "-o"]);
            s += &format!("--- scontrol show job\n{}{}\n", j.stdout, j.stderr);
        }
        s
    }

    /// Every record of job `id` (an array job has one per task): `(task id, state, exit code)`.
    fn job_states(&self, id: &str) -> Vec<(String, String, String)> {
        let ran = self.client("scontrol", &["show", "job", "-o", id]);
        let field = |line: &str, key: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .unwrap_or("")
                .to_string()
        };
        ran.stdout
            .lines()
            .filter(|l| l.contains("JobState="))
            .map(|l| {
                (
                    field(l, "ArrayTaskId="),
                    field(l, "JobState="),
                    field(l, "ExitCode="),
                )
            })
            .collect()
    }

    fn job_done(&self, id: &str) -> bool {
        let states = self.job_states(id);
        !states.is_empty()
            && states.iter().all(|(_, state, _)| {
                !matches!(
                    state.as_str(),
                    "PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING" | "SUSPENDED"
                )
            })
    }

    /// Submit with deploy/slurm/submit.sh and `env`; returns the array job's and the merge
    /// job's ids.
    fn submit(&self, env: &[(&str, &Path)], hunt_args: &str, shards: u32) -> (String, String) {
        let mut cmd = Command::new("bash");
        cmd.arg(scripts().join("submit.sh"))
            .current_dir(self.dir.path())
            .env("HUNT_ARGS", hunt_args)
            .env("SHARDS", shards.to_string())
            .env("FLYMC_WORKLOADS", common::workloads());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let ran = run_for(self.command(cmd), Duration::from_secs(60), self.dir.path());
        assert_eq!(
            ran.code,
            Some(0),
            "submit.sh failed:\n{}{}\n{}",
            ran.stdout,
            ran.stderr,
            self.diagnostics()
        );
        let id = |key: &str| {
            ran.stdout
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .unwrap_or_else(|| panic!("no {key} in submit.sh's output:\n{}", ran.stdout))
                .trim()
                .to_string()
        };
        (id("array_job="), id("merge_job="))
    }

    /// Wait for both jobs of a submission to end (the merge runs after the whole array).
    fn wait_jobs(&mut self, array: &str, merge: &str, limit: Duration) {
        let what = format!("end of jobs {array} (array) and {merge} (merge)");
        self.wait_for(&what, limit, |s| s.job_done(merge) && s.job_done(array));
    }

    /// Processes of this cluster, found by the mark in their environment: `(pid, command line)`.
    fn marked(&self) -> Vec<(i32, String)> {
        let mark = format!("{MARK}={}", self.dir.path().display());
        let conf = format!("SLURM_CONF={}", self.conf.display());
        let me = std::process::id() as i32;
        let mut found = Vec::new();
        for entry in fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(env) = fs::read(entry.path().join("environ")) else {
                continue;
            };
            let ours = env.split(|b| *b == 0).any(|v| {
                let v = String::from_utf8_lossy(v);
                v == mark || v == conf
            });
            if ours && pid != me {
                let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
                let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                found.push((pid, cmdline.trim().to_string()));
            }
        }
        found
    }

    /// Stop the cluster: cancel its jobs, stop the daemons (TERM, then KILL), kill whatever of
    /// it is left. Returns what still runs after all that (nothing, normally).
    fn stop(&mut self) -> Vec<(i32, String)> {
        if self.stopped {
            return self.marked();
        }
        self.stopped = true;
        let ctld_up = self
            .daemons
            .iter_mut()
            .any(|d| d.name == "slurmctld" && matches!(d.child.try_wait(), Ok(None)));
        if ctld_up {
            let mut cancel = Command::new(program("scancel"));
            cancel.arg(format!("--partition={PARTITION}"));
            run_for(
                self.command(cancel),
                Duration::from_secs(15),
                self.dir.path(),
            );
        }
        let daemon_pids: Vec<i32> = self.daemons.iter().map(|d| d.child.id() as i32).collect();
        // The jobs' processes: marked, neither a daemon nor a daemon's child (slurmctld's
        // slurmscriptd); slurmstepd detaches from slurmd.
        let jobs_left = |s: &Slurm| {
            s.marked()
                .into_iter()
                .filter(|(pid, _)| {
                    !daemon_pids.contains(pid) && !daemon_pids.contains(&parent(*pid))
                })
                .count()
        };
        let start = Instant::now();
        while jobs_left(self) > 0 && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(100));
        }
        // slurmd first (nothing new starts), then the controller, then munge.
        let mut daemons = std::mem::take(&mut self.daemons);
        daemons.sort_by_key(|d| match d.name {
            "slurmd" => 0,
            "slurmctld" => 1,
            _ => 2,
        });
        for d in &mut daemons {
            // SAFETY: signalling our own child, which we have not reaped yet.
            unsafe { libc::kill(d.child.id() as i32, libc::SIGTERM) };
            let start = Instant::now();
            while matches!(d.child.try_wait(), Ok(None))
                && start.elapsed() < Duration::from_secs(10)
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = d.child.kill();
            let _ = d.child.wait();
        }
        let start = Instant::now();
        loop {
            let left = self.marked();
            if left.is_empty() || start.elapsed() > Duration::from_secs(10) {
                return left;
            }
            for (pid, _) in left {
                // SAFETY: a process marked as this cluster's.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stop, and check that nothing of this cluster runs any more: by the mark, and by `pgrep`
    /// on the cluster's folder (in every daemon's and every hunt's command line).
    fn stop_and_check(mut self) {
        let dir = self.dir.path().to_path_buf();
        let left = self.stop();
        assert!(left.is_empty(), "still running after the stop: {left:?}");
        let pgrep = Command::new(program("pgrep"))
            .arg("-a")
            .arg("-f")
            .arg(dir.to_str().unwrap())
            .output()
            .unwrap();
        assert!(
            pgrep.stdout.is_empty(),
            "pgrep still finds processes of {}:\n{}",
            dir.display(),
            String::from_utf8_lossy(&pgrep.stdout)
        );
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        let left = self.stop();
        if !left.is_empty() {
            eprintln!("slurm test: could not stop {left:?}");
        }
    }
}

/// The shipped scripts' `#SBATCH` lines parse (`sbatch --test-only` validates a submission
/// without queuing it), and submit.sh runs an array and its merge in order, each task with its
/// own shard. flymc is stood in for by a script that records how it was called, so this
/// checks the plumbing alone, in seconds.
#[test]
fn submit_sh_runs_the_array_then_the_merge() {
    let t0 = Instant::now();
    let mut slurm = Slurm::start();
    let up = t0.elapsed();
    for (script, extra) in [("hunt.sbatch", "--array=0-3"), ("merge.sbatch", "")] {
        let mut args = vec!["--test-only"];
        if !extra.is_empty() {
            args.push(extra);
        }
        let path = scripts().join(script);
        args.push(path.to_str().unwrap());
        let ran = slurm.client("sbatch", &args);
        assert!(
            ran.code == Some(0) && ran.stderr.contains("to start at"),
            "sbatch --test-only {script}: {:?}\n{}{}",
            ran.code,
            ran.stdout,
            ran.stderr
        );
    }

    let stub = slurm.path("flymc-stub");
    fs::write(
        &stub,
        r#"#!/usr/bin/env bash
# Stands in for flymc: a shard records its arguments and array task; the merge joins them.
set -euo pipefail
[ "$1" = hunt ] || exit 3
shift
if [ "${1:-}" = merge ]; then
    shift
    out= corpus= shards=()
    while [ $# -gt 0 ]; do
        case $1 in
            --out) out=$2; shift 2 ;;
            --corpus) corpus=$2; shift 2 ;;
            *) shards+=("$1"); shift ;;
        esac
    done
    mkdir -p "$out"
    for s in "${shards[@]}"; do cat "$s/args" >> "$out/merged"; done
    echo "$corpus" > "$out/corpus"
    exit 1
fi
out=
for ((i = 1; i <= $#; i++)); do
    [ "${!i}" = --out ] && { j=$((i + 1)); out=${!j}; }
done
mkdir -p "$out"
echo "task=$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT args=$*" > "$out/args"
exit 1
"#,
    )
    .unwrap();
    fs::set_permissions(&stub, fs::Permissions::from_mode(0o755)).unwrap();

    let hunt_dir = slurm.path("hunt");
    let corpus = slurm.path("corpus");
    let t1 = Instant::now();
    let (array, merge) = slurm.submit(
        &[
            ("FLYMC", &stub),
            ("HUNT_DIR", &hunt_dir),
            ("CORPUS", &corpus),
        ],
        "--system raft-sim --strategy dfs",
        4,
    );
    slurm.wait_jobs(&array, &merge, Duration::from_secs(120));
    let ran = t1.elapsed();

    let tasks = slurm.job_states(&array);
    let ids: BTreeSet<&str> = tasks.iter().map(|(k, _, _)| k.as_str()).collect();
    assert_eq!(ids, BTreeSet::from(["0", "1", "2", "3"]), "{tasks:?}");
    // A shard's exit code 1 (new findings) is not a failed task; the merge's is its verdict.
    assert!(
        tasks.iter().all(|(_, s, _)| s == "COMPLETED"),
        "{tasks:?}\n{}",
        tail(&hunt_dir.join("logs/shard-0.out"), 20)
    );
    let merged = slurm.job_states(&merge);
    assert_eq!(
        merged,
        vec![(String::new(), "FAILED".to_string(), "1:0".to_string())],
        "{}",
        tail(&hunt_dir.join("logs/merge.out"), 20)
    );
    let text = fs::read_to_string(hunt_dir.join("merged/merged")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    let want: Vec<String> = (0..4)
        .map(|k| {
            format!(
                "task={k}/4 args=--system raft-sim --strategy dfs --shard {k}/4 --out {} \
                 --corpus {}",
                hunt_dir.join(format!("shard-{k}")).display(),
                corpus.display()
            )
        })
        .collect();
    assert_eq!(lines, want);
    let merge_corpus = fs::read_to_string(hunt_dir.join("merged/corpus")).unwrap();
    assert_eq!(merge_corpus.trim(), corpus.to_str().unwrap());
    eprintln!(
        "slurm up in {:.1} s; 4 stub shards and the merge ran in {:.1} s",
        up.as_secs_f64(),
        ran.as_secs_f64()
    );
    slurm.stop_and_check();
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `(system/workload, paths, unique states, exhausted)` of each workload of a hunt.json.
fn workloads(report: &Value) -> Vec<(String, u64, u64, bool)> {
    report["workloads"]
        .as_array()
        .expect("workloads[]")
        .iter()
        .map(|w| {
            (
                format!(
                    "{}/{}",
                    w["system"].as_str().unwrap_or(""),
                    w["workload"].as_str().unwrap_or("")
                ),
                w["paths"].as_u64().expect("paths"),
                w["unique_states"].as_u64().expect("unique_states"),
                w["exhausted"].as_bool().expect("exhausted"),
            )
        })
        .collect()
}

fn finding_ids(report: &Value) -> BTreeSet<String> {
    report["findings"]
        .as_array()
        .expect("findings[]")
        .iter()
        .map(|f| f["id"].as_str().expect("id").to_string())
        .collect()
}

/// One hunt, run through Slurm in 4 shards and unsharded by the test itself.
struct Case {
    name: &'static str,
    args: &'static str,
    array: String,
    merge: String,
}

/// A 4-shard hunt through Slurm finds what the same hunt unsharded finds: on exhaustive
/// exploration with a systematic strategy the same unique states, both exhausted; with a
/// randomized strategy and fixed seeds the same findings.
#[test]
fn sharded_hunts_through_slurm_match_unsharded_ones() {
    let flymc = PathBuf::from(env!("CARGO_BIN_EXE_flymc"));
    let t0 = Instant::now();
    let mut slurm = Slurm::start();
    let up = t0.elapsed();
    let mut cases = vec![
        Case {
            name: "raft-dfs",
            args: "--system raft-sim --workload raft-2 --strategy dfs --budget 100000paths",
            array: String::new(),
            merge: String::new(),
        },
        Case {
            name: "paxos-dfs",
            args: "--system cassandra-sim --workload paxos-1 --strategy dfs --budget 100000paths",
            array: String::new(),
            merge: String::new(),
        },
        Case {
            name: "raft-random",
            args: "--system raft-sim --workload raft-bug --strategy random --seeds 8 \
                   --budget 200paths",
            array: String::new(),
            merge: String::new(),
        },
    ];
    // Queue them all, then run the unsharded hunts while Slurm works.
    let t1 = Instant::now();
    for case in &mut cases {
        let dir = slurm.path(case.name);
        let corpus = dir.join("corpus");
        let (array, merge) = slurm.submit(
            &[("FLYMC", &flymc), ("HUNT_DIR", &dir), ("CORPUS", &corpus)],
            case.args,
            4,
        );
        case.array = array;
        case.merge = merge;
    }
    let mut whole = Vec::new();
    for case in &cases {
        let out = slurm.path(&format!("{}-whole", case.name));
        let corpus = slurm.path(&format!("{}-whole-corpus", case.name));
        let mut args = vec!["hunt"];
        args.extend(case.args.split_whitespace());
        args.extend(["--out", out.to_str().unwrap()]);
        args.extend(["--corpus", corpus.to_str().unwrap()]);
        let t = Instant::now();
        let ran = common::flymc_in(slurm.dir.path(), &args);
        assert!(
            ran.code == 0 || ran.code == 1,
            "unsharded {}: exit {}\n{}",
            case.name,
            ran.code,
            ran.all()
        );
        whole.push((read_json(&out.join("hunt.json")), t.elapsed()));
    }
    for case in &cases {
        slurm.wait_jobs(&case.array, &case.merge, Duration::from_secs(600));
    }
    let through_slurm = t1.elapsed();

    for (case, (whole, took)) in cases.iter().zip(&whole) {
        let dir = slurm.path(case.name);
        let tasks = slurm.job_states(&case.array);
        assert!(
            tasks.len() == 4 && tasks.iter().all(|(_, s, _)| s == "COMPLETED"),
            "{}: shards {tasks:?}\n{}",
            case.name,
            tail(&dir.join("logs/shard-0.out"), 30)
        );
        let merge = slurm.job_states(&case.merge);
        let merged_path = dir.join("merged/hunt.json");
        assert!(
            merged_path.exists(),
            "{}: no merged hunt.json; merge job {merge:?}\n{}",
            case.name,
            tail(&dir.join("logs/merge.out"), 30)
        );
        let merged = read_json(&merged_path);
        let (m, w) = (workloads(&merged), workloads(whole));
        let (mf, wf) = (finding_ids(&merged), finding_ids(whole));
        eprintln!(
            "{}: sharded {m:?} findings {mf:?} (merge job {merge:?}); unsharded {w:?} findings \
             {wf:?} in {:.1} s",
            case.name,
            took.as_secs_f64()
        );
        // The merge's exit code is its verdict on the findings: 0 nothing new, 1 new ones.
        let want_exit = if mf.is_empty() { "0:0" } else { "1:0" };
        assert_eq!(merge.len(), 1, "{merge:?}");
        assert_eq!(merge[0].2, want_exit, "{}: merge job {merge:?}", case.name);
        if case.args.contains("--strategy dfs") {
            assert_eq!(m.len(), 1, "{m:?}");
            assert_eq!(w.len(), 1, "{w:?}");
            assert!(m[0].3 && w[0].3, "{}: not both exhausted", case.name);
            assert_eq!(m[0].2, w[0].2, "{}: unique states differ", case.name);
            assert!(m[0].2 > 0, "{}: no states", case.name);
        } else {
            assert!(
                !wf.is_empty(),
                "{}: the unsharded hunt found nothing",
                case.name
            );
            assert_eq!(mf, wf, "{}: findings differ", case.name);
            assert_eq!(
                m.iter().map(|x| x.1).sum::<u64>(),
                w.iter().map(|x| x.1).sum::<u64>(),
                "{}: paths differ (8 seeds × 200 paths either way)",
                case.name
            );
        }
    }
    eprintln!(
        "slurm up in {:.1} s; {} sharded hunts queued, run and merged in {:.1} s (unsharded \
         ones alongside)",
        up.as_secs_f64(),
        cases.len(),
        through_slurm.as_secs_f64()
    );
    slurm.stop_and_check();
}
