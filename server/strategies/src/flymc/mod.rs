//! The `flymc` strategy: DPOR with FlyMC's three algorithms, each switchable for ablations.
//!
//! - state symmetry ([`symmetry`]): prune a to-explore path whose next step, abstracted, is
//!   already in the history of abstract transitions;
//! - event independence ([`independence`]): races are judged by the sets file at the state they
//!   happen in, instead of MoDist's "same node" rule;
//! - parallel flips ([`parallel`], off unless asked for: they cost paths on every measured
//!   bug): each explored path also yields one path that flips a racing pair at every node at
//!   once; parallel flips and single flips take turns, and the single flips wait in a
//!   low-priority queue so the search stays systematic.

mod independence;
mod parallel;
mod symmetry;

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use flymc_model::sets::SetsFile;
use flymc_model::{Event, EventId, GlobalState, Symmetry};

use super::dpor::{
    self, disabled_by, last_race, prefix_hashes, race_candidates, reversals, Dependence,
};
use super::mdpor::SameNode;
use super::sleep::{origins, Origin, SleepSets};
use super::{Strategy, StrategyStats};
use flymc_core::plan::Plan;
use flymc_core::run::Run;
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
            // Off: measured on every simulated bug, parallel flips as the paper states them
            // apply to ~2% of paths and cost paths (docs/BENCHMARKS.md, "Ablations").
            parallel_flips: false,
        }
    }
}

struct Item {
    prefix: Vec<EventId>,
    /// The abstract transition the path's new step takes, for pruning at pop time.
    key: Option<Key>,
    /// Where a single flip leaves the tree (for its sleep set); parallel flips have none.
    origin: Option<Origin>,
}

pub struct Flymc {
    opts: FlymcOptions,
    dep: Judge,
    sleep: SleepSets,
    history: History,
    /// Per prefix hash: events run or queued from there.
    scheduled: HashSet<(u64, EventId)>,
    /// Parallel-flip prefixes already queued.
    parallel_seen: HashSet<u64>,
    /// mdpor backtracks that independence made unnecessary, counted once each.
    independence_seen: HashSet<(u64, EventId)>,
    high: Vec<Item>,
    /// Single flips in the order they were found: every path one flip away from the first
    /// path, then every path two flips away, and so on (see [`Flymc::pop`]).
    low: VecDeque<Item>,
    /// Whether a parallel flip goes next (see [`Flymc::pop`]); parallel flips form a chain
    /// (each run proposes the next), so they must not starve the systematic search.
    parallel_turn: bool,
    started: bool,
    stats: Counters,
    /// Abstract states include each node's disk ([`crate::disk`]).
    disk_state: bool,
}

/// Sets-file independence, or MoDist's rule when independence is off.
#[derive(Clone)]
enum Judge {
    Sets(SetsDependence),
    SameNode(SameNode),
}

impl Dependence for Judge {
    fn dependent_at(&mut self, state: &GlobalState, a: &Event, b: &Event) -> bool {
        match self {
            Judge::Sets(d) => d.dependent_at(state, a, b),
            Judge::SameNode(d) => d.dependent_at(state, a, b),
        }
    }
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
        let dep = if opts.independence {
            Judge::Sets(SetsDependence {
                sets: Arc::new(sets),
            })
        } else {
            Judge::SameNode(SameNode)
        };
        Flymc {
            opts,
            dep,
            sleep: SleepSets::new(),
            history: History::new(sym),
            scheduled: HashSet::new(),
            parallel_seen: HashSet::new(),
            independence_seen: HashSet::new(),
            high: Vec::new(),
            low: VecDeque::new(),
            parallel_turn: true,
            started: false,
            stats: Counters::default(),
            disk_state: false,
        }
    }

    /// Tell states apart by what the nodes' crash-point writes put on disk as well.
    pub fn disk_state(mut self, on: bool) -> Self {
        self.disk_state = on;
        self
    }
}

impl Flymc {
    /// Take turns: a parallel flip, then the oldest single flip. Oldest first explores the
    /// paths the fewest flips away from the default order before any path further away: the
    /// paper's observation (§3.3) is that mature systems survive their common orders, and bugs
    /// hide a few uncommon orders away from them. On the simulated bugs this order reaches
    /// CASS-1 (none of the depth orders tried did within the bench's cap) at the cost of more
    /// paths on CASS-5, whose bug sits at the end of a path (docs/BENCHMARKS.md).
    fn pop(&mut self) -> Option<Item> {
        for _ in 0..2 {
            self.parallel_turn = !self.parallel_turn;
            let item = if self.parallel_turn {
                self.high.pop()
            } else {
                self.low.pop_front()
            };
            if item.is_some() {
                return item;
            }
        }
        None
    }
}

