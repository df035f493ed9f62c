//! Raft's safety properties (Raft paper, Figure 3) and its liveness property, written once over
//! [`RaftView`], which both twins implement: raft-sim from its serialised node state, the real
//! systems (openraft, async-raft) from the state their nodes report. The safety properties
//! remember what they saw earlier in the run (leaders of past terms, entries once applied or
//! known committed), so a crash that wipes volatile state cannot hide a violation.
//!
//! Indexes in messages are Raft's, 1-based: the entry at `log()[k]` has index `k + 1`.
//!
//! # What `committed-never-lost` means
//! Raft's Leader Completeness: an entry that a live node once knew committed (it lay within that
//! node's `commit` prefix) is, unchanged and at the same index, in the log of every leader whose
//! term is at least the term that node had when it was first seen knowing it; and no two nodes
//! ever know different entries committed at the same index.
//!
//! The twins had drifted here: raft-sim only counted what a *leader* knew committed, the real
//! systems what *any* node knew. Any node's is the one kept. In Raft a follower's commit index
//! only ever covers entries a leader committed (it takes `min(leader_commit, last new entry)`
//! after the log matched), so a follower claiming more is itself the bug, which is exactly
//! async-raft 0.6.1's apply-before-match. Leaving it out would make the real systems blind to
//! a follower's bogus commit that no other node applied in the same run. On raft-sim it changes
//! no verdict: there a node applies in the step that raises its commit index, so every
//! follower's conflicting commit is an applied conflict that `state-machine-safety` (checked
//! before) reports first, and a correct follower's commit index is a prefix a leader was seen
//! committing in an earlier state.
//!
//! # What `eventually-leader` excuses
//! It is judged only on a quiescent end state (nothing in flight), and it excuses a node whose
//! election budget is spent ([`RaftView::elections_spent`]): the real twins' election timers
//! fire a bounded number of times per incarnation. raft-sim ends split votes by rule and has
//! no such budget, so for it nothing is excused.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::marker::PhantomData;

use flymc_model::{GlobalState, NodeId, Property, PropertyKind};
use serde_json::{Map, Value};

pub const ELECTION_SAFETY: &str = "election-safety";
pub const LOG_MATCHING: &str = "log-matching";
pub const STATE_MACHINE_SAFETY: &str = "state-machine-safety";
pub const COMMITTED_NEVER_LOST: &str = "committed-never-lost";
pub const EVENTUALLY_LEADER: &str = "eventually-leader";

/// What Raft's properties read of one node's state.
pub trait RaftView: Sized + 'static {
    /// A log entry. Entries are compared for equality only; `Display` is for messages.
    type Entry: Clone + PartialEq + Display + Send + Sync + 'static;

    /// The term an entry was created in.
    fn entry_term(e: &Self::Entry) -> u64;
    /// Read the view from the node's state variables, `Err` naming what is unreadable.
    fn read(vars: &Map<String, Value>) -> Result<Self, String>;
    fn term(&self) -> u64;
    /// Whether the node is its term's leader.
    fn leads(&self) -> bool;
    /// The leader of `term()` as far as the node knows (itself when leading).
    fn leader(&self) -> Option<NodeId>;
    fn log(&self) -> &[Self::Entry];
    /// How many entries of `log()` the node knows committed.
    fn commit(&self) -> u64;
    /// The entries its state machine applied, in index order.
    fn applied(&self) -> &[Self::Entry];
    /// The node's election timer may never fire again in this incarnation.
    fn elections_spent(&self) -> bool {
        false
    }
}

/// `(alive, view)` of every node.
fn views<V: RaftView>(state: &GlobalState) -> Result<Vec<(bool, V)>, String> {
    state
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            V::read(&n.vars)
                .map(|v| (n.alive, v))
                .map_err(|e| format!("n{i}: unreadable raft state: {e}"))
        })
        .collect()
}

/// Fresh properties for one run, in the order they are checked.
pub fn all<V: RaftView>() -> Vec<Box<dyn Property>> {
    vec![
        Box::new(ElectionSafety::<V>::default()),
        Box::new(LogMatching::<V>::default()),
        Box::new(StateMachineSafety::<V>::default()),
        Box::new(CommittedNeverLost::<V>::default()),
        Box::new(EventuallyLeader::<V>::default()),
    ]
}

// `fn() -> V` keeps the properties Send + Sync and Clone whatever V is: they never hold a V.
type Twin<V> = PhantomData<fn() -> V>;

// Derives would demand `V: Default + Clone`; the properties never hold a `V`.
impl<V> Default for ElectionSafety<V> {
    fn default() -> Self {
        ElectionSafety {
            leaders: BTreeMap::new(),
            twin: PhantomData,
        }
    }
}

