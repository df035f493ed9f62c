//! The commands main.rs dispatches to, one module each: an `Args` struct (clap) and `run`.
//! Options several commands take are one struct each in [`options`]. (`show`, `shrink`,
//! `debug`, `hunt` and `watch` are commands too, in folders of their own.)

pub mod analyze;
pub mod bench;
pub mod options;
pub mod params;
pub mod replay;
pub mod run;
pub mod setup;
pub mod systems;
pub mod workloads;
