//! CRIU snapshots of a real process tree, through the local backend: a node whose two processes
//! talk over a loopback TCP connection and append to a file in the node's data directory is
//! dumped while it runs, goes on, and is restored twice from that one image (each time as pid 1
//! of a fresh PID namespace) to continue exactly from the dump: the file back at its dump-time
//! size, the connection alive. Restored nodes are killed and reported like launched ones; a
//! failing restore is an error, not a half-started node; nothing is left behind.
//!
//! Needs root and CRIU built by `flymc setup criu` (CI builds it); without it every test fails
//! with the line that says so. `harness = false`: this binary is also the node program
//! (`pair-server`, `pair-client`), so the test needs nothing but itself.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use flymc_real::cluster::local::LocalBackend;
use flymc_real::cluster::{live_processes, Backend, ExitListener, NodeCommand, NodeSlot};
use flymc_real::snapshot::{Criu, SnapshotStore};

const TIMEOUT: Duration = Duration::from_secs(30);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("pair-server") => server(Path::new(&args[2])),
        Some("pair-client") => client(args[2].parse().expect("a port"), &args[3]),
        _ => run_tests(&args[1..]),
    }
}

fn run_tests(args: &[String]) {
    let tests: &[(&str, fn())] = &[
        (
            "a_dumped_tree_restores_twice_from_its_dump_state",
            a_dumped_tree_restores_twice_from_its_dump_state,
        ),
        (
            "a_node_started_in_namespaces_is_killed_and_reported_like_any",
            a_node_started_in_namespaces_is_killed_and_reported_like_any,
        ),
        (
            "criu_reads_the_kernel_features_from_its_cache",
            criu_reads_the_kernel_features_from_its_cache,
        ),
    ];
    let filter: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let mut failed = Vec::new();
    let chosen = tests
        .iter()
        .filter(|(name, _)| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str())));
    for (name, test) in chosen {
        eprintln!("test {name} ...");
        match std::panic::catch_unwind(test) {
            Ok(()) => eprintln!("test {name} ... ok"),
            Err(_) => {
                eprintln!("test {name} ... FAILED");
                failed.push(*name);
            }
        }
    }
    if !failed.is_empty() {
        eprintln!("failed: {}", failed.join(", "));
        std::process::exit(101);
    }
}

/// The node's first process: listens, starts the client, and appends every number the client
/// sends to `data/log` (kept open for writing), acknowledging each. Exits 7 once `data/stop`
/// exists, 5 if the connection breaks.
fn server(data: &Path) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let _client = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args(["pair-client", &port.to_string()])
        .arg(data)
        .spawn()
        .expect("start the client");
    let (conn, _) = l.accept().expect("accept");
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(data.join("log"))
        .expect("open the log");
    let mut reply = conn.try_clone().expect("clone");
    for line in BufReader::new(conn).lines() {
        let Ok(n) = line else { break };
        writeln!(log, "{n}").expect("append");
        if data.join("stop").exists() {
            std::process::exit(7);
        }
        writeln!(reply, "ack {n}").expect("reply");
    }
    std::process::exit(5);
}

