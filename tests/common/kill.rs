//! Kill a flymc process in the middle of a run on real node processes and watch what survives:
//! shared by the cleanup tests of every real system (`#[path]`-included, so only they build it).
//!
//! The flymc process killed is the test executable itself, re-run as a child that starts a
//! cluster through the flymc library and waits to be killed. Node processes are watched with
//! pidfds, so the tests wait for their exit instead of sleeping.

use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use flymc_real::RealTarget;

/// The child's side: when `child_var` is set, run `mid_run`, print which node processes and
/// run directory it has, and block until killed.
pub fn child_entry(child_var: &str, mid_run: impl FnOnce() -> (RealTarget, Vec<u32>, PathBuf)) {
    if std::env::var_os(child_var).is_none() {
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
pub fn pidfd(pid: u32) -> OwnedFd {
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
pub fn ends(fd: &OwnedFd) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, 10_000) };
    r == 1 && p.revents & libc::POLLIN != 0
}

/// Re-run this test executable as a child whose `child_process_entry` test (switched on by the
/// environment variable `child_var`) starts a cluster, signal it mid-run, and check that
/// every node process it reported ends.
pub fn kill_flymc_mid_run(child_var: &str, signal: i32) -> (std::process::ExitStatus, PathBuf) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_process_entry",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(child_var, "1")
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
