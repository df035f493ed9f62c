//! Cluster backends: where node processes run. [`local::LocalBackend`] starts them as local
//! processes on 127.0.k.x (the default); [`docker::DockerBackend`] runs them as containers
//! behind the same [`Backend`] trait.

pub mod docker;
pub mod janitor;
pub mod local;
mod namespaces;
pub(crate) mod procs;
pub mod rundirs;
mod silence;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use flymc_model::NodeId;

use crate::snapshot::{Criu, PendingSnapshot, Snapshot};

pub use procs::{
    cleanup_all, exit_code, install_cleanup_handler, interrupted, interrupted_by,
    interruption_reported, live_processes, run_bounded, signal_name, wait_for_cleanup,
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
    /// SIGKILL the node and return once it is gone. A backend that can keeps the node's
    /// connections to other nodes open meanwhile, so its peers learn nothing of the crash
    /// until [`Backend::crash_noticed`] (the local backend: `cluster/silence.rs`).
    fn kill(&mut self, node: NodeId) -> Result<(), ClusterError>;
    /// flymc has told `by` of `node`'s crash (enabled a peer-failure timer or a `crashed`
    /// notice there): what the backend kept open of their connections may close now.
    fn crash_noticed(&mut self, _node: NodeId, _by: NodeId) {}
    /// Kill every node of the run and remove its directory (unless asked to keep it).
    fn stop(&mut self) -> Result<(), ClusterError>;
    /// The process id of each node that is running.
    fn pids(&self) -> Vec<(NodeId, u32)>;
    /// Checkpoint running node `node` (its process tree, data directory and log) into `into`;
    /// the node keeps running.
    fn dump(
        &mut self,
        node: NodeId,
        _criu: &Criu,
        _into: &mut PendingSnapshot,
    ) -> Result<(), ClusterError> {
        Err(ClusterError(format!(
            "the {} backend cannot snapshot node n{node}",
            self.name()
        )))
    }
    /// Start `slot.node` from its image in `from` instead of launching it: its data directory
    /// and log go back to what they were at the dump. The slot must be the one dumped (same
    /// run, addresses and directories) and the node not running.
    fn restore(
        &mut self,
        slot: &NodeSlot,
        _incarnation: u32,
        _criu: &Criu,
        _from: &Snapshot,
        _on_exit: ExitListener,
    ) -> Result<u32, ClusterError> {
        Err(ClusterError(format!(
            "the {} backend cannot restore node n{}",
            self.name(),
            slot.node
        )))
    }
    /// Snapshots of the running nodes, if this backend can take them here.
    fn checkpoints(&mut self) -> Option<&mut dyn Checkpoints> {
        None
    }
}

/// A backend that can snapshot its node processes (CRIU) and start copies of them later.
pub trait Checkpoints {
    /// Snapshot the processes of `nodes` (paused, with no connection to flymc), leaving them
    /// running, and the run directory of every node as it is now, under `key`. `Ok(false)`:
    /// declined (the store is full and nothing could be evicted); the nodes run on either way.
    fn dump(&mut self, key: u64, nodes: &[NodeId]) -> Result<bool, ClusterError>;
    /// End the current run and start the snapshot `key` instead: its run directory back as it
    /// was, and a copy of each of its processes (node, incarnation), reporting their exits to
    /// `on_exit`. Returns the slots (those of the run the snapshot was taken in), or `None`
    /// when the snapshot is no longer kept.
    fn restore(
        &mut self,
        key: u64,
        nodes: &[(NodeId, u32)],
        on_exit: ExitListener,
    ) -> Result<Option<Vec<NodeSlot>>, ClusterError>;
    /// Forget the snapshot `key` (one whose cluster is not what flymc recorded for it).
    fn discard(&mut self, key: u64);
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
