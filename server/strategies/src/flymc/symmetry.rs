//! State symmetry (FlyMC §3.1): a history of abstract transitions {abstract state + abstract
//! event}. A to-explore path whose next step is already in the history leads somewhere already
//! explored up to a renaming of symmetric nodes, so it is pruned. Crashes are abstracted the
//! same way (a crash of "the node in this abstract state").
//!
//! Where the nodes report summaries of their states ([`flymc_model::Feature::SummaryStates`]),
//! two paths in one abstract state may still differ in what decides the nodes' future, so a
//! transition is keyed on the path that led to it as well: every node's events so far, renamed
//! like the state, and the fault budgets spent. Two paths then meet only where they are the
//! same up to a renaming of symmetric nodes and the order of independent events.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use flymc_model::symmetry::Abstraction;
use flymc_model::{stable_hash, Event, Symmetry};

use flymc_core::run::Run;

pub type Key = (u64, u64);

/// A state of a run as the history tells states apart.
pub struct At {
    abs: Rc<Abstraction>,
    /// The abstract state's hash, with the path's when states are summaries.
    hash: u64,
}

/// Abstractions kept per concrete state, beyond which they are recomputed (bounds memory).
const MAX_MEMO: usize = 200_000;

pub struct History {
    sym: Symmetry,
    /// Key transitions on the path too: the nodes' reported states are summaries.
    paths: bool,
    seen: HashSet<Key>,
    /// Abstractions by concrete state hash: paths share most states, and canonicalising is the
    /// expensive part of symmetry.
    memo: HashMap<u64, Rc<Abstraction>>,
}

impl History {
    pub fn new(sym: Symmetry) -> Self {
        History {
            sym,
            paths: false,
            seen: HashSet::new(),
            memo: HashMap::new(),
        }
    }

    /// Key transitions on the path to them as well (see the module's documentation).
    pub fn key_on_paths(&mut self, on: bool) {
        self.paths = on;
    }

    /// Every state of a run as the history tells them apart (index `i` is the state before
    /// step `i`), with what each node has on disk when `disks` says ([`crate::disk`]).
    pub fn abstractions(&mut self, run: &Run, disks: Option<&[Vec<u64>]>) -> Vec<At> {
        let abs = self.abstract_states(run, disks);
        let hashes = if self.paths {
            self.path_hashes(run, &abs)
        } else {
            abs.iter().map(|a| a.hash).collect()
        };
        abs.into_iter()
            .zip(hashes)
            .map(|(abs, hash)| At { abs, hash })
            .collect()
    }

    fn abstract_states(&mut self, run: &Run, disks: Option<&[Vec<u64>]>) -> Vec<Rc<Abstraction>> {
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

    /// Per state of `run`, its abstract state's hash with every node's events before it,
    /// renamed as that state renames the nodes, and the fault budgets spent.
    fn path_hashes(&self, run: &Run, abs: &[Rc<Abstraction>]) -> Vec<u64> {
        let nodes = run.states.first().map_or(0, |s| s.nodes.len());
        let spent = crate::dfs::spent_after(run, run.steps.len());
        let mut events: Vec<Vec<String>> = vec![Vec::new(); nodes];
        let mut out = Vec::with_capacity(abs.len());
        for (i, a) in abs.iter().enumerate() {
            // Renderings hold while the renaming does (most steps): then only step `i - 1` is new.
            let renamed = i == 0 || (0..nodes).any(|n| abs[i - 1].label(n) != a.label(n));
            let from = if renamed {
                events.iter_mut().for_each(Vec::clear);
                0
            } else {
                i - 1
            };
            for e in run.events().take(i).skip(from) {
                if let Some(at) = events.get_mut(e.to) {
                    at.push(self.sym.abstract_event(a, e));
                }
            }
            let mut by_label: Vec<(&str, &[String])> =
                (0..nodes).map(|n| (a.label(n), &events[n][..])).collect();
            by_label.sort();
            let text = format!("{:x}|{by_label:?}|{:?}", a.hash, spent[i]);
            out.push(stable_hash(text.as_bytes()));
        }
        out
    }

    pub fn key(&self, at: &At, e: &Event) -> Key {
        (
            at.hash,
            stable_hash(self.sym.abstract_event(&at.abs, e).as_bytes()),
        )
    }

    /// Record every step of `run`.
    pub fn record(&mut self, run: &Run, abs: &[At]) {
        for (i, step) in run.steps.iter().enumerate() {
            let k = self.key(&abs[i], step.event());
            self.seen.insert(k);
        }
    }

    pub fn contains(&self, key: &Key) -> bool {
        self.seen.contains(key)
    }
}
