//! Bounded DPOR (FlyMC Table 2, "b-DP"): MoDist's DPOR that only reorders within the first
//! `--bound` events of a path.

use super::dpor::{Dpor, DporOptions};
use super::mdpor::SameNode;
use super::StrategyContext;

pub fn new(ctx: &StrategyContext) -> Dpor<SameNode> {
    Dpor::new(
        crate::StrategyKind::Bdpor.name(),
        SameNode,
        DporOptions {
            bound: Some(ctx.bound),
            seed: ctx.seed,
            ..Default::default()
        },
    )
}
