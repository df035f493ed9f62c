//! Real Raft clusters under flymc: openraft (system `raft`) and async-raft 0.6.1 (system
//! `raft-asyncraft`), each node a real process whose network is flymc's hook.
//!
//! The node programs are `node/src/openraft_node.rs` and `node/src/asyncraft_node.rs` (binaries
//! `flymc-raft-node` and `flymc-asyncraft-node` of the `flymc-raft-nodes` package); `node/src/glue.rs` is what
//! both share: the RPC bridge over the hook, the election timer as a flymc event,
//! crash and reboot notices, client writes, and the idle detection that tells flymc when an
//! enabled event's processing is over. This library is the checker's side: how flymc runs them ([`RaftSystem`]), the workload
//! parameters ([`Params`]), the node state every node reports ([`NodeView`]) and Raft's
//! properties ([`properties`]).
//!
//! # Node state
//! Every node reports, after every event: `term`, `voted_for` (the node it voted for in `term`),
//! `role` (`follower`, `candidate`, `leader`, `learner`), `leader` (the leader of `term` it
//! knows), `log` (entries `{term, value}` in index order: `value` is the written number,
//! `null` for a leader's blank entry, `"config"` for a membership entry), `commit` (how many log
//! entries it knows committed), `applied` (the entries its state machine applied, in order),
//! and the glue's own variables that decide its future: `elect` (its election timer is armed),
//! `elections_left`, `eligible` (it may arm an election timer at all), `down` (peers it was told
//! crashed), `queued` (client writes waiting for a leader). The term, vote and log are persisted
//! in the node's data directory and survive crash and reboot; the rest is volatile.
//!
//! # Time
//! Nothing in a node depends on the wall clock: openraft runs on a runtime whose clock only
//! moves when the glue says so and whose sleeps never end by themselves, with its tick,
//! elections and heartbeats switched off; async-raft runs on a paused tokio clock that only the
//! glue advances. An election timeout is a timer event flymc enables; a leader sends heartbeats
//! when flymc delivers a reboot notice (below) or fires its heartbeat timer, never because
//! time passed.
//!
//! # Timers (which events exist when)
//! A node *needs* an election when it is not the leader, knows no leader it was not told
//! crashed, and did not vote in its term for another node it was not told crashed. Its
//! election timer `elect` is armed while it needs an election, is *eligible* (listed in
//! `election_timers`, told of a crash, or rebooted) and has `elections` firings left in this
//! incarnation; firing it when the node no longer needs an election does nothing (a heartbeat
//! came first). So an election timeout only fires where Raft's failure detector would fire it,
//! and every run is finite. A leader's heartbeat timer `heartbeat` (workload parameter
//! `heartbeats`, 0 by default: none) is armed while it leads and has firings left in this
//! incarnation; firing it sends every follower an append (a heartbeat, or a retry of what a
//! follower refused or never answered). Such nodes also report `beat` (the timer is armed) and
//! `heartbeats_left`. A crash of node `c` is told to every live node as a client event
//! `crashed {node}` (the failure detector); a reboot as `rebooted {node}`, on which the leader
//! fails what it had in flight to that node (lost with its old incarnation) and sends a
//! heartbeat, and any node fails its in-flight requests to it.
//!
//! # Client writes
//! `writes = [{ to = 0, value = 1 }]`: a client event `write {value}` at node `to`. A leader
//! proposes it; another node keeps it queued and hands it to the leader it learns of (a
//! `forward` message), like a client that retries.

pub mod properties;
mod system;

pub use system::{Flavor, RaftSystem};

/// The sets file of the openraft system (`raft`), produced by `flymc analyze` from openraft
/// 0.9.25's sources and `analysis/openraft.toml` (see ANALYSIS.md).
pub const SETS: &str = include_str!("../sets-openraft.json");

/// The sets file of the async-raft system (`raft-asyncraft`), produced by `flymc analyze` from
/// async-raft 0.6.1's sources and `analysis/asyncraft.toml` (see ANALYSIS.md).
pub const SETS_ASYNCRAFT: &str = include_str!("../sets-asyncraft.json");

use flymc_model::{NodeId, Symmetry, TargetError, Workload};

// What a node program and the checker exchange lives where the node programs can link it
// without the checker's machinery.
pub use flymc_raft_view::{Entry, NodeView, Params, Role, Write};

/// The openraft node program.
pub const OPENRAFT_PROGRAM: &str = "flymc-raft-node";
/// The async-raft 0.6.1 node program.
pub const ASYNCRAFT_PROGRAM: &str = "flymc-asyncraft-node";

/// State variables that hold node ids.
pub const NODE_REF_VARS: &[&str] = &["voted_for", "leader", "down"];
/// Event fields that hold node ids.
pub const NODE_REF_FIELDS: &[&str] = &["node", "from_node"];

/// Every event name a node can receive.
pub const MESSAGE_KINDS: &[&str] = &[
    "vote",
    "vote-reply",
    "append",
    "append-reply",
    "snapshot",
    "snapshot-reply",
    "forward",
    "elect",
    "heartbeat",
    "write",
    "crashed",
    "rebooted",
];

/// The workload's parameters, checked against its cluster (the ranges and cross-checks a system
/// file cannot say).
pub fn params(system: &str, w: &Workload) -> Result<Params, TargetError> {
    let p: Params = w.params()?;
    let bad = |m: String| Err(TargetError::Workload(format!("{system}: {m}")));
    if w.nodes < 3 || w.nodes > 7 {
        return bad(format!(
            "nodes = {}: a Raft cluster here has 3 to 7 nodes",
            w.nodes
        ));
    }
    let nodes = p
        .election_timers
        .iter()
        .flatten()
        .map(|&n| ("election_timers", n));
    let tos = p.writes.iter().map(|wr| ("a write's `to`", wr.to));
    if let Some((what, n)) = nodes.chain(tos).find(|&(_, n)| n >= w.nodes) {
        return bad(format!(
            "{what} must name a node 0..{}, got {n}",
            w.nodes - 1
        ));
    }
    if !(1..=9).contains(&p.elections) {
        return bad(format!("elections must be 1..9, got {}", p.elections));
    }
    if p.heartbeats > 9 {
        return bad(format!("heartbeats must be 0..9, got {}", p.heartbeats));
    }
    Ok(p)
}

/// Nodes are interchangeable in Raft (no rule depends on a node's id); the workload's crash
/// nodes and the others form two roles, since only the first may crash.
pub fn symmetry(w: &Workload) -> Symmetry {
    let crashable: Vec<NodeId> = (0..w.nodes)
        .filter(|n| w.crashes == 0 || w.crash_nodes.contains(n))
        .collect();
    let rest: Vec<NodeId> = (0..w.nodes).filter(|n| !crashable.contains(n)).collect();
    let groups = [crashable, rest]
        .into_iter()
        .filter(|g| g.len() > 1)
        .collect();
    Symmetry {
        groups,
        ..Symmetry::none()
    }
    .with_refs(NODE_REF_VARS, NODE_REF_FIELDS)
}
