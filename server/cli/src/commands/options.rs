//! Options several commands share, each group one struct that a command flattens into its
//! arguments (`#[command(flatten)]`).

use std::net::SocketAddr;
use std::path::Path;

use anyhow::Result;
use flymc_core::pathfile::PathFile;
use flymc_core::replay::workload_for;
use flymc_core::workloads;
use flymc_model::{System, Workload};
use flymc_real::{BackendKind, RealOptions};

use crate::systems;

/// Where real nodes run and how flymc reaches them: `run`, `replay`, `shrink`, `debug`, `hunt`.
#[derive(clap::Args, Clone, Debug)]
pub struct ClusterArgs {
    /// Where real nodes run: local processes on 127.0.k.x or Docker containers.
    #[arg(long, value_enum, default_value_t = BackendKind::Local)]
    pub backend: BackendKind,
    /// Where the event server listens for real nodes' hooks (default 127.0.0.1, a free port).
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<SocketAddr>,
    /// Keep every run's directory (node data directories and logs) instead of removing it
    /// when the path ends; its location is printed per path at debug level
    /// (FLYMC_LOG=flymc_real=debug). Real nodes only; takes disk space fast.
    #[arg(long)]
    pub keep_run_dirs: bool,
}

impl ClusterArgs {
    /// What real systems are built with; `snapshots`: keep cluster snapshots at branch points.
    pub fn options(&self, snapshots: bool) -> RealOptions {
        RealOptions {
            backend: self.backend,
            listen: self.listen,
            snapshots,
            keep_run_dirs: self.keep_run_dirs,
            hook_jdk_http: false,
            hook_sampled_quiet: false,
        }
    }

    /// The backend's name on the command line.
    pub fn backend_name(&self) -> String {
        clap::ValueEnum::to_possible_value(&self.backend)
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    }
}

/// The system a path file is re-executed on, and what of the file to trust: `replay`,
/// `shrink`, `debug`.
#[derive(clap::Args, Clone, Debug)]
pub struct PathSystemArgs {
    /// The system to run it on, a name or a system.toml (default: the path's system, built
    /// in or under ./systems/; the system file a path file records is not run on its word).
    #[arg(long, value_name = "NAME|FILE")]
    pub system: Option<String>,
    /// Run the programs the path file's own parameters name (ZooKeeper's `zookeeper_home`),
    /// which a path file alone does not choose (docs/SECURITY.md).
    #[arg(long)]
    pub trust_params: bool,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

impl PathSystemArgs {
    /// The system and workload to re-execute `path` on, checked: the system the user allows
    /// (never one the file alone names), its recorded parameters if trusted, the workload file
    /// as recorded.
    pub fn resolve(
        &self,
        path: &PathFile,
        folder: Option<&Path>,
    ) -> Result<(Box<dyn System>, Workload)> {
        let options = self.cluster.options(false);
        let system = systems::for_path(path, &options, self.system.as_deref())?;
        systems::check_recorded_params(path, system.as_ref(), self.trust_params)?;
        let workload = workload_for(path, folder)?;
        workloads::check_expect(system.as_ref(), &workload)?;
        Ok((system, workload))
    }
}
