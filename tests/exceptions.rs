//! What nodes catch is a finding: `no-exception` fires on the step where a node records an
//! exception its allow list does not cover, and the path replays to it. On real ZooKeeper
//! (a follower's `followLeader` catching the lost connection to its crashed leader, which the
//! system's default allow list lets pass and the test's workload does not) and on the Rust
//! hook's demo node (an error a handler records, a panic of one of its threads).
//!
//! The ZooKeeper test needs `flymc setup zookeeper` done; the demo tests build the demo node.

use crate::common;
use crate::support;

use std::path::Path;

use common::{flymc_in, path_file};
use flymc::demo::DemoSystem;
use flymc_core::explore::Exploration;
use flymc_core::pathfile::PathFile;
use flymc_core::replay::{replay, ReplayOutcome};
use flymc_core::run::Run;
use flymc_model::exceptions::{compile, subject, NO_ERROR_LOG, NO_EXCEPTION};
use flymc_model::{System, Workload};
use flymc_strategies::{self as strategy, StrategyContext};
use serde_json::{json, Value};

fn demo() -> DemoSystem {
    DemoSystem::with_program(support::node_program("flymc-demo-node", "flymc-demo-node"))
}

fn demo_workload(extra: &str, clients: &str) -> Workload {
    let text = format!(
        "version = 1\nsystem = \"hook-demo\"\nnodes = 2\nmax_events = 20\n{extra}\n[params]\nclients = {clients}\n"
    );
    Workload::parse(Path::new("demo.toml"), &text).expect("valid test workload")
}

/// Explore `w` with dfs for up to `paths` paths; the runs in order.
fn explore(system: &dyn System, w: &Workload, paths: u64) -> Vec<Run> {
    let ctx = StrategyContext {
        stateless_dfs: false,
        ..StrategyContext::for_system(system, w)
    };
    let mut strat = strategy::build("dfs", &ctx).unwrap();
    let mut runs = Vec::new();
    Exploration::new(system, w, strat.as_mut())
        .max_paths(Some(paths))
        .on_run(|r| runs.push(r.clone()))
        .run()
        .unwrap_or_else(|e| panic!("exploration failed: {e}"));
    runs
}

/// The violating run's `no-exception` message, after checking that its path file replays to
/// the same violation at the same step.
fn violation_that_replays(sys: &DemoSystem, w: &Workload, runs: &[Run]) -> (String, usize) {
    let (i, run) = runs
        .iter()
        .enumerate()
        .find(|(_, r)| r.violation.is_some())
        .expect("a violation");
    let v = run.violation.clone().unwrap();
    assert_eq!(v.property, NO_EXCEPTION, "{v}");
    let file = PathFile::from_run(w, "dfs", 0, i as u64 + 1, run);
    match replay(&file, sys, w).unwrap() {
        ReplayOutcome::Reproduced(again) => assert_eq!(again, v),
        other => panic!("not reproduced: {other:?}"),
    }
    (v.message, v.step)
}

/// The step at which the event named `name` ran.
fn step_of(run: &Run, name: &str) -> usize {
    run.events()
        .position(|e| e.describe().contains(name))
        .unwrap_or_else(|| panic!("no `{name}` in {:?}", run.event_ids()))
}

#[test]
fn an_error_a_rust_handler_records_is_a_no_exception_finding_that_replays() {
    let sys = demo();
    let w = demo_workload(
        "",
        "[{ to = 0, name = \"add\", value = 1 }, { to = 1, name = \"fail\", value = 7 }]",
    );
    let runs = explore(&sys, &w, 3);
    let (message, step) = violation_that_replays(&sys, &w, &runs);
    assert!(
        message.starts_with(
            "n1 caught demo-error (asked to fail (7)) in hooks/rust/demo-node/src/main.rs:"
        ),
        "{message}"
    );
    let run = runs.iter().find(|r| r.violation.is_some()).unwrap();
    assert_eq!(
        step,
        step_of(run, "fail"),
        "the step of the failing request"
    );
}

