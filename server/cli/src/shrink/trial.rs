//! Re-executing one candidate and judging it.
//!
//! A candidate is a list of event ids. It runs as a non-strict prefix with the default order
//! after it ([`Tail::Fifo`]): event ids come from causal position, so dropping an event changes
//! which later events exist; the prefix skips ids that never become enabled, and the default
//! order finishes the run from wherever the prefix leaves it (what a deferred event would
//! have done, and what the system does unprompted). The run that comes out, not the
//! candidate, is what is judged and kept: it is a real run, and replays as one.

use std::collections::HashSet;

use anyhow::{Context, Result};
use flymc_core::executor::{Executor, RunOptions};
use flymc_core::plan::{Plan, Tail};
use flymc_core::run::Run;
use flymc_model::{EventId, System, Workload};

use super::shape::Shape;

/// Why no more candidates run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Halt {
    /// `--max-runs` re-executions were made.
    Budget,
    /// Ctrl-C (or another signal flymc stops on).
    Interrupted,
}

/// The best run so far and its shape.
pub struct Best {
    pub run: Run,
    pub shape: Shape,
}

impl Best {
    pub fn new(run: Run) -> Best {
        let shape = Shape::of(&run);
        Best { run, shape }
    }
}

/// Runs candidates of one path on its target, up to a budget.
pub struct Trials<'a> {
    system: &'a dyn System,
    workload: &'a Workload,
    /// The property the original path violates; a candidate must violate the same.
    property: String,
    max_runs: usize,
    pub runs: usize,
    /// Candidates already run. The best run only gets simpler, so one that was not simpler
    /// than it then is not now either: running it again would learn nothing.
    tried: HashSet<Vec<EventId>>,
    pub halt: Option<Halt>,
}

impl<'a> Trials<'a> {
    pub fn new(
        system: &'a dyn System,
        workload: &'a Workload,
        property: &str,
        max_runs: usize,
    ) -> Trials<'a> {
        Trials {
            system,
            workload,
            property: property.into(),
            max_runs,
            runs: 0,
            tried: HashSet::new(),
            halt: None,
        }
    }

    /// Execute `plan` once; `None` when the budget is spent or flymc is interrupted.
    pub fn execute(&mut self, plan: &Plan) -> Result<Option<Run>> {
        if flymc_real::cluster::interrupted() {
            self.halt = Some(Halt::Interrupted);
        } else if self.runs >= self.max_runs {
            self.halt.get_or_insert(Halt::Budget);
        }
        if self.halt.is_some() {
            return Ok(None);
        }
        self.runs += 1;
        let mut target = self
            .system
            .target(self.workload)
            .with_context(|| format!("cannot start {}", self.system.name()))?;
        let run = Executor::new(self.system, self.workload).run(
            target.as_mut(),
            plan,
            RunOptions::default(),
        )?;
        Ok(Some(run))
    }

    /// Does `run` violate the path's property?
    pub fn violates(&self, run: &Run) -> bool {
        run.violation
            .as_ref()
            .is_some_and(|v| v.property == self.property)
    }

    /// Run the candidate `ids` and hand back its run if that violates the same property and is
    /// simpler than `best`.
    pub fn attempt(&mut self, ids: &[EventId], best: &Best) -> Result<Option<Best>> {
        if !self.tried.insert(ids.to_vec()) {
            return Ok(None);
        }
        let plan = Plan {
            prefix: ids.to_vec(),
            tail: Tail::Fifo,
            strict: false,
            sleep: Vec::new(),
            sleep_at: 0,
        };
        let run = match self.execute(&plan) {
            Ok(Some(run)) => run,
            Ok(None) => return Ok(None),
            // Ctrl-C killed the nodes under the run: stop, keeping the best so far.
            Err(_) if flymc_real::cluster::interrupted() => {
                self.halt = Some(Halt::Interrupted);
                return Ok(None);
            }
            // A candidate the target could not run (a real cluster's hiccup) is not a
            // reproduction; the next one gets a fresh cluster.
            Err(e) => {
                eprintln!(
                    "shrink: run {} failed, taken as not violating: {e:#}",
                    self.runs
                );
                return Ok(None);
            }
        };
        tracing::debug!(
            "candidate of {} ids: {}, violates {}: {}",
            ids.len(),
            Shape::of(&run),
            self.property,
            self.violates(&run)
        );
        if !self.violates(&run) {
            return Ok(None);
        }
        let found = Best::new(run);
        Ok(found.shape.simpler_than(&best.shape).then_some(found))
    }

    pub fn halted(&self) -> bool {
        self.halt.is_some()
    }
}
