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
    /// forced on for systems whose reported node states are summaries
    /// ([`flymc_model::Feature::SummaryStates`]).
    pub stateless_dfs: bool,
    /// The system's sets file, for `samc` and `flymc`.
    pub sets: Option<SetsFile>,
    /// Which FlyMC algorithms are on.
    pub flymc: FlymcOptions,
    /// The system's fault variables ([`flymc_model::About::fault_vars`]), for `faults`.
    pub fault_vars: Option<Vec<String>>,
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
            stateless_dfs: system.has(flymc_model::Feature::SummaryStates),
            sets: None,
            flymc: FlymcOptions::default(),
            fault_vars: system.about().fault_vars.clone(),
            disk_state: true,
            pct_depth: 3,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("unknown strategy `{0}`; valid strategies: {valid}", valid = StrategyKind::names().join(", "))]
    Unknown(String),
    #[error("strategy `{0}` needs a sets file, and this system ships none; pass --sets FILE (see `flymc analyze`)")]
    NeedsSets(StrategyKind),
}

/// Every strategy, by the name the command line, path files and hunt files use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StrategyKind {
    Dfs,
    Random,
    Mdpor,
    Bdpor,
    Rdpor,
    Brdpor,
    Samc,
    Flymc,
    Faults,
    Pct,
    Novelty,
    Portfolio,
    Fair,
}

/// What flymc needs to know of a strategy besides how to build it: the one table of them.
struct Traits {
    kind: StrategyKind,
    name: &'static str,
    /// Each run a fresh draw from a seed: benchmarks average such strategies over seeds.
    randomized: bool,
    /// It can run out of paths, so exhaustion is worth measuring.
    exhausts: bool,
    /// `flymc bench` compares it: the paper's baselines, flymc, pct, novelty and the portfolio
    /// of the last three (`faults` explores fault placements only, so its path counts and
    /// exhaustion answer a different question; `fair` is for liveness).
    compared: bool,
    /// It reads the system's sets file: required by samc and flymc, used by the portfolio
    /// (for its flymc member) when there is one.
    sets: Sets,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sets {
    Unused,
    Optional,
    Required,
}

const fn t(
    kind: StrategyKind,
    name: &'static str,
    randomized: bool,
    exhausts: bool,
    compared: bool,
    sets: Sets,
) -> Traits {
    Traits {
        kind,
        name,
        randomized,
        exhausts,
        compared,
        sets,
    }
}

use Sets::{Optional, Required, Unused};
use StrategyKind as K;

#[rustfmt::skip]
const TABLE: [Traits; 13] = [
    //        kind          name         randomized exhausts compared sets
    t(K::Dfs,       "dfs",       false, true,  true,  Unused),
    t(K::Random,    "random",    true,  false, true,  Unused),
    t(K::Mdpor,     "mdpor",     false, true,  true,  Unused),
    t(K::Bdpor,     "bdpor",     false, true,  true,  Unused),
    t(K::Rdpor,     "rdpor",     true,  true,  true,  Unused),
    t(K::Brdpor,    "brdpor",    true,  true,  true,  Unused),
    t(K::Samc,      "samc",      false, true,  true,  Required),
    t(K::Flymc,     "flymc",     false, true,  true,  Required),
    t(K::Faults,    "faults",    false, true,  false, Unused),
    t(K::Pct,       "pct",       true,  false, true,  Unused),
    t(K::Novelty,   "novelty",   true,  false, true,  Unused),
    t(K::Portfolio, "portfolio", true,  true,  true,  Optional),
    t(K::Fair,      "fair",      true,  false, false, Unused),
];

/// Every kind, in the table's order: the table's first column.
const KINDS: [StrategyKind; TABLE.len()] = {
    let mut kinds = [K::Dfs; TABLE.len()];
    let mut i = 0;
    while i < TABLE.len() {
        kinds[i] = TABLE[i].kind;
        i += 1;
    }
    kinds
};

impl StrategyKind {
    /// Every strategy, in the table's order (the order `--help` and the bench list them).
    pub fn all() -> impl Iterator<Item = StrategyKind> {
        KINDS.into_iter()
    }

