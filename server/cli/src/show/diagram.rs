//! A path file read as the rows of a sequence diagram: which lanes an event touches (parsed
//! from the description `Event::describe` wrote), and what each node's state became. Every
//! drawing (text, SVG) works from this, so the description format is parsed in one place.

use std::collections::BTreeMap;

use flymc_core::pathfile::PathFile;
use flymc_model::{GlobalState, NodeId, NodeView, Violation};
use serde_json::Value;

/// What one event does to the lanes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// A message from one node to another (or to itself).
    Message {
        from: NodeId,
        to: NodeId,
    },
    /// A message whose sender the target does not know (`name ->nX`).
    Inbound {
        to: NodeId,
    },
    Client {
        node: NodeId,
    },
    Timer {
        node: NodeId,
    },
    /// A timer standing for a write to disk at a crash point (`timeout disk:NAME @nX`).
    Disk {
        node: NodeId,
    },
    Crash {
        node: NodeId,
    },
    Reboot {
        node: NodeId,
    },
    /// A description this reader does not know: drawn as text only.
    Unknown,
}

impl Action {
    /// The single-character mark the text drawing uses, and the SVG's label.
    pub fn mark(&self) -> char {
        match self {
            Action::Message { .. } | Action::Inbound { .. } => '>',
            Action::Client { .. } => 'C',
            Action::Timer { .. } => 'T',
            Action::Disk { .. } => 'D',
            Action::Crash { .. } => 'X',
            Action::Reboot { .. } => 'R',
            Action::Unknown => '?',
        }
    }

    /// Every node the action names.
    fn nodes(&self) -> Vec<NodeId> {
        match *self {
            Action::Message { from, to } => vec![from, to],
            Action::Inbound { to: node }
            | Action::Client { node }
            | Action::Timer { node }
            | Action::Disk { node }
            | Action::Crash { node }
            | Action::Reboot { node } => vec![node],
            Action::Unknown => vec![],
        }
    }
}

/// One node's part of a step: what of its state changed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Change {
    /// `Some(alive)` when the node went down or came up.
    pub alive: Option<bool>,
    /// Variables whose value changed (or appeared, or vanished: `None`), by name.
    pub vars: Vec<(String, Option<Value>)>,
}

impl Change {
    pub fn is_empty(&self) -> bool {
        self.alive.is_none() && self.vars.is_empty()
    }
}

/// One event of the path.
#[derive(Clone, Debug)]
pub struct Row {
    /// 0-based, as violations count steps.
    pub step: usize,
    pub action: Action,
    /// The message, timer or client request's name (`prepare`, `election_timeout`).
    pub name: String,
    /// The payload as the description shows it (compact JSON), or empty.
    pub payload: String,
    /// The description as the path file holds it.
    pub description: String,
    /// Per node, what changed in this step; empty for a step recorded without a state.
    pub changes: Vec<Change>,
    /// False for a step recorded without a resulting state (a hang, a node that exited).
    pub has_state: bool,
}

/// The whole diagram.
#[derive(Clone, Debug)]
pub struct Diagram {
    pub nodes: usize,
    pub rows: Vec<Row>,
    pub violation: Option<Violation>,
    /// The step of the path's critical transition, when the path file names one
    /// ([`critical_step`]).
    pub critical: Option<usize>,
    /// A token unique to this path (from its events' ids and states' hashes) for ids in
    /// markup that several diagrams share a page with.
    pub token: String,
}