impl Strategy for Flymc {
    fn name(&self) -> &'static str {
        crate::StrategyKind::Flymc.name()
    }

    fn next_plan(&mut self) -> Option<Plan> {
        if !self.started {
            self.started = true;
            return Some(self.sleep.hand_out_plain(Plan::fifo(Vec::new())));
        }
        while let Some(item) = self.pop() {
            // The history may have grown since the path was queued.
            if self.opts.symmetry && item.key.is_some_and(|k| self.history.contains(&k)) {
                self.stats.symmetry += 1;
                continue;
            }
            let plan = Plan::fifo(item.prefix);
            return Some(match &item.origin {
                Some(o) => self.sleep.hand_out(&mut self.dep, o, plan),
                None => self.sleep.hand_out_plain(plan),
            });
        }
        None
    }

    fn observe(&mut self, plan: &Plan, run: &Run) {
        let ids = run.event_ids();
        let hashes = prefix_hashes(&ids);
        let asleep = self.sleep.observe(&mut self.dep, plan, run, &hashes);
        for (i, id) in ids.iter().enumerate() {
            self.scheduled.insert((hashes[i], *id));
        }
        let abs = if self.opts.symmetry {
            let disks = self.disk_state.then(|| crate::disk::digests(run)).flatten();
            Some(self.history.abstractions(run, disks.as_deref()))
        } else {
            None
        };
        if let Some(abs) = &abs {
            self.history.record(run, abs);
        }

        let mut new: Vec<(usize, EventId, Vec<EventId>)> = Vec::new();
        for j in 1..run.steps.len() {
            let race = last_race(&mut self.dep, run, j);
            let mut races: Vec<usize> = race.into_iter().collect();
            if run.steps[j].event().is_fault() {
                // A crash or reboot is tried before every step it races with at once, not one
                // race further back per path: where a crash must land (say, between a leader's
                // write and the appends carrying it) is then one flip from a path, not five.
                races.extend(dpor::races(&mut self.dep, run, j).filter(|&i| Some(i) != race));
            }
            for i in races {
                for (c, prefix) in reversals(&mut self.dep, run, &ids, i, j) {
                    if !asleep[i].contains(&c) && self.scheduled.insert((hashes[i], c)) {
                        new.push((i, c, prefix));
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
        for j in 0..run.steps.len() {
            for c in disabled_by(run, j) {
                if !asleep[j].contains(&c) && self.scheduled.insert((hashes[j], c)) {
                    let mut prefix = ids[..j].to_vec();
                    prefix.push(c);
                    new.push((j, c, prefix));
                }
            }
        }
        let end = run.steps.len();
        // A run that ended in a hang or a node's exit has no state after its last step.
        let ended_settled = end < run.states.len();
        for f in run.final_enabled.iter().filter(|_| ended_settled) {
            if !asleep[end].contains(&f.event.id)
                && self.scheduled.insert((hashes[end], f.event.id))
            {
                let mut prefix = ids.clone();
                prefix.push(f.event.id);
                new.push((end, f.event.id, prefix));
            }
        }

        new.sort_by_key(|(i, _, _)| *i);
        let queue_low = self.opts.parallel_flips;
        for (prefix, origin) in origins(run, &hashes, new) {
            let i = origin.depth;
            let key = abs
                .as_ref()
                .map(|abs| self.history.key(&abs[i], &origin.event));
            if key.is_some_and(|k| self.history.contains(&k)) {
                self.stats.symmetry += 1;
                continue;
            }
            let item = Item {
                prefix,
                key,
                origin: Some(origin),
            };
            self.stats.generated += 1;
            if queue_low {
                self.stats.deprioritized += 1;
            }
            self.low.push_back(item);
        }

        if self.opts.parallel_flips {
            if let Some((prefix, _flips)) = parallel::parallel_flip(&mut self.dep, run) {
                let h = *prefix_hashes(&prefix).last().expect("non-empty");
                if self.parallel_seen.insert(h) {
                    self.stats.generated += 1;
                    self.stats.parallel += 1;
                    self.high.push(Item {
                        prefix,
                        key: None,
                        origin: None,
                    });
                }
            }
        }
    }

    fn queue_len(&self) -> usize {
        self.high.len() + self.low.len()
    }

    fn dependence(&self) -> Option<Box<dyn Dependence + Send>> {
        Some(Box::new(self.dep.clone()))
    }

    fn stats(&self) -> StrategyStats {
        StrategyStats {
            generated: self.stats.generated,
            pruned: vec![
                ("symmetry".into(), self.stats.symmetry),
                ("independence".into(), self.stats.independence),
            ],
            deprioritized: self.stats.deprioritized,
            ..Default::default()
        }
    }
}