#[test]
fn a_panic_in_a_rust_node_thread_is_a_no_exception_finding_that_replays() {
    let sys = demo();
    let w = demo_workload("", "[{ to = 0, name = \"fail\", panic = true }]");
    let runs = explore(&sys, &w, 1);
    let (message, step) = violation_that_replays(&sys, &w, &runs);
    assert!(
        message.starts_with(
            "n0 caught panic (demo: asked to panic) in hooks/rust/demo-node/src/main.rs:"
        ),
        "{message}"
    );
    assert_eq!(step, 0);
}

#[test]
fn an_allowed_error_is_in_the_state_but_no_finding() {
    let sys = demo();
    let w = demo_workload(
        "[exceptions]\nallow = ['^demo-error: asked to fail \\(\\d+\\) in .*main\\.rs:\\d+$']",
        "[{ to = 0, name = \"fail\", value = 3 }]",
    );
    let runs = explore(&sys, &w, 1);
    assert!(runs[0].violation.is_none(), "{:?}", runs[0].violation);
    let last = runs[0].states.last().unwrap();
    let ex = last
        .var(0, "exceptions")
        .expect("the record is in the state");
    assert_eq!(ex[0]["type"], "demo-error");
    assert_eq!(ex[0]["message"], "asked to fail (3)");
    // A node that caught nothing reports no such variable (its states hash as before).
    assert_eq!(last.var(1, "exceptions"), None);
    assert_eq!(runs[0].states[0].var(0, "exceptions"), None::<&Value>);
}

#[test]
fn a_log_line_a_workload_pattern_matches_is_a_no_error_log_finding_that_replays() {
    let sys = demo();
    // The demo node logs requests it does not know; the group keeps the request id out.
    let w = demo_workload(
        "[logs]\npatterns = ['flymc-demo-node: (ignoring \\w+ `\\w+`)']",
        "[{ to = 0, name = \"add\", value = 1 }, { to = 1, name = \"bogus\" }]",
    );
    let runs = explore(&sys, &w, 3);
    let (i, run) = runs
        .iter()
        .enumerate()
        .find(|(_, r)| r.violation.is_some())
        .expect("a violation");
    let v = run.violation.clone().unwrap();
    assert_eq!(v.property, NO_ERROR_LOG, "{v}");
    assert_eq!(v.message, "n1 logged: ignoring Client `bogus`");
    assert_eq!(v.step, step_of(run, "bogus"));
    let file = PathFile::from_run(&w, "dfs", 0, i as u64 + 1, run);
    match replay(&file, &sys, &w).unwrap() {
        ReplayOutcome::Reproduced(again) => assert_eq!(again, v),
        other => panic!("not reproduced: {other:?}"),
    }
}

#[test]
fn zookeepers_default_allow_list_lets_a_crash_pass_but_not_a_null_pointer() {
    let zookeeper = flymc_zookeeper::ZookeeperSystem::default();
    let allow = compile(&flymc_model::System::about(&zookeeper).allowed_exceptions)
        .expect("the patterns compile");
    let allowed = |ty: &str, msg: Option<&str>, place: &str| {
        let s = subject(&json!({ "type": ty, "message": msg, "where": place }));
        allow.iter().any(|a| a.is_match(&s))
    };
    let follow = "org.apache.zookeeper.server.quorum.Follower.followLeader";
    let sync = "org.apache.zookeeper.server.quorum.Learner.syncWithLeader";
    assert!(allowed(
        "java.net.SocketException",
        Some("flymc: the connection to the peer is lost"),
        follow
    ));
    assert!(allowed(
        "java.io.IOException",
        Some("Failed connect to /<addr>"),
        follow
    ));
    assert!(allowed("java.lang.InterruptedException", None, follow));
    assert!(!allowed("java.lang.NullPointerException", None, sync));
    assert!(allowed(
        "java.io.IOException",
        Some("Leaders epoch, 1 is less than accepted epoch, 2"),
        "org.apache.zookeeper.server.quorum.Learner.registerWithLeader"
    ));
    // A leader in discovery refusing a learner that is ahead of it is 3.8.0's design
    // (docs/FINDINGS.md, "Findings and their verdicts"); the reconfiguration variant of the
    // message is not, nor is the same refusal anywhere but the handler that catches it.
    let handler = "org.apache.zookeeper.server.quorum.LearnerHandler.run";
    let ahead = "Follower is ahead of the leader, leader summary: 0 (current epoch), 0 (last zxid)";
    assert!(allowed("java.io.IOException", Some(ahead), handler));
    assert!(!allowed(
        "java.io.IOException",
        Some("Follower is ahead of the leader (has a later activated configuration)"),
        handler
    ));
    assert!(!allowed(
        "java.io.IOException",
        Some(ahead),
        "org.apache.zookeeper.server.quorum.Leader.lead"
    ));
    // A real end of stream (no message) is not: flymc's ordered closes carry their own message,
    // so a bare EOFException is a connection that ended before flymc said so (a flymc defect).
    assert!(!allowed(
        "java.io.EOFException",
        None,
        "org.apache.zookeeper.server.quorum.Learner.registerWithLeader"
    ));
    assert!(allowed(
        "java.io.EOFException",
        Some("flymc: the peer closed the connection"),
        "org.apache.zookeeper.server.quorum.Learner.registerWithLeader"
    ));
    assert!(!allowed(
        "java.lang.IllegalStateException",
        Some("flymc: the connection to the peer is lost"),
        follow
    ));
}

