//! Workload control of faults: nodes down at the start (`[faults] down`) and the condition
//! faults are offered under (`[faults] when`), on zk-le-sim and on real openraft nodes, and
//! both recorded in path files that replay checks.

use crate::support;

use crate::common;

use std::path::Path;

use flymc::systems;
use flymc_core::executor::{Executor, RunOptions};
use flymc_core::explore::Exploration;
use flymc_core::pathfile::PathFile;
use flymc_core::plan::Plan;
use flymc_core::replay::{replay, workload_for, ReplayOutcome};
use flymc_core::run::Run;
use flymc_model::{EventId, EventKind, GlobalState, Target, Workload};
use flymc_raft::{Flavor, RaftSystem};
use flymc_real::RealTarget;
use flymc_strategies::{self as strategy, StrategyContext};
use serde_json::{json, Value};

/// zk-le-sim's three-node election with `faults` as its `[faults]` table, written to
/// `dir/name.toml`.
fn zk_le(dir: &Path, name: &str, faults: &str) -> Workload {
    let text = format!(
        "version = 1\nsystem = \"zk-le-sim\"\nnodes = 3\nmax_events = 200\n[faults]\n{faults}\n[params]\nvariant = \"fixed\"\n"
    );
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    Workload::load(&file).unwrap()
}

/// Every run of up to `paths` paths of `strategy` on `w`.
fn explore(w: &Workload, strategy_name: &str, seed: u64, paths: u64) -> Vec<Run> {
    let system = systems::find(&w.system).unwrap();
    let ctx = StrategyContext {
        seed,
        stateless_dfs: false,
        sets: systems::load_sets(system.as_ref(), w, None).unwrap(),
        ..StrategyContext::for_system(system.as_ref(), w)
    };
    let mut s = strategy::build(strategy_name, &ctx).unwrap();
    let mut runs = Vec::new();
    Exploration::new(system.as_ref(), w, s.as_mut())
        .max_paths(Some(paths))
        .on_run(|r| runs.push(r.clone()))
        .run()
        .unwrap();
    runs
}

fn state_of(s: &GlobalState, node: usize) -> Option<&str> {
    s.nodes[node]
        .alive
        .then(|| s.var(node, "state").and_then(Value::as_str))
        .flatten()
}

fn leader_of(s: &GlobalState) -> Option<usize> {
    (0..s.nodes.len()).find(|&n| state_of(s, n) == Some("LEADING"))
}

#[test]
fn a_node_down_at_the_start_is_brought_up_by_a_reboot_and_joins_the_leader_elected_without_it() {
    let d = tempfile::tempdir().unwrap();
    let up = zk_le(d.path(), "up", "");
    let down = zk_le(d.path(), "down", "reboots = 1\ndown = [2]");

    // With every node up, the highest server id wins: n2 leads in every run.
    let up_runs = explore(&up, "dfs", 0, 30);
    for run in &up_runs {
        assert_eq!(leader_of(run.states.last().unwrap()), Some(2));
    }
    let first_up = &up_runs[0].steps[0].enabled;
    assert!(first_up
        .iter()
        .any(|e| e.event.to == 2 && !e.event.is_fault()));

    let runs = explore(&down, "faults", 0, 200);
    let mut joined = 0;
    for run in &runs {
        let s0 = &run.states[0];
        assert!(!s0.nodes[2].alive, "n2 is down in the first state");
        assert!(s0.network.iter().all(|p| p.to != 2), "nothing waits at n2");
        // The only thing n2 can do is come up, and that costs a reboot, no crash.
        for e in run.steps[0].enabled.iter().filter(|e| e.event.to == 2) {
            assert_eq!(e.event.id, EventId::reboot(2, 0), "{}", e.event.describe());
        }
        assert!(run.events().all(|e| e.kind != EventKind::Crash));
        let reboot = run.events().position(|e| e.kind == EventKind::Reboot);
        let last = run.states.last().unwrap();
        match reboot {
            // The default order never reboots: n0 and n1 elect n1 on their own.
            None => {
                assert!(!last.nodes[2].alive);
                assert_eq!(leader_of(last), Some(1));
                assert_eq!(state_of(last, 0), Some("FOLLOWING"));
            }
            Some(i) => {
                assert_eq!(run.steps[i].event().id, EventId::reboot(2, 0));
                // Brought up after n1 won, n2 follows n1 instead of taking over.
                if leader_of(&run.states[i]) == Some(1) {
                    assert_eq!(leader_of(last), Some(1));
                    assert_eq!(state_of(last, 2), Some("FOLLOWING"));
                    assert_eq!(last.var(2, "leader"), Some(&json!(1)));
                    joined += 1;
                }
            }
        }
    }
    assert!(runs[0].events().all(|e| e.kind != EventKind::Reboot));
    assert!(joined > 0, "some run brought n2 up after n1 was elected");
}

