//! The ZooKeeper workloads' `[params]`: every shipped one fits, and a bad one is refused with
//! its file, line and column.

use std::path::{Path, PathBuf};

use flymc_model::Workload;

fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads")
}

#[test]
fn every_shipped_workload_has_valid_parameters() {
    let shipped = flymc_core::workloads::all(&folder(), "zookeeper").unwrap();
    assert!(shipped.len() >= 6);
    for w in shipped {
        flymc_zookeeper::params(&w).unwrap_or_else(|e| panic!("{}: {e}", w.name));
    }
}

#[test]
fn unknown_and_mistyped_parameters_are_refused_with_file_line_and_column() {
    let text = std::fs::read_to_string(folder().join("zookeeper/zk-1419.toml")).unwrap();
    let error = |line: &str| {
        let text = format!("{text}{line}\n");
        let w = Workload::parse(Path::new("workloads/zookeeper/zk-1419.toml"), &text).unwrap();
        flymc_zookeeper::params(&w).unwrap_err().to_string()
    };
    let last = text.lines().count() + 1;
    assert_eq!(
        error("colour = \"blue\""),
        format!(
            "the workload does not fit this system: workloads/zookeeper/zk-1419.toml:{last}:1: \
             unknown parameter `colour` in [params]; valid: variant, epochs, settle_timeout_ms, log, clients, zookeeper_home, staggered_start"
        )
    );
    assert_eq!(
        error("settle_timeout_ms = \"1m\""),
        format!(
            "the workload does not fit this system: workloads/zookeeper/zk-1419.toml:{last}:21: \
             params.settle_timeout_ms must be a non-negative integer, got string \"1m\""
        )
    );
}
