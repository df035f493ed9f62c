//! Hardening: hostile connections against the event server cannot end or change a run.
//!
//! Any local user can reach the event server's loopback port. These tests attack it as such a
//! user would (idle connections, half-sent requests, requests without the token) and check that
//! a real run's result does not change and that flymc's descriptors stay bounded.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use flymc_real::eventserver::conns::{BODY_TIMEOUT, HEADER_TIMEOUT, MAX_OPEN, MAX_PENDING};
use flymc_real::eventserver::EventServer;
use serde_json::Value;

/// The descriptor limit the attacked runs get: the one under which, before the connection
/// limits, 300 idle connections made `flymc run` exit 2 with "Too many open files".
const NOFILE: usize = 256;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// What a run found, for comparing an attacked run with an unattacked one.
fn outcome(json: &Path) -> (u64, u64, u64, bool) {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let n = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {v}"));
    (
        n("paths"),
        n("events"),
        n("unique_states"),
        v["violation_path"].is_null(),
    )
}

/// A connection that has sent part of a request's head and then nothing.
fn half_sent(addr: SocketAddr) -> Option<TcpStream> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.write_all(b"POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Le")
        .ok()?;
    Some(s)
}

/// Whether the server closed `s` (a read sees the end or an error rather than blocking).
fn closed(s: &mut TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut b = [0u8; 512];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}

/// Run `flymc run --system raft --workload le` under [`NOFILE`] descriptors, optionally
/// while holding more idle and half-sent connections to its event server than its cap (and
/// re-opening those the server closes) until the run ends. Returns the run's outcome, the most
/// descriptors flymc had open, and how many connections the attack opened.
fn raft_le(dir: &Path, attack: bool) -> ((u64, u64, u64, bool), usize, usize) {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let json = dir.join("summary.json");
    let out = dir.join("out");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n {NOFILE} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_flymc"))
        .args([
            "run",
            "--system",
            "raft",
            "--workload",
            "le",
            "--strategy",
            "dfs",
            "--max-paths",
            "150",
        ])
        .args(["--no-snapshots", "--listen", &listen, "--out"])
        .arg(&out)
        .arg("--json")
        .arg(&json)
        .env("FLYMC_WORKLOADS", common::workloads())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let done = done.clone();
        std::thread::spawn(move || {
            let addr: SocketAddr = listen.parse().unwrap();
            let (mut held, mut opened, mut peak) = (Vec::<TcpStream>::new(), 0, 0);
            // More than the descriptors flymc has: before the limits, this ended the run.
            let want = NOFILE + 50;
            while !done.load(Ordering::Relaxed) {
                peak = peak.max(open_fds(pid));
                if attack {
                    held.retain_mut(|s| !closed(s));
                    while held.len() < want {
                        // Every fourth one sends half a request head; the rest send nothing.
                        let s = if opened % 4 == 0 {
                            half_sent(addr)
                        } else {
                            TcpStream::connect(addr).ok()
                        };
                        let Some(s) = s else { break };
                        held.push(s);
                        opened += 1;
                        peak = peak.max(open_fds(pid));
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            (peak, opened)
        })
    };
    let status = child.wait().unwrap();
    done.store(true, Ordering::Relaxed);
    let (peak, opened) = watcher.join().unwrap();
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        status.success(),
        "attack={attack}: {status}\n{stdout}\n{stderr}"
    );
    // The user is told someone was connecting (and only then).
    assert_eq!(
        stderr.contains("another program was connecting to flymc's port"),
        attack,
        "{stderr}"
    );
    (outcome(&json), peak, opened)
}

#[test]
fn more_idle_and_half_sent_connections_than_the_cap_change_nothing_in_a_real_run() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let (calm, calm_peak, _) = raft_le(a.path(), false);
    let (attacked, attacked_peak, opened) = raft_le(b.path(), true);
    assert_eq!(calm.0, 150, "the run explores its budget: {calm:?}");
    assert_eq!(attacked, calm, "paths, events, unique states, no violation");
    let cap = MAX_OPEN.min(NOFILE / 4);
    assert!(
        opened > cap,
        "the attack opened {opened} connections, the cap is {cap}"
    );
    // The server holds at most `max_pending` of the attacker's connections at a time (it
    // evicts the oldest); allow as many again for ones accepted but not yet closed.
    let bound = calm_peak + 2 * MAX_PENDING.min(cap / 2);
    assert!(
        attacked_peak <= bound,
        "flymc had {attacked_peak} descriptors open under attack, {calm_peak} without (bound {bound})"
    );
    eprintln!(
        "attack: {opened} connections; descriptors {calm_peak} calm, {attacked_peak} attacked"
    );
}

fn server() -> (EventServer, SocketAddr) {
    let s = EventServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    s.begin_run(2, &[]);
    let addr = s.addr();
    (s, addr)
}

