//! Fault-placement search: where crashes and reboots strike, with everything else in the
//! default order.
//!
//! Crash-recovery bugs (a node that persisted half of a change, a node that comes back to a
//! cluster that moved on) hide in *where* faults strike more than in how messages interleave.
//! This strategy keeps the network in its default order (the FIFO tail: a prompt network, quiet
//! clients and timers) and branches only on crashes and reboots, like crash-point injectors
//! (CrashTuner, FCatch) but exhaustively over the workload's fault budget.
//!
//! A fault is tried at a step only if it has not been tried in that step's *fault state*: each
//! node's fault-relevant variables ([`About::fault_vars`]: what survives a crash and the roles;
//! all variables when the system names none), what its crash-point writes put on disk
//! ([`crate::disk`]), whether it is up, and the budgets spent. In-flight
//! messages and volatile variables are left out on purpose: that keeps the number of placements
//! small enough for real clusters, and it is also why this is a bug-finding search, not a proof:
//! two moments in the same fault state can differ in what is in flight.
//!
//! Placements at a moment whose coarse abstract state ([`crate::Novelty`]: ranks of what
//! survives a crash and of what the nodes' crash-point writes put on disk, whether each is
//! still nothing, roles, up or down) no run had reached before go first, the most faults first
//! among them: a dive that follows a chain of new moments as deep as it goes. A deep
//! crash-recovery bug is such a chain (a follower whose epoch is ahead of its log, a leader
//! alone, a cluster all down), and there are far fewer new moments than steps; breadth-first
//! over new moments spends the search on the first few faults of every chain, since each
//! fault opens a level of placements several times wider than the last. The rest run in order
//! of how many faults they place (breadth-first).
//!
//! [`About::fault_vars`]: flymc_model::About::fault_vars

use std::collections::{BTreeMap, HashSet, VecDeque};

use flymc_model::{stable_hash, EventId, GlobalState};
use serde_json::{json, Map, Value};

use super::dfs::spent_after;
use super::disk;
use super::novelty::Novelty;
use super::{Strategy, StrategyStats};
use flymc_core::plan::Plan;
use flymc_core::run::Run;
use flymc_core::strategy::Note;

pub struct Faults {
    vars: Option<Vec<String>>,
    /// Waiting paths (their prefixes) by the number of faults they place.
    levels: BTreeMap<u32, VecDeque<Vec<EventId>>>,
    /// The same for paths whose last fault strikes at a moment in a new abstract state: they
    /// run first, the most faults first.
    fresh: BTreeMap<u32, VecDeque<Vec<EventId>>>,
    /// Abstract states reached, when placements are ordered by them.
    novelty: Option<Novelty>,
    /// (fault state, fault) pairs already tried or queued.
    tried: HashSet<(u64, u64)>,
    /// The most faults placed by a path handed out so far (for the log).
    level: u32,
    started: bool,
    generated: u64,
    pruned: u64,
    /// Fault states include each node's disk.
    disk_state: bool,
    /// Distinct fault states reached.
    states: HashSet<u64>,
}

impl Faults {
    pub fn new(vars: Option<Vec<String>>) -> Self {
        Faults {
            vars,
            levels: BTreeMap::new(),
            fresh: BTreeMap::new(),
            novelty: None,
            tried: HashSet::new(),
            level: 0,
            started: false,
            generated: 0,
            pruned: 0,
            disk_state: false,
            states: HashSet::new(),
        }
    }

    /// Tell fault states apart by what the nodes' crash-point writes put on disk as well.
    pub fn disk_state(mut self, on: bool) -> Self {
        self.disk_state = on;
        self
    }

    /// Run placements at moments in new abstract states first.
    pub fn novelty(mut self, novelty: Novelty) -> Self {
        self.novelty = Some(novelty);
        self
    }

    /// The fault state of `s` with `spent` (crashes, reboots) used and the nodes' `disks`.
    fn fault_state(&self, s: &GlobalState, spent: (u32, u32), disks: Option<&[u64]>) -> u64 {
        let nodes: Vec<Value> = s
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let vars: Map<String, Value> = match &self.vars {
                    Some(names) => names
                        .iter()
                        .filter_map(|k| n.vars.get(k).map(|v| (k.clone(), v.clone())))
                        .collect(),
                    None => n.vars.clone(),
                };
                match disks {
                    Some(d) => json!([n.alive, vars, d[i]]),
                    None => json!([n.alive, vars]),
                }
            })
            .collect();
        stable_hash(
            json!([nodes, s.env, [spent.0, spent.1]])
                .to_string()
                .as_bytes(),
        )
    }
}

