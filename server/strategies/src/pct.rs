//! `pct`: PCTCP runs (flymc_core::order::pct), each from a fresh seed, for bugs of depth
//! `--depth`. k, the events a run is expected to take, starts at the workload's event limit and
//! then follows the longest run seen, so change points and fault steps fall where runs go; the
//! summary states the bound the run's measured chains and events give.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Strategy, StrategyContext};
use flymc_core::order::pct::{per_run_bound, Chains};
use flymc_core::order::PctParams;
use flymc_core::plan::{Plan, Tail};
use flymc_core::run::Run;
use flymc_core::strategy::{Note, StrategyStats};
use serde::Serialize;

pub struct Pct {
    rng: ChaCha8Rng,
    depth: u32,
    faults: u32,
    /// The longest run seen, in events (the workload's limit until a run is seen).
    k: usize,
    /// The most chains a run had.
    chains: usize,
    runs: u64,
}

impl Pct {
    pub fn new(ctx: &StrategyContext) -> Pct {
        Pct {
            rng: ChaCha8Rng::seed_from_u64(ctx.seed),
            depth: ctx.pct_depth.max(1),
            faults: ctx.workload.crashes + ctx.workload.reboots,
            k: ctx.workload.max_events.max(1),
            chains: 0,
            runs: 0,
        }
    }
}

impl Strategy for Pct {
    fn name(&self) -> &'static str {
        crate::StrategyKind::Pct.name()
    }

    /// Never exhausts: like random walks, it runs until the path budget or a bug.
    fn next_plan(&mut self) -> Option<Plan> {
        Some(Plan {
            prefix: Vec::new(),
            tail: Tail::Pct(PctParams {
                seed: self.rng.gen(),
                depth: self.depth,
                k: self.k.min(u32::MAX as usize) as u32,
                faults: self.faults,
            }),
            strict: false,
            sleep: Vec::new(),
            sleep_at: 0,
        })
    }

    fn observe(&mut self, _plan: &Plan, run: &Run) {
        let mut chains = Chains::default();
        for step in &run.steps {
            for e in &step.enabled {
                chains.assign(&e.event);
            }
        }
        self.chains = self.chains.max(chains.len());
        if self.runs == 0 {
            self.k = run.steps.len().max(1);
        } else {
            self.k = self.k.max(run.steps.len());
        }
        self.runs += 1;
    }

    fn queue_len(&self) -> usize {
        0
    }

    /// The guarantee its measured chains and events give, per path and over its paths.
    fn stats(&self) -> StrategyStats {
        let mut stats = StrategyStats::default();
        if self.runs > 0 {
            let b = PctBound {
                depth: self.depth,
                chains: self.chains,
                events: self.k,
                per_run: per_run_bound(self.chains, self.k, self.depth),
            };
            stats.notes.push(b.note(self.runs));
        }
        stats
    }
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

    /// The summary's line and the JSON summary's `pct`, over `runs` paths.
    fn note(&self, runs: u64) -> Note {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        value["over_run"] = self.over(runs).into();
        Note::line(
            "pct",
            value,
            format!(
                "pct guarantee: a bug of depth {} is hit with probability >= 1/({} chains x {} events^{}) = {:.3e} per path, so >= {:.3e} over these {runs} paths",
                self.depth,
                self.chains,
                self.events,
                self.depth.saturating_sub(1),
                self.per_run,
                self.over(runs),
            ),
        )
    }
}
