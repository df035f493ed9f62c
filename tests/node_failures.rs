//! Nodes that end on their own are findings, not tool errors: a node process that exits is
//! `node-exited`, a rebooted one that exits before it is ready is `cannot-restart`; both come
//! with a path file that replays, the node logs kept beside it, and the exploration goes on.
//! Real processes of the hook crate's demo node; each test has its own server, ports and dirs.

use crate::support;

use std::path::Path;

use flymc::demo::DemoSystem;
use flymc_core::executor::{Executor, RunOptions};
use flymc_core::explore::{Exploration, KeepLogs};
use flymc_core::pathfile::PathFile;
use flymc_core::plan::Plan;
use flymc_core::replay::{replay, ReplayOutcome};
use flymc_core::run::{Ending, Run, CANNOT_RESTART_PROPERTY, EXITED_PROPERTY};
use flymc_model::{EventKind, Workload};
use flymc_real::RealTarget;
use flymc_strategies::{self as strategy, StrategyContext};

fn demo() -> DemoSystem {
    DemoSystem::with_program(support::node_program("flymc-demo-node", "flymc-demo-node"))
}

fn workload(nodes: usize, extra: &str, params: &str) -> Workload {
    let text = format!(
        "version = 1\nsystem = \"hook-demo\"\nnodes = {nodes}\nmax_events = 40\n{extra}\n[params]\n{params}\n"
    );
    Workload::parse(Path::new("failures.toml"), &text).expect("valid test workload")
}

#[test]
fn a_node_that_exits_is_a_node_exited_finding_and_the_target_runs_on() {
    let w = workload(2, "", "clients = [{ to = 1, name = \"exit\", code = 7 }]");
    let sys = demo();
    let mut t = RealTarget::new(sys.config(&w).unwrap());
    let exec = Executor::new(&sys, &w);
    let run = exec
        .run(&mut t, &Plan::fifo(Vec::new()), RunOptions::default())
        .expect("an exit is a finding, not an error");
    assert_eq!(run.ending, Ending::Exited { step: 0 });
    let v = run.violation.as_ref().expect("the exit is reported");
    assert_eq!(v.property, EXITED_PROPERTY);
    assert_eq!(v.step, 0);
    assert!(
        v.message
            .contains("n1 exited on its own (exit status 7) after client exit"),
        "{}",
        v.message
    );
    assert!(t.pids().is_empty(), "the executor stopped the cluster");
    // The path file replays to the same finding on fresh processes.
    let file = PathFile::from_run(&w, "fifo", 0, 1, &run);
    match replay(&file, &sys, &w).unwrap() {
        ReplayOutcome::Reproduced(again) => assert_eq!(again.property, EXITED_PROPERTY),
        other => panic!("not reproduced: {other:?}"),
    }
}

/// One node adds, writing its sum to two files behind two crash points; a crash between the
/// writes leaves files that disagree, and the rebooted node refuses to start.
#[test]
fn a_rebooted_node_that_refuses_its_disk_state_is_cannot_restart_and_exploration_goes_on() {
    let w = workload(
        1,
        "[faults]\ncrashes = 1\nreboots = 1",
        "persist = true\nchecked = true\nclients = [{ to = 0, name = \"add\", value = 1 }]",
    );
    let sys = demo();
    let out = tempfile::tempdir().unwrap();
    let ctx = StrategyContext::for_system(&sys, &w);
    let mut strat = strategy::build("faults", &ctx).unwrap();
    let budget = 12;
    let mut runs: Vec<Run> = Vec::new();
    let outcome = Exploration::new(&sys, &w, strat.as_mut())
        .max_paths(Some(budget))
        .keep_going(true)
        .keep_logs(KeepLogs {
            dir: out.path().to_path_buf(),
            prefix: "demo".into(),
            all: false,
        })
        .on_run(|r| runs.push(r.clone()))
        .run()
        .expect("node exits are findings, not errors");
    assert!(
        outcome.paths == budget || outcome.exhausted,
        "went on to the budget: {} paths",
        outcome.paths
    );
    assert!(
        runs.iter().any(|r| r.violation.is_none()),
        "paths without the crash between the writes are fine"
    );
    let (number, run) = runs
        .iter()
        .enumerate()
        .find(|(_, r)| {
            r.violation
                .as_ref()
                .is_some_and(|v| v.property == CANNOT_RESTART_PROPERTY)
        })
        .expect("a crash between the two writes was explored");
    let v = run.violation.as_ref().unwrap();
    let last = run.steps.last().unwrap().event();
    assert_eq!(last.kind, EventKind::Reboot, "found at the reboot");
    assert_eq!(run.ending, Ending::Exited { step: v.step });
    assert!(
        v.message
            .contains("n0 rebooted, exited before it was ready (exit status 1)"),
        "{}",
        v.message
    );
    assert!(v.message.contains("refusing to start"), "{}", v.message);
    // Its logs were kept, and they say why.
    let logs = run.logs.as_ref().expect("a violating run keeps its logs");
    assert_eq!(
        logs,
        &out.path().join(format!("demo-path{}.logs", number + 1))
    );
    let log = std::fs::read_to_string(logs.join("n0.log")).unwrap();
    assert!(log.contains("refusing to start"), "{log}");
    // The path file replays to the same finding.
    let file = PathFile::from_run(&w, "faults", 0, number as u64 + 1, run);
    let saved = out.path().join("path.json");
    file.save(&saved).unwrap();
    let loaded = PathFile::load(&saved).unwrap();
    match replay(&loaded, &sys, &w).unwrap() {
        ReplayOutcome::Reproduced(again) => {
            assert_eq!(again.property, CANNOT_RESTART_PROPERTY);
            assert_eq!(again.step, v.step);
        }
        other => panic!("not reproduced: {other:?}"),
    }
}