impl<V> Clone for ElectionSafety<V> {
    fn clone(&self) -> Self {
        ElectionSafety {
            leaders: self.leaders.clone(),
            twin: PhantomData,
        }
    }
}

impl<V> Default for LogMatching<V> {
    fn default() -> Self {
        LogMatching { twin: PhantomData }
    }
}

impl<V> Default for EventuallyLeader<V> {
    fn default() -> Self {
        EventuallyLeader { twin: PhantomData }
    }
}

impl<V: RaftView> Default for StateMachineSafety<V> {
    fn default() -> Self {
        StateMachineSafety {
            applied: BTreeMap::new(),
        }
    }
}

impl<V: RaftView> Clone for StateMachineSafety<V> {
    fn clone(&self) -> Self {
        StateMachineSafety {
            applied: self.applied.clone(),
        }
    }
}

impl<V: RaftView> Default for CommittedNeverLost<V> {
    fn default() -> Self {
        CommittedNeverLost {
            committed: BTreeMap::new(),
        }
    }
}

impl<V: RaftView> Clone for CommittedNeverLost<V> {
    fn clone(&self) -> Self {
        CommittedNeverLost {
            committed: self.committed.clone(),
        }
    }
}

/// `election-safety`: at most one leader per term, over the whole run.
pub struct ElectionSafety<V> {
    leaders: BTreeMap<u64, NodeId>,
    twin: Twin<V>,
}

impl<V> ElectionSafety<V> {
    /// Term -> the node seen leading it.
    pub fn leaders(&self) -> &BTreeMap<u64, NodeId> {
        &self.leaders
    }
}

impl<V: RaftView> Property for ElectionSafety<V> {
    fn name(&self) -> &str {
        ELECTION_SAFETY
    }
    fn kind(&self) -> PropertyKind {
        PropertyKind::Safety
    }
    fn check(&mut self, state: &GlobalState) -> Result<(), String> {
        for (i, (alive, v)) in views::<V>(state)?.iter().enumerate() {
            if !alive || !v.leads() {
                continue;
            }
            match self.leaders.get(&v.term()) {
                Some(&l) if l != i => {
                    return Err(format!(
                        "n{l} and n{i} were both leaders of term {}",
                        v.term()
                    ))
                }
                Some(_) => {}
                None => {
                    self.leaders.insert(v.term(), i);
                }
            }
        }
        Ok(())
    }
}

/// `log-matching`: if two logs hold an entry with the same index and term, they are identical
/// up to that index (crashed nodes included: logs are persistent). Keeps no history.
pub struct LogMatching<V> {
    twin: Twin<V>,
}

