//! What a search strategy is to the explore loop: it hands out [`Plan`]s and is told what each
//! run did; it never touches the target. The strategies themselves live in `flymc-strategies`.
//!
//! With `--jobs N` the loop keeps up to N plans outstanding (handed out, not yet observed) and
//! runs them side by side, but it talks to the strategy from one thread, in a fixed order:
//! every run is observed exactly once, in the order its plan was handed out, and after each
//! observation the loop asks for plans until N are outstanding again or the strategy has none.
//! That order depends on N alone, never on which run finished first, so a run with a given N
//! is deterministic.

use serde::Serialize;

use crate::dependence::Dependence;
use crate::plan::Plan;
use crate::run::Run;

/// Counters a strategy reports in the run summary and in benchmarks: those every search has,
/// and [`Note`]s for what only one strategy keeps.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StrategyStats {
    /// To-explore paths created.
    pub generated: u64,
    /// To-explore paths dropped as redundant, by reason.
    pub pruned: Vec<(String, u64)>,
    /// To-explore paths moved to the low-priority queue.
    pub deprioritized: u64,
    /// States the strategy tells apart in its own coarse abstraction (`novelty`'s and
    /// `faults`' abstract states), 0 for strategies that keep none: the coverage curve.
    pub abstract_states: u64,
    /// What only this strategy counts, as it wants it shown.
    pub notes: Vec<Note>,
}

/// A statistic only one strategy keeps (a `faults` run's fault states, a `pct` run's
/// guarantee, a portfolio's shares): the strategy writes how the run summary shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Note {
    /// Its key in the JSON summary.
    pub key: String,
    /// Its value there.
    pub value: serde_json::Value,
    /// What the text summary says.
    pub text: String,
    /// A line of its own, rather than a clause of the summary line (`, 12 fault states`).
    pub own_line: bool,
}

impl Note {
    /// `, TEXT` in the summary line.
    pub fn clause(key: &str, value: impl Into<serde_json::Value>, text: String) -> Note {
        Note {
            key: key.into(),
            value: value.into(),
            text,
            own_line: false,
        }
    }

    /// A line of its own.
    pub fn line(key: &str, value: impl Into<serde_json::Value>, text: String) -> Note {
        Note {
            own_line: true,
            ..Note::clause(key, value, text)
        }
    }
}

pub trait Strategy {
    /// The name used on the command line.
    fn name(&self) -> &'static str;
    /// The next path to run, or `None` when there is none to run now. With plans outstanding
    /// the loop asks again after observing the next run (which may queue more); with none
    /// outstanding, `None` means the search space is exhausted.
    fn next_plan(&mut self) -> Option<Plan>;
    /// Learn from `run`, the run of `plan`. Runs are observed in the order their plans were
    /// handed out, each once; other plans may have been handed out since `plan` was.
    fn observe(&mut self, plan: &Plan, run: &Run);
    /// Learn from a run another strategy planned and observed (a portfolio's other members'
    /// runs). Only strategies whose plans do not depend on which runs were their own take it
    /// (novelty's corpus); the others' queues hold their own runs' branches, so they ignore it.
    fn observe_other(&mut self, _plan: &Plan, _run: &Run) {}
    /// Paths waiting to be explored.
    fn queue_len(&self) -> usize;
    /// The judgement the executor honours plans' sleep sets with, if the strategy uses one:
    /// one for each run, which may be under way on another thread while the strategy hands
    /// out further plans.
    fn dependence(&self) -> Option<Box<dyn Dependence + Send>> {
        None
    }
    fn stats(&self) -> StrategyStats {
        StrategyStats::default()
    }
    /// What it means that this strategy ran out of paths, for the run summary.
    fn exhaustion(&self) -> &'static str {
        "the search space is exhausted"
    }
}
