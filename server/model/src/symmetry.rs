//! State symmetry (FlyMC §3.1): nodes of one role are interchangeable, so two global states that
//! differ only by a renaming of those nodes are the same abstract state.
//!
//! The abstract form renames the nodes of each symmetric role to canonical labels (chosen so the
//! rendered state is the smallest of all renamings), rewrites every node reference the system
//! declares (state variables and message fields holding node ids) with the same renaming, and
//! sorts. A renaming is a true symmetry, so this is sound where sorting state values with the ids
//! merely dropped would not be (n0 voting for n1 while n1 votes for n0 is not the same state as
//! both voting for themselves).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::event::{Event, NodeId};
use crate::stable_hash;
use crate::state::GlobalState;

/// Beyond this many candidate renamings, ties are broken by node order (still a valid renaming,
/// so still sound; it only finds fewer symmetric matches).
const MAX_CANDIDATES: usize = 5040;

/// Which nodes are interchangeable, and where node ids appear inside states and messages.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Symmetry {
    /// Each group is a set of nodes with the same role.
    #[serde(default)]
    pub groups: Vec<Vec<NodeId>>,
    /// State variables holding a node id, `null`, or an array of node ids (treated as a set).
    #[serde(default)]
    pub node_ref_vars: Vec<String>,
    /// Message fields holding node ids, likewise.
    #[serde(default)]
    pub node_ref_fields: Vec<String>,
}

/// The abstract form of one global state.
#[derive(Clone, Debug)]
pub struct Abstraction {
    pub repr: String,
    pub hash: u64,
    /// Canonical label of each node.
    labels: Vec<String>,
}

impl Abstraction {
    pub fn label(&self, node: NodeId) -> &str {
        &self.labels[node]
    }
}

impl Symmetry {
    /// No symmetric roles: the abstract state is the state itself.
    pub fn none() -> Self {
        Self::default()
    }

    /// All `n` nodes in one role.
    pub fn all(n: usize) -> Self {
        Symmetry {
            groups: vec![(0..n).collect()],
            ..Default::default()
        }
    }

    pub fn with_refs(mut self, vars: &[&str], fields: &[&str]) -> Self {
        self.node_ref_vars = vars.iter().map(|s| s.to_string()).collect();
        self.node_ref_fields = fields.iter().map(|s| s.to_string()).collect();
        self
    }

    /// The same roles without `nodes`, which something outside the system tells apart (a
    /// workload's fault condition that names them): each keeps a role of its own.
    pub fn fixing(&self, nodes: &[NodeId]) -> Symmetry {
        let mut s = self.clone();
        for g in &mut s.groups {
            g.retain(|n| !nodes.contains(n));
        }
        s.groups.retain(|g| g.len() > 1);
        s
    }

    fn group_of(&self, node: NodeId) -> Option<usize> {
        self.groups.iter().position(|g| g.contains(&node))
    }

    /// The abstract form of `state`.
    pub fn abstract_state(&self, state: &GlobalState) -> Abstraction {
        let n = state.nodes.len();
        let mut labels: Vec<String> = (0..n).map(|i| format!("n{i}")).collect();
        if self.groups.is_empty() {
            let repr = self.render(state, &labels);
            return Abstraction {
                hash: stable_hash(repr.as_bytes()),
                repr,
                labels,
            };
        }
        // Per group: members sorted by a renaming-invariant signature; ties form classes whose
        // orders are enumerated to find the smallest rendering.
        let mut classes: Vec<Vec<NodeId>> = Vec::new();
        let mut order: Vec<(usize, Vec<Vec<NodeId>>)> = Vec::new();
        for (gi, group) in self.groups.iter().enumerate() {
            let mut members: Vec<(String, NodeId)> = group
                .iter()
                .filter(|&&m| m < n)
                .map(|&m| (self.signature(state, m), m))
                .collect();
            members.sort();
            let mut group_classes: Vec<Vec<NodeId>> = Vec::new();
            let mut last: Option<&str> = None;
            for (sig, m) in &members {
                if last == Some(sig.as_str()) {
                    group_classes.last_mut().unwrap().push(*m);
                } else {
                    group_classes.push(vec![*m]);
                }
                last = Some(sig.as_str());
            }
            classes.extend(group_classes.iter().cloned());
            order.push((gi, group_classes));
        }
        let candidates: usize = classes
            .iter()
            .map(|c| (1..=c.len()).product::<usize>())
            .try_fold(1usize, |acc, f| {
                acc.checked_mul(f).filter(|&p| p <= MAX_CANDIDATES)
            })
            .unwrap_or(usize::MAX);

        let assign = |labels: &mut Vec<String>, perms: &[Vec<NodeId>]| {
            let mut ci = 0;
            for (gi, group_classes) in &order {
                let mut rank = 0;
                for _ in group_classes {
                    for &m in &perms[ci] {
                        labels[m] = format!("g{gi}r{rank}");
                        rank += 1;
                    }
                    ci += 1;
                }
            }
        };

        if candidates == usize::MAX {
            assign(&mut labels, &classes);
            let repr = self.render(state, &labels);
            return Abstraction {
                hash: stable_hash(repr.as_bytes()),
                repr,
                labels,
            };
        }
        let mut best: Option<(String, Vec<String>)> = None;
        let mut perms = classes.clone();
        for_each_product(&mut perms, 0, &mut |perms| {
            assign(&mut labels, perms);
            let repr = self.render(state, &labels);
            if best.as_ref().is_none_or(|(b, _)| repr < *b) {
                best = Some((repr, labels.clone()));
            }
        });
        let (repr, labels) = best.expect("at least one renaming");
        Abstraction {
            hash: stable_hash(repr.as_bytes()),
            repr,
            labels,
        }
    }

