//! The model flymc checks against: what an event is, what a global state is, how events are
//! ordered causally, what a workload asks for, and the one narrow [`Target`] trait through which
//! the executor drives a system, whether simulated in memory ([`sim`]) or real processes behind
//! the event server.
//!
//! Nothing here knows about strategies or the CLI; integrations depend on this crate only.

pub mod bounded;
pub mod escape;
pub mod event;
pub mod exceptions;
pub mod property;
pub mod sets;
pub mod sim;
pub mod state;
pub mod symmetry;
pub mod system;
pub mod target;
pub mod vclock;
pub mod workload;

// The property language is its own crate; the analyzer still names it by its old place.
pub use flymc_lang as guard;

pub use event::{Event, EventId, EventKind, NodeId};
pub use property::{Property, PropertyKind, Violation};
pub use state::{GlobalState, NodeView, PendingView};
pub use symmetry::Symmetry;
pub use system::{About, Feature, System};
pub use target::{Target, TargetError};
pub use vclock::VectorClock;
pub use workload::{Workload, WorkloadError};

/// Stable 64-bit hash of bytes. xxh3 is specified and version-stable, so hashes written into
/// path files stay comparable across flymc releases (std's hasher makes no such promise).
pub fn stable_hash(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}
