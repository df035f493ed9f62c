//! The `flymc` command line's library: the commands ([`commands`], and [`show`], [`shrink`],
//! [`debug`], [`hunt`], [`watch`]), the one table of systems flymc knows ([`systems`]),
//! `flymc bench`'s benchmarks ([`bench`], [`hookbench`] with its [`demo`] system), the progress
//! display, the run's [`summary`], and how the binary starts and ends ([`exit`]).
//! The work itself lives in the crates it names: `flymc-core` (executor, explore loop, path
//! files, replay), `flymc-strategies`, `flymc-real` (event server, backends) and one crate per
//! system under `integrations/`.

pub mod bench;
pub mod commands;
pub mod debug;
pub mod demo;
pub mod env;
pub mod exit;
pub mod hookbench;
pub mod hunt;
pub mod progress;
pub mod show;
pub mod shrink;
pub mod summary;
pub mod systems;
pub mod watch;
