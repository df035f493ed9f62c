//! The loop's books: hand plans to idle jobs, observe their runs in path order, and add each
//! to the [`Outcome`].

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use super::job::{Done, Task};
use super::{ExploreConfig, ExploreError, Outcome, Progress};
use crate::cache::StateEventCache;
use crate::jobs::Jobs;
use crate::plan::Plan;
use crate::run::Run;
use crate::strategy::Strategy;

/// The exploration under way, seen from the thread that asks the strategy.
pub(super) struct Driver<'x, 'c> {
    pub strategy: &'x mut dyn Strategy,
    pub cfg: &'x ExploreConfig,
    pub cache: &'c StateEventCache,
    pub use_cache: bool,
    pub start: Instant,
    pub out: Outcome,
    /// Handed out, not yet observed, in path order.
    pub outstanding: VecDeque<(u64, Plan)>,
    /// Runs that finished ahead of their turn.
    pub early: HashMap<u64, Done<'c>>,
    /// Paths handed out so far.
    pub handed: u64,
    pub on_progress: &'x mut dyn FnMut(&Progress),
    pub on_run: &'x mut dyn FnMut(&Run),
}

impl<'c> Driver<'_, 'c> {
    /// Hand out and observe paths until the strategy is done, the budget spent, a violation
    /// stops the exploration or an error does.
    pub fn drive(&mut self, pool: &mut Jobs<Task<'c>, Done<'c>>) -> Result<(), ExploreError> {
        loop {
            if self.cfg.stop_asked() {
                return Err(ExploreError::Interrupted);
            }
            let out_of_time = self.hand_out(pool);
            let Some((path, plan)) = self.outstanding.pop_front() else {
                // Nothing under way and nothing handed out: the budget is spent, or else the
                // strategy has nothing left.
                self.out.exhausted =
                    !out_of_time && self.cfg.max_paths.is_none_or(|m| self.out.paths < m);
                return Ok(());
            };
            let done = self.receive(pool, path);
            if self.cfg.stop_asked() {
                // Whatever this run saw may be the interruption itself (nodes killed).
                return Err(ExploreError::Interrupted);
            }
            if self.observe(path, &plan, done)? {
                return Ok(());
            }
        }
    }

    /// The outcome, with the strategy's last statistics and coverage.
    pub fn finish(self, error: Option<ExploreError>) -> (Outcome, Option<ExploreError>) {
        let mut out = self.out;
        out.elapsed = self.start.elapsed();
        out.stats = self.strategy.stats();
        if out.paths > 0 {
            out.record_coverage(out.stats.abstract_states);
        }
        (out, error)
    }

    /// Keep every job busy while the budget allows; whether the deadline stopped it.
    fn hand_out(&mut self, pool: &mut Jobs<Task<'c>, Done<'c>>) -> bool {
        let jobs = self.cfg.jobs.max(1);
        while self.outstanding.len() < jobs && self.cfg.max_paths.is_none_or(|m| self.handed < m) {
            if self.cfg.deadline.is_some_and(|d| Instant::now() >= d) {
                return true;
            }
            let Some(plan) = self.strategy.next_plan() else {
                break;
            };
            self.handed += 1;
            pool.give(Task {
                path: self.handed,
                plan: plan.clone(),
                dep: self.strategy.dependence(),
                view: self.use_cache.then(|| self.cache.view(self.out.paths)),
            });
            self.outstanding.push_back((self.handed, plan));
        }
        false
    }

    /// Path `path`'s run, keeping those that finish before it for their turn.
    fn receive(&mut self, pool: &mut Jobs<Task<'c>, Done<'c>>, path: u64) -> Done<'c> {
        loop {
            if let Some(d) = self.early.remove(&path) {
                return d;
            }
            let d = pool.next();
            self.early.insert(d.path, d);
        }
    }

    /// Count path `path`'s run, tell the strategy and the callers; whether it ends the
    /// exploration (a violation).
    fn observe(&mut self, path: u64, plan: &Plan, done: Done<'c>) -> Result<bool, ExploreError> {
        let Done {
            run,
            view,
            snapshots,
            judged,
            unconfirmed,
            ..
        } = done;
        let run = run?;
        let out = &mut self.out;
        if let Some((verdict, walks)) = judged {
            out.liveness.add(verdict, walks);
        }
        out.snapshots.add(&snapshots);
        out.timing.add(&run.timing);
        if let Some(view) = view {
            out.cache_hits += view.hits;
            out.cache_misses += view.misses;
            self.cache.merge(path, view.into_entries());
        }
        out.count(&run, unconfirmed);
        self.strategy.observe(plan, &run);
        if self.out.paths.is_power_of_two() {
            self.out
                .record_coverage(self.strategy.stats().abstract_states);
        }
        (self.on_run)(&run);
        (self.on_progress)(&Progress {
            paths: self.out.paths,
            queue: self.strategy.queue_len(),
            unique_states: self.out.unique_states.len(),
            elapsed: self.start.elapsed(),
        });
        Ok(self.violation(run))
    }

    /// Keep `run`'s violation as the exploration's, or count it as another; whether it ends
    /// the exploration.
    fn violation(&mut self, run: Run) -> bool {
        let Some(v) = &run.violation else {
            return false;
        };
        let out = &mut self.out;
        match &self.cfg.stop_on_property {
            Some(p) if *p != v.property => out.other_violations += 1,
            _ if self.cfg.keep_going => match out.violation {
                Some(_) => out.other_violations += 1,
                None => out.violation = Some((out.paths, run)),
            },
            _ => {
                out.violation = Some((out.paths, run));
                return true;
            }
        }
        false
    }
}
