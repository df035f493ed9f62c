//! State symmetry (FlyMC §3.1): a history of abstract transitions {abstract state + abstract
//! event}. A to-explore path whose next step is already in the history leads somewhere already
//! explored up to a renaming of symmetric nodes, so it is pruned. Crashes are abstracted the
//! same way (a crash of "the node in this abstract state").

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use flymc_model::symmetry::Abstraction;
use flymc_model::{stable_hash, Event, Symmetry};

use flymc_core::run::Run;

pub type Key = (u64, u64);

/// Abstractions kept per concrete state, beyond which they are recomputed (bounds memory).
const MAX_MEMO: usize = 200_000;

pub struct History {
    sym: Symmetry,
    seen: HashSet<Key>,
    /// Abstractions by concrete state hash: paths share most states, and canonicalising is the
    /// expensive part of symmetry.
    memo: HashMap<u64, Rc<Abstraction>>,
}

impl History {
    pub fn new(sym: Symmetry) -> Self {
        History {
            sym,
            seen: HashSet::new(),
            memo: HashMap::new(),
        }
    }

    /// Abstract every state of a run (index `i` is the state before step `i`).
    pub fn abstractions(&mut self, run: &Run) -> Vec<Rc<Abstraction>> {
        run.states
            .iter()
            .zip(&run.hashes)
            .map(|(s, h)| {
                if let Some(a) = self.memo.get(h) {
                    return a.clone();
                }
                let a = Rc::new(self.sym.abstract_state(s));
                if self.memo.len() < MAX_MEMO {
                    self.memo.insert(*h, a.clone());
                }
                a
            })
            .collect()
    }

    pub fn key(&self, abs: &Abstraction, e: &Event) -> Key {
        (
            abs.hash,
            stable_hash(self.sym.abstract_event(abs, e).as_bytes()),
        )
    }

    /// Record every step of `run`.
    pub fn record(&mut self, run: &Run, abs: &[Rc<Abstraction>]) {
        for (i, step) in run.steps.iter().enumerate() {
            let k = self.key(&abs[i], step.event());
            self.seen.insert(k);
        }
    }

    pub fn contains(&self, key: &Key) -> bool {
        self.seen.contains(key)
    }
}
