//! Real Raft clusters under flymc: openraft (`raft`) and async-raft 0.6.1 (`raft-asyncraft`)
//! node processes driven through the event server. Every test has its own server on a free
//! port and its own run directories, so they run in parallel; nothing here sleeps to
//! synchronise.

use crate::support;

use crate::common;

use std::path::Path;

use flymc::systems;
use flymc_core::executor::{Executor, RunOptions};
use flymc_core::explore::Exploration;
use flymc_core::pathfile::PathFile;
use flymc_core::plan::{Plan, Tail};
use flymc_core::replay::{replay, ReplayOutcome};
use flymc_core::run::{Ending, Run};
use flymc_model::{System, Workload};
use flymc_raft::{Flavor, RaftSystem};
use flymc_strategies::{self as strategy, FlymcOptions, StrategyContext};
use serde_json::{json, Value};

fn openraft() -> RaftSystem {
    RaftSystem::with_program(
        Flavor::OpenRaft,
        support::node_program("flymc-raft-nodes", "flymc-raft-node"),
    )
}

fn asyncraft() -> RaftSystem {
    RaftSystem::with_program(
        Flavor::AsyncRaft,
        support::node_program("flymc-raft-nodes", "flymc-asyncraft-node"),
    )
}

fn shipped(system: &str, name: &str) -> Workload {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../workloads")
        .join(system)
        .join(format!("{name}.toml"));
    Workload::load(&file).expect("shipped workload")
}

fn explore(
    system: &dyn System,
    w: &Workload,
    name: &str,
    paths: u64,
    check_determinism: bool,
) -> (Vec<Run>, bool, bool) {
    let sets = systems::load_sets(system, w, None).expect("the raft sets file loads");
    let ctx = StrategyContext {
        workload: w,
        symmetry: system.symmetry(w),
        seed: 0,
        bound: 25,
        stateless_dfs: system.has(flymc_model::Feature::SummaryStates),
        sets,
        flymc: FlymcOptions {
            symmetry: true,
            independence: true,
            parallel_flips: true,
        },
        fault_vars: system.about().fault_vars.clone(),
        disk_state: true,
        pct_depth: 3,
    };
    let mut strat = strategy::build(name, &ctx).unwrap();
    let mut runs = Vec::new();
    let out = Exploration::new(system, w, strat.as_mut())
        .max_paths(Some(paths))
        .check_determinism(check_determinism)
        .on_run(|r| runs.push(r.clone()))
        .run()
        .unwrap_or_else(|e| panic!("exploration failed: {e}"));
    (runs, out.exhausted, out.violation.is_some())
}

fn leaders(run: &Run) -> Vec<usize> {
    let last = run.states.last().unwrap();
    (0..last.nodes.len())
        .filter(|&i| last.var(i, "role") == Some(&json!("leader")))
        .collect()
}

#[test]
fn flymc_exhausts_openraft_leader_election_and_every_path_elects_one_leader() {
    let sys = openraft();
    let w = shipped("raft", "le");
    // A timer that fires before the message that would have cancelled it is an order of its
    // own (828 paths to exhaust when measured; 45 before cancelled timers were tried).
    let (runs, exhausted, violated) = explore(&sys, &w, "flymc", 1500, false);
    assert!(exhausted, "raft/le is exhausted within 1500 paths");
    assert!(!violated);
    assert!(runs.len() > 5, "more than a handful of orders");
    let ended: Vec<&Run> = runs
        .iter()
        .filter(|r| r.ending == Ending::Quiescent)
        .collect();
    assert!(!ended.is_empty());
    for r in ended {
        assert_eq!(leaders(r).len(), 1, "one leader at the end");
        let last = r.states.last().unwrap();
        let log = last.var(0, "log").and_then(Value::as_array).unwrap();
        assert!(log.len() >= 2, "membership and the leader's blank entry");
    }
    // Every run that ended elected: no node is left in term 0. (A sleep-blocked run stops
    // part way by design: its rest is explored by other paths.)
    for r in runs.iter().filter(|r| r.ending == Ending::Quiescent) {
        let last = r.states.last().unwrap();
        assert!((0..3).all(|i| last.var(i, "term").and_then(Value::as_i64) >= Some(1)));
    }
}

