//! Hardening: whatever ends a run keeps its work; run directories are private and swept; signals exit as users expect.
//!
//! Every test runs the real `flymc` binary on real openraft node processes (`raft`, the cheap
//! real system), in folders of its own: its own run folder (`FLYMC_RUN_ROOT`, or a `TMPDIR`
//! of its own), its own output folder, so the tests run side by side. They wait for files to
//! appear (with a deadline), never sleep to synchronise.

use crate::support;

use crate::common;

use std::collections::BTreeSet;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use flymc_core::pathfile::PathFile;
use flymc_real::cluster::Backend as _;

/// One path of a real openraft election: the cheapest real run. These tests name dfs: the
/// default (the portfolio) starts one more cluster to check the sets file against the nodes'
/// variables, which would be one more run directory than paths.
const ONE_RAFT_PATH: &[&str] = &[
    "run",
    "--system",
    "raft",
    "--workload",
    "le",
    "--strategy",
    "dfs",
    "--max-paths",
    "1",
];

/// The openraft node program, built beside the `flymc` under test (which finds it there).
fn raft_node() {
    support::node_program("flymc-raft-nodes", "flymc-raft-node");
}

/// `flymc ARGS` started in `dir` with `env`, its stdout and stderr going to files in `dir`.
fn spawn(dir: &Path, env: &[(&str, &Path)], args: &[&str]) -> Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_flymc"));
    c.args(args)
        .current_dir(dir)
        .env("FLYMC_WORKLOADS", common::workloads())
        .env_remove("FLYMC_RUN_ROOT")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.join("stdout")).unwrap())
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap());
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().expect("flymc starts")
}

/// Wait for `child` and return its exit code with what it printed.
fn finish(mut child: Child, dir: &Path) -> common::Ran {
    let status = child.wait().unwrap();
    common::Ran {
        code: status.code().unwrap_or(-1),
        stdout: std::fs::read_to_string(dir.join("stdout")).unwrap(),
        stderr: std::fs::read_to_string(dir.join("stderr")).unwrap(),
    }
}

/// `flymc ARGS` in `dir` with `env`, to its end.
fn run(dir: &Path, env: &[(&str, &Path)], args: &[&str]) -> common::Ran {
    finish(spawn(dir, env, args), dir)
}

/// Poll `cond` until it holds; fail after a minute (real clusters start in well under that).
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The directories in a run folder whose names start with one of `prefixes`.
fn dirs_in(root: &Path, prefixes: &[&str]) -> BTreeSet<PathBuf> {
    std::fs::read_dir(root)
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    prefixes.iter().any(|p| n.starts_with(p))
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// The run directories (`run-*`) in a run folder.
fn run_dirs(root: &Path) -> BTreeSet<PathBuf> {
    dirs_in(root, &["run-"])
}

/// The run directories and snapshot stores in a run folder.
fn owned_dirs(root: &Path) -> BTreeSet<PathBuf> {
    dirs_in(root, &["run-", "snapshots-"])
}

/// The path files `--save-paths` wrote into `out`.
fn path_files(out: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(out)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default()
}

/// `summary: N paths, ...` as printed.
fn summary_paths(ran: &common::Ran) -> usize {
    let line = ran
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("summary: "))
        .unwrap_or_else(|| panic!("no summary in:\n{}", ran.all()));
    line.split(' ').next().unwrap().parse().unwrap()
}

/// Every path file parses, and there is one per path the summary counts, numbered 1..=N.
fn assert_path_files_kept(out: &Path, ran: &common::Ran) -> usize {
    let n = summary_paths(ran);
    let files = path_files(out);
    assert_eq!(files.len(), n, "{files:?}\n{}", ran.all());
    for k in 1..=n {
        let f = out.join(format!("raft-le-dfs-all-path{k}.json"));
        PathFile::load(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    }
    n
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

const LONG_RUN: &[&str] = &[
    "run",
    "--system",
    "raft",
    "--workload",
    "le",
    "--strategy",
    "dfs",
    "--max-paths",
    "400",
    "--save-paths",
    "--out",
    "out",
];

/// The janitor flymc forked at its start (`flymc-janitor`, a child of `flymc`).
fn janitor_of(flymc: u32) -> u32 {
    let children =
        std::fs::read_to_string(format!("/proc/{flymc}/task/{flymc}/children")).unwrap_or_default();
    children
        .split_whitespace()
        .filter_map(|p| p.parse::<u32>().ok())
        .find(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .is_ok_and(|c| c.trim() == "flymc-janitor")
        })
        .unwrap_or_else(|| panic!("flymc {flymc} has no janitor child"))
}

/// The processes whose environment holds `mark` (flymc's, and what it started: its janitor,
/// the nodes, CRIU), with their command names.
fn marked_processes(mark: &str) -> Vec<(u32, String)> {
    let needle = format!("FLYMC_TEST_MARK={mark}");
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            found.push((pid, comm.trim().to_string()));
        }
    }
    found
}

