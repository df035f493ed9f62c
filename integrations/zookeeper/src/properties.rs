//! ZooKeeper's properties (`flymc-zab-properties`) over the variables the Java hook reports
//! through `FlymcZk.state`. Real ZooKeeper serves clients and runs threads, so it checks
//! [`all`]'s.

use flymc_model::Property;
use flymc_zab_properties::{str_var, u64_var, ZabView};
use serde_json::{Map, Value};

pub use flymc_zab_properties::{
    ACKED_IN_LATER_LEADERS, EVENTUALLY_QUORUM_FOLLOWS_LEADER, FOLLOWERS_AGREE,
    NO_UNCAUGHT_EXCEPTION, ONE_LEADER_PER_EPOCH,
};

/// The reported variables the properties read, under the hook's (ZooKeeper's) names.
pub struct Reported {
    state: String,
    zab_state: String,
    established: bool,
    current_epoch: Option<u64>,
    leader: Option<u64>,
    acked: Vec<u64>,
    log: Vec<u64>,
    uncaught: Option<Value>,
    logicalclock: u64,
    proposed_leader: u64,
}

fn zxids(vars: &Map<String, Value>, k: &str) -> Vec<u64> {
    vars.get(k)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default()
}

impl ZabView for Reported {
    fn read(vars: &Map<String, Value>) -> Self {
        Reported {
            state: str_var(vars, "state").to_string(),
            zab_state: str_var(vars, "zabState").to_string(),
            established: vars.get("established").and_then(Value::as_bool) == Some(true),
            current_epoch: u64_var(vars, "currentEpoch"),
            leader: u64_var(vars, "leader"),
            acked: zxids(vars, "acked"),
            log: zxids(vars, "log"),
            uncaught: vars
                .get("uncaught")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .cloned(),
            logicalclock: u64_var(vars, "logicalclock").unwrap_or(0),
            proposed_leader: u64_var(vars, "proposedLeader").unwrap_or(0),
        }
    }
    fn state(&self) -> &str {
        &self.state
    }
    fn established(&self) -> bool {
        self.established
    }
    fn current_epoch(&self) -> Option<u64> {
        self.current_epoch
    }
    fn leader(&self) -> Option<u64> {
        self.leader
    }
    fn acked(&self) -> &[u64] {
        &self.acked
    }
    fn log(&self) -> &[u64] {
        &self.log
    }
    fn uncaught(&self) -> Option<&Value> {
        self.uncaught.as_ref()
    }
    fn describe(&self) -> String {
        format!(
            "{}/{} (round {}, votes sid {})",
            self.state, self.zab_state, self.logicalclock, self.proposed_leader
        )
    }
}

/// Fresh properties for one run of an ensemble of `nodes`.
pub fn properties(nodes: usize) -> Vec<Box<dyn Property>> {
    flymc_zab_properties::all::<Reported>(nodes)
}
