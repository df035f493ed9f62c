//! A random walk (the paper's "Rand" and DPOR's occasional random paths).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::Order;
use crate::run::Enabled;

/// A uniformly random enabled event, crashes and reboots included, from a seed. Sleep sets are
/// not consulted: they are worked out for default-order branches, never handed to random walks.
#[derive(Debug)]
pub struct RandomOrder {
    rng: ChaCha8Rng,
}

impl RandomOrder {
    pub fn new(seed: u64) -> Self {
        RandomOrder {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

impl Order for RandomOrder {
    fn pick(&mut self, enabled: &[Enabled], _asleep: &dyn Fn(&Enabled) -> bool) -> Option<usize> {
        (!enabled.is_empty()).then(|| self.rng.gen_range(0..enabled.len()))
    }
}
