//! MoDist's DPOR (FlyMC Table 2, "m-DP"): a message to one node is independent of messages to
//! other nodes; everything a node processes is dependent on everything else it processes.

use super::dpor::{Dependence, Dpor, DporOptions};
use super::StrategyContext;
use flymc_model::{Event, GlobalState};

/// MoDist's black-box rule: same processing node means dependent (crashes and reboots are
/// processed by the node they strike).
#[derive(Clone, Copy)]
pub struct SameNode;

impl Dependence for SameNode {
    fn dependent_at(&mut self, _state: &GlobalState, a: &Event, b: &Event) -> bool {
        a.to == b.to
    }
}

pub fn new(ctx: &StrategyContext) -> Dpor<SameNode> {
    Dpor::new(
        crate::StrategyKind::Mdpor.name(),
        SameNode,
        DporOptions {
            seed: ctx.seed,
            ..Default::default()
        },
    )
}
