//! Events: the things the checker chooses between.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::stable_hash;

/// Index of a node in the cluster, `0..nodes`.
pub type NodeId = usize;

/// Identity of an event that is the same in every re-run of the same workload.
///
/// It is derived from the event's causal position (the event whose processing produced it and
/// its index among that event's outputs) and its content (kind, name, endpoints), never from the
/// wall-clock order in which it arrived. Payload values are deliberately left out: a reordering
/// earlier in the path may change, say, the ballot a reply carries, and the checker must still
/// recognise it as the same reply to schedule it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(pub u64);

impl EventId {
    /// Derive an id from causal position and content.
    pub fn derive(
        parent: Option<EventId>,
        seq: u32,
        kind: EventKind,
        name: &str,
        from: Option<NodeId>,
        to: NodeId,
    ) -> EventId {
        let key = format!(
            "{}|{}|{:?}|{}|{:?}|{}",
            parent.map(|p| p.0).unwrap_or(u64::MAX),
            seq,
            kind,
            name,
            from,
            to
        );
        EventId(stable_hash(key.as_bytes()))
    }

    /// The identity of the `nth` (0-based) crash of `node` in a run.
    pub fn crash(node: NodeId, nth: u32) -> EventId {
        Self::derive(None, nth, EventKind::Crash, "crash", None, node)
    }

    /// The identity of the `nth` (0-based) reboot of `node` in a run.
    pub fn reboot(node: NodeId, nth: u32) -> EventId {
        Self::derive(None, nth, EventKind::Reboot, "reboot", None, node)
    }

    /// `node` being down at the start of a run (a workload's `[faults] down`): never an event
    /// anyone enables, only the cause of what the other nodes notice of it then.
    pub fn down(node: NodeId) -> EventId {
        Self::derive(None, 0, EventKind::Crash, "down", None, node)
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl fmt::Debug for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl std::str::FromStr for EventId {
    type Err = std::num::ParseIntError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        u64::from_str_radix(s, 16).map(EventId)
    }
}

impl Serialize for EventId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for EventId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse()
            .map_err(|_| serde::de::Error::custom(format!("`{s}` is not a 16-digit hex event id")))
    }
}

/// What sort of event this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    /// An inter-node message about to be delivered to `to`.
    Message,
    /// A client request arriving at `to`.
    Client,
    /// A timer of `to` about to fire.
    Timeout,
    /// `to` crashes.
    Crash,
    /// `to` reboots from its persisted state.
    Reboot,
}

/// One event the checker may enable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub id: EventId,
    pub kind: EventKind,
    /// Message type, timer name, or "crash"/"reboot".
    pub name: String,
    /// Sending node for messages; `None` for clients, timers, crashes and reboots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<NodeId>,
    /// The node that processes the event (the crashed node for a crash).
    pub to: NodeId,
    /// Payload fields, readable by guards as `m.<field>`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub fields: Map<String, Value>,
    /// The event whose processing produced this one; `None` for workload-initial events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<EventId>,
    /// For a timer: how long its node asked to wait (ms), when the target knows. Not part of the
    /// identity, the description or the state: only a fair continuation reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
}

/// The name prefix of a crash-point write in the model: the write `state` is `disk:state`.
pub const WRITE_PREFIX: &str = "disk:";

impl Event {
    /// A crash of `node`, its `nth` in this run.
    pub fn crash(node: NodeId, nth: u32) -> Event {
        Event {
            id: EventId::crash(node, nth),
            kind: EventKind::Crash,
            name: "crash".into(),
            from: None,
            to: node,
            fields: Map::new(),
            parent: None,
            delay_ms: None,
        }
    }

    /// A reboot of `node`, its `nth` in this run.
    pub fn reboot(node: NodeId, nth: u32) -> Event {
        Event {
            id: EventId::reboot(node, nth),
            kind: EventKind::Reboot,
            name: "reboot".into(),
            from: None,
            to: node,
            fields: Map::new(),
            parent: None,
            delay_ms: None,
        }
    }

    pub fn is_fault(&self) -> bool {
        matches!(self.kind, EventKind::Crash | EventKind::Reboot)
    }

    /// What a crash-point write (`disk:<what>`, timer-like in the model) writes; `None` for
    /// any other event.
    pub fn written(&self) -> Option<&str> {
        (self.kind == EventKind::Timeout)
            .then(|| self.name.strip_prefix(WRITE_PREFIX))
            .flatten()
    }

    /// A crash-point write: a write in progress.
    pub fn is_write(&self) -> bool {
        self.written().is_some()
    }

    /// A timer firing, not a crash-point write.
    pub fn is_timer(&self) -> bool {
        self.kind == EventKind::Timeout && !self.is_write()
    }

    /// A short human description, e.g. `prepare n0->n2 {ballot: 1}`.
    pub fn describe(&self) -> String {
        let mut s = match (self.kind, self.from) {
            (EventKind::Message, Some(f)) => format!("{} n{}->n{}", self.name, f, self.to),
            (EventKind::Client, _) => format!("client {} @n{}", self.name, self.to),
            (EventKind::Timeout, _) => format!("timeout {} @n{}", self.name, self.to),
            (EventKind::Crash, _) => format!("crash n{}", self.to),
            (EventKind::Reboot, _) => format!("reboot n{}", self.to),
            (EventKind::Message, None) => format!("{} ->n{}", self.name, self.to),
        };
        if !self.fields.is_empty() {
            s.push(' ');
            s.push_str(&Value::Object(self.fields.clone()).to_string());
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_depend_on_causal_position_not_on_payload() {
        let a = EventId::derive(None, 0, EventKind::Message, "prepare", Some(0), 1);
        let b = EventId::derive(None, 1, EventKind::Message, "prepare", Some(0), 1);
        let c = EventId::derive(Some(a), 0, EventKind::Message, "prepare", Some(0), 1);
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert_eq!(
            a,
            EventId::derive(None, 0, EventKind::Message, "prepare", Some(0), 1)
        );
    }

    #[test]
    fn ids_round_trip_through_text() {
        let a = EventId::crash(2, 1);
        let s = serde_json::to_string(&a).unwrap();
        let back: EventId = serde_json::from_str(&s).unwrap();
        assert_eq!(a, back);
        assert!(serde_json::from_str::<EventId>("\"xyz\"").is_err());
    }
}
