//! The twins agree: zk-le-sim's property list on states shaped as zk-le-sim reports them, and
//! real ZooKeeper's list on the same states shaped as the Java hook reports them, give the
//! same verdict on every state of every scenario for the properties both check, the real-only
//! ones hold where zk-le-sim cannot express their state, and every property is broken by some
//! scenario.

use std::collections::BTreeSet;
use std::path::Path;

use flymc_model::{GlobalState, NodeView, Property, System, Workload};
use flymc_zk_le_sim::ZkLeSimSystem;
use flymc_zookeeper::properties::{
    ACKED_IN_LATER_LEADERS, EVENTUALLY_QUORUM_FOLLOWS_LEADER, NO_UNCAUGHT_EXCEPTION,
};
use serde_json::{json, Map, Value};

/// One node of a scenario state: `(alive, state, established, epoch, leader)`.
type N = (bool, &'static str, bool, u64, Option<usize>);

fn up(state: &'static str, established: bool, epoch: u64, leader: Option<usize>) -> N {
    (true, state, established, epoch, leader)
}

fn down(n: N) -> N {
    (false, n.1, n.2, n.3, n.4)
}

fn looking(epoch: u64) -> N {
    up("LOOKING", false, epoch, None)
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("an object literal"),
    }
}

fn global(nodes: Vec<NodeView>) -> GlobalState {
    GlobalState {
        nodes,
        network: Vec::new(),
        env: Value::Null,
    }
}

/// The state as zk-le-sim reports it: a settled zk-le-sim node's variables, with the ones a
/// scenario sets overwritten under zk-le-sim's names.
fn sim_state(template: &GlobalState, s: &[N]) -> GlobalState {
    let nodes = s
        .iter()
        .zip(&template.nodes)
        .map(|(&(alive, state, est, epoch, leader), t)| {
            let mut vars = t.vars.clone();
            vars.insert("state".into(), json!(state));
            vars.insert("established".into(), json!(est));
            vars.insert("current_epoch".into(), json!(epoch));
            vars.insert("leader".into(), json!(leader));
            NodeView { alive, vars }
        })
        .collect();
    global(nodes)
}

/// The state as the Java hook reports it (`FlymcZk.state`), no client writes, no exceptions.
fn real_state(s: &[N]) -> GlobalState {
    let nodes = s
        .iter()
        .map(|&(alive, state, est, epoch, leader)| {
            let zab = match (state, est) {
                ("LOOKING", _) => "ELECTION",
                ("FOLLOWING", true) => "BROADCAST",
                (_, true) => "SYNCHRONIZATION",
                (_, false) => "DISCOVERY",
            };
            NodeView {
                alive,
                vars: object(json!({
                    "state": state, "zabState": zab, "currentEpoch": epoch,
                    "acceptedEpoch": epoch, "logicalclock": 1, "proposedLeader": 0,
                    "leader": leader, "established": est, "uncaught": [], "acked": [],
                    "log": [], "pendingWrites": 0,
                })),
            }
        })
        .collect();
    global(nodes)
}

/// Each property's verdict on each state of a run, by name: `None` when it holds.
fn verdicts(mut props: Vec<Box<dyn Property>>, states: &[GlobalState]) -> Vec<Vec<(String, bool)>> {
    states
        .iter()
        .map(|s| {
            props
                .iter_mut()
                .map(|p| (p.name().to_string(), p.check(s).is_err()))
                .collect()
        })
        .collect()
}

const ELECTED_NOT_SYNCED: &str = "election over, discovery not yet";

fn scenarios() -> Vec<(&'static str, Vec<Vec<N>>)> {
    let (lead, follow) = (
        up("LEADING", true, 1, Some(0)),
        up("FOLLOWING", true, 1, Some(0)),
    );
    vec![
        (
            "an elected, established ensemble",
            vec![vec![lead, follow, follow]],
        ),
        (
            ELECTED_NOT_SYNCED,
            vec![vec![
                up("LEADING", false, 0, Some(0)),
                up("FOLLOWING", false, 0, Some(0)),
                looking(0),
            ]],
        ),
        (
            "two leaders of epoch 1, a state apart",
            vec![
                vec![lead, follow, looking(0)],
                vec![looking(1), up("LEADING", true, 1, Some(1)), looking(0)],
            ],
        ),
        (
            "followers of one epoch naming different leaders",
            vec![vec![
                up("LEADING", true, 2, Some(0)),
                up("FOLLOWING", true, 2, Some(2)),
                looking(0),
            ]],
        ),
        (
            "a crashed leader's followers left behind",
            vec![vec![down(lead), follow, follow]],
        ),
        (
            "an election that never ends (ZOOKEEPER-1419)",
            vec![vec![looking(0), looking(0), looking(0)]],
        ),
        (
            "a minority up",
            vec![vec![down(lead), down(follow), looking(0)]],
        ),
    ]
}

#[test]
fn sim_and_real_zookeeper_give_the_same_verdicts_on_the_same_states() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads/zk-le-sim/le.toml");
    let w = Workload::load(&p).expect("le loads");
    let mut t = ZkLeSimSystem.target(&w).expect("zk-le-sim target");
    t.start(&w).expect("zk-le-sim starts");
    let template = t.settle().expect("zk-le-sim settles");
    let real_only = [ACKED_IN_LATER_LEADERS, NO_UNCAUGHT_EXCEPTION];
    let mut broken = BTreeSet::new();
    for (what, states) in scenarios() {
        let sim: Vec<GlobalState> = states.iter().map(|s| sim_state(&template, s)).collect();
        let real: Vec<GlobalState> = states.iter().map(|s| real_state(s)).collect();
        let vs = verdicts(ZkLeSimSystem.properties(&w), &sim);
        let mut vr = verdicts(flymc_zookeeper::properties::properties(w.nodes), &real);
        for (i, state) in vr.iter_mut().enumerate() {
            // zk-le-sim has no clients and no threads: the real-only properties must hold.
            for (name, bad) in state.iter() {
                assert!(
                    !(real_only.contains(&name.as_str()) && *bad),
                    "{what}, state {i}: {name} broken without clients or exceptions"
                );
            }
            state.retain(|(name, _)| !real_only.contains(&name.as_str()));
        }
        if what == ELECTED_NOT_SYNCED {
            // The one documented difference (ZabView::in_service): the simulator counts a
            // leader and follower as serving once elected, real ZooKeeper once established.
            let flip = |vs: &mut Vec<Vec<(String, bool)>>| {
                for (name, bad) in vs.iter_mut().flatten() {
                    if name == EVENTUALLY_QUORUM_FOLLOWS_LEADER {
                        *bad = !*bad;
                    }
                }
            };
            let mut flipped = vs.clone();
            flip(&mut flipped);
            assert_eq!(flipped, vr, "{what}: only the liveness verdict differs");
            continue;
        }
        assert_eq!(vs, vr, "{what}: zk-le-sim's verdicts, then the real one's");
        broken.extend(vs.into_iter().flatten().filter(|v| v.1).map(|v| v.0));
    }
    // Every property both check is broken somewhere, so agreement is not agreement on "ok".
    let names: BTreeSet<String> = ZkLeSimSystem
        .properties(&w)
        .iter()
        .map(|p| p.name().to_string())
        .collect();
    assert_eq!(broken, names);
}