#[test]
fn openraft_paths_are_deterministic_and_replay() {
    let sys = openraft();
    let w = shipped("raft", "update-2");
    // Every path is run twice and compared state by state.
    let (runs, _, violated) = explore(&sys, &w, "random", 6, true);
    assert!(!violated);
    for (i, r) in runs.iter().enumerate() {
        let file = PathFile::from_run(&w, "random", 0, i as u64 + 1, r);
        match replay(&file, &sys, &w).unwrap() {
            ReplayOutcome::Matched => {}
            other => panic!("path {} did not replay: {other:?}", i + 1),
        }
        // Both writes reach the leader and are applied there.
        let last = r.states.last().unwrap();
        let l = leaders(r)[0];
        let applied: Vec<&Value> = last
            .var(l, "applied")
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .map(|e| &e["value"])
            .filter(|v| v.is_u64())
            .collect();
        assert_eq!(
            applied.len(),
            2,
            "both writes applied at the leader: {last:?}"
        );
    }
}

#[test]
fn a_crashed_openraft_leader_is_replaced_and_the_rebooted_node_keeps_its_log() {
    let sys = openraft();
    let w = shipped("raft", "stale-commit");
    // mdpor tries crashes and reboots of n0 at many points; every run stays safe.
    let (runs, _, violated) = explore(&sys, &w, "mdpor", 40, false);
    assert!(!violated, "openraft checks the log match before it commits");
    let crashed = runs
        .iter()
        .filter(|r| r.events().any(|e| e.name == "reboot"))
        .count();
    assert!(crashed > 0, "some paths crashed and rebooted n0");
    // Somewhere n1 or n2 took over as the leader of a later term.
    assert!(runs.iter().any(|r| {
        let last = r.states.last().unwrap();
        leaders(r).iter().any(|&l| l != 0) && last.var(0, "term").and_then(Value::as_i64) >= Some(2)
    }));
}

#[test]
fn asyncraft_elects_a_leader() {
    let sys = asyncraft();
    let w = shipped("raft-asyncraft", "le");
    let (runs, _, violated) = explore(&sys, &w, "flymc", 30, false);
    assert!(!violated);
    for r in &runs {
        assert_eq!(leaders(r).len(), 1, "{:?}", r.event_ids());
    }
}

#[test]
fn bad_raft_workload_parameters_are_refused() {
    let text = "version = 1\nsystem = \"raft\"\nnodes = 3\nmax_events = 10\n[params]\nelection_timers = [5]\n";
    let w = Workload::parse(Path::new("bad.toml"), text).unwrap();
    let err = openraft().target(&w).err().expect("refused").to_string();
    assert!(
        err.contains("election_timers must name a node 0..2"),
        "{err}"
    );
    let text = "version = 1\nsystem = \"raft\"\nnodes = 3\nmax_events = 10\n[params]\nspeed = 1\n";
    let w = Workload::parse(Path::new("bad.toml"), text).unwrap();
    let err = openraft().target(&w).err().expect("refused").to_string();
    assert!(err.contains("unknown parameter `speed`"), "{err}");
    let text =
        "version = 1\nsystem = \"raft\"\nnodes = 3\nmax_events = 10\n[params]\nheartbeats = 10\n";
    let w = Workload::parse(Path::new("bad.toml"), text).unwrap();
    let err = openraft().target(&w).err().expect("refused").to_string();
    assert!(err.contains("heartbeats must be 0..9"), "{err}");
}

