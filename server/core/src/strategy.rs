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

/// Counters a strategy reports in the run summary and in benchmarks.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StrategyStats {
    /// To-explore paths created.
    pub generated: u64,
    /// To-explore paths dropped as redundant, by reason.
    pub pruned: Vec<(String, u64)>,
    /// To-explore paths moved to the low-priority queue.
    pub deprioritized: u64,
    /// Distinct fault states reached (`faults`), 0 for strategies that keep none.
    pub fault_states: u64,
    /// The probabilistic guarantee of a `pct` run, from its measured chains and events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pct: Option<PctBound>,
    /// Coarse abstract states reached (`novelty`: ranks of what survives a crash, roles, up or
    /// down, under symmetry), 0 for strategies that keep none.
    pub abstract_states: u64,
    /// A portfolio's members and the paths each ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shares: Vec<(String, u64)>,
}

/// PCTCP's lower bound on hitting a bug of depth `depth` (Ozkan et al., OOPSLA'18): at least
/// `per_run = 1 / (chains * events^(depth-1))` in each run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PctBound {
    pub depth: u32,
    /// The most causal chains a run had.
    pub chains: usize,
    /// The most events a run had (k).
    pub events: usize,
    pub per_run: f64,
}

impl PctBound {
    /// The chance that `runs` independent runs hit such a bug at least once, at least.
    pub fn over(&self, runs: u64) -> f64 {
        1.0 - (1.0 - self.per_run).powf(runs as f64)
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
