//! ZooKeeper's properties (`flymc-zab-properties`) over the twin's node state, read under the
//! names the real integration reports, so the twin checks every one of them.

use flymc_model::Property;
use flymc_zab_properties::{str_var, u64_var, ZabView};
use serde_json::{Map, Value};

pub use flymc_zab_properties::{
    ACKED_IN_LATER_LEADERS, EVENTUALLY_QUORUM_FOLLOWS_LEADER, FOLLOWERS_AGREE,
    NO_UNCAUGHT_EXCEPTION, ONE_LEADER_PER_EPOCH,
};

pub struct TwinView {
    state: String,
    zab_state: String,
    established: bool,
    current_epoch: Option<u64>,
    leader: Option<u64>,
    acked: Vec<u64>,
    log: Vec<u64>,
}

fn zxids(vars: &Map<String, Value>, k: &str) -> Vec<u64> {
    vars.get(k)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default()
}

impl ZabView for TwinView {
    fn read(vars: &Map<String, Value>) -> Self {
        TwinView {
            state: str_var(vars, "state").to_string(),
            zab_state: str_var(vars, "zabState").to_string(),
            established: vars.get("established").and_then(Value::as_bool) == Some(true),
            current_epoch: u64_var(vars, "currentEpoch"),
            leader: u64_var(vars, "leader"),
            acked: zxids(vars, "acked"),
            log: zxids(vars, "log"),
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
    fn describe(&self) -> String {
        format!("{}/{}", self.state, self.zab_state)
    }
}

/// Fresh properties for one run of an ensemble of `nodes`: all of ZooKeeper's. The twin has
/// no threads that throw, so `no-uncaught-exception` holds vacuously.
pub fn properties(nodes: usize) -> Vec<Box<dyn Property>> {
    flymc_zab_properties::all::<TwinView>(nodes)
}