/// The interleaving of `raft-asyncraft/stale-commit` that breaks async-raft 0.6.1, as the
/// descriptions of the events in order (the first enabled event whose description contains
/// the text is taken).
const STALE_COMMIT: &[&str] = &[
    "client write @n1",
    "timeout elect @n0",
    "vote n0->n1",
    "vote n0->n2",
    "vote-reply n1->n0",
    "vote-reply n2->n0",
    "append n0->n1",
    "append n0->n2",
    "append-reply n1->n0",
    "append-reply n2->n0",
    // n1 gets the membership entry alone, n2 too, then n0 appends the forwarded write.
    "append n0->n1",
    "append n0->n2",
    "append-reply n1->n0",
    "append-reply n2->n0",
    "append n0->n2",
    "append-reply n2->n0",
    "forward n1->n0",
    // n0 crashes with the write at index 2 in its log alone.
    "crash n0",
    "client crashed @n1",
    "client crashed @n2",
    "timeout elect @n1",
    "vote n1->n2",
    "vote-reply n2->n1",
    "append n1->n2",
    "append-reply n2->n1",
    "append n1->n2",
    "append-reply n2->n1",
    // n1's blank entry of term 2 at index 2 is committed (n1 and n2).
    "append n1->n2",
    "append-reply n2->n1",
    "reboot n0",
    // n0 campaigns for terms 2 and 3 before anything of n1 reaches it.
    "timeout elect @n0",
    "timeout elect @n0",
    r#"vote n0->n1 {"last_index":2,"term":3}"#,
    r#"vote n0->n2 {"last_index":2,"term":3}"#,
    "timeout elect @n1",
    r#"vote n1->n2 {"last_index":2,"term":4}"#,
    "vote-reply n2->n1",
    // n1's first heartbeat of term 4 carries leader_commit 2: n0 applies its own write.
    "append n1->n0",
];

/// Run `script` on `system` one event at a time: each step re-runs the path so far and takes
/// the first enabled event that matches the next line.
fn scripted(system: &dyn System, w: &Workload, script: &[&str]) -> Run {
    let ex = Executor::new(system, w);
    let mut prefix = Vec::new();
    for (step, want) in script.iter().enumerate() {
        let mut target = system.target(w).unwrap();
        let plan = Plan {
            prefix: prefix.clone(),
            tail: Tail::Stop,
            strict: true,
            sleep: Vec::new(),
            sleep_at: 0,
        };
        let run = ex
            .run(target.as_mut(), &plan, RunOptions::default())
            .unwrap();
        assert_eq!(run.steps.len(), step, "the prefix ran whole");
        assert!(
            run.violation.is_none(),
            "{:?} before step {step}",
            run.violation
        );
        let next = run
            .final_enabled
            .iter()
            .find(|e| e.event.describe().contains(want))
            .unwrap_or_else(|| {
                let enabled: Vec<String> = run
                    .final_enabled
                    .iter()
                    .map(|e| e.event.describe())
                    .collect();
                panic!("step {step}: nothing matches `{want}`; enabled: {enabled:#?}")
            });
        prefix.push(next.event.id);
    }
    let mut target = system.target(w).unwrap();
    let plan = Plan {
        prefix,
        tail: Tail::Stop,
        strict: true,
        sleep: Vec::new(),
        sleep_at: 0,
    };
    ex.run(target.as_mut(), &plan, RunOptions::default())
        .unwrap()
}

#[test]
fn asyncraft_applies_an_entry_its_leader_never_committed() {
    let sys = asyncraft();
    let w = shipped("raft-asyncraft", "stale-commit");
    let run = scripted(&sys, &w, STALE_COMMIT);
    let v = run
        .violation
        .expect("async-raft 0.6.1 breaks state machine safety");
    assert_eq!(v.property, "state-machine-safety");
    assert_eq!(
        v.step,
        STALE_COMMIT.len() - 1,
        "on n1's heartbeat: {}",
        v.message
    );
    assert_eq!(w.expect.as_deref(), Some("state-machine-safety"));
    // n0 applied its own write at index 2; n1 applied its blank entry of term 2 there.
    let last = run.states.last().unwrap();
    let applied = |n: usize| {
        last.var(n, "applied")
            .and_then(Value::as_array)
            .unwrap()
            .clone()
    };
    assert_eq!(applied(0)[1], json!({"term": 1, "value": 7}));
    assert_eq!(applied(1)[1], json!({"term": 2, "value": null}));
}