impl<V: RaftView> Property for LogMatching<V> {
    fn name(&self) -> &str {
        LOG_MATCHING
    }
    fn kind(&self) -> PropertyKind {
        PropertyKind::Safety
    }
    fn check(&mut self, state: &GlobalState) -> Result<(), String> {
        let vs = views::<V>(state)?;
        for a in 0..vs.len() {
            for b in a + 1..vs.len() {
                let (la, lb) = (vs[a].1.log(), vs[b].1.log());
                let common = la.len().min(lb.len());
                // The highest index where the terms agree; everything up to it must be equal.
                if let Some(k) = (0..common)
                    .rev()
                    .find(|&k| V::entry_term(&la[k]) == V::entry_term(&lb[k]))
                {
                    if let Some(d) = (0..=k).find(|&d| la[d] != lb[d]) {
                        return Err(format!(
                            "n{a} and n{b} agree on the term of index {} but differ at index {}: {} vs {}",
                            k + 1,
                            d + 1,
                            la[d],
                            lb[d]
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// `state-machine-safety`: no two nodes ever apply different entries at the same index, over
/// the whole run.
pub struct StateMachineSafety<V: RaftView> {
    applied: BTreeMap<usize, (V::Entry, NodeId)>,
}

impl<V: RaftView> StateMachineSafety<V> {
    /// Index (0-based) -> the entry first seen applied there, and the node that applied it.
    pub fn applied(&self) -> &BTreeMap<usize, (V::Entry, NodeId)> {
        &self.applied
    }
}

impl<V: RaftView> Property for StateMachineSafety<V> {
    fn name(&self) -> &str {
        STATE_MACHINE_SAFETY
    }
    fn kind(&self) -> PropertyKind {
        PropertyKind::Safety
    }
    fn check(&mut self, state: &GlobalState) -> Result<(), String> {
        for (i, (alive, v)) in views::<V>(state)?.iter().enumerate() {
            if !alive {
                continue;
            }
            for (k, e) in v.applied().iter().enumerate() {
                match self.applied.get(&k) {
                    Some((seen, by)) if seen != e => {
                        return Err(format!(
                            "n{by} applied {seen} at index {} but n{i} applied {e}",
                            k + 1
                        ))
                    }
                    Some(_) => {}
                    None => {
                        self.applied.insert(k, (e.clone(), i));
                    }
                }
            }
        }
        Ok(())
    }
}

/// `committed-never-lost` (leader completeness): see the crate documentation for its meaning.
pub struct CommittedNeverLost<V: RaftView> {
    committed: BTreeMap<usize, (V::Entry, u64, NodeId)>,
}

impl<V: RaftView> CommittedNeverLost<V> {
    /// Index (0-based) -> (the entry first seen known committed there, the term of the node
    /// that knew it, that node).
    pub fn committed(&self) -> &BTreeMap<usize, (V::Entry, u64, NodeId)> {
        &self.committed
    }
}

impl<V: RaftView> Property for CommittedNeverLost<V> {
    fn name(&self) -> &str {
        COMMITTED_NEVER_LOST
    }
    fn kind(&self) -> PropertyKind {
        PropertyKind::Safety
    }
    fn check(&mut self, state: &GlobalState) -> Result<(), String> {
        let vs = views::<V>(state)?;
        for (i, (alive, v)) in vs.iter().enumerate() {
            if !alive {
                continue;
            }
            let upto = (v.commit() as usize).min(v.log().len());
            for (k, e) in v.log()[..upto].iter().enumerate() {
                match self.committed.get(&k) {
                    Some((seen, _, by)) if seen != e => {
                        return Err(format!(
                            "n{by} knew {seen} committed at index {}, but n{i} (term {}) knows {e} committed there",
                            k + 1,
                            v.term()
                        ))
                    }
                    Some(_) => {}
                    None => {
                        self.committed.insert(k, (e.clone(), v.term(), i));
                    }
                }
            }
        }
        for (&k, (e, term, by)) in &self.committed {
            for (i, (alive, v)) in vs.iter().enumerate() {
                if *alive && v.leads() && v.term() >= *term && v.log().get(k) != Some(e) {
                    return Err(format!(
                        "n{by} knew {e} committed at index {} in term {term}, but leader n{i} of term {} has {}",
                        k + 1,
                        v.term(),
                        v.log().get(k).map_or("nothing".into(), |x| x.to_string())
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `eventually-leader` (liveness, on the state a run ends in): when a majority is alive, some
/// live node leads and every live node knows it, in the leader's term.
///
/// Only judged at a quiescent end: a run cut short by the event limit with a vote still in
/// flight may yet elect a leader, and calling that a violation would be a false alarm. Nor
/// when no node leads and some live node has spent its election budget, nor for a node that
/// does not follow the leader and has spent its own.
pub struct EventuallyLeader<V> {
    twin: Twin<V>,
}

impl<V: RaftView> Property for EventuallyLeader<V> {
    fn name(&self) -> &str {
        EVENTUALLY_LEADER
    }
    fn kind(&self) -> PropertyKind {
        PropertyKind::Liveness
    }
    fn check(&mut self, state: &GlobalState) -> Result<(), String> {
        if !state.network.is_empty() {
            return Ok(());
        }
        let vs = views::<V>(state)?;
        let n = vs.len();
        let alive: Vec<NodeId> = (0..n).filter(|&i| vs[i].0).collect();
        if alive.len() * 2 <= n {
            return Ok(());
        }
        let Some(&l) = alive
            .iter()
            .filter(|&&i| vs[i].1.leads())
            .max_by_key(|&&i| vs[i].1.term())
        else {
            // A split vote that used up a bounded election budget ended the run, not the
            // protocol. No scheduler can rule out split votes forever (Raft's randomised
            // timeouts only make them unlikely), so this is the fairness the check assumes.
            if alive.iter().any(|&i| vs[i].1.elections_spent()) {
                return Ok(());
            }
            return Err(format!(
                "{} of {n} nodes are alive but none leads",
                alive.len()
            ));
        };
        let term = vs[l].1.term();
        for &i in &alive {
            let v = &vs[i].1;
            // As above: a node that could not time out again to catch up is the budget's doing.
            if (v.leader() != Some(l) || v.term() != term) && !v.elections_spent() {
                return Err(format!(
                    "n{l} leads term {term} but n{i} (term {}) knows {}",
                    v.term(),
                    v.leader()
                        .map_or("no leader".into(), |x| format!("n{x} as leader"))
                ));
            }
        }
        Ok(())
    }
}
