//! Raft's properties (`flymc-raft-properties`) over raft-sim's serialised node state.

use std::fmt;

use flymc_model::{NodeId, Property};
use flymc_raft_properties::RaftView;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::protocol::{Entry, Role};

/// The node variables the properties read, under raft-sim's names.
#[derive(Deserialize)]
pub struct SimView {
    current_term: u64,
    role: Role,
    leader: Option<NodeId>,
    log: Vec<Entry>,
    commit_index: u64,
    applied: Vec<Entry>,
}

impl RaftView for SimView {
    type Entry = Entry;

    fn entry_term(e: &Entry) -> u64 {
        e.term
    }
    fn read(vars: &Map<String, Value>) -> Result<Self, String> {
        serde_json::from_value(Value::Object(vars.clone())).map_err(|e| e.to_string())
    }
    fn term(&self) -> u64 {
        self.current_term
    }
    fn leads(&self) -> bool {
        self.role == Role::Leader
    }
    fn leader(&self) -> Option<NodeId> {
        self.leader
    }
    fn log(&self) -> &[Entry] {
        &self.log
    }
    fn commit(&self) -> u64 {
        self.commit_index
    }
    fn applied(&self) -> &[Entry] {
        &self.applied
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Some(v) => write!(f, "{v}@t{}", self.term),
            None => write!(f, "no-op@t{}", self.term),
        }
    }
}

// The sim's exhaustive tests keep the properties' memory in their state key.
#[cfg(test)]
pub(crate) type ElectionSafety = flymc_raft_properties::ElectionSafety<SimView>;
#[cfg(test)]
pub(crate) type LogMatching = flymc_raft_properties::LogMatching<SimView>;
#[cfg(test)]
pub(crate) type StateMachineSafety = flymc_raft_properties::StateMachineSafety<SimView>;
#[cfg(test)]
pub(crate) type CommittedNeverLost = flymc_raft_properties::CommittedNeverLost<SimView>;
#[cfg(test)]
pub(crate) type EventuallyLeader = flymc_raft_properties::EventuallyLeader<SimView>;

/// Fresh properties for one run: all of Raft's.
pub fn all() -> Vec<Box<dyn Property>> {
    flymc_raft_properties::all::<SimView>()
}
