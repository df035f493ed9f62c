//! Runs that start from a snapshot of their prefix explore exactly what re-executing the
//! prefix explores: the same events, states, endings and findings, path after path, for every
//! simulated system and the main strategies, also when the target loses snapshots or fails to
//! restore them. The snapshots here come from a target that re-executes the prefix behind the
//! executor's back: what is under test is the executor's side (which steps it takes from the
//! snapshot's run, its books), the same for the real target's CRIU snapshots.

use crate::common;

use std::collections::HashMap;

use flymc::systems;
use flymc_core::explore::{Exploration, Outcome};
use flymc_core::workloads;
use flymc_model::{
    Event, EventId, GlobalState, NodeId, Property, Symmetry, System, Target, TargetError, Workload,
};
use flymc_strategies::{self as strategy, FlymcOptions, StrategyContext};

#[derive(Clone, Copy, Debug)]
enum Action {
    Enable(EventId),
    Crash(NodeId),
    Reboot(NodeId),
}

/// Restoring `key` starts the inner target and replays what led to the checkpoint. Every
/// `fail_every`-th restore fails (odd ones) or finds the snapshot gone (even ones); every
/// `die_every`-th restore succeeds, and the restored cluster fails at its next step (a restored
/// JVM that dies at once). The `k`-th start fails where `start_fails(k)` (a JVM whose agent
/// could not start).
struct Replaying {
    inner: Box<dyn Target>,
    done: Vec<Action>,
    saved: HashMap<u64, Vec<Action>>,
    fail_every: Option<u64>,
    die_every: Option<u64>,
    start_fails: fn(u64) -> bool,
    dead: bool,
    restores: u64,
    starts: u64,
}

impl Target for Replaying {
    fn start(&mut self, w: &Workload) -> Result<(), TargetError> {
        self.done.clear();
        self.dead = false;
        self.starts += 1;
        if (self.start_fails)(self.starts) {
            return Err(TargetError::Other(format!(
                "start {} failed (test)",
                self.starts
            )));
        }
        self.inner.start(w)
    }
    fn pending(&self) -> Vec<Event> {
        self.inner.pending()
    }
    fn enable(&mut self, id: EventId) -> Result<(), TargetError> {
        if self.dead {
            return Err(TargetError::Other("a restored node died (test)".into()));
        }
        self.done.push(Action::Enable(id));
        self.inner.enable(id)
    }
    fn settle(&mut self) -> Result<GlobalState, TargetError> {
        self.inner.settle()
    }
    fn crash(&mut self, node: NodeId) -> Result<(), TargetError> {
        self.done.push(Action::Crash(node));
        self.inner.crash(node)
    }
    fn reboot(&mut self, node: NodeId) -> Result<(), TargetError> {
        self.done.push(Action::Reboot(node));
        self.inner.reboot(node)
    }
    fn stop(&mut self) -> Result<(), TargetError> {
        self.inner.stop()
    }
    fn checkpoint(&mut self, key: u64) -> Result<bool, TargetError> {
        self.saved.insert(key, self.done.clone());
        Ok(true)
    }
    fn restore(&mut self, w: &Workload, key: u64) -> Result<bool, TargetError> {
        self.restores += 1;
        if let Some(n) = self.fail_every.filter(|n| self.restores.is_multiple_of(*n)) {
            if (self.restores / n) % 2 == 1 {
                return Err(TargetError::Other("restore failed (test)".into()));
            }
            self.saved.remove(&key);
        }
        let Some(actions) = self.saved.get(&key).cloned() else {
            return Ok(false);
        };
        self.start(w)?;
        self.inner.settle()?;
        for a in actions {
            match a {
                Action::Enable(id) => self.enable(id)?,
                Action::Crash(n) => self.crash(n)?,
                Action::Reboot(n) => self.reboot(n)?,
            }
            self.inner.settle()?;
        }
        self.dead = self
            .die_every
            .is_some_and(|n| self.restores.is_multiple_of(n));
        Ok(true)
    }
}

struct WithSnapshots {
    inner: Box<dyn System>,
    fail_every: Option<u64>,
    die_every: Option<u64>,
    start_fails: fn(u64) -> bool,
}

impl System for WithSnapshots {
    fn about(&self) -> &flymc_model::About {
        self.inner.about()
    }
    fn target(&self, w: &Workload) -> Result<Box<dyn Target>, TargetError> {
        Ok(Box::new(Replaying {
            inner: self.inner.target(w)?,
            done: Vec::new(),
            saved: HashMap::new(),
            fail_every: self.fail_every,
            die_every: self.die_every,
            start_fails: self.start_fails,
            dead: false,
            restores: 0,
            starts: 0,
        }))
    }
    fn properties(&self, w: &Workload) -> Vec<Box<dyn Property>> {
        self.inner.properties(w)
    }
    fn symmetry(&self, w: &Workload) -> Symmetry {
        self.inner.symmetry(w)
    }
}

