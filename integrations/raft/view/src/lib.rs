//! What a real Raft node program and flymc exchange, and nothing else: the workload parameters
//! a node is started with ([`Params`]) and the state it reports after every event
//! ([`NodeView`]). The node programs (`flymc-raft-nodes`) are the systems under test: they link
//! this crate and the hook, not the checker (`flymc-raft` is the checker's side and re-exports
//! these types).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A client write of the workload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Write {
    pub to: usize,
    pub value: u64,
}

/// The workload parameters of both Raft systems.
///
/// ```toml
/// [params]
/// election_timers = [0]    # nodes whose election timer is armed at the start (default: all)
/// elections = 2           # how often a node's election timer may fire per incarnation
/// heartbeats = 0          # how often a leader's heartbeat timer may fire per incarnation
/// writes = [{ to = 0, value = 1 }]   # client writes
/// settle_timeout_ms = 10000
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// `None`: every node's (the default depends on the cluster size, so it is resolved in
    /// [`Params::args`]).
    pub election_timers: Option<Vec<usize>>,
    pub elections: u32,
    pub heartbeats: u32,
    pub writes: Vec<Write>,
    pub settle_timeout_ms: Option<u64>,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            election_timers: None,
            elections: 2,
            heartbeats: 0,
            writes: Vec::new(),
            settle_timeout_ms: None,
        }
    }
}

impl Params {
    /// The node program's arguments in a cluster of `nodes`.
    pub fn args(&self, nodes: usize) -> Vec<String> {
        let mut a = vec!["--elections".to_string(), self.elections.to_string()];
        let all: Vec<usize> = (0..nodes).collect();
        for t in self.election_timers.as_ref().unwrap_or(&all) {
            a.extend(["--election-timer".to_string(), t.to_string()]);
        }
        if self.heartbeats > 0 {
            a.extend(["--heartbeats".to_string(), self.heartbeats.to_string()]);
        }
        a
    }
}

/// A log entry as nodes report it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub term: u64,
    /// The written number, `null` for a blank entry, `"config"` for a membership entry.
    pub value: Value,
}

impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.value {
            Value::Null => write!(f, "blank@t{}", self.term),
            Value::String(s) => write!(f, "{s}@t{}", self.term),
            v => write!(f, "{v}@t{}", self.term),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Follower,
    Candidate,
    Leader,
    Learner,
}

/// The part of a node's reported state the properties read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeView {
    pub term: u64,
    pub voted_for: Option<usize>,
    pub role: Role,
    pub leader: Option<usize>,
    pub log: Vec<Entry>,
    pub commit: u64,
    pub applied: Vec<Entry>,
}
