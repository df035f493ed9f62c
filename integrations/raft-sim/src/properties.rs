//! Raft's safety properties (Raft paper, Figure 3) and one liveness property, read from the
//! global state's node variables. The safety properties remember what they saw earlier in the
//! run (leaders of past terms, entries once applied or committed), so a crash that wipes volatile
//! state does not hide a violation.

use std::collections::BTreeMap;

use flymc_model::{GlobalState, NodeId, Property, PropertyKind};
use serde::Deserialize;

use crate::protocol::{Entry, Role, NODES};

/// The node variables the properties read.
#[derive(Deserialize)]
struct View {
    current_term: u64,
    role: Role,
    leader: Option<NodeId>,
    log: Vec<Entry>,
    commit_index: u64,
    applied: Vec<Entry>,
}

/// `(alive, view)` of every node.
fn views(state: &GlobalState) -> Result<Vec<(bool, View)>, String> {
    state
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            serde_json::from_value(serde_json::Value::Object(n.vars.clone()))
                .map(|v| (n.alive, v))
                .map_err(|e| format!("n{i}: unreadable raft state: {e}"))
        })
        .collect()
}

fn show(e: &Entry) -> String {
    match e.value {
        Some(v) => format!("{v}@t{}", e.term),
        None => format!("no-op@t{}", e.term),
    }
}

/// `election-safety`: at most one leader per term, over the whole run.
#[derive(Clone, Default)]
pub struct ElectionSafety {
    pub(crate) leaders: BTreeMap<u64, NodeId>,
}

impl Property for ElectionSafety {
    fn name(&self) -> &str {
        "election-safety"
    }
    fn kind(&self) -> PropertyKind {
        PropertyKind::Safety
    }
    fn check(&mut self, state: &GlobalState) -> Result<(), String> {
        for (i, (alive, v)) in views(state)?.iter().enumerate() {
            if !alive || v.role != Role::Leader {
                continue;
            }
            match self.leaders.get(&v.current_term) {
                Some(&l) if l != i => {
                    return Err(format!(
                        "n{l} and n{i} were both leaders of term {}",
                        v.current_term
                    ))
                }
                Some(_) => {}
                None => {
                    self.leaders.insert(v.current_term, i);
                }
            }
        }
        Ok(())
    }
}

/// `log-matching`: if two logs hold an entry with the same index and term, they are identical
/// up to that index (crashed nodes included: logs are persistent).
#[derive(Default)]
pub struct LogMatching;

