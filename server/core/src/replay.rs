//! `flymc replay`: re-execute a path file and compare every state with the recorded one.
//!
//! What cannot be compared is refused before anything runs, as an error (`flymc replay` exits
//! 2 with one line): a path file [`PathFile::load`] refuses (too large, too many events, no
//! initial state, a malformed id or version), a workload written for another system than the
//! path's, or one whose file changed. A replay that runs compares at least the initial state.

use std::path::Path;

use flymc_model::{GlobalState, System, Violation, Workload};

use crate::executor::{ExecError, Executor, RunOptions};
use crate::pathfile::{PathFile, WorkloadRef};
use crate::plan::Plan;
use crate::run::Ending;
use crate::workloads;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("the workload file {file} changed since this path was recorded (sha256 {now}, recorded {then}); restore it or re-run the exploration to record a new path")]
    WorkloadChanged {
        file: String,
        now: String,
        then: String,
    },
    #[error("the path was recorded with [faults] {then}, but the workload file {file} now says {now}; restore it or re-run the exploration to record a new path")]
    FaultsChanged {
        file: String,
        now: String,
        then: String,
    },
    #[error("the path's workload file {0} is missing and no workload `{1}` exists for {2}; pass --workloads DIR")]
    WorkloadMissing(String, String, String),
    #[error("the path is for `{system}` but its workload file {file} is for `{found}`; correct the path file's \"system\" or \"workload\" so they agree, or re-run the exploration to record a new path")]
    WrongSystem {
        system: String,
        file: String,
        found: String,
    },
    /// Not from a file [`PathFile::load`] accepts, which always holds the initial state.
    #[error("the path records no states, so a replay would compare nothing; re-run the exploration to record a new path")]
    NothingToCompare,
    #[error(transparent)]
    Find(#[from] workloads::FindError),
    #[error(transparent)]
    Exec(#[from] ExecError),
    #[error("cannot start {0}: {1}")]
    Setup(String, String),
}

/// What re-executing a path showed.
#[derive(Debug)]
pub enum ReplayOutcome {
    /// Every state matched and the same violation was observed.
    Reproduced(Violation),
    /// Every state matched; the path had no violation and none was observed.
    Matched,
    /// The first step whose resulting state differs, or whose event was not enabled.
    Diverged {
        step: usize,
        event: String,
        expected: Box<GlobalState>,
        observed: Option<Box<GlobalState>>,
        differences: Vec<String>,
    },
    /// Every state matched but the violation did not (a property changed).
    ViolationDiffers {
        expected: Option<Violation>,
        observed: Option<Violation>,
    },
}

/// The path's workload, after checking that its file is the one the path was recorded with and
/// that it puts the same nodes down at the start and offers faults under the same condition.
pub fn workload_for(path: &PathFile, folder: Option<&Path>) -> Result<Workload, ReplayError> {
    let mut w = if path.workload.file.is_file() {
        Workload::load(&path.workload.file).map_err(workloads::FindError::from)?
    } else {
        let folder = workloads::folder(folder)?;
        workloads::load(&folder, &path.system, &path.workload.name).map_err(|e| match e {
            workloads::FindError::Unknown { .. } => ReplayError::WorkloadMissing(
                path.workload.file.display().to_string(),
                path.workload.name.clone(),
                path.system.clone(),
            ),
            other => other.into(),
        })?
    };
    // Before anything else: the path's system would run a workload written for another.
    if w.system != path.system {
        return Err(ReplayError::WrongSystem {
            system: path.system.clone(),
            file: w.file.display().to_string(),
            found: w.system,
        });
    }
    // Before the file's hash, which would refuse it too, so the message says what changed.
    let now = WorkloadRef::of(&w);
    if (&now.down, &now.fault_when) != (&path.workload.down, &path.workload.fault_when) {
        return Err(ReplayError::FaultsChanged {
            file: w.file.display().to_string(),
            now: now.faults_text(),
            then: path.workload.faults_text(),
        });
    }
    if w.sha256 != path.workload.sha256 {
        return Err(ReplayError::WorkloadChanged {
            file: w.file.display().to_string(),
            now: w.sha256[..12].to_string(),
            then: path.workload.sha256.chars().take(12).collect(),
        });
    }
    // What the command line set over the file's when the path was recorded.
    for (k, v) in &path.workload.params {
        w.set_param(k, v.clone());
    }
    Ok(w)
}

pub fn replay(
    path: &PathFile,
    system: &dyn System,
    workload: &Workload,
) -> Result<ReplayOutcome, ReplayError> {
    if path.states.is_empty() {
        return Err(ReplayError::NothingToCompare);
    }
    let mut target = system
        .target(workload)
        .map_err(|e| ReplayError::Setup(system.name().into(), e.to_string()))?;
    let plan = Plan::replay(path.event_ids());
    let run = Executor::new(system, workload).run(target.as_mut(), &plan, RunOptions::default())?;
    for (i, (rec, seen)) in path.states.iter().zip(&run.states).enumerate() {
        if rec.state != *seen {
            let step = i.saturating_sub(1);
            return Ok(ReplayOutcome::Diverged {
                step,
                event: if i == 0 {
                    "(initial state)".into()
                } else {
                    path.events[step].description.clone()
                },
                expected: Box::new(rec.state.clone()),
                observed: Some(Box::new(seen.clone())),
                differences: rec.state.diff(seen, 8),
            });
        }
    }
    // A step without a resulting state (a hang, a node that exited) reproduces the path's
    // finding at that step, whether the path saw it there or, after a cached step, one step on.
    if let (Some(step), Some(a), Some(b)) =
        (run.ending.stateless_step(), &path.violation, &run.violation)
    {
        if a.property == b.property && a.step == step {
            return Ok(ReplayOutcome::Reproduced(b.clone()));
        }
    }
    if let Ending::Diverged { step, .. } = run.ending {
        return Ok(ReplayOutcome::Diverged {
            step,
            event: path.events[step].description.clone(),
            expected: Box::new(expected_after(path, step)),
            observed: None,
            differences: vec![format!("event {} was not enabled", path.events[step].id)],
        });
    }
    if run.states.len() < path.states.len() {
        let step = run.states.len() - 1;
        return Ok(ReplayOutcome::Diverged {
            step,
            event: path.events[step].description.clone(),
            expected: Box::new(expected_after(path, step)),
            observed: None,
            differences: vec![format!(
                "the run ended early: {:?}",
                run.violation.map(|v| v.to_string())
            )],
        });
    }
    match (&path.violation, run.violation) {
        (Some(a), Some(b)) if a.property == b.property => Ok(ReplayOutcome::Reproduced(b)),
        (None, None) => Ok(ReplayOutcome::Matched),
        (expected, observed) => Ok(ReplayOutcome::ViolationDiffers {
            expected: expected.clone(),
            observed,
        }),
    }
}

/// The state the path file recorded after `step` (its last one, if it ends sooner).
fn expected_after(path: &PathFile, step: usize) -> GlobalState {
    path.states
        .get(step + 1)
        .or(path.states.last())
        .expect("a path has its initial state")
        .state
        .clone()
}
