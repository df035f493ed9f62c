//! A race steering can avoid: n0 must see n2's `y` (after n1's request `a` and its `x`) before
//! its own request `b`, or it goes bad. From the initial state the nearest violation is four
//! events ahead (`b`, `a`, `x`, `y`), and every continuation after `b` violates.

use std::collections::HashSet;
use std::path::Path;

use flymc_model::property::{liveness, safety};
use flymc_model::sim::{Outbox, Protocol, SimTarget};
use flymc_model::{NodeId, Property, Symmetry, System, Target, TargetError, Workload};
use serde::Serialize;

use super::*;

struct Race;

#[derive(Clone, Serialize, Default)]
struct Node {
    b: bool,
    bad: bool,
    got_y: bool,
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Msg {
    A,
    B,
    X,
    Y,
}

impl Protocol for Race {
    type Node = Node;
    type Msg = Msg;
    type Env = ();

    fn init(
        &self,
        w: &Workload,
        _: &mut (),
        out: &mut Outbox<Msg>,
    ) -> Result<Vec<Node>, TargetError> {
        out.client(0, Msg::B);
        out.client(1, Msg::A);
        Ok(vec![Node::default(); w.nodes])
    }

    fn handle(
        &self,
        _id: NodeId,
        node: &mut Node,
        _: &mut (),
        _from: Option<NodeId>,
        msg: Msg,
        out: &mut Outbox<Msg>,
    ) {
        match msg {
            Msg::B => node.b = true,
            Msg::A => out.send(2, Msg::X),
            Msg::X => out.send(0, Msg::Y),
            Msg::Y => {
                node.got_y = true;
                node.bad = node.b;
            }
        }
    }

    fn crash(&self, _: NodeId, _: &mut Node, _: &mut (), _: &mut Outbox<Msg>) {}
    fn reboot(&self, _: NodeId, _: &mut Node, _: &mut (), _: &mut Outbox<Msg>) {}
}

struct RaceSystem;

impl System for RaceSystem {
    fn about(&self) -> &flymc_model::About {
        static ABOUT: std::sync::LazyLock<flymc_model::About> =
            std::sync::LazyLock::new(|| flymc_model::About::new("race", "test fixture"));
        &ABOUT
    }
    fn target(&self, _: &Workload) -> Result<Box<dyn Target>, TargetError> {
        Ok(Box::new(SimTarget::new(Race)))
    }
    fn properties(&self, _: &Workload) -> Vec<Box<dyn Property>> {
        let var = |s: &GlobalState, n: usize, v: &str| s.nodes[n].vars[v].as_bool() == Some(true);
        vec![
            safety("y-before-b", move |s| match var(s, 0, "bad") {
                true => Err("n0 got y after b".into()),
                false => Ok(()),
            }),
            liveness("y-arrives", move |s| match var(s, 0, "got_y") {
                true => Ok(()),
                false => Err("n0 never got y".into()),
            }),
        ]
    }
    fn symmetry(&self, _: &Workload) -> Symmetry {
        Symmetry::none()
    }
}

fn workload() -> Workload {
    let text = "version = 1\nsystem = \"race\"\nnodes = 3\nmax_events = 20\n";
    Workload::parse(Path::new("race.toml"), text).unwrap()
}

fn config(seed: u64, steer: bool) -> LiveConfig {
    LiveConfig {
        seed,
        steps: None,
        duration: None,
        fault_rate: 0.0,
        predict: Some(Bounds::default()),
        steer,
        interrupted: None,
    }
}

fn ids(run: &LiveRun) -> Vec<EventId> {
    run.history.iter().map(|e| e.id).collect()
}

#[test]
fn a_live_run_is_the_same_for_the_same_seed_and_differs_across_seeds() {
    let w = workload();
    let a = watch(&RaceSystem, &w, &config(3, false)).unwrap();
    let b = watch(&RaceSystem, &w, &config(3, false)).unwrap();
    assert_eq!(ids(&a), ids(&b));
    let orders: HashSet<Vec<EventId>> = (0..10)
        .map(|s| ids(&watch(&RaceSystem, &w, &config(s, false)).unwrap()))
        .collect();
    assert!(orders.len() > 1, "arrival order depends on the seed");
}

#[test]
fn prediction_from_the_initial_state_sees_the_violation_four_steps_ahead_and_dooms_b_only() {
    let w = workload();
    let mut t = RaceSystem.target(&w).unwrap();
    t.start(&w).unwrap();
    let state = t.settle().unwrap();
    let faults = Faults::new(&w, CrashPoints::Everywhere);
    let copier = Copier {
        system: &RaceSystem,
        workload: &w,
    };
    let start = Start {
        target: t.as_ref(),
        history: &[],
        state: &state,
        faults: &faults,
    };
    let p = predict::predict(&copier, start, Bounds::default()).unwrap();
    assert_eq!(p.violations.len(), 1);
    assert_eq!(p.violations[0].property, "y-before-b");
    assert_eq!(p.violations[0].path.len(), 4);
    let pending = t.pending();
    let by_name = |n: &str| {
        p.choice(pending.iter().find(|e| e.name == n).unwrap().id)
            .unwrap()
    };
    assert_eq!(by_name("b").doomed, Some(4));
    assert_eq!(by_name("a").doomed, None);
    assert!(by_name("a").live);
    assert_eq!(p.doomed, None);
}

#[test]
fn steering_holds_b_back_and_avoids_every_violation_that_happens_without_it() {
    let w = workload();
    let mut violated = 0;
    for seed in 0..20 {
        let free = watch(&RaceSystem, &w, &config(seed, false)).unwrap();
        if let Some(v) = &free.violation {
            violated += 1;
            assert_eq!(v.property, "y-before-b");
            assert!(
                free.predicted_ahead.is_some(),
                "foreseen before it happened"
            );
        }
        let steered = watch(&RaceSystem, &w, &config(seed, true)).unwrap();
        assert_eq!(
            steered.violation, None,
            "seed {seed}: {:?}",
            steered.filters
        );
        assert_eq!(steered.ending, LiveEnding::Quiescent);
        if free.violation.is_some() {
            assert!(!steered.filters.is_empty());
            assert!(steered.filters.iter().all(|f| f.held.contains("client b")));
        }
    }
    assert!(violated > 0, "some random orders violate without steering");
}

#[test]
fn a_forecast_replays_from_the_initial_state_to_the_violation_it_predicted() {
    let w = workload();
    let run = watch(&RaceSystem, &w, &config(0, false)).unwrap();
    let f = &run.forecasts[0];
    let replayed = replay_ids(&RaceSystem, &w, f.path.clone()).unwrap();
    assert_eq!(
        replayed.violation.map(|v| v.property),
        Some(f.property.clone())
    );
}
