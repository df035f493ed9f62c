//! Killing flymc in the middle of a real openraft run leaves no node process behind: Ctrl-C
//! (SIGINT) runs the cleanup handler, SIGKILL leaves it to the kernel (PR_SET_PDEATHSIG) and
//! the hook's watchdog. With cluster snapshots, Ctrl-C and SIGTERM also leave no snapshot and
//! no restored process, nor a child flymc started without knowing its pid.
//!
//! The flymc process killed here is this test executable itself, re-run as a child that starts a
//! cluster through the flymc library (the code the `flymc` binary runs) and then waits to be
//! killed. Node processes are watched with pidfds, so the test waits for their exit instead of
//! sleeping.

#[path = "common/programs.rs"]
mod support;

#[path = "common/kill.rs"]
mod kill;

use std::path::{Path, PathBuf};

use flymc_model::{Target, Workload};
use flymc_raft::{Flavor, RaftSystem};
use flymc_real::{RealConfig, RealTarget};

const CHILD: &str = "FLYMC_TEST_RAFT_CLEANUP_CHILD";
const CHILD_SNAPSHOTS: &str = "FLYMC_TEST_RAFT_CLEANUP_CHILD_SNAPSHOTS";

fn config() -> (RealConfig, Workload) {
    let text = "version = 1\nsystem = \"raft\"\nnodes = 3\nmax_events = 10\n[params]\nelection_timers = [0]\n";
    let w = Workload::parse(Path::new("cleanup.toml"), text).unwrap();
    let cfg = RaftSystem::with_program(
        Flavor::OpenRaft,
        support::node_program("flymc-raft-nodes", "flymc-raft-node"),
    )
    .config(&w)
    .unwrap();
    (cfg, w)
}

fn cluster() -> (RealTarget, Workload) {
    let (cfg, w) = config();
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

/// A cluster restored from a snapshot, with the snapshot store beside it, all under a TMPDIR of
/// its own (returned, for the parent to find empty).
fn mid_run_restored() -> (RealTarget, Vec<u32>, PathBuf) {
    let base = tempfile::tempdir().unwrap().keep();
    std::env::set_var("TMPDIR", &base);
    let (cfg, w) = config();
    let backend = flymc_real::cluster::local::LocalBackend::new().snapshots(true);
    let mut t = RealTarget::with_backend(cfg, Box::new(backend));
    t.start(&w).unwrap();
    let timer = t.pending()[0].id;
    t.enable(timer).unwrap();
    t.settle().unwrap();
    assert!(t.checkpoint(7).unwrap(), "a snapshot with votes in flight");
    let vote = t.pending().into_iter().find(|e| e.name == "vote").unwrap();
    t.enable(vote.id).unwrap();
    t.settle().unwrap();
    assert!(t.restore(&w, 7).unwrap(), "restored");
    let votes = t.pending().iter().filter(|e| e.name == "vote").count();
    assert_eq!(votes, 2, "back to two vote requests in flight");
    let mut pids: Vec<u32> = t.pids().into_iter().map(|(_, p)| p).collect();
    assert_eq!(pids.len(), 3);
    // A child flymc has no pid of, as a node CRIU is restoring is until `criu restore` exits
    // (restored as flymc's child): the cleanup must end it too. Never waited for here: this
    // process is killed, and init reaps what it leaves.
    #[allow(clippy::zombie_processes)]
    let stray = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    pids.push(stray.id());
    (t, pids, base)
}

/// The child: run a cluster, say which processes it has, and wait to be killed.
#[test]
fn child_process_entry() {
    kill::child_entry(CHILD, mid_run);
    kill::child_entry(CHILD_SNAPSHOTS, mid_run_restored);
}

#[test]
fn ctrl_c_and_sigterm_leave_no_snapshot_and_no_restored_process() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let (status, base) = kill::kill_flymc_mid_run(CHILD_SNAPSHOTS, signal);
        assert_eq!(status.code(), Some(128 + signal), "signal {signal}");
        let left: Vec<PathBuf> = std::fs::read_dir(&base)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "signal {signal}: left behind: {left:?}");
        std::fs::remove_dir(&base).unwrap();
    }
}

#[test]
fn ctrl_c_leaves_no_node_process_and_no_run_directory() {
    let (status, dir) = kill::kill_flymc_mid_run(CHILD, libc::SIGINT);
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
    let (status, dir) = kill::kill_flymc_mid_run(CHILD, libc::SIGKILL);
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    // Nothing can clean files up after SIGKILL; the processes are what must not survive.
    let _ = std::fs::remove_dir_all(dir);
}
