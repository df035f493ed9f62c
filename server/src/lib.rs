//! flymc: a systematic model checker for real distributed systems.
//!
//! The [`executor`] runs one path on a [`flymc_model::Target`]; a [`strategy`] decides which
//! paths to run; [`explore`] is the loop between them; [`pathfile`] writes and reads the paths
//! that `flymc replay` re-executes; [`replay`] does that; [`systems`] and [`workloads`] find what
//! the command line names.

pub mod bench;
pub mod cache;
pub mod cluster;
pub mod dependence;
pub mod eventserver;
pub mod executor;
pub mod explore;
pub mod hookbench;
pub mod pathfile;
pub mod progress;
pub mod real;
pub mod replay;
pub mod strategy;
pub mod systems;
pub mod workloads;
pub mod zookeeper;

#[cfg(test)]
mod testkit;

pub use flymc_model as model;