/// Sends 1, 2, 3, ... one every 10 ms, each after the previous one's acknowledgement. While
/// `data/hold` exists it sends nothing and marks `data/held`: the connection is then idle, as a
/// flymc node's sockets are at the quiescent points where flymc takes snapshots. (A dump taken with
/// a segment in flight can lose it: `--network-lock skip` does not stop the kernel from
/// acknowledging it to a side that was already dumped.)
fn client(port: u16, data: &str) {
    let data = Path::new(data);
    let conn = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let mut send = conn.try_clone().expect("clone");
    let mut acks = BufReader::new(conn).lines();
    for n in 1u64.. {
        while data.join("hold").exists() {
            std::fs::write(data.join("held"), "").expect("mark held");
            std::thread::sleep(Duration::from_millis(5));
        }
        writeln!(send, "{n}").expect("send");
        match acks.next() {
            Some(Ok(a)) if a == format!("ack {n}") => {}
            _ => std::process::exit(4),
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Stop the client between two numbers and wait (polling the mark it leaves) until it has.
fn hold(data: &Path) {
    std::fs::write(data.join("hold"), "").unwrap();
    let deadline = Instant::now() + TIMEOUT;
    while !data.join("held").exists() {
        assert!(Instant::now() < deadline, "the client did not hold");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn release(data: &Path) {
    std::fs::remove_file(data.join("hold")).unwrap();
}

fn criu() -> Criu {
    Criu::usable().unwrap_or_else(|e| panic!("{e}"))
}

/// Everything this test makes goes under one directory, which must end up empty.
fn base() -> tempfile::TempDir {
    static SYSTEM_TMP: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let tmp = SYSTEM_TMP.get_or_init(std::env::temp_dir);
    let d = tempfile::tempdir_in(tmp).expect("a temporary directory");
    // Run directories, the store and CRIU's work directories all follow TMPDIR.
    std::env::set_var("TMPDIR", d.path());
    d
}

type Exits = Arc<(Mutex<Vec<(u32, String)>>, Condvar)>;

fn listener() -> (Exits, ExitListener) {
    let exits: Exits = Arc::default();
    let e = exits.clone();
    let l: ExitListener = Arc::new(move |_node, incarnation, how| {
        e.0.lock().unwrap().push((incarnation, how));
        e.1.notify_all();
    });
    (exits, l)
}

fn wait_exit(exits: &Exits, incarnation: u32) -> String {
    let (m, cv) = &**exits;
    let (got, _) = cv
        .wait_timeout_while(m.lock().unwrap(), TIMEOUT, |v| {
            !v.iter().any(|(i, _)| *i == incarnation)
        })
        .unwrap();
    got.iter()
        .find(|(i, _)| *i == incarnation)
        .map(|(_, how)| how.clone())
        .unwrap_or_else(|| panic!("incarnation {incarnation}'s exit was not reported"))
}

fn numbers(log: &Path) -> Vec<u64> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| l.parse().expect("a number"))
        .collect()
}

/// Wait (polling the file the node writes: there is nothing else to wait on) until the node has
/// logged at least `n` numbers.
fn wait_logged(log: &Path, n: usize) -> Vec<u64> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let v = numbers(log);
        if v.len() >= n {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "the node logged {} of {n} numbers",
            v.len()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Processes whose command line names `token` (the node's data directory).
fn processes_with(token: &Path) -> Vec<u32> {
    let token = token.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&token))
        })
        .collect()
}

/// The pid `pid` has inside its innermost PID namespace.
fn inner_pid(pid: u32) -> u32 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let ns = status.lines().find(|l| l.starts_with("NSpid:")).unwrap();
    ns.split_whitespace().last().unwrap().parse().unwrap()
}

fn mounts() -> String {
    std::fs::read_to_string("/proc/self/mountinfo").unwrap()
}

fn start(backend: &mut LocalBackend, on_exit: ExitListener) -> (NodeSlot, u32) {
    let slot = backend.prepare(1).unwrap().remove(0);
    let cmd = NodeCommand::new(std::env::current_exe().unwrap())
        .arg("pair-server")
        .arg(slot.data_dir.display().to_string());
    let pid = backend.launch(&slot, 0, &cmd, on_exit).unwrap();
    (slot, pid)
}

/// Contiguous from 1: never a number twice or skipped.
fn assert_counts(v: &[u64], what: &str) {
    let want: Vec<u64> = (1..=v.len() as u64).collect();
    assert_eq!(v, want.as_slice(), "{what}");
}