/// Read what the server sends until it closes the connection, at most `within`.
fn read_to_close(s: &mut TcpStream, within: Duration) -> Result<String, String> {
    s.set_read_timeout(Some(within)).unwrap();
    let mut out = Vec::new();
    match s.read_to_end(&mut out) {
        Ok(_) => Ok(String::from_utf8_lossy(&out).into_owned()),
        Err(e) => Err(format!(
            "still open after {within:?} ({e}); got: {}",
            String::from_utf8_lossy(&out)
        )),
    }
}

#[test]
fn a_request_without_the_token_is_answered_and_closed_without_its_body_being_read() {
    let (server, addr) = server();
    let mut s = TcpStream::connect(addr).unwrap();
    // Announces 10 MB and sends none of it: the answer must not wait for the body.
    s.write_all(
        b"POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n",
    )
    .unwrap();
    let got = read_to_close(&mut s, Duration::from_secs(5)).unwrap();
    assert!(got.starts_with("HTTP/1.1 401"), "{got}");
    assert!(got.contains("bad-token"), "{got}");
    assert!(
        got.to_ascii_lowercase().contains("connection: close"),
        "{got}"
    );
    assert_eq!(server.stats().rejected.get("bad-token"), Some(&1));
}

#[test]
fn half_sent_and_idle_connections_are_closed_after_the_header_timeout() {
    let (server, addr) = server();
    let start = Instant::now();
    let mut idle = TcpStream::connect(addr).unwrap();
    let mut half = half_sent(addr).unwrap();
    let slack = Duration::from_secs(5);
    read_to_close(&mut half, HEADER_TIMEOUT + slack).unwrap();
    read_to_close(&mut idle, HEADER_TIMEOUT + slack).unwrap();
    assert!(start.elapsed() >= HEADER_TIMEOUT, "{:?}", start.elapsed());
    // A request with the token whose body never comes is answered 408 after the body timeout.
    let mut slow = TcpStream::connect(addr).unwrap();
    let head = format!(
        "POST /v1/events HTTP/1.1\r\nHost: x\r\nX-FlyMC-Token: {}\r\nContent-Length: 100\r\n\r\n{{",
        server.token()
    );
    slow.write_all(head.as_bytes()).unwrap();
    slow.set_read_timeout(Some(BODY_TIMEOUT + slack)).unwrap();
    let mut b = [0u8; 1024];
    let n = slow.read(&mut b).unwrap();
    let got = String::from_utf8_lossy(&b[..n]);
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    assert!(got.contains("slow-body"), "{got}");
}

#[test]
fn pending_connections_beyond_the_cap_evict_the_oldest_and_a_hook_still_gets_through() {
    let (server, addr) = server();
    let mut idle: Vec<TcpStream> = (0..MAX_PENDING + 10)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    // A hook's request on a new connection after them is served.
    let mut s = TcpStream::connect(addr).unwrap();
    let body = r#"{"protocol": 1, "node": 0, "incarnation": 0}"#;
    let req = format!(
        "POST /v1/register HTTP/1.1\r\nHost: x\r\nX-FlyMC-Token: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        server.token(),
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let got = read_to_close(&mut s, Duration::from_secs(5)).unwrap();
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(got.contains("\"nodes\":2"), "registered: {got}");
    // The ten oldest idle ones were closed to make room; the newest are still open.
    for s in idle.iter_mut().take(10) {
        read_to_close(s, Duration::from_secs(5)).unwrap();
    }
    assert!(!closed(idle.last_mut().unwrap()));
    let c = server.connections();
    assert!(c.evicted >= 10, "{c:?}");
    assert!(c.open <= MAX_PENDING + 1, "{c:?}");
}

#[test]
fn an_unknown_endpoint_is_named_in_the_answer() {
    let (_server, addr) = server();
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"POST /v1/teleport HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        .unwrap();
    let got = read_to_close(&mut s, Duration::from_secs(5)).unwrap();
    assert!(got.starts_with("HTTP/1.1 404"), "{got}");
    assert!(got.contains("no endpoint /v1/teleport"), "{got}");
}

#[test]
fn running_out_of_descriptors_says_so_and_still_prints_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    // Twelve descriptors: flymc starts, but cannot open the first node's log.
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 12 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_flymc"))
        .args([
            "run",
            "--system",
            "raft",
            "--workload",
            "le",
            "--strategy",
            "dfs",
            "--max-paths",
            "5",
        ])
        .args(["--no-snapshots", "--out"])
        .arg(dir.path().join("out"))
        .env("FLYMC_WORKLOADS", common::workloads())
        .env("FLYMC_RUN_ROOT", dir.path().join("runs"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    let error = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        error.contains(
            "flymc ran out of file descriptors (its limit is 12): raise it with `ulimit -n`"
        ),
        "{error}"
    );
    assert!(stdout.contains("summary: 0 paths"), "{stdout}");
}
