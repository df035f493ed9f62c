//! The exploration loop: ask the strategy for a path, run it, record what was seen, repeat;
//! with `--jobs N`, N paths at a time ([`crate::jobs`]), seen in path order.
//!
//! [`Exploration`] is the one way in: a builder over [`ExploreConfig`]. Its parts: what a job
//! does with a path (`job`: run, re-run from a fresh start where the run cannot be trusted,
//! judge) and the books of the thread that asks the strategy (`driver`: hand out, observe in
//! path order, count).

mod driver;
mod job;

use driver::Driver;
use job::PathWork;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use flymc_model::{System, Workload};
use serde::Serialize;

use crate::cache::StateEventCache;
use crate::executor::{ExecError, Executor};
use crate::jobs;
use crate::liveness::{LivenessStats, Walks};
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

impl ExploreConfig {
    /// Has the user asked to stop ([`ExploreConfig::interrupted`])?
    fn stop_asked(&self) -> bool {
        self.interrupted.is_some_and(|f| f())
    }
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
    /// Nothing explored yet, with the liveness settings `cfg` asks for.
    fn empty(cfg: &ExploreConfig, workload: &Workload) -> Outcome {
        Outcome {
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
        }
    }

    /// One more path observed: its events, states and how it went.
    fn count(&mut self, run: &Run, unconfirmed: bool) {
        self.paths += 1;
        self.unconfirmed += u64::from(unconfirmed);
        self.events += run.steps.len() as u64;
        if run.diverged_at.is_some() {
            self.diverged += 1;
        }
        if run.late_reports > 0 {
            self.late_paths += 1;
            self.late_reports += run.late_reports;
        }
        self.unique_states.extend(run.hashes.iter().copied());
    }

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

/// One exploration, set up by its builder methods and started by [`Exploration::run`]: the
/// one way every command, benchmark and test explores.
///
/// ```text
/// let outcome = Exploration::new(system, &workload, strategy.as_mut())
///     .max_paths(Some(300))
///     .jobs(4)
///     .on_run(|run| seen.push(run.clone()))
///     .run()?;
/// ```
pub struct Exploration<'a> {
    system: &'a dyn System,
    workload: &'a Workload,
    strategy: &'a mut dyn Strategy,
    cfg: ExploreConfig,
    on_progress: Box<dyn FnMut(&Progress) + 'a>,
    on_run: Box<dyn FnMut(&Run) + 'a>,
}

impl<'a> Exploration<'a> {
    /// Explore `workload` on `system` with the paths `strategy` hands out, with
    /// [`ExploreConfig::default`]'s settings until told otherwise.
    pub fn new(
        system: &'a dyn System,
        workload: &'a Workload,
        strategy: &'a mut dyn Strategy,
    ) -> Self {
        Exploration {
            system,
            workload,
            strategy,
            cfg: ExploreConfig::default(),
            on_progress: Box::new(|_| {}),
            on_run: Box::new(|_| {}),
        }
    }

    /// The settings so far (for a header that describes the exploration).
    pub fn config(&self) -> &ExploreConfig {
        &self.cfg
    }

    /// [`ExploreConfig::max_paths`].
    pub fn max_paths(mut self, max: Option<u64>) -> Self {
        self.cfg.max_paths = max;
        self
    }

    /// [`ExploreConfig::check_determinism`].
    pub fn check_determinism(mut self, on: bool) -> Self {
        self.cfg.check_determinism = on;
        self
    }

    /// [`ExploreConfig::cache`].
    pub fn cache(mut self, on: bool) -> Self {
        self.cfg.cache = on;
        self
    }

    /// [`ExploreConfig::stop_on_property`].
    pub fn stop_on_property(mut self, property: Option<String>) -> Self {
        self.cfg.stop_on_property = property;
        self
    }

    /// [`ExploreConfig::jobs`].
    pub fn jobs(mut self, jobs: usize) -> Self {
        self.cfg.jobs = jobs;
        self
    }

    /// [`ExploreConfig::snapshots`].
    pub fn snapshots(mut self, on: bool) -> Self {
        self.cfg.snapshots = on;
        self
    }

    /// [`ExploreConfig::snapshots_always`].
    pub fn snapshots_always(mut self, on: bool) -> Self {
        self.cfg.snapshots_always = on;
        self
    }

    /// [`ExploreConfig::logs`].
    pub fn keep_logs(mut self, logs: KeepLogs) -> Self {
        self.cfg.logs = Some(logs);
        self
    }

