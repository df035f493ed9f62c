//! Global states: every node's named state variables plus the messages in flight.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::event::{Event, EventKind, NodeId};
use crate::stable_hash;

/// One node's state as the checker sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeView {
    pub alive: bool,
    /// Named state variables (role, term, ballot, ...). Must hold everything that decides the
    /// node's future behaviour, or the state-event cache and symmetry become unsound.
    pub vars: Map<String, Value>,
}

/// What the property language reads of a node.
impl flymc_lang::Node for NodeView {
    fn alive(&self) -> bool {
        self.alive
    }
    fn vars(&self) -> &Map<String, Value> {
        &self.vars
    }
}

/// A message (or timer, client request) in flight, without its identity: two states that differ
/// only in how their pending events were produced are the same state.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PendingView {
    pub kind: EventKind,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<NodeId>,
    pub to: NodeId,
    /// Payload as canonical JSON text (keeps the view orderable).
    pub fields: String,
}

impl From<&Event> for PendingView {
    fn from(e: &Event) -> Self {
        PendingView {
            kind: e.kind,
            name: e.name.clone(),
            from: e.from,
            to: e.to,
            fields: Value::Object(e.fields.clone()).to_string(),
        }
    }
}

/// The state of the whole system after a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GlobalState {
    pub nodes: Vec<NodeView>,
    /// Pending events, sorted.
    pub network: Vec<PendingView>,
    /// State that belongs to no node (a simulated environment's shared clock); `null` if none.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub env: Value,
}

impl GlobalState {
    /// Build from node views and pending events (sorted here so the order of `pending` is moot).
    pub fn new(nodes: Vec<NodeView>, pending: &[Event]) -> Self {
        let mut network: Vec<PendingView> = pending
            .iter()
            .filter(|e| !e.is_fault())
            .map(PendingView::from)
            .collect();
        network.sort();
        GlobalState {
            nodes,
            network,
            env: Value::Null,
        }
    }

    /// Canonical JSON text: serde_json maps are ordered, so equal states give equal text.
    pub fn canonical(&self) -> String {
        serde_json::to_string(self).expect("a GlobalState always serialises")
    }

    /// Stable hash of the whole state.
    pub fn hash(&self) -> u64 {
        stable_hash(self.canonical().as_bytes())
    }

    /// Look up a variable of a node.
    pub fn var(&self, node: NodeId, name: &str) -> Option<&Value> {
        self.nodes.get(node).and_then(|n| n.vars.get(name))
    }

    /// The first few differences between two states, for divergence reports.
    pub fn diff(&self, other: &GlobalState, limit: usize) -> Vec<String> {
        let mut out = Vec::new();
        if self.nodes.len() != other.nodes.len() {
            out.push(format!(
                "node count {} vs {}",
                self.nodes.len(),
                other.nodes.len()
            ));
        }
        for (i, (a, b)) in self.nodes.iter().zip(&other.nodes).enumerate() {
            if a.alive != b.alive {
                out.push(format!("n{i}.alive: {} vs {}", a.alive, b.alive));
            }
            let keys: std::collections::BTreeSet<&String> =
                a.vars.keys().chain(b.vars.keys()).collect();
            for k in keys {
                let (x, y) = (a.vars.get(k), b.vars.get(k));
                if x != y {
                    out.push(format!(
                        "n{i}.{k}: {} vs {}",
                        x.map_or("-".into(), |v| v.to_string()),
                        y.map_or("-".into(), |v| v.to_string())
                    ));
                }
            }
        }
        if self.env != other.env {
            out.push(format!("env: {} vs {}", self.env, other.env));
        }
        if self.network != other.network {
            let only_a = self
                .network
                .iter()
                .filter(|p| !other.network.contains(p))
                .count();
            let only_b = other
                .network
                .iter()
                .filter(|p| !self.network.contains(p))
                .count();
            out.push(format!(
                "network: {only_a} pending only in the first, {only_b} only in the second"
            ));
        }
        out.truncate(limit);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(v: Value) -> NodeView {
        NodeView {
            alive: true,
            vars: v.as_object().unwrap().clone(),
        }
    }

    #[test]
    fn hash_is_independent_of_pending_order_and_stable() {
        let e1 = Event {
            id: crate::EventId(1),
            kind: EventKind::Message,
            name: "a".into(),
            from: Some(0),
            to: 1,
            fields: Map::new(),
            parent: None,
            delay_ms: None,
        };
        let mut e2 = e1.clone();
        e2.name = "b".into();
        let s1 = GlobalState::new(vec![node(json!({"x": 1}))], &[e1.clone(), e2.clone()]);
        let s2 = GlobalState::new(vec![node(json!({"x": 1}))], &[e2, e1]);
        assert_eq!(s1.hash(), s2.hash());
        let s3 = GlobalState::new(vec![node(json!({"x": 2}))], &[]);
        assert_ne!(s1.hash(), s3.hash());
        assert_eq!(s3.diff(&s1, 10)[0], "n0.x: 2 vs 1");
    }
}
