//! The wire format of flymc's hook protocol, version [`PROTOCOL_VERSION`] (hooks/PROTOCOL.md).
//!
//! These types are the single definition of the JSON bodies: flymc's event server uses them too,
//! so a hook written against this module and the server cannot drift apart. Nothing here does
//! I/O.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The protocol version this crate speaks; it is the `N` of the `/vN/...` request paths.
pub const PROTOCOL_VERSION: u32 = 1;

/// The header that carries the run's token on every request.
pub const TOKEN_HEADER: &str = "x-flymc-token";

/// Environment variables flymc sets for every node process.
pub mod env {
    /// `host:port` of the event server.
    pub const SERVER: &str = "FLYMC_SERVER";
    /// The run's token.
    pub const TOKEN: &str = "FLYMC_TOKEN";
    /// `jdk`: the Java hook talks to flymc through the JDK's HttpClient instead of its own
    /// blocking client (set only by `flymc bench real`, to measure what that costs).
    pub const HOOK_HTTP: &str = "FLYMC_HOOK_HTTP";
    /// `sampled`: the Java hook settles only on two quiet checks in a row, never on one exact
    /// check (set only by `flymc bench real`, to measure what the exact check saves).
    pub const HOOK_QUIET: &str = "FLYMC_HOOK_QUIET";
    /// This node's index, `0..FLYMC_NODES`.
    pub const NODE: &str = "FLYMC_NODE";
    /// How many nodes the cluster has.
    pub const NODES: &str = "FLYMC_NODES";
    /// 0 for the first start of the node in a run, +1 for each reboot.
    pub const INCARNATION: &str = "FLYMC_INCARNATION";
    /// `ip:port` this node may listen on (a distinct loopback 127.0.k.x and a free port).
    pub const NODE_ADDR: &str = "FLYMC_NODE_ADDR";
    /// Every node's `ip:port`, comma-separated, in node order.
    pub const PEERS: &str = "FLYMC_PEERS";
    /// The node's own data directory; it survives crashes and reboots within one run.
    pub const DATA_DIR: &str = "FLYMC_DATA_DIR";
    /// A named pipe the hook opens and reads to its end to go on after a pause.
    pub const RESUME: &str = "FLYMC_RESUME";
    /// The protocol version flymc speaks (informational).
    pub const PROTOCOL: &str = "FLYMC_PROTOCOL";
}

/// Identity of an event: 16 lower-case hex digits on the wire. The server derives it from the
/// event's causal position and content; hooks only pass it back.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(pub u64);

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
            .map_err(|_| serde::de::Error::custom(format!("`{s}` is not a hex event id")))
    }
}

/// What an intercepted or enabled event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// An inter-node message, delivered to `to` when enabled.
    Message,
    /// A timer of the reporting node; it fires when enabled (never by wall-clock time).
    Timeout,
    /// A disk write that is a crash point: the node is parked until it is enabled, and the
    /// checker may crash the node instead.
    Disk,
    /// A client request from the workload (only flymc creates these).
    Client,
}

/// `POST /v1/register`: the first request of a node process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterRequest {
    /// Must equal [`PROTOCOL_VERSION`].
    pub protocol: u32,
    pub node: usize,
    pub incarnation: u32,
    /// The node's process id, for diagnostics.
    #[serde(default)]
    pub pid: Option<u32>,
    /// The hook can pause for a checkpoint (`pause` in a poll reply): flymc may then snapshot
    /// the node's process and restore copies of it later.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pausable: bool,
    /// After a pause the hook reports the node's state (`POST /v1/resumed`), so flymc checks
    /// restored copies against their snapshot. A pausable hook without it (an older one) is
    /// restored unchecked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resumes: bool,
    /// The node's threads go on while one waits at a crash point: flymc may then enable the
    /// node's other events before that write, and the order of the two is a choice.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub threads: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegisterReply {
    pub protocol: u32,
    pub node: usize,
    pub incarnation: u32,
    /// How many nodes the cluster has.
    pub nodes: usize,
}

/// One event a node intercepted (a message it is sending, a timer it arms, a disk write).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intercept {
    /// The event whose processing produced this one (the enabled event the node was working
    /// on); `null` for events produced while starting up.
    #[serde(default)]
    pub parent: Option<EventId>,
    /// Index of this event among those this node reported with the same parent, kind, name and
    /// destination (0, 1, ...).
    pub seq: u32,
    pub kind: Kind,
    /// Message type or timer name.
    pub name: String,
    /// Destination node; the reporting node itself for timers and disk writes.
    pub to: usize,
    /// Named values guards and the global state can read (`m.<field>`); part of the event's
    /// view, not of its identity.
    #[serde(default)]
    pub fields: Map<String, Value>,
    /// Opaque content handed back verbatim with the enable order (e.g. the serialised message).
    #[serde(default)]
    pub payload: Value,
    /// Messages of one channel from one sender to one destination are offered in the order
    /// they were reported, one at a time (a TCP connection). Not part of the identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// For a timeout: the node at the other end of a connection. The timer is offered only once
    /// the incarnation that node had when it was reported has crashed (noticing a dead peer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<usize>,
    /// For a timeout: how long the node asked to wait, in milliseconds. flymc fires timers in
    /// deadline order when it must be fair to them; not part of the identity or of the state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
}

