//! The twins agree: raft-sim's property list on states shaped as raft-sim reports them, and
//! the real systems' list on the same states shaped as real nodes report them, give the same
//! verdict on every state of every scenario, and every property is broken by some scenario.

use std::collections::BTreeSet;
use std::path::Path;

use flymc_model::{EventKind, GlobalState, NodeView, PendingView, Property, System, Workload};
use flymc_raft_sim::RaftSimSystem;
use serde_json::{json, Map, Value};

/// One node of a scenario state, in neither twin's shape.
#[derive(Clone)]
struct N {
    alive: bool,
    term: u64,
    role: &'static str,
    leader: Option<usize>,
    /// `(term, value)`; `None` is a leader's blank entry.
    log: Vec<(u64, Option<u64>)>,
    commit: u64,
    applied: usize,
}

fn n(term: u64, role: &'static str, leader: Option<usize>, log: &[(u64, Option<u64>)]) -> N {
    N {
        alive: true,
        term,
        role,
        leader,
        log: log.to_vec(),
        commit: 0,
        applied: 0,
    }
}

impl N {
    /// Committed and applied up to `k` entries.
    fn done(mut self, k: usize) -> N {
        self.commit = k as u64;
        self.applied = k;
        self
    }
    fn commit(mut self, k: u64) -> N {
        self.commit = k;
        self
    }
    fn down(mut self) -> N {
        self.alive = false;
        self
    }
}

/// A scenario state: its nodes, and whether something is still in flight.
struct S(Vec<N>, bool);

fn entries(log: &[(u64, Option<u64>)]) -> Value {
    log.iter()
        .map(|&(term, value)| json!({"term": term, "value": value}))
        .collect()
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("an object literal"),
    }
}

fn global(nodes: Vec<NodeView>, busy: bool) -> GlobalState {
    // The network's content is the executor's business, the same for both twins.
    let network = busy
        .then(|| PendingView {
            kind: EventKind::Timeout,
            name: "elect".into(),
            from: None,
            to: 0,
            fields: "{}".into(),
        })
        .into_iter()
        .collect();
    GlobalState {
        nodes,
        network,
        env: Value::Null,
    }
}

fn sim_workload() -> Workload {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads/raft-sim/raft-1.toml");
    Workload::load(&p).expect("raft-1 loads")
}

/// The state as raft-sim reports it: a settled raft-sim node's variables, with the ones a
/// scenario sets overwritten under raft-sim's names.
fn sim_state(template: &GlobalState, s: &S) -> GlobalState {
    let nodes =
        s.0.iter()
            .zip(&template.nodes)
            .map(|(x, t)| {
                let mut vars = t.vars.clone();
                vars.insert("current_term".into(), json!(x.term));
                vars.insert("role".into(), json!(x.role));
                vars.insert("leader".into(), json!(x.leader));
                vars.insert("log".into(), entries(&x.log));
                vars.insert("commit_index".into(), json!(x.commit));
                vars.insert("applied".into(), entries(&x.log[..x.applied]));
                NodeView {
                    alive: x.alive,
                    vars,
                }
            })
            .collect();
    global(nodes, s.1)
}

/// The state as real nodes report it (flymc-raft's "Node state").
fn real_state(s: &S) -> GlobalState {
    let nodes =
        s.0.iter()
            .map(|x| NodeView {
                alive: x.alive,
                vars: object(json!({
                    "term": x.term, "voted_for": null, "role": x.role, "leader": x.leader,
                    "log": entries(&x.log), "commit": x.commit,
                    "applied": entries(&x.log[..x.applied]),
                    // raft-sim has no election budget: a real node with firings left.
                    "elect": false, "elections_left": 1, "eligible": true, "down": [], "queued": [],
                })),
            })
            .collect();
    global(nodes, s.1)
}

/// Each property's verdict on each state of a run: `None` when it holds.
fn verdicts(mut props: Vec<Box<dyn Property>>, states: &[GlobalState]) -> Vec<Vec<Option<String>>> {
    states
        .iter()
        .map(|s| {
            props
                .iter_mut()
                .map(|p| p.check(s).err().map(|_| p.name().to_string()))
                .collect()
        })
        .collect()
}