/// n1 is following, read straight from the state.
fn n1_follows(s: &GlobalState) -> bool {
    state_of(s, 1) == Some("FOLLOWING")
}

#[test]
fn faults_are_offered_and_placed_only_in_states_where_the_workload_condition_holds() {
    let d = tempfile::tempdir().unwrap();
    let faults = "crashes = 2\nreboots = 2";
    let gated = zk_le(
        d.path(),
        "gated",
        &format!("{faults}\nwhen = 'n1.state == \"FOLLOWING\"'"),
    );
    let free = zk_le(d.path(), "free", faults);
    for (name, seed) in [("faults", 0), ("random", 1)] {
        let (mut placed, mut crashes) = (0, 0);
        for run in explore(&gated, name, seed, 120) {
            for (i, step) in run.steps.iter().enumerate() {
                let before = &run.states[i];
                if !n1_follows(before) {
                    assert!(
                        step.enabled.iter().all(|e| !e.event.is_fault()),
                        "{name}: a fault offered at step {i} while n1 is {:?}",
                        state_of(before, 1)
                    );
                }
                if step.event().is_fault() {
                    assert!(n1_follows(before), "{name}: fault placed at step {i}");
                    placed += 1;
                    crashes += usize::from(step.event().kind == EventKind::Crash);
                }
            }
        }
        assert!(
            crashes > 0 && placed > crashes,
            "{name}: {placed} faults placed"
        );
    }
    // Without the condition the same search crashes nodes while n1 is not following.
    let unfiltered = explore(&free, "faults", 0, 120).iter().any(|run| {
        run.steps
            .iter()
            .zip(&run.states)
            .any(|(step, before)| step.event().kind == EventKind::Crash && !n1_follows(before))
    });
    assert!(unfiltered);
}

#[test]
fn path_files_record_down_nodes_and_the_fault_condition_and_replay_refuses_others() {
    let d = tempfile::tempdir().unwrap();
    let faults = "crashes = 1\nreboots = 2\ndown = [2]\nwhen = 'n0.alive'";
    let w = zk_le(d.path(), "recorded", faults);
    let system = systems::find("zk-le-sim").unwrap();
    let runs = explore(&w, "faults", 0, 40);
    let run = runs
        .iter()
        .find(|r| r.events().any(|e| e.kind == EventKind::Reboot))
        .expect("a run brings n2 up");
    let file = d.path().join("path.json");
    PathFile::from_run(&w, "faults", 0, 1, run)
        .save(&file)
        .unwrap();
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(json["workload"]["down"], json!([2]));
    assert_eq!(json["workload"]["fault_when"], json!("n0.alive"));

    let recorded = PathFile::load(&file).unwrap();
    let again = workload_for(&recorded, None).unwrap();
    assert_eq!((again.down.as_slice(), again.crashes), (&[2][..], 1));
    match replay(&recorded, system.as_ref(), &again).unwrap() {
        ReplayOutcome::Matched => {}
        other => panic!("{other:?}"),
    }

    // A path file from before these fields loads as recorded with no node down.
    let mut old = json.clone();
    let wref = old["workload"].as_object_mut().unwrap();
    wref.remove("down");
    wref.remove("fault_when");
    let old_file = d.path().join("old.json");
    std::fs::write(&old_file, old.to_string()).unwrap();
    let old = PathFile::load(&old_file).unwrap();
    assert!(old.workload.down.is_empty() && old.workload.fault_when.is_none());

    // The workload file no longer puts n2 down: replay says what changed, in one line.
    std::fs::write(
        &w.file,
        std::fs::read_to_string(&w.file)
            .unwrap()
            .replace("down = [2]\n", ""),
    )
    .unwrap();
    let e = workload_for(&recorded, None).unwrap_err().to_string();
    assert!(
        e.contains("recorded with [faults] down = [2], when = 'n0.alive'")
            && e.contains("now says down = [], when = 'n0.alive'"),
        "{e}"
    );
    let ran = common::flymc_in(d.path(), &["replay", file.to_str().unwrap()]);
    common::assert_one_line_error(&ran, "recorded with [faults] down = [2]");
}