#[test]
fn kill_9_during_snapshotting_leaves_no_process_namespace_image_or_run_directory() {
    raft_node();
    flymc_real::cluster::local::snapshots_usable()
        .unwrap_or_else(|why| panic!("this test needs CRIU (`flymc setup criu`): {why}"));
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("runs");
    let mark = d.path().file_name().unwrap().to_string_lossy().into_owned();
    let work = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_flymc"));
    c.args(LONG_RUN)
        .current_dir(work.path())
        .env("FLYMC_WORKLOADS", common::workloads())
        .env("FLYMC_RUN_ROOT", &root)
        .env("FLYMC_TEST_MARK", &mark)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(work.path().join("stderr")).unwrap());
    let mut flymc = c.spawn().expect("flymc starts");
    // Mid-snapshot: CRIU is dumping or restoring a node (not its one `criu check` at start).
    wait_for("a CRIU dump or restore of the run", || {
        marked_processes(&mark).iter().any(|(pid, comm)| {
            let args = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            comm == "criu"
                && args
                    .split(|b| *b == 0)
                    .any(|a| a == b"dump" || a == b"restore")
        })
    });
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(flymc.id() as libc::pid_t, libc::SIGKILL);
    }
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(flymc.wait().unwrap().signal(), Some(libc::SIGKILL));
    // Its janitor kills what flymc started (nodes, each the first process of its PID
    // namespace, and CRIU with what it forked), then removes the run directories and the
    // snapshot images, then ends itself.
    wait_for("no process of the killed flymc", || {
        marked_processes(&mark).is_empty()
    });
    let left: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_run_directory_left_by_a_killed_flymc_is_swept_by_the_next_run_but_no_live_or_kept_one() {
    raft_node();
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("runs");
    let env = [("FLYMC_RUN_ROOT", root.as_path())];
    // A live flymc: this test process, holding a run directory of its own in the folder.
    let mut live = flymc_real::cluster::local::LocalBackend::new().in_dir(&root);
    live.prepare(1).unwrap();
    let live_dir = live.run_dir().unwrap().clone();
    assert!(run_dirs(&root).contains(&live_dir));
    // A kept one (--keep-run-dirs), its flymc gone.
    let kept_run = tempfile::tempdir().unwrap();
    let ran = run(
        kept_run.path(),
        &env,
        &[
            "run",
            "--system",
            "raft",
            "--workload",
            "le",
            "--strategy",
            "dfs",
            "--max-paths",
            "1",
            "--keep-run-dirs",
        ],
    );
    assert_eq!(ran.code, 0, "{}", ran.all());
    let kept: BTreeSet<PathBuf> = owned_dirs(&root)
        .into_iter()
        .filter(|p| *p != live_dir)
        .collect();
    assert!(!kept.is_empty(), "--keep-run-dirs kept no directory");
    // A flymc killed mid-run by SIGKILL with its janitor (which would clean up after it: the
    // next test): nothing of it can clean up.
    let killed_run = tempfile::tempdir().unwrap();
    let child = spawn(killed_run.path(), &env, LONG_RUN);
    let known: BTreeSet<PathBuf> = kept.iter().cloned().chain([live_dir.clone()]).collect();
    wait_for("the killed flymc's run directory", || {
        run_dirs(&root).iter().any(|p| !known.contains(p))
    });
    let janitor = janitor_of(child.id());
    // SAFETY: signalling our own child and its child.
    unsafe {
        libc::kill(janitor as libc::pid_t, libc::SIGKILL);
        libc::kill(child.id() as libc::pid_t, libc::SIGKILL);
    }
    let ran = finish(child, killed_run.path());
    assert_eq!(ran.code, -1, "killed: {}", ran.all());
    // Its run directory, and its snapshot store where CRIU works here.
    let left: BTreeSet<PathBuf> = owned_dirs(&root).difference(&known).cloned().collect();
    assert!(!left.is_empty(), "SIGKILL left no run directory behind");
    // The next run sweeps what the killed flymc left, and says so, and nothing else.
    let next = tempfile::tempdir().unwrap();
    let ran = run(next.path(), &env, ONE_RAFT_PATH);
    assert_eq!(ran.code, 0, "{}", ran.all());
    let said = format!(
        "flymc: removed {} leftover run director{} of flymc processes that are gone, from {}",
        left.len(),
        if left.len() == 1 { "y" } else { "ies" },
        root.display()
    );
    assert!(
        ran.stderr.contains(&said),
        "`{said}` not in:\n{}",
        ran.all()
    );
    assert!(left.iter().all(|p| !p.exists()), "not swept: {left:?}");
    assert!(live_dir.is_dir(), "a live run's directory was swept");
    assert!(
        kept.iter().all(|p| p.is_dir()),
        "a kept directory was swept"
    );
    // A run that finds nothing to sweep says nothing about it.
    let again = tempfile::tempdir().unwrap();
    let ran = run(again.path(), &env, ONE_RAFT_PATH);
    assert_eq!(ran.code, 0, "{}", ran.all());
    assert!(!ran.stderr.contains("leftover"), "{}", ran.all());
    drop(live);
    assert!(!live_dir.exists(), "the live run removes its own directory");
}

