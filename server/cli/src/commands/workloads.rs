//! `flymc workloads [SYSTEM]`: the workloads of one system, or of all.

use std::path::Path;

use anyhow::Result;
use flymc_core::workloads;
use flymc_model::{escape, System};

use crate::systems;

#[derive(clap::Args)]
pub struct WorkloadsArgs {
    /// The system whose workloads to list (default: every system's).
    pub system: Option<String>,
}

pub fn run(args: &WorkloadsArgs, folder: Option<&Path>) -> Result<u8> {
    let list: Vec<Box<dyn System>> = match &args.system {
        Some(name) => vec![systems::find(name)?],
        None => systems::listed(),
    };
    for system in list {
        let dir = systems::workloads_dir(system.as_ref(), folder)?;
        for name in workloads::names_in(&dir) {
            let w = workloads::load_in(&dir, system.name(), &name)?;
            println!(
                "{:<14} {:<12} {}",
                escape::line(system.name()),
                escape::line(&name),
                escape::line(&w.description)
            );
        }
    }
    Ok(0)
}
