//! Helpers shared by the integration tests: run the real `flymc` binary and look at what it did.

#![allow(dead_code)]

pub mod reports;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// The checkout's workloads folder.
pub fn workloads() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads")
}

/// Run `flymc ARGS` in `dir`, with the checkout's workloads.
pub fn flymc_in(dir: &Path, args: &[&str]) -> Ran {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_flymc"))
        .args(args)
        .current_dir(dir)
        .env("FLYMC_WORKLOADS", workloads())
        .output()
        .expect("the flymc binary runs");
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The path file a `flymc run` printed.
pub fn path_file(ran: &Ran, dir: &Path) -> PathBuf {
    // `  path file: FILE (N events)`
    let file = ran
        .stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("path file: "))
        .and_then(|l| l.rsplit_once(" ("))
        .map(|(file, _)| file)
        .unwrap_or_else(|| panic!("no path file line in:\n{}", ran.all()));
    dir.join(file)
}

/// The path file of the violation `flymc run ARGS` finds in `dir` (it must find one).
pub fn found(dir: &Path, args: &[&str]) -> PathBuf {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    let r = flymc_in(dir, &all);
    assert_eq!(r.code, 1, "expected a violation:\n{}", r.all());
    path_file(&r, dir)
}

/// A raft-sim raft-bug path: state-machine-safety after a crash and a reboot, about 50
/// events (random walks, seed 1).
pub fn raft_bug_path(dir: &Path) -> PathBuf {
    found(
        dir,
        &[
            "--system",
            "raft-sim",
            "--workload",
            "raft-bug",
            "--strategy",
            "random",
            "--seed",
            "1",
            "--max-paths",
            "2000",
        ],
    )
}

/// A cassandra-sim cass-3 path: `no-handler-failure` on the second path of `flymc`, in
/// milliseconds.
pub fn cass3_path(dir: &Path) -> PathBuf {
    found(
        dir,
        &[
            "--system",
            "cassandra-sim",
            "--workload",
            "cass-3",
            "--strategy",
            "flymc",
        ],
    )
}

/// A user-caused error: exit 2 and one line on stderr starting with "error: ", no panic.
pub fn assert_one_line_error(ran: &Ran, needle: &str) {
    assert_eq!(ran.code, 2, "{}", ran.all());
    let lines: Vec<&str> = ran.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line, got:\n{}", ran.stderr);
    assert!(lines[0].starts_with("error: "), "{}", lines[0]);
    assert!(lines[0].contains(needle), "`{needle}` not in: {}", lines[0]);
    assert!(!ran.all().contains("panicked"), "{}", ran.all());
}