#[test]
fn the_shipped_stale_commit_path_replays_the_asyncraft_bug() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/paths/raft-asyncraft-stale-commit.json");
    let path = PathFile::load(&file).unwrap();
    let w = shipped("raft-asyncraft", "stale-commit");
    assert_eq!(
        path.workload.sha256, w.sha256,
        "the path was recorded on this workload"
    );
    for _ in 0..2 {
        match replay(&path, &asyncraft(), &w).unwrap() {
            ReplayOutcome::Reproduced(v) => assert_eq!(v.property, "state-machine-safety"),
            other => panic!("the stale-commit path did not replay: {other:?}"),
        }
    }
}

/// The shallowest interleaving of `raft-asyncraft/apply-before-match` (the write sent to the
/// leader itself) that breaks async-raft 0.6.1: apart from the default order (messages oldest
/// first, then client events, then timers) it takes n0's election timer before the write, a
/// crash of n0 right after the write, a reboot, and n0's election timer twice before the
/// reboot notices.
const APPLY_BEFORE_MATCH: &[&str] = &[
    // Deviation: the election first, so the write arrives once the election is over.
    "timeout elect @n0",
    "vote n0->n1",
    "vote n0->n2",
    "vote-reply n1->n0",
    "vote-reply n2->n0",
    "append n0->n1",
    "append n0->n2",
    "append-reply n1->n0",
    "append-reply n2->n0",
    "append n0->n1",
    "append n0->n2",
    "append-reply n1->n0",
    "append-reply n2->n0",
    "append n0->n1",
    "append n0->n2",
    "append-reply n1->n0",
    "append-reply n2->n0",
    // n1 and n2 have the membership entry; n0 appends the write at index 2 and sends it.
    "client write @n0",
    // Deviation: n0 crashes before its appends leave.
    "crash n0",
    "client crashed @n1",
    "client crashed @n2",
    "timeout elect @n1",
    "vote n1->n2",
    "vote-reply n2->n1",
    "append n1->n2",
    "append-reply n2->n1",
    "append n1->n2",
    "append-reply n2->n1",
    // n1's blank entry of term 2 at index 2 is committed (n1 and n2).
    "append n1->n2",
    "append-reply n2->n1",
    // Deviations: the reboot, and n0's campaigns for terms 2 and 3 before the reboot notices
    // (on which n1 would send n0 its blank entry).
    "reboot n0",
    "timeout elect @n0",
    r#"vote n0->n1 {"last_index":2,"term":2}"#,
    r#"vote n0->n2 {"last_index":2,"term":2}"#,
    "vote-reply n1->n0",
    "vote-reply n2->n0",
    "timeout elect @n0",
    r#"vote n0->n1 {"last_index":2,"term":3}"#,
    r#"vote n0->n2 {"last_index":2,"term":3}"#,
    "vote-reply n1->n0",
    "vote-reply n2->n0",
    "client rebooted @n1",
    "client rebooted @n2",
    // n1's term-2 append is refused (n0 is in term 3); n1 wins term 4.
    "append n1->n0",
    "append-reply n0->n1",
    "timeout elect @n1",
    "vote n1->n0",
    "vote n1->n2",
    "vote-reply n0->n1",
    "vote-reply n2->n1",
    // n1's first append of term 4: empty, leader_commit 2, prev_index 2 (term 2, not n0's 1).
    "append n1->n0",
];

