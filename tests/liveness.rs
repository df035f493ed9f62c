//! Liveness the MaceMC and CHESS way: end states classified by random walks (only dead ones
//! reported, with their critical transition in the path file), and the `fair` strategy's
//! livelocks and good-samaritan violations.

use crate::common;

use common::{flymc_in, path_file};
use flymc_core::executor::{Executor, RunOptions};
use flymc_core::explore::Exploration;
use flymc_core::liveness::Walks;
use flymc_core::order::{FairParams, GOOD_SAMARITAN};
use flymc_core::pathfile::PathFile;
use flymc_core::plan::{Plan, Tail};
use flymc_core::run::Run;
use flymc_core::strategy::Strategy;
use flymc_model::property::liveness;
use flymc_model::sim::{Outbox, Protocol, SimTarget};
use flymc_model::{EventId, NodeId, Property, Symmetry, System, Target, TargetError, Workload};
use serde::Serialize;

/// Node 0 gets three client requests: `noop`, `bad` and `good`. `good` finishes it (`done`)
/// unless `bad` came first, which leaves it stuck for good. Node 1 runs a `tick` timer: with
/// `busy` it counts every tick (it never yields), otherwise it toggles a flag (every other
/// tick takes it back to a state it held); either way the timer re-arms.
struct Gate {
    busy: bool,
}

#[derive(Clone, Serialize)]
struct Node {
    done: bool,
    stuck: bool,
    ticks: u64,
    flag: bool,
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Msg {
    Noop,
    Bad,
    Good,
    Tick,
}

impl Protocol for Gate {
    type Node = Node;
    type Msg = Msg;
    type Env = ();

    fn init(
        &self,
        w: &Workload,
        _: &mut (),
        out: &mut Outbox<Msg>,
    ) -> Result<Vec<Node>, TargetError> {
        out.client(0, Msg::Noop);
        out.client(0, Msg::Bad);
        out.client(0, Msg::Good);
        if w.nodes > 1 {
            out.timer(1, Msg::Tick);
        }
        let n = Node {
            done: false,
            stuck: false,
            ticks: 0,
            flag: false,
        };
        Ok(vec![n; w.nodes])
    }

    fn handle(
        &self,
        id: NodeId,
        node: &mut Node,
        _: &mut (),
        _from: Option<NodeId>,
        msg: Msg,
        out: &mut Outbox<Msg>,
    ) {
        match msg {
            Msg::Noop => {}
            Msg::Bad => node.stuck |= !node.done,
            Msg::Good => node.done |= !node.stuck,
            Msg::Tick => {
                if self.busy {
                    node.ticks += 1;
                } else {
                    node.flag = !node.flag;
                }
                out.timer(id, Msg::Tick);
            }
        }
    }

    fn crash(&self, _: NodeId, _: &mut Node, _: &mut (), _: &mut Outbox<Msg>) {}
    fn reboot(&self, _: NodeId, _: &mut Node, _: &mut (), _: &mut Outbox<Msg>) {}
}

struct GateSystem {
    busy: bool,
}

impl System for GateSystem {
    fn about(&self) -> &flymc_model::About {
        static ABOUT: std::sync::LazyLock<flymc_model::About> =
            std::sync::LazyLock::new(|| flymc_model::About::new("gate", "test fixture"));
        &ABOUT
    }
    fn target(&self, _: &Workload) -> Result<Box<dyn Target>, TargetError> {
        Ok(Box::new(SimTarget::new(Gate { busy: self.busy })))
    }
    fn properties(&self, _: &Workload) -> Vec<Box<dyn Property>> {
        vec![liveness("eventually-done", |s| {
            match s.nodes[0].vars["done"].as_bool() {
                Some(true) => Ok(()),
                _ => Err("n0 is not done".into()),
            }
        })]
    }
    fn symmetry(&self, _: &Workload) -> Symmetry {
        Symmetry::none()
    }
}

fn gate_workload(nodes: usize) -> Workload {
    let text = format!("version = 1\nsystem = \"gate\"\nnodes = {nodes}\nmax_events = 20\n");
    Workload::parse(std::path::Path::new("gate.toml"), &text).expect("valid test workload")
}

/// The ids of node 0's requests, by name.
fn request(sys: &GateSystem, w: &Workload, name: &str) -> EventId {
    let mut t = sys.target(w).unwrap();
    t.start(w).unwrap();
    let id = t
        .pending()
        .into_iter()
        .find(|e| e.name == name)
        .map(|e| e.id)
        .unwrap();
    t.stop().unwrap();
    id
}

/// Hands out one plan: `prefix`, then stop.
struct Once(Option<Vec<EventId>>);

impl Strategy for Once {
    fn name(&self) -> &'static str {
        "once"
    }
    fn next_plan(&mut self) -> Option<Plan> {
        Some(Plan {
            prefix: self.0.take()?,
            tail: Tail::Stop,
            strict: true,
            sleep: Vec::new(),
            sleep_at: 0,
        })
    }
    fn observe(&mut self, _: &Plan, _: &Run) {}
    fn queue_len(&self) -> usize {
        0
    }
}