impl Strategy for Faults {
    fn name(&self) -> &'static str {
        crate::StrategyKind::Faults.name()
    }

    fn next_plan(&mut self) -> Option<Plan> {
        let prefix = if !self.started {
            self.started = true;
            Vec::new()
        } else {
            let mut level = match self.fresh.last_entry() {
                Some(deepest) => deepest,
                None => self.levels.first_entry()?,
            };
            let faults = *level.key();
            let prefix = level.get_mut().pop_front().expect("levels are never empty");
            if level.get().is_empty() {
                level.remove();
            }
            if faults > self.level {
                self.level = faults;
                tracing::info!(
                    faults,
                    waiting = self.queue_len() + 1,
                    fresh = self.fresh.values().map(VecDeque::len).sum::<usize>(),
                    tried = self.tried.len(),
                    "faults: now placing up to {faults} faults"
                );
            }
            prefix
        };
        Some(Plan::fifo(prefix))
    }

    fn observe(&mut self, plan: &Plan, run: &Run) {
        let ids = run.event_ids();
        // Steps with a resulting state (a run that ended on a hang or a node's exit has one
        // step without).
        let Some(n) = run.states.len().checked_sub(1) else {
            return;
        };
        let spent = spent_after(run, n);
        let disks = self.disk_state.then(|| disk::digests(run)).flatten();
        // The states the prefix passed through were judged in the runs that led here (unless
        // the run left the prefix before its end).
        let from = run
            .diverged_at
            .unwrap_or(usize::MAX)
            .min(plan.prefix.len())
            .min(n);
        let new: HashSet<usize> = match &mut self.novelty {
            // Judged with each node's disk as well: what a crash leaves is what matters here.
            Some(n) => match disk::with_contents(run, from) {
                Some(states) => n.learn_states(&states),
                None => n.learn_states(&run.states[from..]),
            }
            .into_iter()
            .map(|i| i + from)
            .collect(),
            None => HashSet::new(),
        };
        // Placements before the plan's own fault were offered by the runs that led here.
        for i in plan.prefix.len().min(n)..=n {
            let key = self.fault_state(&run.states[i], spent[i], disks.as_ref().map(|d| &d[i][..]));
            self.states.insert(key);
            let alts = match run.steps.get(i) {
                Some(step) => &step.enabled,
                // After a quiescent end only faults are left; they are placements too.
                None => &run.final_enabled,
            };
            // From the plan's fault on the run follows the default order, which never picks a
            // fault: every fault enabled here is an alternative.
            for alt in alts.iter().filter(|a| a.event.is_fault()) {
                let fault = stable_hash(alt.event.describe().as_bytes());
                if !self.tried.insert((key, fault)) {
                    self.pruned += 1;
                    continue;
                }
                let mut prefix = ids[..i].to_vec();
                prefix.push(alt.event.id);
                self.generated += 1;
                let queue = if new.contains(&i) {
                    &mut self.fresh
                } else {
                    &mut self.levels
                };
                queue
                    .entry(spent[i].0 + spent[i].1 + 1)
                    .or_default()
                    .push_back(prefix);
            }
        }
    }

    fn queue_len(&self) -> usize {
        self.levels
            .values()
            .chain(self.fresh.values())
            .map(VecDeque::len)
            .sum()
    }

    fn exhaustion(&self) -> &'static str {
        "every fault placement was tried in every fault state reached (messages in the default order only)"
    }

    fn stats(&self) -> StrategyStats {
        let states = self.states.len() as u64;
        StrategyStats {
            generated: self.generated,
            pruned: vec![(
                "fault already tried in that fault state".into(),
                self.pruned,
            )],
            abstract_states: self.novelty.as_ref().map_or(0, |n| n.covered() as u64),
            notes: vec![Note::clause(
                "fault_states",
                states,
                format!("{states} fault states"),
            )],
            ..Default::default()
        }
    }
}
