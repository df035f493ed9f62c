//! Purely random exploration (the paper's "Rand"): every path is a fresh seeded random walk.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::Strategy;
use flymc_core::plan::{Plan, Tail};
use flymc_core::run::Run;

pub struct RandomWalk {
    rng: ChaCha8Rng,
}

impl RandomWalk {
    pub fn new(seed: u64) -> Self {
        RandomWalk {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

impl Strategy for RandomWalk {
    fn name(&self) -> &'static str {
        crate::StrategyKind::Random.name()
    }

    /// Never exhausts: random search runs until the path budget is spent or a bug is found.
    fn next_plan(&mut self) -> Option<Plan> {
        Some(Plan {
            prefix: Vec::new(),
            tail: Tail::Random(self.rng.gen()),
            strict: false,
            sleep: Vec::new(),
            sleep_at: 0,
        })
    }

    fn observe(&mut self, _plan: &Plan, _run: &Run) {}

    fn queue_len(&self) -> usize {
        0
    }
}