fn explore_prefix(prefix: Vec<EventId>) -> flymc_core::explore::Outcome {
    let sys = GateSystem { busy: false };
    let w = gate_workload(1);
    Exploration::new(&sys, &w, &mut Once(Some(prefix)))
        .walks(Some(Walks {
            walks: 3,
            depth: Some(10),
            seed: 7,
        }))
        .run()
        .unwrap()
}

#[test]
fn a_transient_end_state_is_not_reported() {
    let sys = GateSystem { busy: false };
    let w = gate_workload(1);
    // After `noop` alone n0 is not done, but `good` is still pending: a walk finishes it.
    let out = explore_prefix(vec![request(&sys, &w, "noop")]);
    assert!(out.violation.is_none());
    assert_eq!((out.liveness.judged, out.liveness.transient), (1, 1));
    assert!(out.liveness.walks >= 1);
}

#[test]
fn a_dead_end_state_is_reported_with_its_critical_transition_in_the_path_file() {
    let sys = GateSystem { busy: false };
    let w = gate_workload(1);
    let prefix = vec![request(&sys, &w, "noop"), request(&sys, &w, "bad")];
    let out = explore_prefix(prefix);
    assert_eq!((out.liveness.judged, out.liveness.dead), (1, 1));
    let (_, run) = out.violation.expect("a dead end state is a violation");
    assert_eq!(run.violation.as_ref().unwrap().property, "eventually-done");
    let critical = run.critical.clone().expect("a critical transition");
    // Before `bad`, `good` still finishes n0; after it nothing does.
    assert_eq!(critical.step, 1);
    assert!(critical.event.contains("bad"), "{critical}");
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("gate.json");
    PathFile::from_run(&w, "once", 0, 1, &run)
        .save(&file)
        .unwrap();
    let loaded = PathFile::load(&file).unwrap();
    assert_eq!(loaded.critical, Some(critical));
    // Files written before the field existed still load.
    let text = std::fs::read_to_string(&file).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json.as_object_mut().unwrap().remove("critical");
    std::fs::write(&file, json.to_string()).unwrap();
    assert_eq!(PathFile::load(&file).unwrap().critical, None);
}

/// A fair run of the gate with n1's ticks, to a bound of 200 events.
fn fair_run(busy: bool) -> Run {
    let sys = GateSystem { busy };
    let w = gate_workload(2);
    let plan = Plan {
        prefix: Vec::new(),
        tail: Tail::Fair(FairParams {
            seed: 1,
            random: true,
            bound: 200,
            samaritan: 20,
        }),
        strict: false,
        sleep: Vec::new(),
        sleep_at: 0,
    };
    let mut t = sys.target(&w).unwrap();
    Executor::new(&sys, &w)
        .run(t.as_mut(), &plan, RunOptions::default())
        .unwrap()
}

#[test]
fn a_node_that_never_yields_breaks_the_good_samaritan_property() {
    let run = fair_run(true);
    let v = run.violation.expect("a good-samaritan violation");
    assert_eq!(v.property, GOOD_SAMARITAN);
    assert!(v.message.starts_with("n1 was scheduled"), "{}", v.message);
    // A node whose ticks go back and forth between two states yields: the fair scheduler lets
    // n0's requests run between its ticks, and the run is judged on the property alone.
    let run = fair_run(false);
    assert!(run.steps.len() >= 200, "{}", run.steps.len());
    assert!(run
        .violation
        .as_ref()
        .is_none_or(|v| v.property != GOOD_SAMARITAN));
    let handled = |name: &str| run.events().filter(|e| e.name == name).count();
    assert_eq!(
        (handled("noop"), handled("bad"), handled("good")),
        (1, 1, 1)
    );
}

#[test]
fn fair_finds_the_zk_1419_livelock_and_the_path_replays() {
    let d = tempfile::tempdir().unwrap();
    let ran = flymc_in(
        d.path(),
        &[
            "run",
            "--system",
            "zk-le-sim",
            "--workload",
            "zk-1419",
            "--strategy",
            "fair",
            "--max-paths",
            "3",
        ],
    );
    assert_eq!(ran.code, 1, "{}", ran.all());
    assert!(
        ran.stdout
            .contains("VIOLATION on path 1: eventually-quorum-follows-leader violated after step 2999: livelock"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("  critical transition: step "),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("1 dead"), "{}", ran.stdout);
    let file = path_file(&ran, d.path());
    assert!(PathFile::load(&file).unwrap().critical.is_some());
    let again = flymc_in(d.path(), &["replay", file.to_str().unwrap()]);
    assert_eq!(again.code, 1, "{}", again.all());
    assert!(
        again
            .stdout
            .contains("reproduced: eventually-quorum-follows-leader"),
        "{}",
        again.stdout
    );
}
