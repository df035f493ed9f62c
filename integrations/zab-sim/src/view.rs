//! ZooKeeper's properties (`flymc-zab-properties`) over the twin's node state, read under the
//! names the real integration reports, so the twin checks every one of them.

use flymc_model::Property;

pub use flymc_zab_properties::{
    ACKED_IN_LATER_LEADERS, EVENTUALLY_QUORUM_FOLLOWS_LEADER, FOLLOWERS_AGREE,
    NO_UNCAUGHT_EXCEPTION, ONE_LEADER_PER_EPOCH,
};

/// The twin keeps exactly the variables the shared view reads.
pub type TwinView = flymc_zab_properties::ZabVars;

/// Fresh properties for one run of an ensemble of `nodes`: all of ZooKeeper's. The twin has
/// no threads that throw, so `no-uncaught-exception` holds vacuously.
pub fn properties(nodes: usize) -> Vec<Box<dyn Property>> {
    flymc_zab_properties::all::<TwinView>(nodes)
}
