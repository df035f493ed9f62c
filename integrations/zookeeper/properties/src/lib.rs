//! What must hold of a ZooKeeper ensemble (fast leader election and ZAB's epochs), written once
//! over [`ZabView`], which both twins implement: zk-le-sim from its serialised node state, real
//! ZooKeeper from the variables the Java hook reports through `FlymcZk.state`.
//!
//! A leader "leads epoch e" once it is *established*: a quorum acknowledged e and it wrote e as
//! its currentEpoch (past ZAB's discovery). A follower is established once it is in broadcast
//! (in zk-le-sim: its leader's `new_leader` arrived). FLE alone may well make two nodes LEADING
//! at once; ZAB's epochs are what keep that harmless, so the safety properties compare
//! established roles only.
//!
//! # What `eventually-quorum-follows-leader` counts
//! A leader and the followers that name it, each *in service* ([`ZabView::in_service`]): the
//! liveness asked of an ensemble is that it ends up serving, a quorum behind one leader past
//! synchronisation, not merely that an election ended (ZOOKEEPER-1419 is an election that never
//! ends; a sync that stalls after one is the other way to fail it). On real ZooKeeper a node is
//! in service once established. zk-le-sim models the election and the `new_leader` hand-off but
//! not the timeouts that get a real learner out of a stalled sync, so it counts a node in
//! service as soon as it leads or follows: counting only established nodes there made `random`
//! report zk-1419's property on most seeds where it reported none, on schedules the
//! simulator's stand-ins do not recover from and a real ensemble would.

//! # Properties only one twin can break
//! `acked-zxid-in-later-leaders` and `no-uncaught-exception` read client acknowledgements, the
//! zxid log and escaped exceptions, which zk-le-sim does not model (it has no clients and no
//! threads); its view reports none, so they hold vacuously there and zk-le-sim does not list
//! them ([`election`] versus [`all`]).

use std::collections::BTreeMap;

use flymc_model::property::{liveness, safety};
use flymc_model::{GlobalState, Property};
use serde_json::{Map, Value};

pub const ONE_LEADER_PER_EPOCH: &str = "one-leader-per-epoch";
pub const FOLLOWERS_AGREE: &str = "followers-agree";
pub const ACKED_IN_LATER_LEADERS: &str = "acked-zxid-in-later-leaders";
pub const NO_UNCAUGHT_EXCEPTION: &str = "no-uncaught-exception";
pub const EVENTUALLY_QUORUM_FOLLOWS_LEADER: &str = "eventually-quorum-follows-leader";

pub const LEADING: &str = "LEADING";
pub const FOLLOWING: &str = "FOLLOWING";

/// What the properties read of one node's state. Missing or `null` variables read as
/// "nothing" (a node still starting reports only its `state`).
pub trait ZabView: Sized + 'static {
    fn read(vars: &Map<String, Value>) -> Self;
    /// The peer state: `LOOKING`, `FOLLOWING`, `LEADING`, ...
    fn state(&self) -> &str;
    /// Past discovery when leading, in broadcast when following (see the crate docs).
    fn established(&self) -> bool;
    fn current_epoch(&self) -> Option<u64>;
    /// The node it follows or leads.
    fn leader(&self) -> Option<u64>;
    /// Zxids this node acknowledged to a client.
    fn acked(&self) -> &[u64] {
        &[]
    }
    /// The zxids in its log.
    fn log(&self) -> &[u64] {
        &[]
    }
    /// The first exception that escaped one of its quorum threads.
    fn uncaught(&self) -> Option<&Value> {
        None
    }
    /// What a node that is not part of a quorum is doing, for liveness messages.
    fn describe(&self) -> String;
    /// Whether it counts toward a serving quorum once it leads or follows: by default once
    /// [`ZabView::established`] (see the crate docs for the twin that overrides it).
    fn in_service(&self) -> bool {
        self.established()
    }
}