    /// The strategies' names, in the table's order.
    pub fn names() -> Vec<&'static str> {
        TABLE.iter().map(|t| t.name).collect()
    }

    fn traits(self) -> &'static Traits {
        // The table lists every kind once, in declaration order.
        &TABLE[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.traits().name
    }

    /// Are its runs random draws (to be averaged over seeds in benchmarks)?
    pub fn is_randomized(self) -> bool {
        self.traits().randomized
    }

    /// Can it run out of paths (each path of the others is a fresh draw)?
    pub fn can_exhaust(self) -> bool {
        self.traits().exhausts
    }

    /// Does `flymc bench` compare it?
    pub fn is_compared(self) -> bool {
        self.traits().compared
    }

    /// Does it refuse to run without a sets file?
    pub fn requires_sets(self) -> bool {
        self.traits().sets == Required
    }

    /// Does it read the system's sets file (required or when there is one)?
    pub fn uses_sets(self) -> bool {
        self.traits().sets != Unused
    }

    /// Build it for one exploration.
    pub fn build(self, ctx: &StrategyContext) -> Result<Box<dyn Strategy>, BuildError> {
        let sets = || ctx.sets.clone().ok_or(BuildError::NeedsSets(self));
        // Faults go where the workload's condition holds: the nodes it names are not
        // interchangeable with the others.
        let fixed = ctx
            .workload
            .fault_when
            .as_ref()
            .map(|c| c.nodes())
            .unwrap_or_default();
        let symmetry = || ctx.symmetry.fixing(&fixed);
        Ok(match self {
            K::Dfs => Box::new(dfs::Dfs::new(ctx.stateless_dfs)),
            K::Random => Box::new(random::RandomWalk::new(ctx.seed)),
            K::Fair => Box::new(fair::Fair::new(ctx)),
            K::Pct => Box::new(pct::Pct::new(ctx)),
            K::Novelty => Box::new(novelty::NoveltySearch::new(ctx)),
            // flymc where the system ships a sets file (dfs where not), taking turns with pct
            // and novelty-guided search.
            K::Portfolio => Box::new(portfolio::Portfolio::new(vec![
                if ctx.sets.is_some() { K::Flymc } else { K::Dfs }.build(ctx)?,
                K::Pct.build(ctx)?,
                K::Novelty.build(ctx)?,
            ])),
            K::Mdpor => Box::new(mdpor::new(ctx)),
            K::Bdpor => Box::new(bdpor::new(ctx)),
            K::Rdpor => Box::new(rdpor::new(ctx)),
            K::Brdpor => Box::new(brdpor::new(ctx)),
            K::Samc => Box::new(samc::new(sets()?, symmetry(), ctx.seed)),
            K::Flymc => Box::new(
                flymc::Flymc::new(sets()?, symmetry(), ctx.flymc).disk_state(ctx.disk_state),
            ),
            K::Faults => Box::new(
                faults::Faults::new(ctx.fault_vars.clone())
                    .disk_state(ctx.disk_state)
                    .novelty(Novelty::new(ctx.fault_vars.clone(), symmetry()).marking_initial()),
            ),
        })
    }
}

impl std::fmt::Display for StrategyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for StrategyKind {
    type Err = BuildError;

    fn from_str(s: &str) -> Result<Self, BuildError> {
        TABLE
            .iter()
            .find(|t| t.name == s)
            .map(|t| t.kind)
            .ok_or_else(|| BuildError::Unknown(s.into()))
    }
}

/// `--strategy NAME` as a type: the table's names, in its order.
#[cfg(feature = "clap")]
impl clap::ValueEnum for StrategyKind {
    fn value_variants<'a>() -> &'a [Self] {
        &KINDS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

/// Build a strategy by name (tests and tools that hold a name; the CLI parses a
/// [`StrategyKind`] at its edge).
pub fn build(name: &str, ctx: &StrategyContext) -> Result<Box<dyn Strategy>, BuildError> {
    name.parse::<StrategyKind>()?.build(ctx)
}

#[cfg(test)]
mod tests;