impl Diagram {
    /// The lanes are the nodes the path's recorded states have (at most [`MAX_LANES`]): an
    /// event's description is text from the file, so an event naming a node outside them is
    /// drawn as text only ([`Action::Unknown`]) rather than widening every row to reach it.
    pub fn of(path: &PathFile) -> Diagram {
        let recorded = path.states.iter().map(|s| s.state.nodes.len()).max();
        let nodes = match recorded {
            Some(n) => n.min(MAX_LANES),
            // No state at all (a path cut short): the nodes its events name, within the limit.
            None => path
                .events
                .iter()
                .flat_map(|e| parse(&e.description).0.nodes())
                .filter(|&n| n < MAX_LANES)
                .map(|n| n + 1)
                .max()
                .unwrap_or(0),
        };
        let mut rows = Vec::with_capacity(path.events.len());
        for (step, event) in path.events.iter().enumerate() {
            let (mut action, name, payload) = parse(&event.description);
            if action.nodes().iter().any(|&n| n >= nodes) {
                action = Action::Unknown;
            }
            let before = path.states.get(step).map(|s| &s.state);
            let after = path.states.get(step + 1).map(|s| &s.state);
            let changes = match (before, after) {
                (Some(b), Some(a)) => changes(b, a),
                _ => Vec::new(),
            };
            let description = label(&action, &name, &payload, &event.description);
            rows.push(Row {
                step,
                action,
                name,
                payload,
                description,
                changes,
                has_state: after.is_some(),
            });
        }
        Diagram {
            nodes,
            rows,
            violation: path.violation.clone(),
            critical: critical_step(path),
            token: token(path),
        }
    }
}

/// The most lanes a drawing has: far more nodes than a cluster under test has, few enough that
/// every row's width stays small.
pub const MAX_LANES: usize = 64;

/// The state after `step` (the initial state's successor is step 0's), or the last state there
/// is when the step has none (a liveness check at the path's end, a hang).
pub fn state_after(path: &PathFile, step: usize) -> Option<&GlobalState> {
    path.states
        .get(step + 1)
        .or_else(|| path.states.last())
        .map(|s| &s.state)
}

/// Where the critical transition of the path is: the step its path file records (MaceMC's
/// critical transition of a dead liveness violation), if that step is one of its events.
fn critical_step(path: &PathFile) -> Option<usize> {
    path.critical
        .as_ref()
        .map(|c| c.step)
        .filter(|&s| s < path.events.len())
}

/// A short hex token from the path's identity (its events and states), so two different
/// paths on one page get different ids.
fn token(path: &PathFile) -> String {
    let mut key = String::new();
    key.push_str(&path.system);
    key.push_str(&path.workload.name);
    for e in &path.events {
        key.push_str(&e.id.to_string());
    }
    for s in &path.states {
        key.push_str(&s.hash);
    }
    format!(
        "{:012x}",
        flymc_model::stable_hash(key.as_bytes()) & 0xffff_ffff_ffff
    )
}

/// Read a description as `Event::describe` writes it: `NAME nA->nB`, `NAME ->nB`,
/// `client NAME @nA`, `timeout NAME @nA`, `crash nA`, `reboot nA`, each optionally followed by
/// ` {payload}`. Returns the action, the name and the payload.
pub fn parse(description: &str) -> (Action, String, String) {
    let (head, payload) = match description.find(" {") {
        Some(i) => (&description[..i], description[i + 1..].to_string()),
        None => (description, String::new()),
    };
    let words: Vec<&str> = head.split(' ').collect();
    let parsed = match words.as_slice() {
        [kind @ ("crash" | "reboot"), n] => node(n).map(|node| {
            let a = if *kind == "crash" {
                Action::Crash { node }
            } else {
                Action::Reboot { node }
            };
            (a, *kind)
        }),
        ["client", name, at] => at_node(at).map(|node| (Action::Client { node }, *name)),
        ["timeout", name, at] => at_node(at).map(|node| {
            if name.starts_with("disk:") {
                (Action::Disk { node }, *name)
            } else {
                (Action::Timer { node }, *name)
            }
        }),
        [name, ends] => match ends.split_once("->") {
            Some(("", to)) => node(to).map(|to| (Action::Inbound { to }, *name)),
            Some((from, to)) => node(from)
                .zip(node(to))
                .map(|(from, to)| (Action::Message { from, to }, *name)),
            None => None,
        },
        _ => None,
    };
    let (action, name) = parsed.unwrap_or((Action::Unknown, head));
    (action, name.to_string(), payload)
}

/// The row's text: the description, but a crash point's write (`timeout disk:NAME @nX`, a timer
/// to the model) reads `crash point NAME @nX`.
fn label(action: &Action, name: &str, payload: &str, description: &str) -> String {
    match action {
        Action::Disk { node } => {
            let name = name.strip_prefix("disk:").unwrap_or(name);
            match payload {
                "" => format!("crash point {name} @n{node}"),
                p => format!("crash point {name} @n{node} {p}"),
            }
        }
        _ => description.to_string(),
    }
}

