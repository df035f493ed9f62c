//! Strategies turn explored paths into new paths to explore, one file each.
//!
//! All strategies share the executor, so every comparison is like for like. A strategy hands out
//! [`Plan`]s and is told what each run did; it never touches the target.

mod bdpor;
mod brdpor;
mod dfs;
pub mod dpor;
mod faults;
pub mod flymc;
mod mdpor;
mod random;
mod rdpor;
mod samc;
pub mod sleep;

use flymc_model::sets::SetsFile;
use flymc_model::{Symmetry, Workload};
use serde::Serialize;

use crate::dependence::Dependence;
use crate::executor::{Plan, Run};

/// What a strategy can consult when it is built.
pub struct StrategyContext<'a> {
    pub workload: &'a Workload,
    pub symmetry: Symmetry,
    pub seed: u64,
    /// Depth bound for the bounded strategies (`bdpor`, `brdpor`).
    pub bound: usize,
    /// `dfs` over the tree of interleavings (the paper's naive baseline) instead of over states;
    /// forced on for systems whose reported node states are partial (`states_are_complete`).
    pub stateless_dfs: bool,
    /// The system's sets file, for `samc` and `flymc`.
    pub sets: Option<SetsFile>,
    /// Which FlyMC algorithms are on.
    pub flymc: FlymcOptions,
    /// The system's [`flymc_model::System::fault_vars`], for `faults`.
    pub fault_vars: Option<&'static [&'static str]>,
}

pub use flymc::FlymcOptions;

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("unknown strategy `{0}`; valid strategies: {valid}", valid = NAMES.join(", "))]
    Unknown(String),
    #[error("strategy `{0}` needs a sets file, and this system ships none; pass --sets FILE (see `flymc analyze`)")]
    NeedsSets(String),
}

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

/// The strategies, by command-line name.
pub const NAMES: &[&str] = &[
    "dfs", "random", "mdpor", "bdpor", "rdpor", "brdpor", "samc", "flymc", "faults",
];

/// The strategies `flymc bench` compares: the paper's baselines and flymc. (`faults` explores
/// fault placements only, so its path counts and exhaustion answer a different question.)
pub const COMPARED: &[&str] = &[
    "dfs", "random", "mdpor", "bdpor", "rdpor", "brdpor", "samc", "flymc",
];

/// Build a strategy by name.
pub fn build(name: &str, ctx: &StrategyContext) -> Result<Box<dyn Strategy>, BuildError> {
    let sets = || {
        ctx.sets
            .clone()
            .ok_or_else(|| BuildError::NeedsSets(name.into()))
    };
    Ok(match name {
        "dfs" => Box::new(dfs::Dfs::new(ctx.stateless_dfs)),
        "random" => Box::new(random::RandomWalk::new(ctx.seed)),
        "mdpor" => Box::new(mdpor::new(ctx)),
        "bdpor" => Box::new(bdpor::new(ctx)),
        "rdpor" => Box::new(rdpor::new(ctx)),
        "brdpor" => Box::new(brdpor::new(ctx)),
        "samc" => Box::new(samc::new(sets()?, ctx.symmetry.clone(), ctx.seed)),
        "flymc" => Box::new(flymc::Flymc::new(sets()?, ctx.symmetry.clone(), ctx.flymc)),
        "faults" => Box::new(faults::Faults::new(ctx.fault_vars)),
        _ => return Err(BuildError::Unknown(name.into())),
    })
}

/// Are all strategies of this name random (to be averaged over seeds in benchmarks)?
pub fn is_randomized(name: &str) -> bool {
    matches!(name, "random" | "rdpor" | "brdpor")
}

#[cfg(test)]
mod tests;
