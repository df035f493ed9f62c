//! What a job does with a path it is handed: run it on its target, once more from a fresh
//! start where the first run cannot be trusted, and judge what it found.

use flymc_model::Target;

use super::{ExploreConfig, ExploreError};
use crate::cache::CacheView;
use crate::dependence::Dependence;
use crate::executor::{ExecError, Executor, Logs, RunOptions};
use crate::liveness::{self, Verdict, Walks};
use crate::plan::Plan;
use crate::run::Run;
use crate::snapshots::{SnapshotStats, Snapshots};

/// A path handed to a job.
pub(super) struct Task<'c> {
    pub path: u64,
    pub plan: Plan,
    pub dep: Option<Box<dyn Dependence + Send>>,
    /// The cache as of the hand-out ([`crate::cache::StateEventCache::view`]).
    pub view: Option<CacheView<'c>>,
}

/// A job's run of a [`Task`].
pub(super) struct Done<'c> {
    pub path: u64,
    pub run: Result<Run, ExploreError>,
    pub view: Option<CacheView<'c>>,
    /// What the run did with its job's snapshots.
    pub snapshots: SnapshotStats,
    /// Its end state's classification and the walks it took, if it failed a liveness property.
    pub judged: Option<(Verdict, u64)>,
    /// It violated a property only while trusting states it had not seen (dropped).
    pub unconfirmed: bool,
}

/// A job's target, and the snapshots taken of its clusters.
pub(super) type JobState = (Box<dyn Target>, Snapshots);

/// What every job shares: the executor and the exploration's settings.
pub(super) struct PathWork<'e> {
    pub exec: Executor<'e>,
    pub cfg: &'e ExploreConfig,
}

impl PathWork<'_> {
    /// Run `task` on this job's target.
    pub fn run<'c>(&self, job: &mut JobState, mut task: Task<'c>) -> Done<'c> {
        let (target, snaps) = (job.0.as_mut(), &mut job.1);
        let before = snaps.stats.clone();
        let (run, restored) = self.execute(target, snaps, &mut task);
        let (run, unconfirmed) = self.confirm(target, &task, run, restored);
        let mut judged = None;
        let run = run.map_err(ExploreError::from).and_then(|mut run| {
            if self.cfg.check_determinism {
                check_determinism(&self.exec, target, &run, task.path)?;
            }
            if let Some(w) = self.cfg.walks.filter(|_| liveness::needs_judging(&run)) {
                let w = Walks {
                    seed: w.seed ^ task.path,
                    ..w
                };
                judged = Some(liveness::judge(&self.exec, target, &mut run, &w)?);
            }
            Ok(run)
        });
        Done {
            path: task.path,
            run,
            view: task.view,
            snapshots: snaps.stats.since(&before),
            judged,
            unconfirmed,
        }
    }

    fn logs(&self, path: u64) -> Option<Logs> {
        self.cfg.logs.as_ref().map(|l| l.for_path(path))
    }

    /// The task's run, and whether it started from a snapshot.
    ///
    /// A cluster restored from a snapshot that then fails (a restored JVM that dies at once),
    /// or one that fails before its first step (a JVM whose agent could not start on a loaded
    /// machine), says nothing about the system: the path is re-executed once from a fresh
    /// start, and only a second failure ends the exploration. A node that fails later (a
    /// reboot that does not come up) is the path's own outcome, not retried.
    fn execute(
        &self,
        target: &mut dyn Target,
        snaps: &mut Snapshots,
        task: &mut Task,
    ) -> (Result<Run, ExecError>, bool) {
        let restored_before = snaps.stats.restored;
        let opts = RunOptions {
            cache: task.view.as_mut(),
            dep: task.dep.as_deref_mut().map(|d| d as &mut dyn Dependence),
            snapshots: self.cfg.snapshots.then_some(&mut *snaps),
            logs: self.logs(task.path),
        };
        let run = self.exec.run(target, &task.plan, opts);
        let restored = snaps.stats.restored > restored_before;
        let at_start = matches!(&run, Err(ExecError::Target { step: 0, .. }));
        let retry = (restored || at_start) && !self.cfg.stop_asked();
        let (Err(e), true) = (&run, retry) else {
            return (run, restored);
        };
        let what = if restored {
            "the cluster restored from a snapshot"
        } else {
            "the cluster"
        };
        tracing::warn!(
            "path {}: {what} failed ({e}); re-executing it from the start",
            task.path
        );
        snaps.stats.fallbacks += u64::from(restored);
        let opts = RunOptions {
            cache: task.view.as_mut(),
            dep: task.dep.as_deref_mut().map(|d| d as &mut dyn Dependence),
            snapshots: None,
            logs: self.logs(task.path),
        };
        (self.exec.run(target, &task.plan, opts), restored)
    }

    /// The run to keep, and whether its violation was dropped as unconfirmed.
    ///
    /// A finding must replay. A run restored from a snapshot or given states by the cache
    /// trusted states it did not see the cluster reach; such a violating run is executed again
    /// from a fresh start, seeing every step, and that run is the one kept: a finding that
    /// does not recur is dropped (counted and warned about), and the strategy learns from what
    /// the cluster did.
    fn confirm(
        &self,
        target: &mut dyn Target,
        task: &Task,
        run: Result<Run, ExecError>,
        restored: bool,
    ) -> (Result<Run, ExecError>, bool) {
        let trusted = restored || task.view.as_ref().is_some_and(|v| v.hits > 0);
        let recheck = match &run {
            Ok(r) if trusted => r
                .violation
                .as_ref()
                .map(|v| (v.property.clone(), Plan::replay(r.event_ids()))),
            _ => None,
        };
        let Some((property, plan)) = recheck.filter(|_| !self.cfg.stop_asked()) else {
            return (run, false);
        };
        let opts = RunOptions {
            logs: self.logs(task.path),
            ..Default::default()
        };
        let again = self.exec.run(target, &plan, opts);
        let mut unconfirmed = false;
        if let Ok(a) = &again {
            if a.violation.as_ref().map(|v| &v.property) != Some(&property) {
                unconfirmed = true;
                tracing::warn!(
                    "path {}: `{property}` did not recur when the path was executed again from a fresh start (it had trusted a snapshot's or the cache's states); dropped",
                    task.path
                );
            }
        }
        (again, unconfirmed)
    }
}

/// Re-run `run`'s exact events without the cache and compare every state.
fn check_determinism(
    exec: &Executor,
    target: &mut dyn Target,
    run: &Run,
    path: u64,
) -> Result<(), ExploreError> {
    let plan = Plan::replay(run.event_ids());
    let again = exec.run(target, &plan, RunOptions::default())?;
    for (step, (a, b)) in run.states.iter().zip(&again.states).enumerate() {
        if a != b {
            let diff = a.diff(b, 3).join("; ");
            return Err(ExploreError::Nondeterministic {
                path,
                step,
                detail: diff,
            });
        }
    }
    if again.states.len() != run.states.len() || again.violation != run.violation {
        return Err(ExploreError::Nondeterministic {
            path,
            step: again.states.len().min(run.states.len()),
            detail: format!(
                "first run: {} states, {:?}; second: {} states, {:?}",
                run.states.len(),
                run.violation.as_ref().map(|v| &v.property),
                again.states.len(),
                again.violation.as_ref().map(|v| &v.property)
            ),
        });
    }
    Ok(())
}
