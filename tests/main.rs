//! flymc's cross-crate tests as one binary: a binary per file linked the whole workspace graph
//! again for each of them. A module per area; the tests that must be alone in their process (they
//! re-run their own executable and kill it, count the process's descriptors, or point TMPDIR
//! elsewhere, or watch the machine's Slurm processes) stay binaries of their own (server/cli/Cargo.toml).

mod common;
#[path = "common/programs.rs"]
mod support;

mod adding_a_system;
mod cli;
mod debug;
mod eventserver;
mod exceptions;
mod exploration;
mod faults_workload;
mod hardening_paths;
mod hardening_runs;
mod hunt;
mod hunt_deploy;
mod hunt_html;
mod hunt_reports;
mod jobs;
mod liveness;
mod node_failures;
mod raft;
mod replay;
mod show;
mod shrink;
mod snapshots;
mod system_files;
mod zookeeper;
