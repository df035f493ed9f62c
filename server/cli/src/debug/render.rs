//! How the debugger writes states, their differences and events: one variable or pending
//! event a line, values as compact JSON, so a line can be found with grep and read alone.

use std::collections::BTreeSet;

use flymc_model::{EventKind, GlobalState, NodeId, NodeView, PendingView};
use serde_json::Value;

/// A node's variables, one a line under a header saying whether it is up.
pub fn node(out: &mut String, i: NodeId, n: &NodeView) {
    out.push_str(&format!("n{i} ({})\n", if n.alive { "up" } else { "DOWN" }));
    for (k, v) in &n.vars {
        out.push_str(&format!("  {k} = {v}\n"));
    }
}

/// The whole state: every node, then what is in flight, then the environment.
pub fn state(out: &mut String, s: &GlobalState) {
    for (i, n) in s.nodes.iter().enumerate() {
        node(out, i, n);
    }
    pending(out, s, None);
    if !s.env.is_null() {
        out.push_str(&format!("env = {}\n", s.env));
    }
}

/// What is in flight (to or from `only`, if given).
pub fn pending(out: &mut String, s: &GlobalState, only: Option<NodeId>) {
    let shown: Vec<&PendingView> = s
        .network
        .iter()
        .filter(|p| only.is_none_or(|n| p.to == n || p.from == Some(n)))
        .collect();
    let whose = only.map_or(String::new(), |n| format!(" to or from n{n}"));
    out.push_str(&format!("network: {} pending{whose}\n", shown.len()));
    for p in shown {
        out.push_str(&format!("  {}\n", pending_line(p)));
    }
}

/// A pending event as [`flymc_model::Event::describe`] writes events.
pub fn pending_line(p: &PendingView) -> String {
    let head = match (p.kind, p.from) {
        (EventKind::Message, Some(f)) => format!("{} n{f}->n{}", p.name, p.to),
        (EventKind::Message, None) => format!("{} ->n{}", p.name, p.to),
        (EventKind::Client, _) => format!("client {} @n{}", p.name, p.to),
        (EventKind::Timeout, _) => format!("timeout {} @n{}", p.name, p.to),
        (EventKind::Crash, _) => format!("crash n{}", p.to),
        (EventKind::Reboot, _) => format!("reboot n{}", p.to),
    };
    match p.fields.as_str() {
        "{}" | "" => head,
        f => format!("{head} {f}"),
    }
}

/// Every difference from `a` to `b`: `nK.var: old -> new` (`-` for absent), nodes going down
/// or up, pending events gone (`network: - ...`) and new (`network: + ...`), the environment.
pub fn changes(a: &GlobalState, b: &GlobalState) -> Vec<String> {
    let mut out = Vec::new();
    let show = |v: Option<&Value>| v.map_or("-".to_string(), Value::to_string);
    for (i, (x, y)) in a.nodes.iter().zip(&b.nodes).enumerate() {
        if x.alive != y.alive {
            out.push(format!(
                "n{i}: {}",
                if y.alive { "up again" } else { "went DOWN" }
            ));
        }
        let keys: BTreeSet<&String> = x.vars.keys().chain(y.vars.keys()).collect();
        for k in keys {
            let (u, v) = (x.vars.get(k), y.vars.get(k));
            if u != v {
                out.push(format!("n{i}.{k}: {} -> {}", show(u), show(v)));
            }
        }
    }
    if a.nodes.len() != b.nodes.len() {
        out.push(format!(
            "node count: {} -> {}",
            a.nodes.len(),
            b.nodes.len()
        ));
    }
    for p in multiset_minus(&a.network, &b.network) {
        out.push(format!("network: - {}", pending_line(p)));
    }
    for p in multiset_minus(&b.network, &a.network) {
        out.push(format!("network: + {}", pending_line(p)));
    }
    if a.env != b.env {
        out.push(format!("env: {} -> {}", a.env, b.env));
    }
    out
}

/// The pending events of `a` that `b` does not hold (as many times as `a` holds more of them).
fn multiset_minus<'a>(a: &'a [PendingView], b: &[PendingView]) -> Vec<&'a PendingView> {
    let mut rest: Vec<&PendingView> = b.iter().collect();
    let mut out = Vec::new();
    for p in a {
        match rest.iter().position(|q| *q == p) {
            Some(i) => {
                rest.swap_remove(i);
            }
            None => out.push(p),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn st(x: i64, alive: bool, pending: &[&str]) -> GlobalState {
        GlobalState {
            nodes: vec![NodeView {
                alive,
                vars: json!({"x": x, "y": 1}).as_object().unwrap().clone(),
            }],
            network: pending
                .iter()
                .map(|n| PendingView {
                    kind: EventKind::Message,
                    name: n.to_string(),
                    from: Some(0),
                    to: 0,
                    fields: "{}".into(),
                })
                .collect(),
            env: Value::Null,
        }
    }

    #[test]
    fn changes_name_each_variable_and_pending_event_that_changed() {
        let a = st(1, true, &["ping", "ping"]);
        let b = st(2, false, &["ping", "pong"]);
        assert_eq!(
            changes(&a, &b),
            vec![
                "n0: went DOWN",
                "n0.x: 1 -> 2",
                "network: - ping n0->n0",
                "network: + pong n0->n0"
            ]
        );
        assert!(changes(&a, &a).is_empty());
    }
}