#[test]
fn asyncraft_applies_its_own_write_when_the_leader_crashed_before_sending_it() {
    let sys = asyncraft();
    let w = shipped("raft-asyncraft", "apply-before-match");
    let run = scripted(&sys, &w, APPLY_BEFORE_MATCH);
    let v = run
        .violation
        .clone()
        .expect("async-raft 0.6.1 breaks state machine safety");
    assert_eq!(v.property, "state-machine-safety");
    assert_eq!(v.step, APPLY_BEFORE_MATCH.len() - 1, "{}", v.message);
    assert_eq!(w.expect.as_deref(), Some("state-machine-safety"));
    let last = run.states.last().unwrap();
    let applied = |n: usize| {
        last.var(n, "applied")
            .and_then(Value::as_array)
            .unwrap()
            .clone()
    };
    assert_eq!(applied(0)[1], json!({"term": 1, "value": 7}));
    assert_eq!(applied(1)[1], json!({"term": 2, "value": null}));
    // The run's path file replays it.
    let file = PathFile::from_run(&w, "scripted", 0, 1, &run);
    match replay(&file, &sys, &w).unwrap() {
        ReplayOutcome::Reproduced(v) => assert_eq!(v.property, "state-machine-safety"),
        other => panic!("the apply-before-match path did not replay: {other:?}"),
    }
}

/// A leader's heartbeat timer (`heartbeats = 2` in the stale-commit-hb workloads) is a flymc
/// timer event at the leader alone, fires at most twice per incarnation, and is gone after.
#[test]
fn a_leaders_heartbeat_timer_is_a_bounded_flymc_event() {
    for (sys, system) in [(asyncraft(), "raft-asyncraft"), (openraft(), "raft")] {
        let w = shipped(system, "stale-commit-hb");
        let elect = ["timeout elect @n0", "vote n0->n1", "vote-reply n1->n0"];
        let run = scripted(&sys, &w, &elect);
        let last = run.states.last().unwrap();
        assert_eq!(last.var(0, "role"), Some(&json!("leader")), "{system}");
        assert_eq!(last.var(0, "beat"), Some(&json!(true)), "{system}");
        assert_eq!(last.var(1, "beat"), Some(&json!(false)), "{system}");
        let beats = |run: &Run| {
            run.final_enabled
                .iter()
                .filter(|e| e.event.describe().starts_with("timeout heartbeat"))
                .map(|e| e.event.describe())
                .collect::<Vec<_>>()
        };
        assert_eq!(beats(&run), ["timeout heartbeat @n0"], "{system}");
        let mut script = elect.to_vec();
        for left in [1, 0] {
            script.push("timeout heartbeat @n0");
            let run = scripted(&sys, &w, &script);
            let last = run.states.last().unwrap();
            assert_eq!(
                last.var(0, "heartbeats_left"),
                Some(&json!(left)),
                "{system}"
            );
            assert_eq!(last.var(0, "beat"), Some(&json!(left > 0)), "{system}");
            assert_eq!(beats(&run).len(), left as usize, "{system}");
            assert!(
                run.final_enabled
                    .iter()
                    .any(|e| e.event.describe().starts_with("append n0->")),
                "{system}: the leader has appends out"
            );
        }
    }
}

/// A strategy that hands out only the plans of `inner` that stay on the way to a crash of n0
/// right after its write in APPLY_BEFORE_MATCH (the election first, then the default order;
/// a crash of n0 last), and stops once it has handed that crash out.
struct TowardsTheCrash {
    inner: Box<dyn strategy::Strategy>,
    described: std::collections::HashMap<flymc_model::EventId, String>,
    crash_at: Vec<usize>,
}

/// Where APPLY_BEFORE_MATCH crashes n0: right after the write.
const CRASH_STEP: usize = 18;

impl strategy::Strategy for TowardsTheCrash {
    fn name(&self) -> &'static str {
        "towards-the-crash"
    }

    fn next_plan(&mut self) -> Option<Plan> {
        if self.crash_at.last() == Some(&CRASH_STEP) {
            return None;
        }
        loop {
            let plan = self.inner.next_plan()?;
            let d: Vec<&str> = plan
                .prefix
                .iter()
                .map(|id| self.described.get(id).map_or("", String::as_str))
                .collect();
            let head = d.len().min(CRASH_STEP);
            let on_the_way = (0..head).all(|k| d[k].contains(APPLY_BEFORE_MATCH[k]))
                && (d.len() <= CRASH_STEP || d.last().is_some_and(|e| e.starts_with("crash n0")));
            if on_the_way {
                if d.len() > CRASH_STEP {
                    self.crash_at.push(d.len() - 1);
                }
                return Some(plan);
            }
        }
    }

    fn observe(&mut self, plan: &Plan, run: &Run) {
        let enabled = run.steps.iter().flat_map(|s| s.enabled.iter());
        for e in enabled.chain(run.final_enabled.iter()) {
            self.described.insert(e.event.id, e.event.describe());
        }
        self.inner.observe(plan, run)
    }

    fn queue_len(&self) -> usize {
        self.inner.queue_len()
    }

    fn dependence(&self) -> Option<Box<dyn flymc_core::dependence::Dependence + Send>> {
        self.inner.dependence()
    }
}

