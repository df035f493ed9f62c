//! The systems flymc knows, by name.

use flymc_model::System;

/// Every system, in the order `flymc systems` lists them.
pub fn all() -> Vec<Box<dyn System>> {
    vec![
        // TEMP-SIMS Box::new(flymc_cassandra_sim::CassandraSimSystem),
        // TEMP-SIMS Box::new(flymc_raft_sim::RaftSimSystem),
        // TEMP-SIMS Box::new(flymc_zk_le_sim::ZkLeSimSystem),
    ]
}

#[derive(Debug, thiserror::Error)]
#[error("unknown system `{name}`; valid systems: {valid}")]
pub struct UnknownSystem {
    pub name: String,
    pub valid: String,
}

pub fn find(name: &str) -> Result<Box<dyn System>, UnknownSystem> {
    let systems = all();
    let valid = systems.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ");
    systems
        .into_iter()
        .find(|s| s.name() == name)
        .ok_or_else(|| UnknownSystem { name: name.into(), valid })
}
