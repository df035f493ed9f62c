//! flymc's machinery for real node processes, knowing no system by name.
//!
//! The [`eventserver`] speaks the hook protocol (hooks/PROTOCOL.md) with the hooks inside the
//! nodes; [`RealTarget`] is the [`flymc_model::Target`] the executor drives over it; a
//! [`cluster::Backend`] runs the node processes, as local processes ([`cluster::local`]) or
//! Docker containers ([`cluster::docker`]). A system integrates by building a [`RealConfig`]
//! (how to start node `i`) and choosing a backend from the user's [`RealOptions`]. [`snapshot`]
//! checkpoints and restores node processes with CRIU, for cluster snapshots.

pub mod cluster;
pub mod eventserver;
mod logscan;
pub mod settings;
pub mod snapshot;
pub mod system_file;
mod target;

use std::net::SocketAddr;
use std::path::PathBuf;

pub use target::{ClientRequest, CommandFn, Launch, RealConfig, RealTarget};

/// Where to run the nodes (`--backend`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum BackendKind {
    /// Local processes on 127.0.k.x (a block of their own per cluster).
    #[default]
    Local,
    /// Docker containers with host networking.
    Docker,
}

/// What the user chose for real clusters, handed to every real system when it is built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RealOptions {
    pub backend: BackendKind,
    /// Where the event server listens (default: 127.0.0.1 on a free port).
    pub listen: Option<SocketAddr>,
    /// Keep cluster snapshots at branch points (local processes, with CRIU).
    pub snapshots: bool,
    /// Keep every run's directory (node data and logs) instead of removing it (`flymc run
    /// --keep-run-dirs`), to look at what the nodes left on disk.
    pub keep_run_dirs: bool,
    /// Java hooks talk to flymc through the JDK's HttpClient, their transport before their own
    /// blocking client (`flymc bench real` measures the difference).
    pub hook_jdk_http: bool,
    /// Java hooks always take two quiet checks, as before their exact one (`flymc bench real`
    /// measures the difference).
    pub hook_sampled_quiet: bool,
}

impl RealOptions {
    /// The local backend these options ask for.
    pub fn local_backend(&self) -> cluster::local::LocalBackend {
        cluster::local::LocalBackend::new()
            .snapshots(self.snapshots)
            .keep_dirs(self.keep_run_dirs)
    }

    /// Whether targets built with these options can take cluster snapshots (asked for, local
    /// processes, and CRIU usable here).
    pub fn can_snapshot(&self) -> bool {
        self.snapshots
            && self.backend == BackendKind::Local
            && cluster::local::snapshots_usable().is_ok()
    }
}

/// A program on `PATH`.
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(program))
            .find(|f| f.is_file())
    })
}
