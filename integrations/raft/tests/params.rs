//! The Raft workloads' `[params]`: every shipped one fits, and a bad one is refused with its
//! file, line and column.

use std::path::{Path, PathBuf};

use flymc_model::Workload;
use flymc_raft::params;

fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads")
}

#[test]
fn every_shipped_workload_has_valid_parameters() {
    for system in ["raft", "raft-asyncraft"] {
        let shipped = flymc_core::workloads::all(&folder(), system).unwrap();
        assert!(shipped.len() >= 4, "{system}");
        for w in shipped {
            params(system, &w).unwrap_or_else(|e| panic!("{}: {e}", w.name));
        }
    }
}

/// `workloads/raft/le.toml` with `line` added to its `[params]` (its last table).
fn le_with(line: &str) -> String {
    let text = std::fs::read_to_string(folder().join("raft/le.toml")).unwrap();
    let w = Workload::parse(
        Path::new("workloads/raft/le.toml"),
        &format!("{text}{line}\n"),
    )
    .unwrap();
    params("raft", &w).unwrap_err().to_string()
}

#[test]
fn unknown_and_mistyped_parameters_are_refused_with_file_line_and_column() {
    assert_eq!(
        le_with("speed = 1"),
        "the workload does not fit this system: workloads/raft/le.toml:10:1: unknown parameter \
         `speed` in [params]; valid: election_timers, elections, heartbeats, writes, settle_timeout_ms"
    );
    assert_eq!(
        le_with("writes = [{ to = 0, value = \"one\" }]"),
        "the workload does not fit this system: workloads/raft/le.toml:10:29: \
         params.writes[0].value must be a non-negative integer, got string \"one\""
    );
}
