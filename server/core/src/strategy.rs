//! What a search strategy is to the explore loop: it hands out [`Plan`]s and is told what each
//! run did; it never touches the target. The strategies themselves live in `flymc-strategies`.

use serde::Serialize;

use crate::dependence::Dependence;
use crate::plan::Plan;
use crate::run::Run;

/// Counters a strategy reports in the run summary and in benchmarks.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StrategyStats {
    /// To-explore paths created.
    pub generated: u64,
    /// To-explore paths dropped as redundant, by reason.
    pub pruned: Vec<(String, u64)>,
    /// To-explore paths moved to the low-priority queue.
    pub deprioritized: u64,
}

pub trait Strategy {
    /// The name used on the command line.
    fn name(&self) -> &'static str;
    /// The next path to run, or `None` when the search space is exhausted.
    fn next_plan(&mut self) -> Option<Plan>;
    /// Learn from a run of the plan last handed out.
    fn observe(&mut self, run: &Run);
    /// Paths waiting to be explored.
    fn queue_len(&self) -> usize;
    /// The judgement the executor honours the plan's sleep set with, if the strategy uses one.
    fn dependence(&mut self) -> Option<&mut dyn Dependence> {
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