/// Real ZooKeeper: n2 (the highest id) leads, then crashes. Its followers' `followLeader`
/// catches the lost connection, which 3.8.0 treats as normal (the default allow list) but
/// this workload does not: `system = false` keeps only its own patterns.
const ZK_LEADER_CRASH: &str = r#"version = 1
system = "zookeeper"
description = "the leader n2 may crash once; a follower catching the lost connection is a finding"
nodes = 3
max_events = 200

[faults]
crashes = 1
reboots = 0
crash_nodes = [2]

[exceptions]
system = false
allow = ["flymc: the read timed out", "^java\\.lang\\.InterruptedException: Timeout while waiting"]
"#;

#[test]
fn a_zookeeper_follower_catching_its_crashed_leaders_connection_is_a_finding_that_replays() {
    let d = tempfile::tempdir().unwrap();
    let wl = d.path().join("leader-crash.toml");
    std::fs::write(&wl, ZK_LEADER_CRASH).unwrap();
    let wl = wl.to_str().unwrap();
    let ran = flymc_in(
        d.path(),
        &[
            "run",
            "--system",
            "zookeeper",
            "--workload",
            wl,
            "--max-paths",
            "20",
            "--strategy",
            "dfs",
        ],
    );
    assert_eq!(ran.code, 1, "{}", ran.all());
    let line = ran
        .stdout
        .lines()
        .find(|l| l.contains("VIOLATION"))
        .unwrap_or_else(|| panic!("no violation line:\n{}", ran.all()));
    assert!(line.contains(NO_EXCEPTION), "{line}");
    let file = path_file(&ran, d.path());
    let path: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let v = &path["violation"];
    assert_eq!(v["property"], NO_EXCEPTION, "{v}");
    let message = v["message"].as_str().unwrap();
    assert!(
        message.contains(
            "caught java.net.SocketException (flymc: the connection to the peer is lost) in \
             org.apache.zookeeper.server.quorum.Follower.followLeader"
        ),
        "{message}"
    );
    // The step is the one where the follower learns of the crash: after n2's crash.
    let step = v["step"].as_u64().unwrap() as usize;
    let events: Vec<&str> = path["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["description"].as_str().unwrap())
        .collect();
    let crash = events
        .iter()
        .position(|e| e.starts_with("crash n2"))
        .unwrap_or_else(|| panic!("no crash of n2 in {events:?}"));
    assert!(step > crash, "step {step}, crash at {crash}: {events:?}");
    assert!(events[step].contains("disconnect"), "{}", events[step]);
    // The path file replays to the same violation.
    let again = flymc_in(d.path(), &["replay", file.to_str().unwrap()]);
    assert_eq!(again.code, 1, "{}", again.all());
    assert!(
        again
            .stdout
            .contains(&format!("reproduced: {NO_EXCEPTION}")),
        "{}",
        again.all()
    );
}
