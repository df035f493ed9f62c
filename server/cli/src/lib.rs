//! The `flymc` command line's library: the one table of systems flymc knows ([`systems`]),
//! `flymc bench` ([`bench`], [`hookbench`] with its [`demo`] system), the progress display and
//! the run's [`summary`].
//! The work itself lives in the crates it names: `flymc-core` (executor, explore loop, path
//! files, replay), `flymc-strategies`, `flymc-real` (event server, backends) and one crate per
//! system under `integrations/`.

pub mod bench;
pub mod debug;
pub mod demo;
pub mod env;
pub mod hookbench;
pub mod hunt;
pub mod progress;
pub mod show;
pub mod shrink;
pub mod summary;
pub mod systems;
pub mod watch;
