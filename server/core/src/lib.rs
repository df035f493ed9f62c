//! flymc's exploration core: everything between a strategy and a target.
//!
//! The [`executor`] runs one path on a [`flymc_model::Target`], following a [`plan::Plan`]'s
//! prefix and then the [`order`] policy the plan names, and hands back a [`run::Run`]; a
//! [`strategy::Strategy`] decides which paths to run; [`explore`] is the loop between them
//! (several paths at once, on targets of their own, with `--jobs`); the [`cache`] stands in
//! for re-running a step whose result is known; [`dependence`] judges which events race
//! (sleep sets); [`snapshots`] start paths from their prefix's snapshot; [`timing`] says where a
//! path's time went; [`liveness`] classifies the end states of runs that fail a liveness
//! property (live, transient, dead) and finds a dead run's critical transition; [`pathfile`]
//! writes and reads the paths that [`replay`] re-executes, every output through [`outfile`];
//! [`live`] runs a cluster without choosing for it (`flymc watch`), predicting and steering;
//! [`workloads`] finds the
//! workload files the command line names.

pub mod cache;
mod clocks;
pub mod dependence;
pub mod executor;
pub mod explore;
mod faults;
pub use faults::CrashPoints;
mod jobs;
pub mod live;
pub mod liveness;
pub mod order;
pub mod outfile;
pub mod pathfile;
pub mod plan;
pub mod replay;
pub mod run;
mod sleepset;
pub mod snapshots;
pub mod strategy;
pub mod timing;
pub mod workloads;

#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
