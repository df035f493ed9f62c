//! ZooKeeper's properties (`flymc-zab-properties`) over the variables the Java hook reports
//! through `FlymcZk.state`. Real ZooKeeper serves clients and runs threads, so it checks
//! [`all`]'s.

use flymc_model::Property;
use flymc_zab_properties::{u64_var, ZabVars, ZabView};
use serde_json::{Map, Value};

pub use flymc_zab_properties::{
    ACKED_IN_LATER_LEADERS, EVENTUALLY_QUORUM_FOLLOWS_LEADER, FOLLOWERS_AGREE,
    NO_UNCAUGHT_EXCEPTION, ONE_LEADER_PER_EPOCH,
};

/// The reported variables the properties read, under the hook's (ZooKeeper's) names: ZAB's,
/// plus the exception a quorum thread threw and FLE's round and vote for liveness messages.
pub struct Reported {
    zab: ZabVars,
    uncaught: Option<Value>,
    logicalclock: u64,
    proposed_leader: u64,
}

impl ZabView for Reported {
    fn read(vars: &Map<String, Value>) -> Self {
        Reported {
            zab: ZabVars::read(vars),
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
        self.zab.state()
    }
    fn established(&self) -> bool {
        self.zab.established()
    }
    fn current_epoch(&self) -> Option<u64> {
        self.zab.current_epoch()
    }
    fn leader(&self) -> Option<u64> {
        self.zab.leader()
    }
    fn acked(&self) -> &[u64] {
        self.zab.acked()
    }
    fn log(&self) -> &[u64] {
        self.zab.log()
    }
    fn uncaught(&self) -> Option<&Value> {
        self.uncaught.as_ref()
    }
    fn describe(&self) -> String {
        format!(
            "{} (round {}, votes sid {})",
            self.zab.describe(),
            self.logicalclock,
            self.proposed_leader
        )
    }
}

/// Fresh properties for one run of an ensemble of `nodes`.
pub fn properties(nodes: usize) -> Vec<Box<dyn Property>> {
    flymc_zab_properties::all::<Reported>(nodes)
}
