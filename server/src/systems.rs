//! The systems flymc knows, by name.

use flymc_model::System;

use crate::cluster::raft::{Flavor, RaftSystem};

/// Every system, in the order `flymc systems` lists them.
pub fn all() -> Vec<Box<dyn System>> {
    vec![
        Box::new(flymc_cassandra_sim::CassandraSimSystem),
        Box::new(flymc_raft_sim::RaftSimSystem),
        Box::new(flymc_zk_le_sim::ZkLeSimSystem),
        Box::new(RaftSystem::new(Flavor::OpenRaft)),
        Box::new(RaftSystem::new(Flavor::AsyncRaft)),
        Box::new(crate::zookeeper::ZookeeperSystem::default()),
    ]
}

/// A system by name, its nodes on `backend` (`local` or `docker`; only real systems that run
/// node programs tell them apart).
pub fn find_on(name: &str, backend: &str) -> Result<Box<dyn System>, UnknownSystem> {
    let kind = crate::zookeeper::BackendKind::parse(backend).ok_or_else(|| UnknownSystem {
        name: format!("backend {backend}"),
        valid: "local, docker".into(),
    })?;
    if name == crate::zookeeper::SYSTEM_NAME {
        return Ok(Box::new(crate::zookeeper::ZookeeperSystem {
            backend: kind,
        }));
    }
    let s = find(name)?;
    if kind == crate::zookeeper::BackendKind::Docker {
        return Err(UnknownSystem {
            name: format!("{name} on the docker backend"),
            valid: format!(
                "{} (simulated systems run in memory)",
                crate::zookeeper::SYSTEM_NAME
            ),
        });
    }
    Ok(s)
}

#[derive(Debug, thiserror::Error)]
#[error("unknown system `{name}`; valid systems: {valid}")]
pub struct UnknownSystem {
    pub name: String,
    pub valid: String,
}

pub fn find(name: &str) -> Result<Box<dyn System>, UnknownSystem> {
    let systems = all();
    let valid = systems
        .iter()
        .map(|s| s.name())
        .collect::<Vec<_>>()
        .join(", ");
    systems
        .into_iter()
        .find(|s| s.name() == name)
        .ok_or_else(|| UnknownSystem {
            name: name.into(),
            valid,
        })
}

#[derive(Debug, thiserror::Error)]
pub enum SetsLoadError {
    #[error("cannot read sets file {0}: {1}")]
    Io(String, std::io::Error),
    #[error(transparent)]
    Invalid(#[from] flymc_model::sets::SetsError),
    #[error("cannot start {0} to learn its state variables: {1}")]
    Target(String, flymc_model::TargetError),
}

/// The sets file for a run: `file` if given, else the one the system ships; checked against the
/// variables of the system's initial state and the message kinds it declares.
pub fn load_sets(
    system: &dyn System,
    workload: &flymc_model::Workload,
    file: Option<&std::path::Path>,
) -> Result<Option<flymc_model::sets::SetsFile>, SetsLoadError> {
    use flymc_model::sets::{Known, SetsFile};
    let (label, text) = match file {
        Some(f) => (
            f.display().to_string(),
            std::fs::read_to_string(f)
                .map_err(|e| SetsLoadError::Io(f.display().to_string(), e))?,
        ),
        None => match system.sets_file() {
            Some(t) => (
                format!("{} (built-in sets file)", system.name()),
                t.to_string(),
            ),
            None => return Ok(None),
        },
    };
    let mut target = system
        .target(workload)
        .map_err(|e| SetsLoadError::Target(system.name().into(), e))?;
    let start = target.start(workload).and_then(|_| target.settle());
    let _ = target.stop();
    let initial = start.map_err(|e| SetsLoadError::Target(system.name().into(), e))?;
    let node_vars = initial
        .nodes
        .iter()
        .flat_map(|n| n.vars.keys().cloned())
        .collect();
    let known = Known {
        node_vars: Some(node_vars),
        message_kinds: system
            .message_kinds()
            .map(|k| k.into_iter().map(String::from).collect()),
    };
    Ok(Some(SetsFile::parse(&label, &text, &known)?))
}