/// The bug needs n0 to crash between its write and the arrival of the appends that carry it.
/// flymc first runs the crash at the end of a path, then tries it before every step it races
/// with; a crash of the sender and the delivery of its message race (the crash would drop it),
/// so the very next path on the way has the crash right after the write. (Without that race
/// the crash stopped after both appends had arrived; moved back one race per path, it took
/// four more paths to get there.)
#[test]
fn flymc_moves_a_crash_of_n0_back_before_the_appends_it_sent() {
    let sys = asyncraft();
    let w = shipped("raft-asyncraft", "apply-before-match");
    let sets = systems::load_sets(&sys, &w, None).expect("the raft sets file loads");
    let ctx = StrategyContext {
        workload: &w,
        symmetry: sys.symmetry(&w),
        seed: 0,
        bound: 25,
        stateless_dfs: sys.has(flymc_model::Feature::SummaryStates),
        sets,
        flymc: FlymcOptions::default(),
        fault_vars: sys.about().fault_vars.clone(),
        disk_state: true,
        pct_depth: 3,
    };
    let mut strat = TowardsTheCrash {
        inner: strategy::build("flymc", &ctx).unwrap(),
        described: Default::default(),
        crash_at: Vec::new(),
    };
    Exploration::new(&sys, &w, &mut strat)
        .max_paths(Some(30))
        .run()
        .unwrap_or_else(|e| panic!("exploration failed: {e}"));
    // First at the end of the path (after both appends and both replies), then straight
    // before the first append's delivery.
    assert_eq!(strat.crash_at, [22, CRASH_STEP]);
}

/// The issue's old bug, found from the workload alone: flymc's search on
/// `raft-asyncraft/apply-before-match` reaches async-raft 0.6.1's apply-before-match (n0 applies
/// its own write at index 2, where the cluster committed n1's blank entry) and its path file
/// replays it; openraft runs the same workload as long and stays safe.
#[test]
fn flymc_finds_the_asyncraft_apply_before_match_bug_and_openraft_does_not_have_it() {
    let d = tempfile::tempdir().unwrap();
    let run = |system: &str, paths: &str| {
        common::flymc_in(
            d.path(),
            &[
                "run",
                "--system",
                system,
                "--workload",
                "apply-before-match",
                "--strategy",
                "flymc",
                "--max-paths",
                paths,
            ],
        )
    };
    let found = run("raft-asyncraft", "4000");
    assert_eq!(found.code, 1, "{}", found.all());
    assert!(
        found.stdout.contains("state-machine-safety violated"),
        "{}",
        found.all()
    );
    let paths: u64 = found
        .stdout
        .lines()
        .find_map(|l| {
            l.strip_prefix("VIOLATION on path ")?
                .split(':')
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no violation line in:\n{}", found.all()));
    let file = common::path_file(&found, d.path());
    // A replay starts fresh processes; allow a rerun for a machine under load.
    let replayed = (0..3).any(|_| {
        let r = common::flymc_in(d.path(), &["replay", file.to_str().unwrap()]);
        r.code == 1 && r.stdout.contains("reproduced: state-machine-safety")
    });
    assert!(replayed, "{} did not replay in 3 attempts", file.display());

    let fixed = run("raft", &paths.to_string());
    assert_eq!(fixed.code, 0, "openraft: {}", fixed.all());
    assert!(
        fixed
            .stdout
            .contains(&format!("no violation within {paths} paths")),
        "{}",
        fixed.all()
    );
}
