//! `flymc replay PATH`: re-execute a path file and check it reaches the same states and
//! violation. Exit 1 reproduced, 0 matched without a violation, 3 diverged.

use std::path::{Path, PathBuf};

use anyhow::Result;
use flymc_core::pathfile::PathFile;
use flymc_core::replay::{replay, ReplayOutcome};
use flymc_model::escape;

use super::options::PathSystemArgs;
use crate::systems;

#[derive(clap::Args)]
pub struct ReplayArgs {
    /// A path file written by `flymc run`.
    pub file: PathBuf,
    #[command(flatten)]
    pub target: PathSystemArgs,
}

pub fn run(args: &ReplayArgs, folder: Option<&Path>) -> Result<u8> {
    let file = &args.file;
    let path = PathFile::load(file)?;
    let (system, workload) = args.target.resolve(&path, folder)?;
    println!(
        "replaying {} ({} / {}, {} events, recorded by {} path {})",
        file.display(),
        escape::line(&path.system),
        escape::line(&path.workload.name),
        path.events.len(),
        escape::line(&path.strategy),
        path.path_number
    );
    systems::announce(system.as_ref());
    match replay(&path, system.as_ref(), &workload)? {
        ReplayOutcome::Reproduced(v) => {
            println!("reproduced: {}", escape::line(&v.to_string()));
            Ok(1)
        }
        ReplayOutcome::Matched => {
            println!("matched: every state as recorded, no violation");
            Ok(0)
        }
        ReplayOutcome::Diverged {
            step,
            event,
            expected,
            observed,
            differences,
        } => {
            println!("diverged at step {step} ({})", escape::line(&event));
            for d in &differences {
                println!("  expected vs observed: {}", escape::line(d));
            }
            println!("  expected state: {}", json(&expected)?);
            match observed {
                Some(o) => println!("  observed state: {}", json(&o)?),
                None => println!("  observed state: (step not taken)"),
            }
            if path.late_reports > 0 {
                println!(
                    "  note: while this path was recorded, nodes reported {} events late (after \
                     saying they were done); the recording may hold an order the system does not \
                     repeat",
                    path.late_reports
                );
            }
            Ok(3)
        }
        ReplayOutcome::ViolationDiffers { expected, observed } => {
            let show = |v: &Option<flymc_model::Violation>| {
                v.as_ref()
                    .map_or("no violation".to_string(), |v| v.to_string())
            };
            println!(
                "diverged: states matched but expected {} and observed {}",
                escape::line(&show(&expected)),
                escape::line(&show(&observed))
            );
            Ok(3)
        }
    }
}

/// A state as JSON on one line. What a replay prints quotes the path file and the nodes:
/// escaped before it reaches a terminal.
fn json(s: &flymc_model::GlobalState) -> Result<String> {
    Ok(escape::line(&serde_json::to_string(s)?).into_owned())
}