impl Property for LogMatching {
    fn name(&self) -> &str {
        "log-matching"
    }
    fn kind(&self) -> PropertyKind {
        PropertyKind::Safety
    }
    fn check(&mut self, state: &GlobalState) -> Result<(), String> {
        let vs = views(state)?;
        for a in 0..vs.len() {
            for b in a + 1..vs.len() {
                let (la, lb) = (&vs[a].1.log, &vs[b].1.log);
                let common = la.len().min(lb.len());
                // The highest index where the terms agree; everything before must be equal.
                if let Some(k) = (0..common).rev().find(|&k| la[k].term == lb[k].term) {
                    if let Some(d) = (0..=k).find(|&d| la[d] != lb[d]) {
                        return Err(format!(
                            "n{a} and n{b} agree on the term of index {} but differ at index {}: {} vs {}",
                            k + 1,
                            d + 1,
                            show(&la[d]),
                            show(&lb[d])
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
#[derive(Clone, Default)]
pub struct StateMachineSafety {
    pub(crate) applied: BTreeMap<usize, (Entry, NodeId)>,
}

impl Property for StateMachineSafety {
    fn name(&self) -> &str {
        "state-machine-safety"
    }
    fn kind(&self) -> PropertyKind {
        PropertyKind::Safety
    }
    fn check(&mut self, state: &GlobalState) -> Result<(), String> {
        for (i, (alive, v)) in views(state)?.iter().enumerate() {
            if !alive {
                continue;
            }
            for (k, e) in v.applied.iter().enumerate() {
                match self.applied.get(&k) {
                    Some((seen, by)) if seen != e => {
                        return Err(format!(
                            "n{by} applied {} at index {} but n{i} applied {}",
                            show(seen),
                            k + 1,
                            show(e)
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

/// `committed-never-lost` (leader completeness): an entry once committed by a leader is in the
/// log of every leader of that term or a later one.
#[derive(Clone, Default)]
pub struct CommittedNeverLost {
    /// index (0-based) -> (entry, term in which it was committed, committing leader)
    pub(crate) committed: BTreeMap<usize, (Entry, u64, NodeId)>,
}

impl Property for CommittedNeverLost {
    fn name(&self) -> &str {
        "committed-never-lost"
    }
    fn kind(&self) -> PropertyKind {
        PropertyKind::Safety
    }
    fn check(&mut self, state: &GlobalState) -> Result<(), String> {
        let vs = views(state)?;
        let leaders: Vec<(NodeId, &View)> = vs
            .iter()
            .enumerate()
            .filter(|(_, (alive, v))| *alive && v.role == Role::Leader)
            .map(|(i, (_, v))| (i, v))
            .collect();
        for &(i, v) in &leaders {
            let upto = (v.commit_index as usize).min(v.log.len());
            for (k, e) in v.log[..upto].iter().enumerate() {
                match self.committed.get(&k) {
                    Some((seen, _, by)) if seen != e => {
                        return Err(format!(
                            "n{by} committed {} at index {} but leader n{i} (term {}) committed {}",
                            show(seen),
                            k + 1,
                            v.current_term,
                            show(e)
                        ))
                    }
                    Some(_) => {}
                    None => {
                        self.committed.insert(k, (e.clone(), v.current_term, i));
                    }
                }
            }
        }
        for (&k, (e, term, by)) in &self.committed {
            for &(i, v) in &leaders {
                if v.current_term >= *term && v.log.get(k) != Some(e) {
                    return Err(format!(
                        "n{by} committed {} at index {} in term {term}, but leader n{i} of term {} has {}",
                        show(e),
                        k + 1,
                        v.current_term,
                        v.log.get(k).map_or("nothing".into(), show)
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `eventually-leader` (liveness, checked on the state a run ends in): when a majority is
/// alive, some live node leads and every live node knows it, in the leader's term.
///
/// It is only judged at a quiescent end. The executor also checks liveness when a run stops at
/// the event limit, and a state with a message, timer or client request still pending may yet
/// elect a leader (a crash notice's election timer, a vote in flight): claiming a violation
/// there would be a false alarm.
#[derive(Default)]
pub struct EventuallyLeader;

impl Property for EventuallyLeader {
    fn name(&self) -> &str {
        "eventually-leader"
    }
    fn kind(&self) -> PropertyKind {
        PropertyKind::Liveness
    }
    fn check(&mut self, state: &GlobalState) -> Result<(), String> {
        if !state.network.is_empty() {
            return Ok(()); // not quiescent: the run was cut short
        }
        let vs = views(state)?;
        let alive: Vec<NodeId> = (0..vs.len()).filter(|&i| vs[i].0).collect();
        if alive.len() * 2 <= NODES {
            return Ok(());
        }
        let leaders: Vec<NodeId> = alive
            .iter()
            .copied()
            .filter(|&i| vs[i].1.role == Role::Leader)
            .collect();
        let Some(&l) = leaders.iter().max_by_key(|&&i| vs[i].1.current_term) else {
            return Err(format!(
                "{} of {NODES} nodes are alive but none leads",
                alive.len()
            ));
        };
        let term = vs[l].1.current_term;
        for &i in &alive {
            let v = &vs[i].1;
            if v.leader != Some(l) || v.current_term != term {
                return Err(format!(
                    "n{l} leads term {term} but n{i} (term {}) knows {}",
                    v.current_term,
                    v.leader
                        .map_or("no leader".into(), |x| format!("n{x} as leader"))
                ));
            }
        }
        Ok(())
    }
}

/// Fresh properties for one run.
pub fn all() -> Vec<Box<dyn Property>> {
    vec![
        Box::new(ElectionSafety::default()),
        Box::new(LogMatching),
        Box::new(StateMachineSafety::default()),
        Box::new(CommittedNeverLost::default()),
        Box::new(EventuallyLeader),
    ]
}