fn a_dumped_tree_restores_twice_from_its_dump_state() {
    let criu = criu();
    let base = base();
    let mounts_before = mounts();
    let (exits, on_exit) = listener();
    let mut backend = LocalBackend::new().namespaces(true);
    let (slot, pid) = start(&mut backend, on_exit.clone());
    assert_eq!(
        inner_pid(pid),
        1,
        "a node starts as pid 1 of its own namespace"
    );
    let log = slot.data_dir.join("log");
    wait_logged(&log, 5);
    hold(&slot.data_dir);

    let mut store = SnapshotStore::new(None).unwrap();
    let mut pending = store.begin().unwrap();
    backend.dump(0, &criu, &mut pending).unwrap();
    let snap = store.insert(42, pending, b"server state".to_vec()).unwrap();
    assert_eq!(snap.blob(), b"server state");
    let image = snap.node(0).unwrap();
    let at_dump = numbers(&image.dir().join("files/0/log"));
    assert!(at_dump.len() >= 5, "the copy holds the dump-time log");
    assert_counts(&at_dump, "the dump-time copy");

    // The original goes on after the dump (--leave-running), then dies.
    release(&slot.data_dir);
    let later = wait_logged(&log, at_dump.len() + 5);
    assert_counts(&later, "the original after its dump");
    backend.kill(0).unwrap();
    assert_eq!(wait_exit(&exits, 0), "killed by signal 9");
    assert!(processes_with(&slot.data_dir).is_empty());

    for incarnation in [1, 2] {
        let pid = backend
            .restore(&slot, incarnation, &criu, &snap, on_exit.clone())
            .unwrap();
        assert_eq!(backend.pids(), vec![(0, pid)]);
        assert_eq!(inner_pid(pid), 1, "restored as pid 1 of a fresh namespace");
        // The dump-time directory came back with the client holding: let it go on.
        release(&slot.data_dir);
        // Continues from the dump: the file starts again at its dump-time size (no number the
        // original logged after the dump), the connection carries on (the next numbers come).
        let v = wait_logged(&log, at_dump.len() + 5);
        assert_counts(&v, &format!("restore {incarnation}"));
        assert_eq!(processes_with(&slot.data_dir).len(), 2, "server and client");
        if incarnation == 1 {
            // The same image cannot come up twice at once (its socket's address is taken): an
            // error, and nothing of the failed attempt stays.
            let e = criu
                .restore(image, Box::new(|_| {}))
                .expect_err("a second restore beside a running one");
            assert!(e.to_string().contains("criu restore"), "{e}");
            assert_eq!(processes_with(&slot.data_dir).len(), 2);
            backend.kill(0).unwrap();
            assert_eq!(wait_exit(&exits, 1), "killed by signal 9");
            assert!(processes_with(&slot.data_dir).is_empty());
        }
    }
    // A restored node that ends by itself is reported with its status.
    std::fs::write(slot.data_dir.join("stop"), "").unwrap();
    assert_eq!(wait_exit(&exits, 2), "exit status 7");

    backend.stop().unwrap();
    drop(snap);
    drop(store);
    assert!(processes_with(&slot.data_dir).is_empty());
    assert!(live_processes().is_empty());
    assert_eq!(mounts(), mounts_before, "no mount left behind");
    let left: Vec<PathBuf> = std::fs::read_dir(base.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

fn a_node_started_in_namespaces_is_killed_and_reported_like_any() {
    let base = base();
    let (exits, on_exit) = listener();
    let mut backend = LocalBackend::new().namespaces(true);
    let (slot, pid) = start(&mut backend, on_exit);
    wait_logged(&slot.data_dir.join("log"), 2);
    // Its own session and process group, and its parent is this process.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
    assert_eq!(fields[1], std::process::id().to_string(), "parent");
    assert_eq!(fields[2], pid.to_string(), "process group");
    assert_eq!(fields[3], pid.to_string(), "session");
    // Killing pid 1 ends the namespace: when its exit is reported, the client is gone too.
    backend.kill(0).unwrap();
    assert_eq!(wait_exit(&exits, 0), "killed by signal 9");
    assert!(processes_with(&slot.data_dir).is_empty());
    backend.stop().unwrap();
    assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 0);
}

/// Once flymc has checked CRIU, CRIU reads the kernel's features from its cache instead of
/// probing them at every dump and restore (~40 ms each), whatever file system `/run` is, and
/// installing the cache leaves nothing in the tmpfs it was made in.
fn criu_reads_the_kernel_features_from_its_cache() {
    let criu = criu();
    let dir = base();
    let log = dir.path().join("check.log");
    let out = std::process::Command::new(criu.bin())
        .args(["check", "-v4", "-o"])
        .arg(&log)
        .output()
        .expect("criu runs");
    assert!(out.status.success(), "criu check: {out:?}");
    let text = std::fs::read_to_string(&log).expect("CRIU's log");
    assert!(
        text.contains("Loaded kdat cache"),
        "CRIU probed the kernel again:\n{}",
        text.lines().take(8).collect::<Vec<_>>().join("\n")
    );
    let left: Vec<_> = std::fs::read_dir("/dev/shm")
        .expect("/dev/shm")
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("flymc-criu-kdat-")
        })
        .collect();
    assert!(left.is_empty(), "left in /dev/shm: {left:?}");
    std::fs::remove_file(&log).unwrap();
}