    /// The abstract form of an event about to be enabled in a state with abstraction `abs`:
    /// endpoints and node-valued fields renamed the same way as the state.
    pub fn abstract_event(&self, abs: &Abstraction, e: &Event) -> String {
        let mut fields = e.fields.clone();
        self.rename_refs(&mut fields, &self.node_ref_fields, &|r| {
            abs.labels.get(r).cloned()
        });
        let v = serde_json::json!({
            "kind": e.kind,
            "name": e.name,
            "from": e.from.map(|f| abs.labels.get(f).cloned().unwrap_or_else(|| format!("n{f}"))),
            "to": abs.labels.get(e.to).cloned().unwrap_or_else(|| format!("n{}", e.to)),
            "fields": fields,
        });
        v.to_string()
    }

    /// Are nodes `a` and `b` of one symmetric role and in the same local state (so crashing
    /// either leads to symmetric states)?
    pub fn interchangeable(&self, state: &GlobalState, a: NodeId, b: NodeId) -> bool {
        a == b
            || (self.group_of(a).is_some()
                && self.group_of(a) == self.group_of(b)
                && self.signature(state, a) == self.signature(state, b))
    }

    /// A description of node `m` that any renaming of symmetric nodes leaves unchanged.
    fn signature(&self, state: &GlobalState, m: NodeId) -> String {
        let node = &state.nodes[m];
        let mut vars = node.vars.clone();
        let ref_label = |r: NodeId| -> Option<String> {
            Some(if r == m {
                "self".into()
            } else if self.group_of(r).is_some() {
                "peer".into()
            } else {
                format!("n{r}")
            })
        };
        self.rename_refs(&mut vars, &self.node_ref_vars, &ref_label);
        let mut inbound: Vec<String> = state
            .network
            .iter()
            .filter(|p| p.to == m)
            .map(|p| format!("{:?}:{}:{}", p.kind, p.name, p.fields))
            .collect();
        inbound.sort();
        format!(
            "{}|{}|{}",
            node.alive,
            Value::Object(vars),
            inbound.join(",")
        )
    }

    fn render(&self, state: &GlobalState, labels: &[String]) -> String {
        let relabel = |r: NodeId| labels.get(r).cloned();
        let mut nodes: BTreeMap<&str, Value> = BTreeMap::new();
        for (i, node) in state.nodes.iter().enumerate() {
            let mut vars = node.vars.clone();
            self.rename_refs(&mut vars, &self.node_ref_vars, &relabel);
            nodes.insert(&labels[i], serde_json::json!([node.alive, vars]));
        }
        let mut network: Vec<String> = state
            .network
            .iter()
            .map(|p| {
                let mut fields: Map<String, Value> =
                    serde_json::from_str(&p.fields).unwrap_or_default();
                self.rename_refs(&mut fields, &self.node_ref_fields, &relabel);
                format!(
                    "{:?}:{}:{}:{}:{}",
                    p.kind,
                    p.name,
                    p.from.map(|f| labels[f].as_str()).unwrap_or("-"),
                    labels.get(p.to).map(String::as_str).unwrap_or("?"),
                    Value::Object(fields)
                )
            })
            .collect();
        network.sort();
        serde_json::json!({ "nodes": nodes, "network": network, "env": state.env }).to_string()
    }

