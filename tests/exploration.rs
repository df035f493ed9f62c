//! Exploration end to end: determinism on every simulated target.

mod common;

use common::flymc_in;

#[test]
fn every_simulated_target_is_deterministic() {
    let d = tempfile::tempdir().unwrap();
    for (system, workload) in [
        ("cassandra-sim", "paxos-2"),
        ("cassandra-sim", "cass-5"),
        ("zk-le-sim", "le-3crash"),
        ("zk-le-sim", "zk-1419"),
    ] {
        for strategy in ["dfs", "random", "flymc"] {
            let r = flymc_in(
                d.path(),
                &[
                    "run",
                    "--system",
                    system,
                    "--workload",
                    workload,
                    "--strategy",
                    strategy,
                    "--max-paths",
                    "40",
                    "--check-determinism",
                ],
            );
            assert!(
                r.code == 0 || r.code == 1,
                "{system}/{workload} {strategy}:\n{}",
                r.all()
            );
            assert!(!r.all().contains("nondeterminism"), "{}", r.all());
        }
    }
}
