//! The dynamic partial-order reduction engine shared by the DPOR-family strategies.
//!
//! After each run, every step `j` is checked against the last earlier step `i` it races with:
//! dependent (by the strategy's [`Dependence`]) and not causally ordered. Such a race means the
//! order of `i` and `j` may matter, so the state before `i` gets a backtrack point: `j`'s event if
//! it was already enabled there, else an enabled event that leads to it (Flanagan and Godefroid,
//! POPL'05). A tree of prefixes keeps each backtrack point from being scheduled twice.

use std::collections::{HashMap, HashSet};

use flymc_model::{stable_hash, EventId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Strategy, StrategyStats};
use crate::executor::{Plan, Run, Tail};

/// When must two steps of a run be explored in both orders?
pub trait Dependence {
    /// Steps `i < j` of `run`: may swapping them change the outcome, judged in the state before
    /// step `i` (`run.states[i]`)?
    fn dependent(&mut self, run: &Run, i: usize, j: usize) -> bool;
}

/// Knobs that turn plain DPOR into the bounded and random hybrids of FlyMC's Table 2.
#[derive(Clone, Copy, Debug, Default)]
pub struct DporOptions {
    /// Only add backtrack points at steps below this depth (MoDist's bounded DPOR).
    pub bound: Option<usize>,
    /// Every this many paths, run a random walk instead (MoDist's random + DPOR); its run is
    /// analysed like any other.
    pub random_every: Option<u64>,
    pub seed: u64,
}

#[derive(Default)]
struct TreeNode {
    /// Events already run or queued from this prefix.
    scheduled: HashSet<EventId>,
}

pub struct Dpor<D> {
    name: &'static str,
    dep: D,
    opts: DporOptions,
    tree: HashMap<u64, TreeNode>,
    stack: Vec<Vec<EventId>>,
    started: bool,
    handed_out: u64,
    rng: ChaCha8Rng,
    generated: u64,
}

/// Hash of a prefix extended by one event.
pub fn extend(prefix_hash: u64, e: EventId) -> u64 {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&prefix_hash.to_le_bytes());
    bytes[8..].copy_from_slice(&e.0.to_le_bytes());
    stable_hash(&bytes)
}

/// Hashes of every prefix of `ids`, the empty one first.
pub fn prefix_hashes(ids: &[EventId]) -> Vec<u64> {
    let mut h = Vec::with_capacity(ids.len() + 1);
    h.push(0u64);
    for id in ids {
        let next = extend(*h.last().unwrap(), *id);
        h.push(next);
    }
    h
}

/// The backtrack candidates for a race between steps `i < j`: `j`'s event if it was enabled at
/// `i`; otherwise the first event enabled at `i` that runs before `j` and happens before it;
/// otherwise everything enabled at `i`.
pub fn race_candidates(run: &Run, i: usize, j: usize) -> Vec<EventId> {
    let target = &run.steps[j].enabled[run.steps[j].chosen];
    let at_i = &run.steps[i].enabled;
    if at_i.iter().any(|e| e.event.id == target.event.id) {
        return vec![target.event.id];
    }
    for l in i..j {
        let step = &run.steps[l];
        if step.happens_before(target) && at_i.iter().any(|e| e.event.id == step.event().id) {
            return vec![step.event().id];
        }
    }
    at_i.iter().map(|e| e.event.id).collect()
}

/// The last step `i < j` racing with `j`, if any.
pub fn last_race<D: Dependence + ?Sized>(dep: &mut D, run: &Run, j: usize) -> Option<usize> {
    let target = &run.steps[j].enabled[run.steps[j].chosen];
    (0..j)
        .rev()
        .find(|&i| !run.steps[i].happens_before(target) && dep.dependent(run, i, j))
}

impl<D: Dependence> Dpor<D> {
    pub fn new(name: &'static str, dep: D, opts: DporOptions) -> Self {
        Dpor {
            name,
            dep,
            opts,
            tree: HashMap::new(),
            stack: Vec::new(),
            started: false,
            handed_out: 0,
            rng: ChaCha8Rng::seed_from_u64(opts.seed),
            generated: 0,
        }
    }
}

impl<D: Dependence> Strategy for Dpor<D> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn next_plan(&mut self) -> Option<Plan> {
        self.handed_out += 1;
        if !self.started {
            self.started = true;
            return Some(Plan::fifo(Vec::new()));
        }
        if self.stack.is_empty() {
            return None;
        }
        if let Some(k) = self.opts.random_every {
            if self.handed_out % k == 0 {
                return Some(Plan { prefix: Vec::new(), tail: Tail::Random(self.rng.gen()), strict: false });
            }
        }
        self.stack.pop().map(Plan::fifo)
    }

    fn observe(&mut self, run: &Run) {
        let ids = run.event_ids();
        let hashes = prefix_hashes(&ids);
        for (i, id) in ids.iter().enumerate() {
            self.tree.entry(hashes[i]).or_default().scheduled.insert(*id);
        }
        let mut new: Vec<(usize, EventId)> = Vec::new();
        for j in 1..run.steps.len() {
            let Some(i) = last_race(&mut self.dep, run, j) else { continue };
            if self.opts.bound.is_some_and(|b| i >= b) {
                continue;
            }
            let node = self.tree.entry(hashes[i]).or_default();
            for c in race_candidates(run, i, j) {
                if node.scheduled.insert(c) {
                    new.push((i, c));
                }
            }
        }
        // Faults left untaken at the end: run them there, and races move them earlier.
        let end = run.steps.len();
        if !self.opts.bound.is_some_and(|b| end >= b) {
            let node = self.tree.entry(hashes[end]).or_default();
            for f in &run.final_enabled {
                if node.scheduled.insert(f.event.id) {
                    new.push((end, f.event.id));
                }
            }
        }
        // Shallow first, so the deepest backtrack point is explored next.
        new.sort_by_key(|(i, _)| *i);
        for (i, c) in new {
            let mut p = ids[..i].to_vec();
            p.push(c);
            self.stack.push(p);
            self.generated += 1;
        }
    }

    fn queue_len(&self) -> usize {
        self.stack.len()
    }

    fn stats(&self) -> StrategyStats {
        StrategyStats { generated: self.generated, ..Default::default() }
    }
}