#[test]
fn run_directories_are_private_and_under_the_per_user_folder() {
    raft_node();
    let tmp = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let env = [("TMPDIR", tmp.path())];
    let ran = run(
        work.path(),
        &env,
        &[
            "run",
            "--system",
            "raft",
            "--workload",
            "le",
            "--strategy",
            "dfs",
            "--max-paths",
            "2",
            "--keep-run-dirs",
            "--no-snapshots",
        ],
    );
    assert_eq!(ran.code, 0, "{}", ran.all());
    // SAFETY: plain syscall.
    let uid = unsafe { libc::geteuid() };
    let folder = tmp.path().join(format!("flymc-{uid}"));
    // Everything flymc made in TMPDIR is in the one per-user folder (snapshot stores go to
    // /dev/shm's, or here when TMPDIR is set).
    let made: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("flymc-") && !n.starts_with("flymc-criu-"))
        .collect();
    assert_eq!(made, vec![format!("flymc-{uid}")], "{}", ran.all());
    assert_eq!(mode(&folder), 0o700);
    assert_eq!(std::fs::metadata(&folder).unwrap().uid(), uid);
    let dirs = run_dirs(&folder);
    assert_eq!(dirs.len(), 2, "one kept run directory per path: {dirs:?}");
    for d in &dirs {
        assert_eq!(mode(d), 0o700, "{}", d.display());
        assert!(d.join("n0").is_dir(), "{}", d.display());
    }

    // A per-user folder others may write to, or of another user, is refused with one line.
    let open = tempfile::tempdir().unwrap();
    let theirs = open.path().join(format!("flymc-{uid}"));
    std::fs::create_dir(&theirs).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o777)).unwrap();
    let ran = run(work.path(), &[("TMPDIR", open.path())], ONE_RAFT_PATH);
    assert_eq!(ran.code, 2, "{}", ran.all());
    let last = ran.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: ")
            && last.contains("refusing the run folder")
            && last.contains("others may write to it (mode 777)"),
        "{}",
        ran.all()
    );
    assert!(!ran.all().contains("panicked"), "{}", ran.all());
    assert!(
        run_dirs(&theirs).is_empty(),
        "nothing may be created in a refused folder"
    );
    if uid == 0 {
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&theirs, Some(4242), Some(4242)).unwrap();
        let ran = run(
            work.path(),
            &[("TMPDIR", open.path())],
            &[
                "run",
                "--system",
                "raft",
                "--workload",
                "le",
                "--strategy",
                "dfs",
                "--max-paths",
                "1",
            ],
        );
        assert_eq!(ran.code, 2, "{}", ran.all());
        assert!(
            ran.stderr.contains("belongs to user 4242, not to you"),
            "{}",
            ran.all()
        );
        assert!(run_dirs(&theirs).is_empty());
    }
}