fn openraft() -> RaftSystem {
    RaftSystem::with_program(
        Flavor::OpenRaft,
        support::node_program("flymc-raft-nodes", "flymc-raft-node"),
    )
}

#[test]
fn a_real_raft_node_down_at_the_start_has_no_process_until_its_reboot_and_then_follows() {
    let text = "version = 1\nsystem = \"raft\"\nnodes = 3\nmax_events = 60\n[faults]\nreboots = 1\ndown = [0]\n[params]\nelection_timers = [1]\nelections = 1\n";
    let w = Workload::parse(Path::new("down.toml"), text).unwrap();
    let sys = openraft();

    // Started: n1 and n2 run, n0 has no process and an empty data directory.
    let mut t = RealTarget::new(sys.config(&w).unwrap());
    t.start(&w).unwrap();
    let mut running: Vec<usize> = t.pids().into_iter().map(|(n, _)| n).collect();
    running.sort_unstable();
    assert_eq!(running, vec![1, 2]);
    let empty = std::fs::read_dir(&t.slots()[0].data_dir).map_or(true, |mut d| d.next().is_none());
    assert!(empty, "n0's data directory is empty");
    let s0 = t.settle().unwrap();
    assert!(!s0.nodes[0].alive && s0.nodes[0].vars.is_empty());
    assert!(t.pending().iter().all(|e| e.to != 0));
    t.stop().unwrap();

    // The default order never brings n0 up: n1 leads n2.
    let exec = Executor::new(&sys, &w);
    let first = exec
        .run(&mut t, &Plan::fifo(Vec::new()), RunOptions::default())
        .unwrap();
    assert!(first.states.iter().all(|s| !s.nodes[0].alive));
    let role = |s: &GlobalState, n: usize| s.var(n, "role").cloned();
    let elected = first
        .states
        .iter()
        .position(|s| role(s, 1) == Some(json!("leader")))
        .unwrap_or_else(|| {
            let trace: Vec<String> = first.events().map(|e| e.describe()).collect();
            panic!(
                "n1 is elected without n0: {:?} {:?} {trace:?}\n{:?}",
                first.ending,
                first.violation,
                first.states.last()
            )
        });

    // Bring n0 up once n1 leads: it starts as incarnation 0 and follows n1 in n1's term.
    let mut prefix = first.event_ids()[..elected].to_vec();
    prefix.push(EventId::reboot(0, 0));
    let second = exec
        .run(&mut t, &Plan::fifo(prefix), RunOptions::default())
        .unwrap();
    assert_eq!(second.steps[elected].event().id, EventId::reboot(0, 0));
    let last = second.states.last().unwrap();
    assert!(last.nodes[0].alive);
    assert_eq!(role(last, 0), Some(json!("follower")));
    assert_eq!(last.var(0, "leader"), Some(&json!(1)));
    assert_eq!(last.var(0, "term"), last.var(1, "term"));
    assert_eq!(last.var(0, "log"), last.var(1, "log"));
}
