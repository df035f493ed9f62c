//! Raft's safety properties (Raft paper, Figure 3) and its liveness property, read from the
//! states the nodes report. The safety properties remember what they saw earlier in the run
//! (leaders of past terms, entries once applied or committed), so a crash that wipes volatile
//! state cannot hide a violation.

use std::collections::BTreeMap;

use flymc_model::{GlobalState, NodeId, Property, PropertyKind};

use crate::{Entry, NodeView, Role};

/// `(alive, view)` of every node.
fn views(state: &GlobalState) -> Result<Vec<(bool, NodeView)>, String> {
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

/// `election-safety`: at most one leader per term, over the whole run.
#[derive(Default)]
pub struct ElectionSafety {
    leaders: BTreeMap<u64, NodeId>,
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
            match self.leaders.get(&v.term) {
                Some(&l) if l != i => {
                    return Err(format!(
                        "n{l} and n{i} were both leaders of term {}",
                        v.term
                    ))
                }
                Some(_) => {}
                None => {
                    self.leaders.insert(v.term, i);
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
                // The highest index where the terms agree; everything up to it must be equal.
                if let Some(k) = (0..common).rev().find(|&k| la[k].term == lb[k].term) {
                    if let Some(d) = (0..=k).find(|&d| la[d] != lb[d]) {
                        return Err(format!(
                            "n{a} and n{b} agree on the term of log position {k} but differ at position {d}: {} vs {}",
                            la[d], lb[d]
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// `state-machine-safety`: no two nodes ever apply different entries at the same position,
/// over the whole run.
#[derive(Default)]
pub struct StateMachineSafety {
    applied: BTreeMap<usize, (Entry, NodeId)>,
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
                            "n{by} applied {seen} at log position {k} but n{i} applied {e}"
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

/// `committed-never-lost` (leader completeness): an entry a node once knew committed is in the
/// log of every leader of that term or a later one, unchanged.
#[derive(Default)]
pub struct CommittedNeverLost {
    /// position -> (entry, term of the node that knew it committed, that node)
    committed: BTreeMap<usize, (Entry, u64, NodeId)>,
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
        for (i, (alive, v)) in vs.iter().enumerate() {
            if !alive {
                continue;
            }
            let upto = (v.commit as usize).min(v.log.len());
            for (k, e) in v.log[..upto].iter().enumerate() {
                match self.committed.get(&k) {
                    Some((seen, _, by)) if seen != e => {
                        return Err(format!(
                            "n{by} knew {seen} committed at log position {k}, but n{i} (term {}) knows {e} committed there",
                            v.term
                        ))
                    }
                    Some(_) => {}
                    None => {
                        self.committed.insert(k, (e.clone(), v.term, i));
                    }
                }
            }
        }
        for (&k, (e, term, by)) in &self.committed {
            for (i, (alive, v)) in vs.iter().enumerate() {
                if *alive && v.role == Role::Leader && v.term >= *term && v.log.get(k) != Some(e) {
                    return Err(format!(
                        "n{by} knew {e} committed at log position {k} in term {term}, but leader n{i} of term {} has {}",
                        v.term,
                        v.log.get(k).map_or("nothing".into(), |x| x.to_string())
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
/// when no node leads and some live node has used up its election timer firings, nor for a
/// node that does not follow the leader and has used up its own.
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
            return Ok(());
        }
        let vs = views(state)?;
        let n = vs.len();
        let alive: Vec<NodeId> = (0..n).filter(|&i| vs[i].0).collect();
        if alive.len() * 2 <= n {
            return Ok(());
        }
        let spent = |i: NodeId| {
            state.nodes[i]
                .vars
                .get("elections_left")
                .and_then(|v| v.as_u64())
                == Some(0)
        };
        let Some(&l) = alive
            .iter()
            .filter(|&&i| vs[i].1.role == Role::Leader)
            .max_by_key(|&&i| vs[i].1.term)
        else {
            // Election timers fire a bounded number of times (the workload's `elections`): a
            // split vote that used them up ended the run, not the protocol. No scheduler can
            // rule out split votes forever (Raft's randomised timeouts only make them
            // unlikely), so this is the fairness the check assumes.
            if alive.iter().any(|&i| spent(i)) {
                return Ok(());
            }
            return Err(format!(
                "{} of {n} nodes are alive but none leads",
                alive.len()
            ));
        };
        let term = vs[l].1.term;
        for &i in &alive {
            let v = &vs[i].1;
            // As above: a node that could not time out again to catch up is the budget's doing.
            if (v.leader != Some(l) || v.term != term) && !spent(i) {
                return Err(format!(
                    "n{l} leads term {term} but n{i} (term {}) knows {}",
                    v.term,
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

#[cfg(test)]
mod tests {
    use flymc_model::NodeView as Node;
    use serde_json::{json, Value};

    use super::*;

    fn node(term: u64, role: &str, leader: Option<usize>, elections_left: u64) -> Node {
        let Value::Object(vars) = json!({
            "term": term, "voted_for": null, "role": role, "leader": leader, "log": [],
            "commit": 0, "applied": [], "elections_left": elections_left,
        }) else {
            unreachable!("an object literal")
        };
        Node { alive: true, vars }
    }

    #[test]
    fn a_node_left_behind_by_its_election_budget_is_no_liveness_violation() {
        // n0 still leads term 3; n2 campaigned on to term 5 and has no firings left.
        let state = |left: u64| GlobalState {
            nodes: vec![
                node(3, "leader", Some(0), 0),
                node(3, "follower", Some(0), 1),
                node(5, "candidate", None, left),
            ],
            network: Vec::new(),
            env: Value::Null,
        };
        EventuallyLeader.check(&state(0)).unwrap();
        // With a firing left, n2 would have an election timer pending: a stuck node.
        let e = EventuallyLeader.check(&state(1)).unwrap_err();
        assert!(e.contains("n2 (term 5) knows no leader"), "{e}");
    }
}
