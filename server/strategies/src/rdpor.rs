//! Random + DPOR (FlyMC Table 2, "r-DP"): MoDist's DPOR with a random path every 50 paths.

use super::dpor::{Dpor, DporOptions};
use super::mdpor::SameNode;
use super::StrategyContext;

pub const RANDOM_EVERY: u64 = 50;

pub fn new(ctx: &StrategyContext) -> Dpor<SameNode> {
    Dpor::new(
        crate::StrategyKind::Rdpor.name(),
        SameNode,
        DporOptions {
            random_every: Some(RANDOM_EVERY),
            seed: ctx.seed,
            ..Default::default()
        },
    )
}
