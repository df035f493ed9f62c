//! Killing flymc in the middle of a real openraft run leaves no node process behind: Ctrl-C
//! (SIGINT) runs the cleanup handler, SIGKILL leaves it to the kernel (PR_SET_PDEATHSIG) and
//! the hook's watchdog.
//!
//! The flymc process killed here is this test executable itself, re-run as a child that starts a
//! cluster through the flymc library (the code the `flymc` binary runs) and then waits to be
//! killed. Node processes are watched with pidfds, so the test waits for their exit instead of
//! sleeping.

use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use flymc::cluster::raft::{Flavor, RaftSystem};
use flymc::model::{Target, Workload};
use flymc::real::RealTarget;

const OPENRAFT: &str = env!("CARGO_BIN_EXE_flymc-raft-node");
const CHILD: &str = "FLYMC_TEST_RAFT_CLEANUP_CHILD";

fn cluster() -> (RealTarget, Workload) {
    let text = "version = 1\nsystem = \"raft\"\nnodes = 3\nmax_events = 10\n[params]\nelection_timers = [0]\n";
    let w = Workload::parse(Path::new("cleanup.toml"), text).unwrap();
    let cfg = RaftSystem::with_program(Flavor::OpenRaft, OPENRAFT)
        .config(&w)
        .unwrap();
    (RealTarget::new(cfg), w)
}

/// Start a cluster and let n0's election timer fire, so votes are in flight.
fn mid_run() -> (RealTarget, Vec<u32>, PathBuf) {
    let (mut t, w) = cluster();
    t.start(&w).unwrap();
    let p = t.pending();
    assert_eq!(p.len(), 1, "only n0's election timer: {p:?}");
    t.enable(p[0].id).unwrap();
    t.settle().unwrap();
    let votes = t.pending().iter().filter(|e| e.name == "vote").count();
    assert_eq!(votes, 2, "two vote requests in flight");
    let pids: Vec<u32> = t.pids().into_iter().map(|(_, p)| p).collect();
    assert_eq!(pids.len(), 3);
    let dir = t.slots()[0].data_dir.parent().unwrap().to_path_buf();
    (t, pids, dir)
}

/// The child: run a cluster, say which processes it has, and wait to be killed.
#[test]
fn child_process_entry() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let (_t, pids, dir) = mid_run();
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    println!("NODES {} DIR {}", list.join(","), dir.display());
    // Block until killed (the parent never writes).
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}

/// A pidfd of a process (not necessarily our child): readable once it has ended.
fn pidfd(pid: u32) -> OwnedFd {
    // SAFETY: plain syscall; a non-negative result is a new file descriptor we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    assert!(
        fd >= 0,
        "node process {pid} is not running: {}",
        std::io::Error::last_os_error()
    );
    unsafe { OwnedFd::from_raw_fd(fd as RawFd) }
}

/// Wait (at most 10 s) for the process behind `fd` to end.
fn ends(fd: &OwnedFd) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, 10_000) };
    r == 1 && p.revents & libc::POLLIN != 0
}

fn kill_flymc_mid_run(signal: i32) -> (std::process::ExitStatus, PathBuf) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_process_entry",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Keep the child's stdin open until it is dead (`Child::wait` would close it first, and
    // the child would return from its read and exit on its own).
    let stdin = child.stdin.take();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let (pids, dir) = loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the child ended before starting its cluster"
        );
        // libtest prints `test child_process_entry ... ` before the child's own output.
        if let Some((_, rest)) = line.trim().split_once("NODES ") {
            let (pids, dir) = rest.split_once(" DIR ").unwrap();
            let pids: Vec<u32> = pids.split(',').map(|p| p.parse().unwrap()).collect();
            break (pids, PathBuf::from(dir));
        }
    };
    let fds: Vec<OwnedFd> = pids.iter().map(|p| pidfd(*p)).collect();
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, signal);
    }
    let status = child.wait().unwrap();
    drop(stdin);
    for (pid, fd) in pids.iter().zip(&fds) {
        assert!(
            ends(fd),
            "node process {pid} outlived flymc (signal {signal})"
        );
    }
    (status, dir)
}

#[test]
fn ctrl_c_leaves_no_node_process_and_no_run_directory() {
    let (status, dir) = kill_flymc_mid_run(libc::SIGINT);
    assert_eq!(
        status.code(),
        Some(130),
        "the cleanup handler exits with 130"
    );
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn sigkill_leaves_no_node_process() {
    use std::os::unix::process::ExitStatusExt;
    let (status, dir) = kill_flymc_mid_run(libc::SIGKILL);
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    // Nothing can clean files up after SIGKILL; the processes are what must not survive.
    let _ = std::fs::remove_dir_all(dir);
}
