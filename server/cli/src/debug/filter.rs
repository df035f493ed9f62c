//! What `filter` lets through: one node's events, one kind of event, or both.
//!
//! A node's events are the ones it handles (messages to it, its timers, client requests at
//! it, its crash and reboot), so stepping with `filter node=n1` visits every change of n1's
//! state and no other node's.

use flymc_model::{Event, EventKind, NodeId};

use super::command::FilterChange;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub node: Option<NodeId>,
    pub kind: Option<EventKind>,
}

/// The part of an event a filter looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Brief {
    pub kind: EventKind,
    pub to: NodeId,
}

impl Brief {
    pub fn of(e: &Event) -> Brief {
        Brief {
            kind: e.kind,
            to: e.to,
        }
    }

    /// Read back from a path file's description ([`Event::describe`]), for events this session
    /// has not executed yet: `crash n0`, `reboot n0`, `timeout NAME @n2`, `client NAME @n1`,
    /// `NAME n0->n1 {...}`, `NAME ->n1`.
    pub fn parse(description: &str) -> Option<Brief> {
        let words: Vec<&str> = description.split_whitespace().take(3).collect();
        let node = |s: &str| s.strip_prefix('n')?.parse::<NodeId>().ok();
        let (kind, to) = match words.as_slice() {
            ["crash", n, ..] => (EventKind::Crash, node(n)?),
            ["reboot", n, ..] => (EventKind::Reboot, node(n)?),
            ["timeout", _, at, ..] => (EventKind::Timeout, node(at.strip_prefix('@')?)?),
            ["client", _, at, ..] => (EventKind::Client, node(at.strip_prefix('@')?)?),
            [_, arrow, ..] => (EventKind::Message, node(arrow.split_once("->")?.1)?),
            _ => return None,
        };
        Some(Brief { kind, to })
    }
}

impl Filter {
    pub fn is_off(&self) -> bool {
        *self == Filter::default()
    }

    pub fn apply(&mut self, change: &FilterChange) {
        match change {
            FilterChange::Show => {}
            FilterChange::Off => *self = Filter::default(),
            FilterChange::Set { node, kind } => {
                self.node = node.or(self.node);
                self.kind = kind.or(self.kind);
            }
        }
    }

    /// Does the filter let this event through? One it cannot read (`None`) passes.
    pub fn passes(&self, brief: Option<Brief>) -> bool {
        let Some(b) = brief else {
            return true;
        };
        self.node.is_none_or(|n| b.to == n) && self.kind.is_none_or(|k| b.kind == k)
    }

    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(n) = self.node {
            parts.push(format!("node=n{n}"));
        }
        if let Some(k) = self.kind {
            parts.push(format!("kind={}", kind_name(k)));
        }
        match parts.is_empty() {
            true => "off".into(),
            false => parts.join(" "),
        }
    }
}

pub fn kind_name(k: EventKind) -> &'static str {
    match k {
        EventKind::Message => "message",
        EventKind::Client => "client",
        EventKind::Timeout => "timeout",
        EventKind::Crash => "crash",
        EventKind::Reboot => "reboot",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_read_back_into_kind_and_node() {
        let b = |k, to| Some(Brief { kind: k, to });
        assert_eq!(Brief::parse("crash n2"), b(EventKind::Crash, 2));
        assert_eq!(Brief::parse("reboot n0"), b(EventKind::Reboot, 0));
        assert_eq!(
            Brief::parse(r#"timeout election_timeout @n1 {"a":1}"#),
            b(EventKind::Timeout, 1)
        );
        assert_eq!(
            Brief::parse(r#"client update @n0 {"value":1}"#),
            b(EventKind::Client, 0)
        );
        assert_eq!(
            Brief::parse(r#"append_entries n0->n12 {"x":[1, 2]}"#),
            b(EventKind::Message, 12)
        );
        assert_eq!(Brief::parse("ping ->n1"), b(EventKind::Message, 1));
        assert_eq!(Brief::parse("gibberish"), None);
    }

    #[test]
    fn a_filter_lets_through_its_node_and_kind() {
        let mut f = Filter::default();
        f.apply(&FilterChange::Set {
            node: Some(1),
            kind: None,
        });
        let at1 = Brief {
            kind: EventKind::Message,
            to: 1,
        };
        let at2 = Brief {
            kind: EventKind::Timeout,
            to: 2,
        };
        assert!(f.passes(Some(at1)) && !f.passes(Some(at2)));
        f.apply(&FilterChange::Set {
            node: None,
            kind: Some(EventKind::Timeout),
        });
        assert_eq!(f.describe(), "node=n1 kind=timeout");
        assert!(!f.passes(Some(at1)));
        f.apply(&FilterChange::Off);
        assert!(f.is_off() && f.passes(Some(at2)));
    }
}