/// A string variable, `""` when missing: for twins' [`ZabView::read`].
pub fn str_var<'a>(vars: &'a Map<String, Value>, k: &str) -> &'a str {
    vars.get(k).and_then(Value::as_str).unwrap_or("")
}

/// A number variable, `None` when missing or `null`: for twins' [`ZabView::read`].
pub fn u64_var(vars: &Map<String, Value>, k: &str) -> Option<u64> {
    vars.get(k).and_then(Value::as_u64)
}

/// The variables of ZAB's peers under ZooKeeper's names (as the Java hook reports them and
/// the ZAB twin keeps them): the view of a system that reports nothing more.
pub struct ZabVars {
    pub state: String,
    pub zab_state: String,
    pub established: bool,
    pub current_epoch: Option<u64>,
    pub leader: Option<u64>,
    pub acked: Vec<u64>,
    pub log: Vec<u64>,
}

fn zxids(vars: &Map<String, Value>, k: &str) -> Vec<u64> {
    vars.get(k)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default()
}

impl ZabView for ZabVars {
    fn read(vars: &Map<String, Value>) -> Self {
        ZabVars {
            state: str_var(vars, "state").to_string(),
            zab_state: str_var(vars, "zabState").to_string(),
            established: vars.get("established").and_then(Value::as_bool) == Some(true),
            current_epoch: u64_var(vars, "currentEpoch"),
            leader: u64_var(vars, "leader"),
            acked: zxids(vars, "acked"),
            log: zxids(vars, "log"),
        }
    }
    fn state(&self) -> &str {
        &self.state
    }
    fn established(&self) -> bool {
        self.established
    }
    fn current_epoch(&self) -> Option<u64> {
        self.current_epoch
    }
    fn leader(&self) -> Option<u64> {
        self.leader
    }
    fn acked(&self) -> &[u64] {
        &self.acked
    }
    fn log(&self) -> &[u64] {
        &self.log
    }
    fn describe(&self) -> String {
        format!("{}/{}", self.state, self.zab_state)
    }
}

/// `(alive, view)` of every node.
fn views<V: ZabView>(s: &GlobalState) -> Vec<(bool, V)> {
    s.nodes
        .iter()
        .map(|n| (n.alive, V::read(&n.vars)))
        .collect()
}

fn established_leader<V: ZabView>((alive, v): &(bool, V)) -> bool {
    *alive && v.established() && v.state() == LEADING
}

/// Fresh properties for one run of an ensemble of `nodes`: those of leader election, which
/// both twins can break.
pub fn election<V: ZabView>(nodes: usize) -> Vec<Box<dyn Property>> {
    vec![
        one_leader_per_epoch::<V>(),
        followers_agree::<V>(),
        eventually_quorum_follows_leader::<V>(nodes),
    ]
}

/// Fresh properties for one run of an ensemble of `nodes`: election's plus those of clients'
/// writes and of the node's threads, in the order they are checked.
pub fn all<V: ZabView>(nodes: usize) -> Vec<Box<dyn Property>> {
    vec![
        one_leader_per_epoch::<V>(),
        followers_agree::<V>(),
        acked_in_later_leaders::<V>(),
        no_uncaught_exception::<V>(),
        eventually_quorum_follows_leader::<V>(nodes),
    ]
}

/// At most one established leader per epoch, over the whole run (crashed leaders included).
pub fn one_leader_per_epoch<V: ZabView>() -> Box<dyn Property> {
    let mut leaders: BTreeMap<u64, usize> = BTreeMap::new();
    safety(ONE_LEADER_PER_EPOCH, move |s: &GlobalState| {
        for (i, n) in views::<V>(s).iter().enumerate() {
            if !established_leader(n) {
                continue;
            }
            let Some(e) = n.1.current_epoch() else {
                continue;
            };
            match leaders.get(&e) {
                Some(&l) if l != i => return Err(format!("n{i} and n{l} both led epoch {e}")),
                Some(_) => {}
                None => {
                    leaders.insert(e, i);
                }
            }
        }
        Ok(())
    })
}