/// `POST /v1/events`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsRequest {
    pub node: usize,
    pub incarnation: u32,
    pub events: Vec<Intercept>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventsReply {
    /// The identity the server gave each reported event, in request order.
    pub ids: Vec<EventId>,
}

/// `POST /v1/done`: the node finished processing `event` (or, with `event: null`, finished
/// starting up) and this is its state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DoneRequest {
    pub node: usize,
    pub incarnation: u32,
    pub event: Option<EventId>,
    /// The node's named state variables.
    pub state: Map<String, Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DoneReply {
    /// False when this done had already been received (a retried request).
    pub fresh: bool,
}

/// `POST /v1/cancel`: disarm timers this node armed that have not fired (been enabled) yet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {
    pub node: usize,
    pub incarnation: u32,
    pub ids: Vec<EventId>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CancelReply {
    /// The timers withdrawn; a timer already enabled is not (its order will still come).
    pub cancelled: Vec<EventId>,
}

/// `POST /v1/poll`: wait for enable orders of this node with `seq > after`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PollRequest {
    pub node: usize,
    pub incarnation: u32,
    /// The highest order `seq` already received (0 before the first).
    pub after: u64,
    /// How long the server may hold the request when there is no order (default 25000, at most
    /// 60000); it then answers with no orders and the hook polls again.
    #[serde(default)]
    pub wait_ms: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PollReply {
    pub orders: Vec<Order>,
    /// Pause number `n` for a checkpoint: after the orders, report `paused` with `n`, close
    /// every connection to the server, and open `FLYMC_RESUME` for reading, read it to its end,
    /// then poll again on new connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<u64>,
}

/// `POST /v1/paused`: the hook paused as asked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PausedRequest {
    pub node: usize,
    pub incarnation: u32,
    pub pause: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PausedReply {}

/// `POST /v1/resumed`: a paused hook goes on (the process that paused, or a copy restored from
/// its snapshot) and reports its state as it finds it, before it polls again. flymc compares it
/// with the state the node reported before the pause: a copy that differs is not the cluster
/// that was snapshotted, and a run must not go on from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumedRequest {
    pub node: usize,
    pub incarnation: u32,
    pub pause: u64,
    /// The node's named state variables, as `done` reports them.
    pub state: Map<String, Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResumedReply {}

/// An order to process one event at this node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Order {
    /// 1, 2, ... per node incarnation.
    pub seq: u64,
    /// The event enabled at this node just before this one (`null` for the first): the hook
    /// holds this order until that event is done (local ordering enforcement, FlyMC §5).
    pub previous: Option<EventId>,
    pub event: WireEvent,
}

/// An event as the server hands it to the node that processes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireEvent {
    pub id: EventId,
    pub kind: Kind,
    pub name: String,
    /// The sending node of a message; `null` for timers, disk writes and client requests.
    #[serde(default)]
    pub from: Option<usize>,
    pub to: usize,
    #[serde(default)]
    pub fields: Map<String, Value>,
    #[serde(default)]
    pub payload: Value,
    #[serde(default)]
    pub parent: Option<EventId>,
}

/// The body of every 4xx answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorReply {
    /// The protocol version the server speaks.
    pub protocol: u32,
    /// A stable machine-readable code: `bad-token`, `unknown-node`, `unknown-event`,
    /// `unknown-endpoint`, `malformed`, `protocol-version`, `stale`, `conflict`,
    /// `method`, `too-large`.
    pub error: String,
    /// One line for people.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_hex_on_the_wire() {
        let id = EventId(0xab);
        assert_eq!(serde_json::to_value(id).unwrap(), json!("00000000000000ab"));
        let back: EventId = serde_json::from_value(json!("00000000000000ab")).unwrap();
        assert_eq!(back, id);
        assert!(serde_json::from_value::<EventId>(json!("zz")).is_err());
    }

    #[test]
    fn intercepts_have_defaults_and_reject_unknown_keys() {
        let i: Intercept =
            serde_json::from_value(json!({"seq": 0, "kind": "message", "name": "ping", "to": 1}))
                .unwrap();
        assert_eq!(i.parent, None);
        assert!(i.fields.is_empty());
        assert_eq!(i.payload, Value::Null);
        let bad = json!({"seq": 0, "kind": "message", "name": "p", "to": 1, "tp": 2});
        assert!(serde_json::from_value::<Intercept>(bad).is_err());
        let bad = json!({"seq": 0, "kind": "telepathy", "name": "p", "to": 1});
        assert!(serde_json::from_value::<Intercept>(bad).is_err());
    }
}
