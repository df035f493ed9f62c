//! Cluster backends: where node processes run. [`local::LocalBackend`] starts them as local
//! processes on 127.0.k.x (the default); [`docker::DockerBackend`] runs them as containers
//! behind the same [`Backend`] trait.

pub mod docker;
pub mod local;
mod procs;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use flymc_model::NodeId;

pub use procs::{
    cleanup_all, install_cleanup_handler, interrupted, interruption_reported, live_processes,
    wait_for_cleanup,
};

/// Where one node of a run lives.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSlot {
    pub node: NodeId,
    /// A distinct loopback address and a free port the node may listen on.
    pub addr: SocketAddr,
    /// The node's data directory: empty at the start of a run, kept across crash and reboot.
    pub data_dir: PathBuf,
    /// Where the node's stdout and stderr go (appended across reboots).
    pub log: PathBuf,
}

/// How to start a node program.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Extra environment (flymc adds the `FLYMC_*` variables of the hook protocol).
    pub env: Vec<(String, String)>,
}

impl NodeCommand {
    pub fn new(program: impl Into<PathBuf>) -> NodeCommand {
        NodeCommand {
            program: program.into(),
            ..NodeCommand::default()
        }
    }

    pub fn arg(mut self, a: impl Into<String>) -> NodeCommand {
        self.args.push(a.into());
        self
    }

    pub fn env(mut self, k: impl Into<String>, v: impl Into<String>) -> NodeCommand {
        self.env.push((k.into(), v.into()));
        self
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ClusterError(pub String);

/// Told when a node process ends: (node, incarnation, how it ended).
pub type ExitListener = Arc<dyn Fn(NodeId, u32, String) + Send + Sync>;

/// Runs node processes for [`crate::RealTarget`].
pub trait Backend: Send {
    fn name(&self) -> &'static str;
    /// Set up a fresh run of `nodes` nodes (stopping any previous one): addresses, free ports,
    /// empty data directories.
    fn prepare(&mut self, nodes: usize) -> Result<Vec<NodeSlot>, ClusterError>;
    /// Start `slot.node`'s program (again, after a crash, on the same data directory).
    fn launch(
        &mut self,
        slot: &NodeSlot,
        incarnation: u32,
        cmd: &NodeCommand,
        on_exit: ExitListener,
    ) -> Result<u32, ClusterError>;
    /// SIGKILL the node and return once it is gone.
    fn kill(&mut self, node: NodeId) -> Result<(), ClusterError>;
    /// Kill every node of the run and remove its directory (unless asked to keep it).
    fn stop(&mut self) -> Result<(), ClusterError>;
    /// The process id of each node that is running.
    fn pids(&self) -> Vec<(NodeId, u32)>;
}

/// Find a node program built alongside flymc: next to the running executable, or one folder
/// up (test executables live in `target/<profile>/deps`).
pub fn find_program(name: &str) -> Result<PathBuf, ClusterError> {
    let exe = std::env::current_exe()
        .map_err(|e| ClusterError(format!("cannot locate the flymc executable: {e}")))?;
    let dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    let candidates = [dir.join(name), dir.join("..").join(name)];
    candidates.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
        ClusterError(format!(
            "cannot find the node program `{name}` in {}: build it with `cargo build --release` (or `cargo build` for a dev build of flymc)",
            dir.display()
        ))
    })
}