/// In one state, the established nodes of an epoch all name the same leader.
pub fn followers_agree<V: ZabView>() -> Box<dyn Property> {
    safety(FOLLOWERS_AGREE, |s: &GlobalState| {
        // Epoch -> (leader, the node that says so).
        let mut claims: BTreeMap<u64, (u64, usize)> = BTreeMap::new();
        for (i, (alive, v)) in views::<V>(s).iter().enumerate() {
            if !alive || !v.established() || (v.state() != LEADING && v.state() != FOLLOWING) {
                continue;
            }
            let (Some(e), Some(l)) = (v.current_epoch(), v.leader()) else {
                continue;
            };
            match claims.get(&e) {
                Some(&(l2, j)) if l2 != l => {
                    return Err(format!(
                        "in epoch {e}, n{j} follows n{l2} but n{i} follows n{l}"
                    ))
                }
                Some(_) => {}
                None => {
                    claims.insert(e, (l, i));
                }
            }
        }
        Ok(())
    })
}

/// A zxid once acknowledged to a client (by any node, crashed ones included) is in the log of
/// every established leader from then on.
pub fn acked_in_later_leaders<V: ZabView>() -> Box<dyn Property> {
    let mut acked: Vec<u64> = Vec::new();
    safety(ACKED_IN_LATER_LEADERS, move |s: &GlobalState| {
        let vs = views::<V>(s);
        for (_, v) in &vs {
            for &z in v.acked() {
                if !acked.contains(&z) {
                    acked.push(z);
                }
            }
        }
        for (i, n) in vs.iter().enumerate() {
            if !established_leader(n) {
                continue;
            }
            if let Some(z) = acked.iter().find(|z| !n.1.log().contains(z)) {
                return Err(format!(
                    "zxid {z:#x} was acknowledged to a client, but n{i} leads epoch {} without it in its log",
                    n.1.current_epoch().unwrap_or(0)
                ));
            }
        }
        Ok(())
    })
}

/// No exception escapes a node's quorum threads (crashed nodes included: it happened).
pub fn no_uncaught_exception<V: ZabView>() -> Box<dyn Property> {
    safety(NO_UNCAUGHT_EXCEPTION, |s: &GlobalState| {
        for (i, (_, v)) in views::<V>(s).iter().enumerate() {
            if let Some(first) = v.uncaught() {
                return Err(format!(
                    "n{i}: an exception escaped a quorum thread: {first}"
                ));
            }
        }
        Ok(())
    })
}

/// Liveness: when a quorum is up, some live leader has a quorum of live followers (itself
/// included). See the crate documentation for what counts.
pub fn eventually_quorum_follows_leader<V: ZabView>(nodes: usize) -> Box<dyn Property> {
    let quorum = nodes / 2 + 1;
    liveness(EVENTUALLY_QUORUM_FOLLOWS_LEADER, move |s: &GlobalState| {
        let vs = views::<V>(s);
        let alive = vs.iter().filter(|n| n.0).count();
        if alive < quorum {
            return Ok(());
        }
        let mut best = 0;
        for (l, (up, v)) in vs.iter().enumerate() {
            if !up || !v.in_service() || v.state() != LEADING {
                continue;
            }
            let followers = vs
                .iter()
                .filter(|(up, f)| {
                    *up && f.in_service() && f.state() == FOLLOWING && f.leader() == Some(l as u64)
                })
                .count();
            best = best.max(followers + 1);
        }
        if best >= quorum {
            return Ok(());
        }
        let roles: Vec<String> = vs
            .iter()
            .enumerate()
            .map(|(i, (up, v))| match (up, v.state(), v.leader()) {
                (false, _, _) => format!("n{i} down"),
                (true, FOLLOWING, Some(l)) => format!("n{i} FOLLOWING n{l}"),
                (true, _, _) => format!("n{i} {}", v.describe()),
            })
            .collect();
        Err(format!(
            "{alive} of {} nodes are up but no leader has a quorum of {quorum}: {}",
            vs.len(),
            roles.join(", ")
        ))
    })
}
