//! The exploration loop: ask the strategy for a path, run it, record what was seen, repeat;
//! with `--jobs N`, N paths at a time ([`crate::jobs`]), seen in path order.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use flymc_model::{System, Target, Workload};
use serde::Serialize;

use crate::cache::{CacheView, StateEventCache};
use crate::dependence::Dependence;
use crate::executor::{ExecError, Executor};
use crate::jobs;
use crate::liveness::{self, LivenessStats, Verdict, Walks};
use crate::plan::Plan;
use crate::run::Run;
use crate::snapshots::{SnapshotStats, Snapshots};
use crate::strategy::{Strategy, StrategyStats};
use crate::timing::TimingTotals;

#[derive(Debug, thiserror::Error)]
pub enum ExploreError {
    #[error(transparent)]
    Exec(#[from] ExecError),
    #[error("{0}")]
    Setup(String),
    #[error("nondeterminism: path {path} re-run differs at step {step}: {detail}; the target is not deterministic, so its paths cannot be replayed")]
    Nondeterministic {
        path: u64,
        step: usize,
        detail: String,
    },
    /// [`ExploreConfig::interrupted`] said to stop; the path under way was dropped.
    #[error("interrupted")]
    Interrupted,
}

#[derive(Clone, Debug)]
pub struct ExploreConfig {
    /// Stop after this many paths (`None`: until exhausted or a violation).
    pub max_paths: Option<u64>,
    /// Re-run every path and fail on any difference.
    pub check_determinism: bool,
    /// Use the state-event cache.
    pub cache: bool,
    /// Stop only on a violation of this property (benchmarks look for one bug and step over
    /// others); `None` stops on the first violation of any property.
    pub stop_on_property: Option<String>,
    /// Paths run at once, each on a target of its own (`--jobs`).
    pub jobs: usize,
    /// Start paths from snapshots of their prefixes where the target can take them
    /// ([`crate::snapshots`]); each job keeps its own.
    pub snapshots: bool,
    /// With `snapshots`: take and use them wherever the strategy branches, even where they
    /// cost more than they save (tests and benchmarks that compare paths).
    pub snapshots_always: bool,
    /// Keep node logs: of violating runs, or of all with [`KeepLogs::all`].
    pub logs: Option<KeepLogs>,
    /// Go on after violations until the budget or exhaustion (nightly hunts, `--keep-going`):
    /// `Outcome::violation` is then the first one, and every violating run reaches `on_run`.
    pub keep_going: bool,
    /// Asked between paths, and of each run as it ends: has the user asked to stop (a
    /// signal)? Then the exploration ends with [`ExploreError::Interrupted`], and a run that
    /// ended meanwhile is dropped (its nodes may have been killed under it).
    pub interrupted: Option<fn() -> bool>,
    /// Hand out no new path once this instant has passed (a hunt's time budget); the paths
    /// under way are finished and counted. Reaching it is not exhaustion.
    pub deadline: Option<Instant>,
    /// Classify the end states of runs that fail a liveness property by random walks, and
    /// report only dead ones, with their critical transition ([`crate::liveness`]); `None`:
    /// every such end state is reported, as it is (`--walks 0`).
    pub walks: Option<Walks>,
    /// Where crashes are offered.
    pub crash_points: crate::CrashPoints,
}

impl Default for ExploreConfig {
    fn default() -> Self {
        ExploreConfig {
            max_paths: None,
            check_determinism: false,
            cache: true,
            stop_on_property: None,
            jobs: 1,
            snapshots: false,
            snapshots_always: false,
            keep_going: false,
            logs: None,
            interrupted: None,
            deadline: None,
            walks: Some(Walks::default()),
            crash_points: crate::CrashPoints::Everywhere,
        }
    }
}

/// Where node logs are kept: `dir/PREFIX-pathN.logs/`, beside the path file
/// `dir/PREFIX-pathN.json` a violating run gets.
#[derive(Clone, Debug)]
pub struct KeepLogs {
    pub dir: std::path::PathBuf,
    pub prefix: String,
    pub all: bool,
}

impl KeepLogs {
    pub fn for_path(&self, path: u64) -> crate::executor::Logs {
        crate::executor::Logs {
            dir: self.dir.join(format!("{}-path{path}.logs", self.prefix)),
            all: self.all,
        }
    }
}

/// A snapshot for progress displays.
#[derive(Clone, Debug, Serialize)]
pub struct Progress {
    pub paths: u64,
    pub queue: usize,
    pub unique_states: usize,
    pub elapsed: Duration,
}

impl Progress {
    pub fn paths_per_sec(&self) -> f64 {
        self.paths as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// States covered after a number of paths: how coverage grew (recorded at paths 1, 2, 4, 8, ...
/// and at the last path).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Coverage {
    pub path: u64,
    pub unique_states: usize,
    /// Coarse abstract states (strategies that track them: `novelty`, `portfolio`), else 0.
    pub abstract_states: u64,
}

/// What an exploration found.
pub struct Outcome {
    pub paths: u64,
    /// The strategy had nothing left to explore.
    pub exhausted: bool,
    /// The first run that violated a property (the one asked for, if any), and its 1-based
    /// path number.
    pub violation: Option<(u64, Run)>,
    /// Paths that violated some other property than the one asked for, or (with
    /// `keep_going`) any violating path after the first.
    pub other_violations: u64,
    pub unique_states: HashSet<u64>,
    pub elapsed: Duration,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub stats: StrategyStats,
    /// Paths whose plan could not be followed (an event of the prefix never became enabled).
    pub diverged: u64,
    /// Violations that did not recur when their path was executed again from a fresh start
    /// (the run had trusted a snapshot's or the cache's states): dropped.
    pub unconfirmed: u64,
    /// Paths on which nodes reported events late ([`Run::late_reports`]), and those events.
    pub late_paths: u64,
    pub late_reports: u64,
    pub events: u64,
    pub snapshots: SnapshotStats,
    /// Where the paths' time went ([`Run::timing`], summed).
    pub timing: TimingTotals,
    /// End states that failed a liveness property: how they were classified, the walks taken.
    pub liveness: LivenessStats,
    /// States covered over paths.
    pub coverage: Vec<Coverage>,
}

impl Outcome {
    fn record_coverage(&mut self, abstract_states: u64) {
        if self.coverage.last().is_some_and(|c| c.path == self.paths) {
            return;
        }
        self.coverage.push(Coverage {
            path: self.paths,
            unique_states: self.unique_states.len(),
            abstract_states,
        });
    }
}

pub fn explore(
    system: &dyn System,
    workload: &Workload,
    strategy: &mut dyn Strategy,
    cfg: &ExploreConfig,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<Outcome, ExploreError> {
    explore_with(system, workload, strategy, cfg, on_progress, &mut |_| {})
}

/// A path handed to a job.
struct Task<'c> {
    path: u64,
    plan: Plan,
    dep: Option<Box<dyn Dependence + Send>>,
    /// The cache as of the hand-out ([`StateEventCache::view`]).
    view: Option<CacheView<'c>>,
}

/// A job's run of a [`Task`].
struct Done<'c> {
    path: u64,
    run: Result<Run, ExploreError>,
    view: Option<CacheView<'c>>,
    /// What the run did with its job's snapshots.
    snapshots: SnapshotStats,
    /// Its end state's classification and the walks it took, if it failed a liveness property.
    judged: Option<(Verdict, u64)>,
    /// It violated a property only while trusting states it had not seen (dropped).
    unconfirmed: bool,
}

/// [`explore`], also handing every run to `on_run` (coverage studies, tests).
/// An error loses what was explored before it; [`explore_partial`] keeps it.
pub fn explore_with(
    system: &dyn System,
    workload: &Workload,
    strategy: &mut dyn Strategy,
    cfg: &ExploreConfig,
    on_progress: &mut dyn FnMut(&Progress),
    on_run: &mut dyn FnMut(&Run),
) -> Result<Outcome, ExploreError> {
    match explore_partial(system, workload, strategy, cfg, on_progress, on_run) {
        (out, None) => Ok(out),
        (_, Some(e)) => Err(e),
    }
}

/// [`explore_with`], returning what was explored also when the exploration ended in an error
/// (a target failure, an interruption): the outcome counts the paths observed before it
/// (never `exhausted`), with the error beside it.
///
/// With `cfg.jobs` above 1, up to that many paths run at once, each on a target of its own
/// (`system.target` is called once per job). Plans are handed out and runs observed in one
/// fixed order ([`Strategy`]); a run is counted, checked and shown when it is observed, so
/// `max_paths` counts exactly and a violation is the lowest-numbered violating path. Runs
/// still under way when the loop stops are finished and dropped.
pub fn explore_partial(
    system: &dyn System,
    workload: &Workload,
    strategy: &mut dyn Strategy,
    cfg: &ExploreConfig,
    on_progress: &mut dyn FnMut(&Progress),
    on_run: &mut dyn FnMut(&Run),
) -> (Outcome, Option<ExploreError>) {
    let start = Instant::now();
    let exec = Executor::new(system, workload).crash_points(cfg.crash_points);
    let jobs = cfg.jobs.max(1);
    let mut out = Outcome {
        paths: 0,
        exhausted: false,
        violation: None,
        unique_states: HashSet::new(),
        elapsed: Duration::ZERO,
        cache_hits: 0,
        cache_misses: 0,
        stats: StrategyStats::default(),
        diverged: 0,
        unconfirmed: 0,
        late_paths: 0,
        late_reports: 0,
        events: 0,
        other_violations: 0,
        snapshots: SnapshotStats::default(),
        timing: TimingTotals::default(),
        coverage: Vec::new(),
        liveness: LivenessStats {
            walks_per_state: cfg.walks.map_or(0, |w| w.walks),
            walk_depth: cfg
                .walks
                .map_or(0, |w| w.depth.unwrap_or(workload.max_events)),
            ..Default::default()
        },
    };
    let stop = || cfg.interrupted.is_some_and(|f| f());
    let targets = match (0..jobs)
        .map(|_| {
            system
                .target(workload)
                .map(|t| (t, Snapshots::new().always(cfg.snapshots_always)))
        })
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(t) => t,
        Err(e) => {
            out.elapsed = start.elapsed();
            return (out, Some(ExploreError::Setup(e.to_string())));
        }
    };
    let cache = StateEventCache::new();
    let use_cache = cfg.cache && !system.has(flymc_model::Feature::SummaryStates);
    let work: &jobs::Work<(Box<dyn Target>, Snapshots), Task, Done> = &|job, mut task| {
        let (target, snaps) = (job.0.as_mut(), &mut job.1);
        let dep = task.dep.as_deref_mut().map(|d| d as &mut dyn Dependence);
        let before = snaps.stats.clone();
        let mut judged = None;
        let logs = || cfg.logs.as_ref().map(|l| l.for_path(task.path));
        let mut run = exec.run_snapshots(
            target,
            &task.plan,
            task.view.as_mut(),
            dep,
            cfg.snapshots.then_some(&mut *snaps),
            logs(),
        );
        // A cluster restored from a snapshot that then fails (a restored JVM that dies at
        // once), or one that fails before its first step (a JVM whose agent could not start on
        // a loaded machine), says nothing about the system: the path is re-executed once from
        // a fresh start, and only a second failure ends the exploration. A node that fails
        // later (a reboot that does not come up) is the path's own outcome, not retried.
        let restored = snaps.stats.restored > before.restored;
        let at_start = matches!(&run, Err(ExecError::Target { step: 0, .. }));
        if let (Err(e), true) = (&run, (restored || at_start) && !stop()) {
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
            let dep = task.dep.as_deref_mut().map(|d| d as &mut dyn Dependence);
            run = exec.run_snapshots(target, &task.plan, task.view.as_mut(), dep, None, logs());
        }
        // A finding must replay. A run restored from a snapshot or given states by the cache
        // trusted states it did not see the cluster reach; such a violating run is executed
        // again from a fresh start, seeing every step, and that run is the one kept: a finding
        // that does not recur is dropped (counted and warned about), and the strategy learns
        // from what the cluster did.
        let trusted = restored || task.view.as_ref().is_some_and(|v| v.hits > 0);
        let recheck = match &run {
            Ok(r) if trusted => r
                .violation
                .as_ref()
                .map(|v| (v.property.clone(), Plan::replay(r.event_ids()))),
            _ => None,
        };
        let mut unconfirmed = false;
        if let Some((property, plan)) = recheck.filter(|_| !stop()) {
            let again = exec.run_snapshots(target, &plan, None, None, None, logs());
            if let Ok(a) = &again {
                if a.violation.as_ref().map(|v| &v.property) != Some(&property) {
                    unconfirmed = true;
                    tracing::warn!(
                        "path {}: `{property}` did not recur when the path was executed again from a fresh start (it had trusted a snapshot's or the cache's states); dropped",
                        task.path
                    );
                }
            }
            run = again;
        }
        let run = run
            .map_err(ExploreError::from)
            .and_then(|run| {
                if cfg.check_determinism {
                    check_determinism(&exec, target, &run, task.path)?;
                }
                Ok(run)
            })
            .and_then(|mut run| {
                if let Some(w) = cfg.walks.filter(|_| liveness::needs_judging(&run)) {
                    let w = Walks {
                        seed: w.seed ^ task.path,
                        ..w
                    };
                    judged = Some(liveness::judge(&exec, target, &mut run, &w)?);
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
    };
    let ended = jobs::scoped(targets, work, |pool| -> Result<(), ExploreError> {
        // Handed out, not yet observed, in path order; and runs that finished ahead of their turn.
        let mut outstanding: VecDeque<(u64, Plan)> = VecDeque::new();
        let mut early: HashMap<u64, Done> = HashMap::new();
        let mut handed = 0u64;
        loop {
            if stop() {
                return Err(ExploreError::Interrupted);
            }
            let mut out_of_time = false;
            while outstanding.len() < jobs && cfg.max_paths.is_none_or(|m| handed < m) {
                if cfg.deadline.is_some_and(|d| Instant::now() >= d) {
                    out_of_time = true;
                    break;
                }
                let Some(plan) = strategy.next_plan() else {
                    break;
                };
                handed += 1;
                pool.give(Task {
                    path: handed,
                    plan: plan.clone(),
                    dep: strategy.dependence(),
                    view: use_cache.then(|| cache.view(out.paths)),
                });
                outstanding.push_back((handed, plan));
            }
            let Some((path, plan)) = outstanding.pop_front() else {
                // Nothing under way and nothing handed out: the budget is spent, or else the
                // strategy has nothing left.
                out.exhausted = !out_of_time && cfg.max_paths.is_none_or(|m| out.paths < m);
                return Ok(());
            };
            let done = loop {
                if let Some(d) = early.remove(&path) {
                    break d;
                }
                let d = pool.next();
                early.insert(d.path, d);
            };
            if stop() {
                // Whatever this run saw may be the interruption itself (nodes killed).
                return Err(ExploreError::Interrupted);
            }
            let run = done.run?;
            if let Some((verdict, walks)) = done.judged {
                out.liveness.add(verdict, walks);
            }
            out.snapshots.add(&done.snapshots);
            out.timing.add(&run.timing);
            if let Some(view) = done.view {
                out.cache_hits += view.hits;
                out.cache_misses += view.misses;
                cache.merge(path, view.into_entries());
            }
            out.paths += 1;
            out.unconfirmed += u64::from(done.unconfirmed);
            out.events += run.steps.len() as u64;
            if run.diverged_at.is_some() {
                out.diverged += 1;
            }
            if run.late_reports > 0 {
                out.late_paths += 1;
                out.late_reports += run.late_reports;
            }
            out.unique_states.extend(run.hashes.iter().copied());
            strategy.observe(&plan, &run);
            if out.paths.is_power_of_two() {
                out.record_coverage(strategy.stats().abstract_states);
            }
            on_run(&run);
            on_progress(&Progress {
                paths: out.paths,
                queue: strategy.queue_len(),
                unique_states: out.unique_states.len(),
                elapsed: start.elapsed(),
            });
            if let Some(v) = &run.violation {
                match &cfg.stop_on_property {
                    Some(p) if *p != v.property => out.other_violations += 1,
                    _ if cfg.keep_going => match out.violation {
                        Some(_) => out.other_violations += 1,
                        None => out.violation = Some((out.paths, run)),
                    },
                    _ => {
                        out.violation = Some((out.paths, run));
                        return Ok(());
                    }
                }
            }
        }
    });
    out.elapsed = start.elapsed();
    out.stats = strategy.stats();
    if out.paths > 0 {
        out.record_coverage(out.stats.abstract_states);
    }
    (out, ended.err())
}

/// Re-run `run`'s exact events without the cache and compare every state.
fn check_determinism(
    exec: &Executor,
    target: &mut dyn Target,
    run: &Run,
    path: u64,
) -> Result<(), ExploreError> {
    let plan = Plan::replay(run.event_ids());
    let again = exec.run(target, &plan, None)?;
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

#[cfg(test)]
mod tests {
    use flymc_model::{
        Event, EventId, GlobalState, NodeId, Property, Symmetry, System, Target, TargetError,
        Workload,
    };

    use super::*;
    use crate::testkit::{workload, TinySystem};

    /// Hands out the default-order path `left` times (the loop's bookkeeping is under test,
    /// not a search).
    struct Repeat {
        left: usize,
    }

    impl Strategy for Repeat {
        fn name(&self) -> &'static str {
            "repeat"
        }
        fn next_plan(&mut self) -> Option<Plan> {
            self.left = self.left.checked_sub(1)?;
            Some(Plan::fifo(Vec::new()))
        }
        fn observe(&mut self, _plan: &Plan, _run: &Run) {}
        fn queue_len(&self) -> usize {
            self.left
        }
    }

    /// The tiny system, with a hook that reports `late` events late on every run.
    struct Late(u64);
    struct LateTarget(Box<dyn Target>, u64);

    impl Target for LateTarget {
        fn start(&mut self, w: &Workload) -> Result<(), TargetError> {
            self.0.start(w)
        }
        fn pending(&self) -> Vec<Event> {
            self.0.pending()
        }
        fn enable(&mut self, id: EventId) -> Result<(), TargetError> {
            self.0.enable(id)
        }
        fn settle(&mut self) -> Result<GlobalState, TargetError> {
            self.0.settle()
        }
        fn crash(&mut self, node: NodeId) -> Result<(), TargetError> {
            self.0.crash(node)
        }
        fn reboot(&mut self, node: NodeId) -> Result<(), TargetError> {
            self.0.reboot(node)
        }
        fn stop(&mut self) -> Result<(), TargetError> {
            self.0.stop()
        }
        fn late_reports(&self) -> u64 {
            self.1
        }
    }

    impl System for Late {
        fn about(&self) -> &flymc_model::About {
            static ABOUT: std::sync::LazyLock<flymc_model::About> =
                std::sync::LazyLock::new(|| flymc_model::About::new("late", "test fixture"));
            &ABOUT
        }
        fn target(&self, w: &Workload) -> Result<Box<dyn Target>, TargetError> {
            Ok(Box::new(LateTarget(TinySystem.target(w)?, self.0)))
        }
        fn properties(&self, w: &Workload) -> Vec<Box<dyn Property>> {
            TinySystem.properties(w)
        }
        fn symmetry(&self, w: &Workload) -> Symmetry {
            TinySystem.symmetry(w)
        }
    }

    fn explore_late(late: u64) -> (Outcome, Vec<u64>) {
        let w = workload(2, "[[0, 1], [1, 0]]", "");
        let mut s = Repeat { left: 5 };
        let cfg = ExploreConfig {
            max_paths: Some(3),
            ..Default::default()
        };
        let mut per_run = Vec::new();
        let out = explore_with(&Late(late), &w, &mut s, &cfg, &mut |_| {}, &mut |r| {
            per_run.push(r.late_reports)
        })
        .unwrap();
        (out, per_run)
    }

    #[test]
    fn late_reports_are_kept_with_each_run_and_totalled() {
        let (out, per_run) = explore_late(2);
        assert_eq!(out.paths, 3);
        assert_eq!(per_run, vec![2, 2, 2]);
        assert_eq!((out.late_paths, out.late_reports), (3, 6));
        let (out, per_run) = explore_late(0);
        assert_eq!(per_run, vec![0, 0, 0]);
        assert_eq!((out.late_paths, out.late_reports), (0, 0));
    }

    /// The tiny system, whose cluster cannot start from the third time on.
    struct Breaks;
    struct BreaksTarget(Box<dyn Target>, u32);

    impl Target for BreaksTarget {
        fn start(&mut self, w: &Workload) -> Result<(), TargetError> {
            self.1 += 1;
            if self.1 >= 3 {
                return Err(TargetError::Other("the cluster cannot start".into()));
            }
            self.0.start(w)
        }
        fn pending(&self) -> Vec<Event> {
            self.0.pending()
        }
        fn enable(&mut self, id: EventId) -> Result<(), TargetError> {
            self.0.enable(id)
        }
        fn settle(&mut self) -> Result<GlobalState, TargetError> {
            self.0.settle()
        }
        fn crash(&mut self, node: NodeId) -> Result<(), TargetError> {
            self.0.crash(node)
        }
        fn reboot(&mut self, node: NodeId) -> Result<(), TargetError> {
            self.0.reboot(node)
        }
        fn stop(&mut self) -> Result<(), TargetError> {
            self.0.stop()
        }
    }

    impl System for Breaks {
        fn about(&self) -> &flymc_model::About {
            static ABOUT: std::sync::LazyLock<flymc_model::About> =
                std::sync::LazyLock::new(|| flymc_model::About::new("breaks", "test fixture"));
            &ABOUT
        }
        fn target(&self, w: &Workload) -> Result<Box<dyn Target>, TargetError> {
            Ok(Box::new(BreaksTarget(TinySystem.target(w)?, 0)))
        }
        fn properties(&self, w: &Workload) -> Vec<Box<dyn Property>> {
            TinySystem.properties(w)
        }
        fn symmetry(&self, w: &Workload) -> Symmetry {
            TinySystem.symmetry(w)
        }
    }

    #[test]
    fn a_target_failure_keeps_what_was_explored_before_it() {
        let w = workload(2, "[[0, 1], [1, 0]]", "");
        let mut s = Repeat { left: 5 };
        let mut seen = 0;
        let (out, err) = explore_partial(
            &Breaks,
            &w,
            &mut s,
            &ExploreConfig::default(),
            &mut |_| {},
            &mut |_| seen += 1,
        );
        assert!(
            matches!(err, Some(ExploreError::Exec(_))),
            "{:?}",
            err.map(|e| e.to_string())
        );
        assert_eq!((out.paths, seen, out.exhausted), (2, 2, false));
        assert!(out.events > 0 && !out.unique_states.is_empty());
    }

    /// The tiny system, whose cluster restored from its first snapshot reports n0 far past the
    /// counter's limit: a restore that is not what was dumped.
    struct Lies;
    struct LyingTarget {
        inner: Box<dyn Target>,
        kept: Option<u64>,
        restored: bool,
    }

    impl Target for LyingTarget {
        fn start(&mut self, w: &Workload) -> Result<(), TargetError> {
            self.restored = false;
            self.inner.start(w)
        }
        fn pending(&self) -> Vec<Event> {
            self.inner.pending()
        }
        fn enable(&mut self, id: EventId) -> Result<(), TargetError> {
            self.inner.enable(id)
        }
        fn settle(&mut self) -> Result<GlobalState, TargetError> {
            let mut s = self.inner.settle()?;
            if self.restored {
                s.nodes[0].vars.insert("count".into(), 99.into());
            }
            Ok(s)
        }
        fn crash(&mut self, node: NodeId) -> Result<(), TargetError> {
            self.inner.crash(node)
        }
        fn reboot(&mut self, node: NodeId) -> Result<(), TargetError> {
            self.inner.reboot(node)
        }
        fn stop(&mut self) -> Result<(), TargetError> {
            self.inner.stop()
        }
        fn checkpoint(&mut self, key: u64) -> Result<bool, TargetError> {
            // Only the first (at the start, where nothing needs replaying).
            Ok(*self.kept.get_or_insert(key) == key)
        }
        fn restore(&mut self, w: &Workload, key: u64) -> Result<bool, TargetError> {
            if self.kept != Some(key) {
                return Ok(false);
            }
            self.inner.start(w)?;
            self.inner.settle()?;
            self.restored = true;
            Ok(true)
        }
    }

    impl System for Lies {
        fn about(&self) -> &flymc_model::About {
            static ABOUT: std::sync::LazyLock<flymc_model::About> =
                std::sync::LazyLock::new(|| flymc_model::About::new("lies", "test fixture"));
            &ABOUT
        }
        fn target(&self, w: &Workload) -> Result<Box<dyn Target>, TargetError> {
            Ok(Box::new(LyingTarget {
                inner: TinySystem.target(w)?,
                kept: None,
                restored: false,
            }))
        }
        fn properties(&self, w: &Workload) -> Vec<Box<dyn Property>> {
            TinySystem.properties(w)
        }
        fn symmetry(&self, w: &Workload) -> Symmetry {
            TinySystem.symmetry(w)
        }
    }

    #[test]
    fn a_violation_seen_only_in_a_restored_cluster_is_executed_again_and_dropped() {
        let w = workload(2, "[[0, 1], [1, 0]]\nlimit = 10", "");
        let mut s = Repeat { left: 3 };
        // Without the cache, which would give the repeated path's states without asking.
        let cfg = ExploreConfig {
            snapshots: true,
            snapshots_always: true,
            cache: false,
            ..Default::default()
        };
        let out = explore_with(&Lies, &w, &mut s, &cfg, &mut |_| {}, &mut |r| {
            assert!(r.violation.is_none(), "{:?}", r.violation)
        })
        .unwrap();
        assert!(out.snapshots.restored >= 2, "{:?}", out.snapshots);
        assert_eq!((out.paths, out.unconfirmed), (3, 2));
        assert!(out.violation.is_none());
    }

    #[test]
    fn an_interruption_stops_between_paths_with_what_was_explored() {
        use std::sync::atomic::{AtomicU32, Ordering};
        static ASKED: AtomicU32 = AtomicU32::new(0);
        // Asked twice per path (before handing out, as a run ends): stop at the third path.
        fn third_path() -> bool {
            ASKED.fetch_add(1, Ordering::SeqCst) >= 4
        }
        let w = workload(2, "[[0, 1], [1, 0]]", "");
        let mut s = Repeat { left: 5 };
        let cfg = ExploreConfig {
            interrupted: Some(third_path),
            ..Default::default()
        };
        let (out, err) = explore_partial(&TinySystem, &w, &mut s, &cfg, &mut |_| {}, &mut |_| {});
        assert!(matches!(err, Some(ExploreError::Interrupted)));
        assert_eq!((out.paths, out.exhausted), (2, false));
    }
}