    /// [`ExploreConfig::keep_going`].
    pub fn keep_going(mut self, on: bool) -> Self {
        self.cfg.keep_going = on;
        self
    }

    /// [`ExploreConfig::interrupted`].
    pub fn interrupted(mut self, asked: fn() -> bool) -> Self {
        self.cfg.interrupted = Some(asked);
        self
    }

    /// [`ExploreConfig::deadline`].
    pub fn deadline(mut self, deadline: Option<Instant>) -> Self {
        self.cfg.deadline = deadline;
        self
    }

    /// [`ExploreConfig::walks`].
    pub fn walks(mut self, walks: Option<Walks>) -> Self {
        self.cfg.walks = walks;
        self
    }

    /// [`ExploreConfig::crash_points`].
    pub fn crash_points(mut self, points: crate::CrashPoints) -> Self {
        self.cfg.crash_points = points;
        self
    }

    /// Called after every observed run, with the totals so far (progress displays).
    pub fn on_progress(mut self, f: impl FnMut(&Progress) + 'a) -> Self {
        self.on_progress = Box::new(f);
        self
    }

    /// Handed every observed run, in path order (saving paths, coverage studies, tests).
    pub fn on_run(mut self, f: impl FnMut(&Run) + 'a) -> Self {
        self.on_run = Box::new(f);
        self
    }

    /// Explore; an error loses what was explored before it ([`Exploration::run_partial`]
    /// keeps it).
    pub fn run(self) -> Result<Outcome, ExploreError> {
        match self.run_partial() {
            (out, None) => Ok(out),
            (_, Some(e)) => Err(e),
        }
    }

    /// Explore, returning what was explored also when the exploration ended in an error (a
    /// target failure, an interruption): the outcome counts the paths observed before it
    /// (never `exhausted`), with the error beside it.
    ///
    /// With `jobs` above 1, up to that many paths run at once, each on a target of its own
    /// (`system.target` is called once per job). Plans are handed out and runs observed in
    /// one fixed order ([`Strategy`]); a run is counted, checked and shown when it is
    /// observed, so `max_paths` counts exactly and a violation is the lowest-numbered
    /// violating path. Runs still under way when the loop stops are finished and dropped.
    pub fn run_partial(self) -> (Outcome, Option<ExploreError>) {
        let Exploration {
            system,
            workload,
            strategy,
            cfg,
            mut on_progress,
            mut on_run,
        } = self;
        let start = Instant::now();
        let mut out = Outcome::empty(&cfg, workload);
        let targets = match (0..cfg.jobs.max(1))
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
        let work = PathWork {
            exec: Executor::new(system, workload).crash_points(cfg.crash_points),
            cfg: &cfg,
        };
        let cache = StateEventCache::new();
        let mut driver = Driver {
            strategy,
            cfg: &cfg,
            cache: &cache,
            use_cache: cfg.cache && !system.has(flymc_model::Feature::SummaryStates),
            start,
            out,
            outstanding: Default::default(),
            early: Default::default(),
            handed: 0,
            on_progress: &mut *on_progress,
            on_run: &mut *on_run,
        };
        let ended = jobs::scoped(targets, &|job, task| work.run(job, task), |pool| {
            driver.drive(pool)
        });
        driver.finish(ended.err())
    }
}

#[cfg(test)]
mod tests {
    use flymc_model::{
        Event, EventId, GlobalState, NodeId, Property, Symmetry, System, Target, TargetError,
        Workload,
    };

    use super::*;
    use crate::plan::Plan;
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
        let mut per_run = Vec::new();
        let out = Exploration::new(&Late(late), &w, &mut s)
            .max_paths(Some(3))
            .on_run(|r| per_run.push(r.late_reports))
            .run()
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
        let (out, err) = Exploration::new(&Breaks, &w, &mut s)
            .on_run(|_| seen += 1)
            .run_partial();
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
        let out = Exploration::new(&Lies, &w, &mut s)
            .snapshots(true)
            .snapshots_always(true)
            .cache(false)
            .on_run(|r| assert!(r.violation.is_none(), "{:?}", r.violation))
            .run()
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
        let (out, err) = Exploration::new(&TinySystem, &w, &mut s)
            .interrupted(third_path)
            .run_partial();
        assert!(matches!(err, Some(ExploreError::Interrupted)));
        assert_eq!((out.paths, out.exhausted), (2, false));
    }
}
