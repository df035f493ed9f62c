//! The systems flymc knows, by name: the one table. Everything else in flymc reaches a system
//! only through the [`System`] trait.

use flymc_model::System;
use flymc_raft::{Flavor, RaftSystem};
use flymc_real::{BackendKind, RealOptions};
use flymc_zookeeper::ZookeeperSystem;

/// Every system, in the order `flymc systems` lists them, real ones built for `options`.
pub fn all_with(options: &RealOptions) -> Vec<Box<dyn System>> {
    vec![
        Box::new(flymc_cassandra_sim::CassandraSimSystem),
        Box::new(flymc_raft_sim::RaftSimSystem),
        Box::new(flymc_zk_le_sim::ZkLeSimSystem),
        Box::new(RaftSystem::new(Flavor::OpenRaft).options(*options)),
        Box::new(RaftSystem::new(Flavor::AsyncRaft).options(*options)),
        Box::new(ZookeeperSystem::new(*options)),
    ]
}

/// Every system with the default options (local processes, a free port).
pub fn all() -> Vec<Box<dyn System>> {
    all_with(&RealOptions::default())
}

/// What `flymc setup NAME` does for the systems that need one; a one-line error otherwise.
pub type SetupFn = fn(docker: bool, say: &mut dyn FnMut(&str)) -> Result<(), String>;

/// What `flymc setup` knows, with what it runs: the systems that need one, and `criu` (cluster
/// snapshots).
pub const SETUPS: &[(&str, SetupFn)] = &[
    (flymc_zookeeper::SYSTEM_NAME, |docker, say| {
        flymc_zookeeper::setup::setup(docker, say).map_err(|e| e.to_string())
    }),
    (CRIU, |docker, say| {
        if docker {
            return Err(
                "`flymc setup criu` has no --docker: CRIU snapshots local processes".into(),
            );
        }
        flymc_real::snapshot::setup::setup(say).map_err(|e| e.to_string())
    }),
];

/// The setup that is not a system: CRIU, for cluster snapshots.
pub const CRIU: &str = "criu";

/// A system by name, its nodes on the backend and event server address of `options`.
pub fn find_with(name: &str, options: &RealOptions) -> Result<Box<dyn System>, UnknownSystem> {
    let systems = all_with(options);
    let s = pick(name, systems)?;
    if options.backend == BackendKind::Docker && !s.runs_in_docker() {
        let docker: Vec<String> = all()
            .iter()
            .filter(|s| s.runs_in_docker())
            .map(|s| s.name().to_string())
            .collect();
        return Err(UnknownSystem {
            name: format!("{name} on the docker backend"),
            valid: format!(
                "{} (simulated systems run in memory, the Raft node programs as local processes)",
                docker.join(", ")
            ),
        });
    }
    Ok(s)
}

/// The options of a backend name (`local` or `docker`), an event server address and whether to
/// keep cluster snapshots.
pub fn options(
    backend: &str,
    listen: Option<std::net::SocketAddr>,
    snapshots: bool,
) -> Result<RealOptions, UnknownSystem> {
    let backend = BackendKind::parse(backend).ok_or_else(|| UnknownSystem {
        name: format!("backend {backend}"),
        valid: BackendKind::NAMES.into(),
    })?;
    Ok(RealOptions {
        backend,
        listen,
        snapshots,
        keep_run_dirs: false,
    })
}

/// A system by name and backend name.
pub fn find_on(name: &str, backend: &str) -> Result<Box<dyn System>, UnknownSystem> {
    find_with(name, &options(backend, None, false)?)
}

#[derive(Debug, thiserror::Error)]
#[error("unknown system `{name}`; valid systems: {valid}")]
pub struct UnknownSystem {
    pub name: String,
    pub valid: String,
}

pub fn find(name: &str) -> Result<Box<dyn System>, UnknownSystem> {
    pick(name, all())
}

fn pick(name: &str, systems: Vec<Box<dyn System>>) -> Result<Box<dyn System>, UnknownSystem> {
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
