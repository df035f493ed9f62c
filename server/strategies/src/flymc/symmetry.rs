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

    /// Abstract every state of a run (index `i` is the state before step `i`), with what each
    /// node has on disk when `disks` says ([`crate::disk`]).
    pub fn abstractions(&mut self, run: &Run, disks: Option<&[Vec<u64>]>) -> Vec<Rc<Abstraction>> {
        run.states
            .iter()
            .zip(&run.hashes)
            .enumerate()
            .map(|(i, (s, h))| {
                let disk = disks.map(|d| &d[i][..]);
                let memo = match disk {
                    Some(d) => stable_hash(format!("{h:x}{d:?}").as_bytes()),
                    None => *h,
                };
                if let Some(a) = self.memo.get(&memo) {
                    return a.clone();
                }
                let a = Rc::new(match disk {
                    Some(d) => self.sym.abstract_state(&crate::disk::with_disks(s, d)),
                    None => self.sym.abstract_state(s),
                });
                if self.memo.len() < MAX_MEMO {
                    self.memo.insert(memo, a.clone());
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
