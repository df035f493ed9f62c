//! Strategies turn explored paths into new paths to explore, one file each.
//!
//! All strategies share the executor, so every comparison is like for like. A strategy hands out
//! [`Plan`]s and is told what each run did; it never touches the target.

mod bdpor;
mod brdpor;
mod dfs;
mod disk;
pub mod dpor;
mod fair;
mod faults;
pub mod flymc;
mod mdpor;
mod novelty;
mod pct;
mod portfolio;
mod random;
mod rdpor;
mod samc;
pub mod shard;
pub mod sleep;

use flymc_model::sets::SetsFile;
use flymc_model::{Symmetry, Workload};

pub use flymc_core::strategy::{Strategy, StrategyStats};

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
    /// `faults` and `flymc` tell states apart by what each node's crash-point writes put on
    /// disk, not only by the variables nodes report (`--no-disk-state` turns it off).
    pub disk_state: bool,
    /// The bug depth `pct` builds its runs for (`--depth`): d - 1 priority change points.
    pub pct_depth: u32,
}

pub use flymc::FlymcOptions;
pub use novelty::Novelty;

impl<'a> StrategyContext<'a> {
    /// What `system` says for `workload` (its symmetry, fault variables), every FlyMC
    /// algorithm and disk states on, seed 0, bound 25, no sets file: callers change the fields
    /// their run differs in.
    pub fn for_system(system: &dyn flymc_model::System, workload: &'a Workload) -> Self {
        StrategyContext {
            workload,
            symmetry: system.symmetry(workload),
            seed: 0,
            bound: 25,
            stateless_dfs: !system.states_are_complete(),
            sets: None,
            flymc: FlymcOptions::default(),
            fault_vars: system.fault_vars(),
            disk_state: true,
            pct_depth: 3,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("unknown strategy `{0}`; valid strategies: {valid}", valid = NAMES.join(", "))]
    Unknown(String),
    #[error("strategy `{0}` needs a sets file, and this system ships none; pass --sets FILE (see `flymc analyze`)")]
    NeedsSets(String),
}

/// The strategies, by command-line name.
pub const NAMES: &[&str] = &[
    "dfs",
    "random",
    "mdpor",
    "bdpor",
    "rdpor",
    "brdpor",
    "samc",
    "flymc",
    "faults",
    "pct",
    "novelty",
    "portfolio",
    "fair",
];

/// The strategies `flymc bench` compares: the paper's baselines, flymc, pct, novelty and the
/// portfolio of the last three. (`faults` explores fault placements only, so its path counts
/// and exhaustion answer a different question.)
pub const COMPARED: &[&str] = &[
    "dfs",
    "random",
    "mdpor",
    "bdpor",
    "rdpor",
    "brdpor",
    "samc",
    "flymc",
    "pct",
    "novelty",
    "portfolio",
];

/// Strategies that never run out of paths (each path a fresh draw): no exhaustion to measure.
pub fn never_exhausts(name: &str) -> bool {
    matches!(name, "random" | "pct" | "novelty" | "fair")
}

/// Build a strategy by name.
pub fn build(name: &str, ctx: &StrategyContext) -> Result<Box<dyn Strategy>, BuildError> {
    let sets = || {
        ctx.sets
            .clone()
            .ok_or_else(|| BuildError::NeedsSets(name.into()))
    };
    // Faults go where the workload's condition holds: the nodes it names are not
    // interchangeable with the others.
    let fixed = ctx
        .workload
        .fault_when
        .as_ref()
        .map(|c| c.nodes())
        .unwrap_or_default();
    let symmetry = || ctx.symmetry.fixing(&fixed);
    Ok(match name {
        "dfs" => Box::new(dfs::Dfs::new(ctx.stateless_dfs)),
        "random" => Box::new(random::RandomWalk::new(ctx.seed)),
        "fair" => Box::new(fair::Fair::new(ctx)),
        "pct" => Box::new(pct::Pct::new(ctx)),
        "novelty" => Box::new(novelty::NoveltySearch::new(ctx)),
        // flymc where the system ships a sets file (dfs where not), taking turns with pct and
        // novelty-guided search.
        "portfolio" => Box::new(portfolio::Portfolio::new(vec![
            build(if ctx.sets.is_some() { "flymc" } else { "dfs" }, ctx)?,
            build("pct", ctx)?,
            build("novelty", ctx)?,
        ])),
        "mdpor" => Box::new(mdpor::new(ctx)),
        "bdpor" => Box::new(bdpor::new(ctx)),
        "rdpor" => Box::new(rdpor::new(ctx)),
        "brdpor" => Box::new(brdpor::new(ctx)),
        "samc" => Box::new(samc::new(sets()?, symmetry(), ctx.seed)),
        "flymc" => {
            Box::new(flymc::Flymc::new(sets()?, symmetry(), ctx.flymc).disk_state(ctx.disk_state))
        }
        "faults" => Box::new(
            faults::Faults::new(ctx.fault_vars)
                .disk_state(ctx.disk_state)
                .novelty(Novelty::new(ctx.fault_vars, symmetry()).marking_initial()),
        ),
        _ => return Err(BuildError::Unknown(name.into())),
    })
}

/// Are all strategies of this name random (to be averaged over seeds in benchmarks)?
pub fn is_randomized(name: &str) -> bool {
    matches!(
        name,
        "random" | "rdpor" | "brdpor" | "pct" | "novelty" | "portfolio" | "fair"
    )
}

#[cfg(test)]
mod tests;
