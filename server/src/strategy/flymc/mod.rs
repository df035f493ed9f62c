//! The `flymc` strategy: DPOR with FlyMC's three algorithms, each switchable for ablations.
//!
//! - state symmetry ([`symmetry`]): prune a to-explore path whose next step, abstracted, is
//!   already in the history of abstract transitions;
//! - event independence ([`independence`]): races are judged by the sets file at the state they
//!   happen in, instead of MoDist's "same node" rule;
//! - parallel flips ([`parallel`]): each explored path also yields one path that flips a racing
//!   pair at every node at once; it goes first, and the single flips wait in a low-priority queue
//!   so the search stays systematic.

mod independence;
mod parallel;
mod symmetry;

use std::collections::HashSet;

use flymc_model::sets::SetsFile;
use flymc_model::{EventId, Symmetry};

use super::dpor::{last_race, prefix_hashes, race_candidates, Dependence};
use super::mdpor::SameNode;
use super::{Strategy, StrategyStats};
use crate::executor::{Plan, Run};
pub use independence::{independent, SetsDependence};
use symmetry::{History, Key};

/// Which of FlyMC's algorithms are on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlymcOptions {
    pub symmetry: bool,
    pub independence: bool,
    pub parallel_flips: bool,
}

impl Default for FlymcOptions {
    fn default() -> Self {
        FlymcOptions {
            symmetry: true,
            independence: true,
            parallel_flips: true,
        }
    }
}

struct Item {
    prefix: Vec<EventId>,
    /// The abstract transition the path's new step takes, for pruning at pop time.
    key: Option<Key>,
}

pub struct Flymc {
    opts: FlymcOptions,
    sets: SetsFile,
    history: History,
    /// Per prefix hash: events run or queued from there.
    scheduled: HashSet<(u64, EventId)>,
    /// Parallel-flip prefixes already queued.
    parallel_seen: HashSet<u64>,
    /// mdpor backtracks that independence made unnecessary, counted once each.
    independence_seen: HashSet<(u64, EventId)>,
    high: Vec<Item>,
    low: Vec<Item>,
    started: bool,
    stats: Counters,
}

#[derive(Default)]
struct Counters {
    generated: u64,
    symmetry: u64,
    independence: u64,
    deprioritized: u64,
    parallel: u64,
}

impl Flymc {
    pub fn new(sets: SetsFile, sym: Symmetry, opts: FlymcOptions) -> Self {
        Flymc {
            opts,
            sets,
            history: History::new(sym),
            scheduled: HashSet::new(),
            parallel_seen: HashSet::new(),
            independence_seen: HashSet::new(),
            high: Vec::new(),
            low: Vec::new(),
            started: false,
            stats: Counters::default(),
        }
    }
}

impl Strategy for Flymc {
    fn name(&self) -> &'static str {
        "flymc"
    }

    fn next_plan(&mut self) -> Option<Plan> {
        if !self.started {
            self.started = true;
            return Some(Plan::fifo(Vec::new()));
        }
        while let Some(item) = self.high.pop().or_else(|| self.low.pop()) {
            // The history may have grown since the path was queued.
            if self.opts.symmetry && item.key.is_some_and(|k| self.history.contains(&k)) {
                self.stats.symmetry += 1;
                continue;
            }
            return Some(Plan::fifo(item.prefix));
        }
        None
    }

    fn observe(&mut self, run: &Run) {
        let ids = run.event_ids();
        let hashes = prefix_hashes(&ids);
        for (i, id) in ids.iter().enumerate() {
            self.scheduled.insert((hashes[i], *id));
        }
        let abs = if self.opts.symmetry {
            Some(self.history.abstractions(run))
        } else {
            None
        };
        if let Some(abs) = &abs {
            self.history.record(run, abs);
        }

        let mut sets_dep = SetsDependence { sets: &self.sets };
        let dep: &mut dyn Dependence = if self.opts.independence {
            &mut sets_dep
        } else {
            &mut SameNode
        };
        let mut new: Vec<(usize, EventId)> = Vec::new();
        for j in 1..run.steps.len() {
            let race = last_race(dep, run, j);
            if let Some(i) = race {
                for c in race_candidates(run, i, j) {
                    if self.scheduled.insert((hashes[i], c)) {
                        new.push((i, c));
                    }
                }
            }
            if self.opts.independence {
                // What MoDist's rule would have added here and independence did not.
                if let Some(i) = last_race(&mut SameNode, run, j).filter(|&i| Some(i) != race) {
                    for c in race_candidates(run, i, j) {
                        if !self.scheduled.contains(&(hashes[i], c))
                            && self.independence_seen.insert((hashes[i], c))
                        {
                            self.stats.independence += 1;
                        }
                    }
                }
            }
        }
        let end = run.steps.len();
        for f in &run.final_enabled {
            if self.scheduled.insert((hashes[end], f.event.id)) {
                new.push((end, f.event.id));
            }
        }

        new.sort_by_key(|(i, _)| *i);
        let queue_low = self.opts.parallel_flips;
        for (i, c) in new {
            let key = abs.as_ref().map(|abs| {
                let event = run.steps.get(i).map_or_else(
                    || {
                        &run.final_enabled
                            .iter()
                            .find(|e| e.event.id == c)
                            .expect("final fault")
                            .event
                    },
                    |s| {
                        &s.enabled
                            .iter()
                            .find(|e| e.event.id == c)
                            .expect("candidate is enabled")
                            .event
                    },
                );
                self.history.key(&abs[i], event)
            });
            if key.is_some_and(|k| self.history.contains(&k)) {
                self.stats.symmetry += 1;
                continue;
            }
            let mut prefix = ids[..i].to_vec();
            prefix.push(c);
            self.stats.generated += 1;
            if queue_low {
                self.stats.deprioritized += 1;
                self.low.push(Item { prefix, key });
            } else {
                self.high.push(Item { prefix, key });
            }
        }

        if self.opts.parallel_flips {
            let dep: &mut dyn Dependence = if self.opts.independence {
                &mut sets_dep
            } else {
                &mut SameNode
            };
            if let Some((prefix, _flips)) = parallel::parallel_flip(dep, run) {
                let h = *prefix_hashes(&prefix).last().expect("non-empty");
                if self.parallel_seen.insert(h) {
                    self.stats.generated += 1;
                    self.stats.parallel += 1;
                    self.high.push(Item { prefix, key: None });
                }
            }
        }
    }

    fn queue_len(&self) -> usize {
        self.high.len() + self.low.len()
    }

    fn stats(&self) -> StrategyStats {
        StrategyStats {
            generated: self.stats.generated,
            pruned: vec![
                ("symmetry".into(), self.stats.symmetry),
                ("independence".into(), self.stats.independence),
            ],
            deprioritized: self.stats.deprioritized,
        }
    }
}
