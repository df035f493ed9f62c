//! Bounded + random DPOR (FlyMC Table 2, "br-DP").

use super::dpor::{Dpor, DporOptions};
use super::mdpor::SameNode;
use super::rdpor::RANDOM_EVERY;
use super::StrategyContext;

pub fn new(ctx: &StrategyContext) -> Dpor<SameNode> {
    Dpor::new(
        crate::StrategyKind::Brdpor.name(),
        SameNode,
        DporOptions {
            bound: Some(ctx.bound),
            random_every: Some(RANDOM_EVERY),
            seed: ctx.seed,
        },
    )
}
