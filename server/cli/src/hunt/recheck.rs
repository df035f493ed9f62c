//! Replaying the corpus first: does each known finding's path still violate its property on
//! today's build? The path's events are re-executed in order on the workload as it is now
//! (not the file the path was recorded with: the point is to run the new build), and the
//! answer is only whether the same property fails. States are not compared, since a fix
//! changes them.

use flymc_core::executor::{Executor, RunOptions};
use flymc_core::pathfile::PathFile;
use flymc_core::plan::Plan;
use flymc_core::run::Ending;
use flymc_model::{System, Workload};

#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The same property failed.
    Violates,
    /// It did not: `why` says how the path went instead.
    Passes { why: String },
}

/// A corpus finding whose path is not a path of the finding's own system and workload: it
/// cannot say whether the finding is fixed (another system's events are never enabled).
#[derive(Debug, thiserror::Error)]
#[error("corpus error: its path.json is a path of {found}, not of the finding's {expected}; restore the finding's own path.json or remove its folder")]
pub struct NotItsPath {
    found: String,
    expected: String,
}

/// Whether `path` was recorded on the finding's system and workload (those of `workload`).
pub fn belongs(path: &PathFile, workload: &Workload) -> Result<(), NotItsPath> {
    if (&path.system, &path.workload.name) == (&workload.system, &workload.name) {
        return Ok(());
    }
    Err(NotItsPath {
        found: format!("{} / {}", path.system, path.workload.name),
        expected: format!("{} / {}", workload.system, workload.name),
    })
}

pub fn recheck(
    path: &PathFile,
    system: &dyn System,
    workload: &Workload,
) -> anyhow::Result<Verdict> {
    belongs(path, workload)?;
    if system.name() != workload.system {
        anyhow::bail!(
            "the workload {} is for {}, not {}",
            workload.name,
            workload.system,
            system.name()
        );
    }
    let property = path
        .violation
        .as_ref()
        .map(|v| v.property.clone())
        .ok_or_else(|| anyhow::anyhow!("the corpus path shows no violation"))?;
    let mut target = system
        .target(workload)
        .map_err(|e| anyhow::anyhow!("cannot start {}: {e}", system.name()))?;
    let plan = Plan::replay(path.event_ids());
    let run = Executor::new(system, workload).run(target.as_mut(), &plan, RunOptions::default())?;
    Ok(match (&run.violation, &run.ending) {
        (Some(v), _) if v.property == property => Verdict::Violates,
        (Some(v), _) => Verdict::Passes {
            why: format!("it now violates {} instead: {}", v.property, v.message),
        },
        (None, Ending::Diverged { step, .. }) => Verdict::Passes {
            why: format!(
                "the path no longer applies: its event {} ({}) was not enabled",
                step + 1,
                path.events
                    .get(*step)
                    .map_or("?", |e| e.description.as_str())
            ),
        },
        (None, _) => Verdict::Passes {
            why: format!("all {} events ran, {property} held", run.steps.len()),
        },
    })
}
