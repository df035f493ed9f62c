//! State symmetry (FlyMC §3.1): a history of abstract transitions {abstract state + abstract
//! event}. A to-explore path whose next step is already in the history leads somewhere already
//! explored up to a renaming of symmetric nodes, so it is pruned. Crashes are abstracted the
//! same way (a crash of "the node in this abstract state").

use std::collections::HashSet;

use flymc_model::symmetry::Abstraction;
use flymc_model::{stable_hash, Event, Symmetry};

use crate::executor::Run;

pub type Key = (u64, u64);

pub struct History {
    sym: Symmetry,
    seen: HashSet<Key>,
}

impl History {
    pub fn new(sym: Symmetry) -> Self {
        History {
            sym,
            seen: HashSet::new(),
        }
    }

    /// Abstract every state of a run (index `i` is the state before step `i`).
    pub fn abstractions(&self, run: &Run) -> Vec<Abstraction> {
        run.states
            .iter()
            .map(|s| self.sym.abstract_state(s))
            .collect()
    }

    pub fn key(&self, abs: &Abstraction, e: &Event) -> Key {
        (
            abs.hash,
            stable_hash(self.sym.abstract_event(abs, e).as_bytes()),
        )
    }

    /// Record every step of `run`.
    pub fn record(&mut self, run: &Run, abs: &[Abstraction]) {
        for (i, step) in run.steps.iter().enumerate() {
            let k = self.key(&abs[i], step.event());
            self.seen.insert(k);
        }
    }

    pub fn contains(&self, key: &Key) -> bool {
        self.seen.contains(key)
    }
}
