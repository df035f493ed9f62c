//! Cluster snapshots with CRIU: checkpoint every node's process tree (with copies of its data
//! directory and log, taken while it is frozen) and start later paths from there instead of
//! re-executing their prefix.
//!
//! - [`setup`]: `flymc setup criu` builds CRIU from Debian's source into flymc's cache;
//! - [`criu`]: [`Criu`] finds that binary, checks it, dumps one node and restores one node;
//! - [`store`]: [`SnapshotStore`], a bounded on-disk store of whole-cluster snapshots;
//! - [`kdat`]: CRIU's cache of the kernel's features, where CRIU does not keep one itself;
//! - [`used`]: the files a node only reads, checked unchanged before a restore.
//!
//! Nodes must run in PID and time namespaces of their own
//! ([`crate::cluster::local::LocalBackend::namespaces`]). Nothing here knows a system by name.

pub mod criu;
pub mod kdat;
pub mod setup;
pub mod store;
pub mod used;

use std::path::PathBuf;

pub use criu::{Criu, NodeImage};
pub use store::{PendingSnapshot, Snapshot, SnapshotKey, SnapshotStore};

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// `flymc setup criu` has not built CRIU.
    #[error("CRIU is not built ({0} is missing): run `flymc setup criu` as root")]
    NotBuilt(PathBuf),
    /// CRIU is there but cannot work on this machine (`criu check`).
    #[error("CRIU cannot work here: {0}")]
    Unusable(String),
    /// A dump, a restore or the store failed.
    #[error("{0}")]
    Failed(String),
    /// The snapshot alone is larger than the store's cap.
    #[error("a snapshot of {size} bytes does not fit the snapshot store's cap of {cap} bytes")]
    TooBig { size: u64, cap: u64 },
}

/// Where flymc keeps what `flymc setup` builds: the settings' cache (`$FLYMC_CACHE` for the
/// CLI), else `~/.cache/flymc`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = &crate::settings::settings().cache {
        return d.clone();
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    home.join(".cache").join("flymc")
}
