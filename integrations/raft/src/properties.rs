//! Raft's properties (`flymc-raft-properties`) over the state real Raft nodes report (the crate
//! documentation's "Node state").

use flymc_model::{NodeId, Property};
use flymc_raft_properties::RaftView;
use serde_json::{Map, Value};

use crate::{Entry, NodeView, Role};

/// A node's reported view plus the glue's election budget, which `eventually-leader` excuses.
pub struct Reported {
    view: NodeView,
    elections_left: Option<u64>,
}

impl RaftView for Reported {
    type Entry = Entry;

    fn entry_term(e: &Entry) -> u64 {
        e.term
    }
    fn read(vars: &Map<String, Value>) -> Result<Self, String> {
        // A node down since the start (a workload's `[faults] down`) has reported nothing: it
        // is as pristine as its empty data directory.
        if vars.is_empty() {
            return Ok(Reported {
                view: NodeView {
                    term: 0,
                    voted_for: None,
                    role: Role::Learner,
                    leader: None,
                    log: Vec::new(),
                    commit: 0,
                    applied: Vec::new(),
                },
                elections_left: None,
            });
        }
        Ok(Reported {
            view: serde_json::from_value(Value::Object(vars.clone())).map_err(|e| e.to_string())?,
            elections_left: vars.get("elections_left").and_then(Value::as_u64),
        })
    }
    fn term(&self) -> u64 {
        self.view.term
    }
    fn leads(&self) -> bool {
        self.view.role == Role::Leader
    }
    fn leader(&self) -> Option<NodeId> {
        self.view.leader
    }
    fn log(&self) -> &[Entry] {
        &self.view.log
    }
    fn commit(&self) -> u64 {
        self.view.commit
    }
    fn applied(&self) -> &[Entry] {
        &self.view.applied
    }
    fn elections_spent(&self) -> bool {
        self.elections_left == Some(0)
    }
}

/// Fresh properties for one run: all of Raft's.
pub fn all() -> Vec<Box<dyn Property>> {
    flymc_raft_properties::all::<Reported>()
}

#[cfg(test)]
mod tests {
    use flymc_model::{GlobalState, NodeView as Node};
    use flymc_raft_properties::EventuallyLeader;
    use serde_json::json;

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
        let mut p = EventuallyLeader::<Reported>::default();
        p.check(&state(0)).unwrap();
        // With a firing left, n2 would have an election timer pending: a stuck node.
        let e = p.check(&state(1)).unwrap_err();
        assert!(e.contains("n2 (term 5) knows no leader"), "{e}");
    }
}