/// `n3` as 3.
fn node(word: &str) -> Option<NodeId> {
    word.strip_prefix('n')?.parse().ok()
}

/// `@n3` as 3.
fn at_node(word: &str) -> Option<NodeId> {
    node(word.strip_prefix('@')?)
}

/// Per node of `after`, what differs from `before`.
fn changes(before: &GlobalState, after: &GlobalState) -> Vec<Change> {
    let empty = NodeView {
        alive: false,
        vars: Default::default(),
    };
    after
        .nodes
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let b = before.nodes.get(i).unwrap_or(&empty);
            node_change(b, a)
        })
        .collect()
}

fn node_change(b: &NodeView, a: &NodeView) -> Change {
    let mut vars = Vec::new();
    for (k, v) in &a.vars {
        if b.vars.get(k) != Some(v) {
            vars.push((k.clone(), Some(v.clone())));
        }
    }
    for k in b.vars.keys() {
        if !a.vars.contains_key(k) {
            vars.push((k.clone(), None));
        }
    }
    vars.sort_by(|x, y| x.0.cmp(&y.0));
    Change {
        alive: (a.alive != b.alive).then_some(a.alive),
        vars,
    }
}

/// A variable's value for people: strings without quotes, everything else as compact JSON,
/// cut to `limit` characters.
pub fn value_text(v: &Value, limit: usize) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    shorten(&s, limit)
}

/// `s` cut to `limit` characters, saying how long it was.
pub fn shorten(s: &str, limit: usize) -> String {
    match s.char_indices().nth(limit) {
        Some((i, _)) => format!("{}... ({} chars)", &s[..i], s.chars().count()),
        None => s.to_string(),
    }
}

/// `s` cut to `limit` characters, with an ellipsis if it was longer (for labels whose whole
/// text is elsewhere).
pub fn clip(s: &str, limit: usize) -> String {
    match s.char_indices().nth(limit.saturating_sub(1)) {
        Some((i, _)) if s.chars().count() > limit => format!("{}\u{2026}", &s[..i]),
        _ => s.to_string(),
    }
}

/// A node's whole state, one `name=value` per variable.
pub fn node_lines(node: &NodeView, limit: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(node.vars.len() + 1);
    if !node.alive {
        out.push("(down)".to_string());
    }
    let sorted: BTreeMap<&String, &Value> = node.vars.iter().collect();
    for (k, v) in sorted {
        out.push(format!("{k}={}", value_text(v, limit)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_parse_as_describe_writes_them() {
        let p = |d: &str| parse(d);
        assert_eq!(
            p("prepare n0->n2 {\"ballot\":1}"),
            (
                Action::Message { from: 0, to: 2 },
                "prepare".into(),
                "{\"ballot\":1}".into()
            )
        );
        assert_eq!(
            p("notification n1->n1").0,
            Action::Message { from: 1, to: 1 }
        );
        assert_eq!(p("ping ->n4").0, Action::Inbound { to: 4 });
        assert_eq!(
            p("client write @n1 {\"value\":7}"),
            (
                Action::Client { node: 1 },
                "write".into(),
                "{\"value\":7}".into()
            )
        );
        assert_eq!(p("timeout elect @n0").0, Action::Timer { node: 0 });
        assert_eq!(p("timeout disk:txnlog @n2").0, Action::Disk { node: 2 });
        let (a, name, payload) = p("timeout disk:txnlog @n2");
        let d = "timeout disk:txnlog @n2";
        assert_eq!(label(&a, &name, &payload, d), "crash point txnlog @n2");
        let (a, name, payload) = p("timeout elect @n0");
        assert_eq!(
            label(&a, &name, &payload, "timeout elect @n0"),
            "timeout elect @n0"
        );
        assert_eq!(
            p("crash n2"),
            (Action::Crash { node: 2 }, "crash".into(), String::new())
        );
        assert_eq!(p("reboot n0").0, Action::Reboot { node: 0 });
        assert_eq!(p("something else entirely").0, Action::Unknown);
    }
}