    fn rename_refs(
        &self,
        map: &mut Map<String, Value>,
        keys: &[String],
        f: &dyn Fn(NodeId) -> Option<String>,
    ) {
        for k in keys {
            if let Some(v) = map.get_mut(k) {
                *v = rename_value(v, f);
            }
        }
    }
}

fn rename_value(v: &Value, f: &dyn Fn(NodeId) -> Option<String>) -> Value {
    match v {
        Value::Number(n) => match n.as_u64().and_then(|i| f(i as NodeId)) {
            Some(l) => Value::String(l),
            None => v.clone(),
        },
        Value::Array(items) => {
            let mut renamed: Vec<Value> = items.iter().map(|i| rename_value(i, f)).collect();
            renamed.sort_by_key(|x| x.to_string());
            Value::Array(renamed)
        }
        _ => v.clone(),
    }
}

/// Call `f` once for every combination of permutations of the classes in `perms[from..]`.
fn for_each_product(perms: &mut Vec<Vec<NodeId>>, from: usize, f: &mut dyn FnMut(&[Vec<NodeId>])) {
    if from == perms.len() {
        f(perms);
        return;
    }
    let k = perms[from].len();
    // Heap's algorithm over class `from`, recursing into the rest for each arrangement.
    let mut c = vec![0usize; k];
    for_each_product(perms, from + 1, f);
    let mut i = 0;
    while i < k {
        if c[i] < i {
            if i % 2 == 0 {
                perms[from].swap(0, i);
            } else {
                perms[from].swap(c[i], i);
            }
            for_each_product(perms, from + 1, f);
            c[i] += 1;
            i = 0;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::NodeView;
    use serde_json::json;

    fn st(vars: &[Value]) -> GlobalState {
        GlobalState::new(
            vars.iter()
                .map(|v| NodeView {
                    alive: true,
                    vars: v.as_object().unwrap().clone(),
                })
                .collect(),
            &[],
        )
    }

    #[test]
    fn mirrored_states_share_an_abstract_form() {
        let sym = Symmetry::all(2);
        let a = st(&[json!({"ballot": 0}), json!({"ballot": 2})]);
        let b = st(&[json!({"ballot": 2}), json!({"ballot": 0})]);
        assert_eq!(sym.abstract_state(&a).hash, sym.abstract_state(&b).hash);
        assert_ne!(
            Symmetry::none().abstract_state(&a).hash,
            Symmetry::none().abstract_state(&b).hash
        );
    }

    #[test]
    fn node_references_are_renamed_not_dropped() {
        let sym = Symmetry::all(2).with_refs(&["voted_for"], &[]);
        let cross = st(&[json!({"voted_for": 1}), json!({"voted_for": 0})]);
        let selfish = st(&[json!({"voted_for": 0}), json!({"voted_for": 1})]);
        assert_ne!(
            sym.abstract_state(&cross).hash,
            sym.abstract_state(&selfish).hash
        );
        let one_way = st(&[json!({"voted_for": 1}), json!({"voted_for": 1})]);
        let other_way = st(&[json!({"voted_for": 0}), json!({"voted_for": 0})]);
        assert_eq!(
            sym.abstract_state(&one_way).hash,
            sym.abstract_state(&other_way).hash
        );
    }

    #[test]
    fn non_symmetric_nodes_keep_their_ids() {
        let sym = Symmetry {
            groups: vec![vec![1, 2]],
            ..Default::default()
        };
        let a = st(&[json!({"x": 1}), json!({"x": 0}), json!({"x": 0})]);
        let b = st(&[json!({"x": 0}), json!({"x": 1}), json!({"x": 0})]);
        assert_ne!(sym.abstract_state(&a).hash, sym.abstract_state(&b).hash);
    }

    #[test]
    fn events_are_abstracted_with_the_state_renaming() {
        let sym = Symmetry::all(2);
        let a = st(&[json!({"ballot": 0}), json!({"ballot": 2})]);
        let b = st(&[json!({"ballot": 2}), json!({"ballot": 0})]);
        let ev = |to| Event {
            id: crate::EventId(to as u64),
            kind: crate::EventKind::Message,
            name: "prepare".into(),
            from: None,
            to,
            fields: Map::new(),
            parent: None,
            delay_ms: None,
        };
        let (aa, ab) = (sym.abstract_state(&a), sym.abstract_state(&b));
        // Delivering to the node with ballot 0 is the same abstract event in both.
        assert_eq!(
            sym.abstract_event(&aa, &ev(0)),
            sym.abstract_event(&ab, &ev(1))
        );
        assert_ne!(
            sym.abstract_event(&aa, &ev(0)),
            sym.abstract_event(&ab, &ev(0))
        );
    }
}