fn scenarios() -> Vec<(&'static str, Vec<S>)> {
    let f = |term, leader| n(term, "follower", Some(leader), &[]);
    let a = [(1, None), (1, Some(7))];
    vec![
        (
            "a healthy cluster",
            vec![
                S(vec![n(1, "leader", Some(0), &a), f(1, 0), f(1, 0)], true),
                S(
                    vec![
                        n(1, "leader", Some(0), &a).done(2),
                        n(1, "follower", Some(0), &a).done(1),
                        f(1, 0),
                    ],
                    false,
                ),
            ],
        ),
        (
            "two leaders of one term, a state apart",
            vec![
                S(vec![n(2, "leader", Some(0), &[]), f(2, 0), f(2, 0)], true),
                S(vec![f(2, 1), n(2, "leader", Some(1), &[]), f(2, 1)], true),
            ],
        ),
        (
            "logs that agree on a term but not below it",
            vec![S(
                vec![
                    n(2, "leader", Some(0), &[(1, Some(1)), (2, None)]),
                    n(2, "follower", Some(0), &[(1, Some(3)), (2, None)]),
                    f(2, 0),
                ],
                true,
            )],
        ),
        (
            "two entries applied at index 1, a crash apart",
            vec![
                S(
                    vec![
                        n(1, "leader", Some(0), &[(1, Some(1))]).done(1),
                        f(1, 0),
                        f(1, 0),
                    ],
                    true,
                ),
                S(
                    vec![
                        n(1, "leader", Some(0), &[(1, Some(1))]).done(1).down(),
                        n(2, "leader", Some(1), &[(2, Some(2))]).done(1),
                        f(2, 1),
                    ],
                    true,
                ),
            ],
        ),
        (
            "a later leader without an entry its predecessor committed",
            vec![
                S(
                    vec![
                        n(1, "leader", Some(0), &[(1, Some(1))]).commit(1),
                        f(1, 0),
                        f(1, 0),
                    ],
                    true,
                ),
                S(
                    vec![
                        n(1, "leader", Some(0), &[(1, Some(1))]).commit(1).down(),
                        n(2, "leader", Some(1), &[(2, None)]),
                        f(2, 1),
                    ],
                    true,
                ),
            ],
        ),
        (
            // Where the twins had drifted: only a follower knows it committed.
            "a follower knowing committed what its leader never had",
            vec![S(
                vec![
                    n(2, "leader", Some(0), &[(2, None)]),
                    n(2, "follower", Some(0), &[(1, Some(5))]).commit(1),
                    f(2, 0),
                ],
                true,
            )],
        ),
        (
            "a quiescent end without a leader",
            vec![
                S(vec![f(1, 0), f(1, 0), f(1, 0)], true),
                S(
                    vec![
                        n(1, "candidate", None, &[]),
                        n(1, "follower", None, &[]),
                        n(1, "follower", None, &[]).down(),
                    ],
                    false,
                ),
            ],
        ),
        (
            "a quiescent end where a node does not know the leader",
            vec![S(
                vec![
                    n(3, "leader", Some(0), &[]),
                    f(3, 0),
                    n(2, "follower", None, &[]),
                ],
                false,
            )],
        ),
        (
            "a quiescent end with a minority alive",
            vec![S(vec![f(1, 0), f(1, 0).down(), f(1, 0).down()], false)],
        ),
    ]
}

#[test]
fn sim_and_real_raft_give_the_same_verdicts_on_the_same_states() {
    let w = sim_workload();
    let mut t = RaftSimSystem.target(&w).expect("raft-sim target");
    t.start(&w).expect("raft-sim starts");
    let template = t.settle().expect("raft-sim settles");
    let mut broken = BTreeSet::new();
    for (what, states) in scenarios() {
        let sim: Vec<GlobalState> = states.iter().map(|s| sim_state(&template, s)).collect();
        let real: Vec<GlobalState> = states.iter().map(real_state).collect();
        let (vs, vr) = (
            verdicts(RaftSimSystem.properties(&w), &sim),
            verdicts(flymc_raft::properties::all(), &real),
        );
        assert_eq!(vs, vr, "{what}: raft-sim's verdicts, then the real one's");
        broken.extend(vs.into_iter().flatten().flatten());
    }
    // Every property is broken somewhere, so agreement is not agreement on "ok".
    let names: BTreeSet<String> = RaftSimSystem
        .properties(&w)
        .iter()
        .map(|p| p.name().to_string())
        .collect();
    assert_eq!(broken, names);
}
