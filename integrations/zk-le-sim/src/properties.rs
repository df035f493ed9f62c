//! ZooKeeper's election properties (`flymc-zab-properties`) over zk-le-sim's serialised node
//! state. zk-le-sim has no clients and no threads, so it checks [`election`]'s only.

use flymc_model::Property;
use flymc_zab_properties::{str_var, u64_var, ZabView};
use serde_json::{Map, Value};

pub use flymc_zab_properties::{
    EVENTUALLY_QUORUM_FOLLOWS_LEADER, FOLLOWERS_AGREE, ONE_LEADER_PER_EPOCH,
};

/// The node variables the properties read, under zk-le-sim's names.
pub struct SimView {
    state: String,
    established: bool,
    current_epoch: Option<u64>,
    leader: Option<u64>,
    logicalclock: u64,
    proposed_leader: u64,
}

impl ZabView for SimView {
    fn read(vars: &Map<String, Value>) -> Self {
        SimView {
            state: str_var(vars, "state").to_string(),
            established: vars.get("established").and_then(Value::as_bool) == Some(true),
            current_epoch: u64_var(vars, "current_epoch"),
            leader: u64_var(vars, "leader"),
            logicalclock: u64_var(vars, "logicalclock").unwrap_or(0),
            proposed_leader: u64_var(vars, "proposed_leader").unwrap_or(0),
        }
    }
    fn state(&self) -> &str {
        &self.state
    }
    fn established(&self) -> bool {
        self.established
    }
    /// The simulator has no sync timeouts to leave a stalled `new_leader` hand-off by, so a
    /// leading or following node counts (see flymc-zab-properties' docs).
    fn in_service(&self) -> bool {
        true
    }
    fn current_epoch(&self) -> Option<u64> {
        self.current_epoch
    }
    fn leader(&self) -> Option<u64> {
        self.leader
    }
    fn describe(&self) -> String {
        format!(
            "{} (round {}, votes n{})",
            self.state, self.logicalclock, self.proposed_leader
        )
    }
}

/// Fresh properties for one run of an ensemble of `nodes`.
pub fn properties(nodes: usize) -> Vec<Box<dyn Property>> {
    flymc_zab_properties::election::<SimView>(nodes)
}