/// What a path was: its events, states, ending and finding.
type Seen = (Vec<EventId>, Vec<u64>, String, Option<String>);

fn explore(
    system: &dyn System,
    workload: &str,
    strat: &str,
    snapshots: bool,
) -> (Vec<Seen>, Outcome) {
    let (seen, out) = try_explore(system, workload, strat, snapshots);
    (seen, out.unwrap())
}

fn try_explore(
    system: &dyn System,
    workload: &str,
    strat: &str,
    snapshots: bool,
) -> (
    Vec<Seen>,
    Result<Outcome, flymc_core::explore::ExploreError>,
) {
    let folder = workloads::folder(Some(&common::workloads())).unwrap();
    let w = workloads::load(&folder, system.name(), workload).unwrap();
    let ctx = StrategyContext {
        workload: &w,
        symmetry: system.symmetry(&w),
        seed: 7,
        bound: 25,
        stateless_dfs: false,
        sets: systems::load_sets(system, &w, None).unwrap(),
        flymc: FlymcOptions::default(),
        fault_vars: system.about().fault_vars.clone(),
        disk_state: true,
        pct_depth: 3,
    };
    let mut s = strategy::build(strat, &ctx).unwrap();
    let mut seen = Vec::new();
    let out = Exploration::new(system, &w, s.as_mut())
        .max_paths(Some(80))
        .snapshots(snapshots)
        // A restore of a simulated cluster saves next to nothing: restore whatever it costs.
        .snapshots_always(true)
        .on_run(|r| {
            seen.push((
                r.event_ids(),
                r.hashes.clone(),
                format!("{:?}", r.ending),
                r.violation.as_ref().map(|v| v.property.clone()),
            ))
        })
        .run();
    (seen, out)
}

#[test]
fn runs_restored_from_snapshots_explore_the_same_paths_as_re_executed_ones() {
    for (sys, workload) in [
        ("cassandra-sim", "paxos-2"),
        ("raft-sim", "raft-bug"),
        ("zk-le-sim", "le-3crash"),
    ] {
        for strat in ["dfs", "flymc", "random", "faults"] {
            let plain = systems::find(sys).unwrap();
            let (want, base) = explore(plain.as_ref(), workload, strat, false);
            for (fail_every, die_every) in [(None, None), (Some(3), None), (None, Some(4))] {
                let snap = WithSnapshots {
                    inner: systems::find(sys).unwrap(),
                    fail_every,
                    die_every,
                    start_fails: |_| false,
                };
                let (got, out) = explore(&snap, workload, strat, true);
                let what = format!(
                    "{sys}/{workload} {strat}, failing every {fail_every:?}, dying every {die_every:?}"
                );
                assert_eq!(got.len(), want.len(), "{what}: path count");
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(g, w, "{what}: path {} differs", i + 1);
                }
                assert_eq!(out.unique_states.len(), base.unique_states.len(), "{what}");
                let s = &out.snapshots;
                assert!(s.restored > 0 || want.len() == 1, "{what}: {s:?}");
                // Systematic strategies branch off earlier paths; random walks share only the
                // start.
                if matches!(strat, "dfs" | "flymc") {
                    assert!(s.steps_skipped > 0, "{what}: {s:?}");
                }
                if (fail_every.is_some() && s.restored > 2)
                    || (die_every.is_some() && s.restored > 3)
                {
                    assert!(s.fallbacks > 0, "{what}: {s:?}");
                } else {
                    assert_eq!(s.fallbacks, 0, "{what}: {s:?}");
                }
            }
        }
    }
}

/// A cluster that fails before its first step (on a loaded machine, a JVM whose agent could
/// not start) is started once more: the exploration goes on and explores the same paths. One
/// that fails again ends it with the target's error.
#[test]
fn a_cluster_that_fails_to_start_is_started_once_more() {
    let plain = systems::find("raft-sim").unwrap();
    let (want, _) = explore(plain.as_ref(), "raft-bug", "dfs", false);
    let failing = |start_fails| WithSnapshots {
        inner: systems::find("raft-sim").unwrap(),
        fail_every: None,
        die_every: None,
        start_fails,
    };
    for snapshots in [false, true] {
        let flaky = failing(|k| k.is_multiple_of(5));
        let (got, _) = explore(&flaky, "raft-bug", "dfs", snapshots);
        assert_eq!(got, want, "snapshots {snapshots}");
    }
    // The first start checks the sets file; every later one fails.
    let (_, out) = try_explore(&failing(|k| k > 1), "raft-bug", "dfs", false);
    let err = out
        .err()
        .expect("a cluster that never starts ends the exploration");
    assert!(err.to_string().contains("failed (test)"), "{err}");
}