#[test]
fn sigterm_exits_143_and_sigint_130_after_the_summary_keeping_every_path_file() {
    raft_node();
    for (signal, code, name) in [
        (libc::SIGTERM, 143, "SIGTERM"),
        (libc::SIGINT, 130, "SIGINT"),
    ] {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("runs");
        let child = spawn(d.path(), &[("FLYMC_RUN_ROOT", root.as_path())], LONG_RUN);
        let out = d.path().join("out");
        wait_for("two path files", || path_files(&out).len() >= 2);
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(child.id() as libc::pid_t, signal);
        }
        let ran = finish(child, d.path());
        assert_eq!(ran.code, code, "{name}: {}", ran.all());
        assert!(
            ran.stdout.contains(&format!("interrupted by {name}")),
            "{name}: {}",
            ran.all()
        );
        let n = assert_path_files_kept(&out, &ran);
        assert!(n >= 2, "{name}: {}", ran.all());
        assert!(ran.stdout.contains("time per path:"), "{}", ran.all());
        // Nothing is left in the run folder: no run directory, no snapshot store.
        let left: Vec<_> = std::fs::read_dir(&root).unwrap().flatten().collect();
        assert!(left.is_empty(), "{name}: left behind: {left:?}");
    }
}

/// `timeout -s INT` (how CI jobs bound a hunt) signals the command and then its whole process
/// group, so flymc hears one request twice within microseconds; that must not count as an
/// impatient second Ctrl-C (exit at once, no summary). Before the fix this lost the summary on
/// 2 runs of 5, so several runs are made.
#[test]
fn timeout_s_int_gets_the_summary_although_it_signals_twice() {
    raft_node();
    for attempt in 0..5 {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("runs");
        let mut c = Command::new("timeout");
        c.args(["--preserve-status", "-s", "INT", "3"])
            .arg(env!("CARGO_BIN_EXE_flymc"))
            .args(LONG_RUN)
            .current_dir(d.path())
            .env("FLYMC_WORKLOADS", common::workloads())
            .env("FLYMC_RUN_ROOT", &root)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(d.path().join("stdout")).unwrap())
            .stderr(std::fs::File::create(d.path().join("stderr")).unwrap());
        let ran = finish(c.spawn().expect("timeout starts"), d.path());
        assert_eq!(ran.code, 130, "attempt {attempt}: {}", ran.all());
        assert!(
            ran.stdout.contains("interrupted by SIGINT") && ran.stdout.contains("summary:"),
            "attempt {attempt}: {}",
            ran.all()
        );
        assert_path_files_kept(&d.path().join("out"), &ran);
        let left: Vec<_> = std::fs::read_dir(&root)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "attempt {attempt}: left behind: {left:?}");
    }
}

#[test]
fn a_target_failure_mid_run_prints_the_summary_and_keeps_the_path_files() {
    raft_node();
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("runs");
    let child = spawn(
        d.path(),
        &[("FLYMC_RUN_ROOT", root.as_path())],
        &[LONG_RUN, &["--no-snapshots"]].concat(),
    );
    let out = d.path().join("out");
    wait_for("two path files", || path_files(&out).len() >= 2);
    // Someone opens the run folder to everyone: the next path's cluster cannot be set up
    // there, which is a target failure (exit 2), not a finding.
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).unwrap();
    let ran = finish(child, d.path());
    assert_eq!(ran.code, 2, "{}", ran.all());
    let last = ran.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: target failed") && last.contains("others may write to it"),
        "{}",
        ran.all()
    );
    assert!(
        ran.stdout.contains("stopped by an error (below) on path"),
        "{}",
        ran.all()
    );
    let n = assert_path_files_kept(&out, &ran);
    assert!(n >= 2, "{}", ran.all());
    assert!(!ran.all().contains("panicked"), "{}", ran.all());
}
