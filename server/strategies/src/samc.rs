//! SAMC's reduction rules (Leesatapornwongsa et al., OSDI'14) as FlyMC describes them: MoDist's
//! DPOR plus three white-box rules, applied with the same sets file FlyMC uses but nothing more:
//! a message that changes no state (a discarded message) is independent of everything;
//! `ack++`-style increments of the same counters commute; and crashes of nodes in symmetric local
//! states are explored once. Unlike FlyMC it has no general disjoint-update independence, no
//! state symmetry for messages and no parallel flips.

use std::collections::HashSet;
use std::sync::Arc;

use flymc_model::sets::SetsFile;
use flymc_model::{Event, EventId, EventKind, GlobalState, Symmetry};

use super::dpor::{enabled_event, Dependence, Dpor, DporOptions};
use flymc_core::run::Run;

#[derive(Clone)]
pub struct SamcRules {
    sets: Arc<SetsFile>,
    sym: Symmetry,
}

impl Dependence for SamcRules {
    fn dependent_at(&mut self, state: &GlobalState, a: &Event, b: &Event) -> bool {
        if a.to != b.to {
            return false;
        }
        if a.is_fault() || b.is_fault() {
            return true;
        }
        let node = &state.nodes[a.to].vars;
        let (Some(x), Some(y)) = (
            self.sets.message(&a.name, node, &a.fields),
            self.sets.message(&b.name, node, &b.fields),
        ) else {
            return true;
        };
        if x.changes_nothing() || y.changes_nothing() {
            return false;
        }
        let counters = !x.update.is_empty()
            && x.update == x.increments
            && y.update == y.increments
            && x.update == y.update;
        !counters
    }

    fn redundant(
        &mut self,
        run: &Run,
        i: usize,
        candidate: &Event,
        scheduled: &HashSet<EventId>,
    ) -> bool {
        if candidate.kind != EventKind::Crash {
            return false;
        }
        let state = &run.states[i];
        scheduled.iter().any(|id| {
            enabled_event(run, i, *id).is_some_and(|other| {
                other.kind == EventKind::Crash
                    && self.sym.interchangeable(state, other.to, candidate.to)
            })
        })
    }

    fn redundancy_name(&self) -> &'static str {
        "crash symmetry"
    }
}

pub fn new(sets: SetsFile, sym: Symmetry, seed: u64) -> Dpor<SamcRules> {
    Dpor::new(
        crate::StrategyKind::Samc.name(),
        SamcRules {
            sets: Arc::new(sets),
            sym,
        },
        DporOptions {
            seed,
            ..Default::default()
        },
    )
}
