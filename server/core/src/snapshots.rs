//! Snapshots at path prefixes, the core's half. A target that can checkpoint its cluster
//! ([`Target::checkpoint`](flymc_model::Target::checkpoint)) keeps the processes; this keeps
//! what the executor saw along each prefix (enabled sets, states), so that a run restored at a
//! prefix keeps the same books — clocks, sleep sets, faults, properties — as one that
//! re-executed it, and explores the same path. It also decides where to take snapshots.

use std::collections::HashMap;
use std::sync::Arc;

use flymc_model::{Event, EventId, GlobalState};
use serde::{Deserialize, Serialize};

use crate::plan::Plan;
use crate::run::Step;

/// What a run saw up to the prefix a snapshot was taken at.
#[derive(Debug)]
pub struct Prefix {
    /// The events executed, in order.
    pub ids: Vec<EventId>,
    pub steps: Vec<Step>,
    /// `states[0]` initial, `states[i + 1]` after step `i`; one more than `steps`.
    pub states: Vec<GlobalState>,
    pub hashes: Vec<u64>,
}

impl Prefix {
    pub fn depth(&self) -> usize {
        self.steps.len()
    }

    /// What the target had pending at step `i` (the enabled set without the executor's faults).
    pub(crate) fn pending(&self, i: usize) -> Vec<Event> {
        self.steps[i]
            .enabled
            .iter()
            .filter(|e| !e.event.is_fault())
            .map(|e| e.event.clone())
            .collect()
    }
}

/// Counters for the run summary and benchmarks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotStats {
    /// Snapshots the target took.
    pub taken: u64,
    /// Checkpoints the target declined (full store) or failed.
    pub declined: u64,
    /// Runs that started from a snapshot.
    pub restored: u64,
    /// Restores that failed or found the snapshot evicted: those runs re-executed their prefix.
    pub fallbacks: u64,
    /// Restores whose cluster was not the one snapshotted (a node's state on going on differed
    /// from the recorded one): those runs re-executed their prefix, and the snapshot was
    /// dropped. Every other restore was checked the same way and agreed.
    #[serde(default)]
    pub differed: u64,
    /// Steps restored runs did not re-execute.
    pub steps_skipped: u64,
    /// Snapshots not taken and restores not made because, as measured so far, they would cost
    /// more than starting the cluster and re-executing the prefix.
    #[serde(default)]
    pub unprofitable: u64,
}

impl SnapshotStats {
    /// What happened since `before` (counters only grow).
    pub fn since(&self, before: &SnapshotStats) -> SnapshotStats {
        SnapshotStats {
            taken: self.taken - before.taken,
            declined: self.declined - before.declined,
            restored: self.restored - before.restored,
            fallbacks: self.fallbacks - before.fallbacks,
            differed: self.differed - before.differed,
            steps_skipped: self.steps_skipped - before.steps_skipped,
            unprofitable: self.unprofitable - before.unprofitable,
        }
    }

    pub fn add(&mut self, other: &SnapshotStats) {
        self.taken += other.taken;
        self.declined += other.declined;
        self.restored += other.restored;
        self.fallbacks += other.fallbacks;
        self.differed += other.differed;
        self.steps_skipped += other.steps_skipped;
        self.unprofitable += other.unprofitable;
    }
}

/// A running mean of durations, in microseconds.
#[derive(Clone, Copy, Debug, Default)]
struct Mean {
    sum_us: u64,
    n: u64,
}

impl Mean {
    fn add(&mut self, us: u64) {
        self.sum_us += us;
        self.n += 1;
    }

    fn get(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum_us as f64 / self.n as f64)
    }
}

/// What a cold start, a step, a restore and a snapshot have cost so far. A snapshot pays only
/// where a restore is cheaper than starting and re-executing its prefix: true of JVMs that
/// take seconds to start, not of Raft node programs that start in milliseconds and whose
/// restore costs more than that. Until something is measured, snapshots are tried.
#[derive(Clone, Debug, Default)]
pub struct Costs {
    start: Mean,
    step: Mean,
    restore: Mean,
    checkpoint: Mean,
}

impl Costs {
    pub fn started(&mut self, us: u64) {
        self.start.add(us);
    }

    /// A step the target executed (not one taken from a snapshot).
    pub fn stepped(&mut self, us: u64) {
        self.step.add(us);
    }

    pub fn restored(&mut self, us: u64) {
        self.restore.add(us);
    }

    pub fn checkpointed(&mut self, us: u64) {
        self.checkpoint.add(us);
    }

    /// Starting the cluster and re-executing `depth` steps, if measured.
    fn replay_us(&self, depth: usize) -> Option<f64> {
        Some(self.start.get()? + depth as f64 * self.step.get().unwrap_or(0.0))
    }

    /// Is restoring a snapshot of `depth` steps cheaper than getting there without it?
    pub fn restore_pays(&self, depth: usize) -> bool {
        match (self.restore.get(), self.replay_us(depth)) {
            (Some(r), Some(p)) => r < p,
            _ => true,
        }
    }

    /// Does a snapshot at `depth` pay for itself over the `uses` restores expected of it? Each
    /// saves what a run would do without it: restore the kept snapshot above it (`from` steps
    /// deep) and re-execute the steps from there, or with none, start the cluster and
    /// re-execute them all instead of restoring.
    pub fn checkpoint_pays(&self, depth: usize, from: Option<usize>, uses: f64) -> bool {
        let (Some(c), Some(step), Some(start)) =
            (self.checkpoint.get(), self.step.get(), self.start.get())
        else {
            return true;
        };
        let restore = self.restore.get().unwrap_or(0.0);
        let saved = match from {
            Some(d0) => depth.saturating_sub(d0) as f64 * step,
            None => start + depth as f64 * step - restore,
        };
        c < uses * saved
    }
}

/// The prefixes whose snapshots the target holds.
pub struct Snapshots {
    entries: HashMap<u64, Arc<Prefix>>,
    pub stats: SnapshotStats,
    pub costs: Costs,
    /// Take and use snapshots even where they cost more than they save (tests, benchmarks).
    always: bool,
}

impl Default for Snapshots {
    fn default() -> Self {
        Snapshots::new()
    }
}

impl Snapshots {
    pub fn new() -> Snapshots {
        Snapshots {
            entries: HashMap::new(),
            stats: SnapshotStats::default(),
            costs: Costs::default(),
            always: false,
        }
    }

    /// Take and use snapshots wherever they are wanted, whatever they cost.
    pub fn always(mut self, on: bool) -> Snapshots {
        self.always = on;
        self
    }

    /// The deepest snapshot whose prefix begins `ids`, with its key.
    pub fn deepest(&self, ids: &[EventId]) -> Option<(u64, Arc<Prefix>)> {
        let keys = keys(ids);
        keys.iter().enumerate().rev().find_map(|(depth, k)| {
            let p = self.entries.get(k)?;
            (p.ids[..] == ids[..depth]).then(|| (*k, p.clone()))
        })
    }

    /// [`Snapshots::deepest`], if restoring it pays (counted when it does not).
    pub fn to_restore(&mut self, ids: &[EventId]) -> Option<(u64, Arc<Prefix>)> {
        let (key, p) = self.deepest(ids)?;
        if self.always || self.costs.restore_pays(p.depth()) {
            return Some((key, p));
        }
        self.stats.unprofitable += 1;
        None
    }

    /// Should a run of `plan` that executed `ids` take a snapshot now? At the start (every
    /// path shares it: it saves the cluster's start) and where the plan branches off the run
    /// it came from (its siblings start there), unless one is already kept. Returns its key.
    pub fn wanted(&self, plan: &Plan, ids: &[EventId]) -> Option<u64> {
        let step = ids.len();
        let branch = plan.prefix.len().checked_sub(1);
        if step != 0 && Some(step) != branch {
            return None;
        }
        let k = key(ids);
        (!self.entries.contains_key(&k)).then_some(k)
    }

    /// [`Snapshots::wanted`], if a snapshot there pays (counted when it does not): against
    /// restoring the deepest snapshot kept above it and re-executing the difference, over as
    /// many restores as a snapshot has had so far on average.
    pub fn to_take(&mut self, plan: &Plan, ids: &[EventId]) -> Option<u64> {
        let k = self.wanted(plan, ids)?;
        let from = self.deepest(ids).map(|(_, p)| p.depth());
        if self.always || self.costs.checkpoint_pays(ids.len(), from, self.uses()) {
            return Some(k);
        }
        self.stats.unprofitable += 1;
        None
    }

    /// Restores per snapshot taken so far, one of each counted before the first (so the
    /// first snapshots are expected to be used once).
    fn uses(&self) -> f64 {
        (self.stats.restored + 1) as f64 / (self.stats.taken + 1) as f64
    }

    pub fn insert(&mut self, key: u64, prefix: Prefix) {
        self.stats.taken += 1;
        self.entries.insert(key, Arc::new(prefix));
    }

    /// The target no longer holds `key` (evicted, or its restore failed).
    pub fn forget(&mut self, key: u64) {
        self.entries.remove(&key);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A prefix's key: a stable hash of its event ids (the target stores snapshots under it).
pub fn key(ids: &[EventId]) -> u64 {
    *keys(ids)
        .last()
        .expect("keys has an entry for the empty prefix")
}

/// The key of every prefix of `ids`, the empty one first.
fn keys(ids: &[EventId]) -> Vec<u64> {
    let mut out = Vec::with_capacity(ids.len() + 1);
    // FNV-1a over the ids' bytes, folded step by step: stable across runs and builds.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    out.push(h);
    for id in ids {
        for b in id.0.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        out.push(h);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefix(ids: &[u64]) -> Prefix {
        Prefix {
            ids: ids.iter().copied().map(EventId).collect(),
            steps: Vec::new(),
            states: Vec::new(),
            hashes: Vec::new(),
        }
    }

    #[test]
    fn the_deepest_kept_prefix_is_found_and_a_colliding_key_is_not_trusted() {
        let mut s = Snapshots::new();
        let ids: Vec<EventId> = [1, 2, 3, 4].into_iter().map(EventId).collect();
        s.insert(key(&[]), prefix(&[]));
        s.insert(key(&ids[..2]), prefix(&[1, 2]));
        assert_eq!(s.deepest(&ids).map(|(_, p)| p.ids.len()), Some(2));
        assert_eq!(s.deepest(&ids[..1]).map(|(_, p)| p.ids.len()), Some(0));
        // An entry under a key whose ids differ (a hash collision) is skipped.
        s.insert(key(&ids[..3]), prefix(&[9, 9, 9]));
        assert_eq!(s.deepest(&ids).map(|(_, p)| p.ids.len()), Some(2));
        s.forget(key(&ids[..2]));
        assert_eq!(s.deepest(&ids).map(|(_, p)| p.ids.len()), Some(0));
    }

    #[test]
    fn snapshots_are_wanted_at_the_start_and_where_the_plan_branches() {
        let mut s = Snapshots::new();
        let plan = Plan::fifo([5, 6, 7].into_iter().map(EventId).collect());
        let ids: Vec<EventId> = [5, 6, 7].into_iter().map(EventId).collect();
        assert!(s.wanted(&plan, &[]).is_some());
        assert!(s.wanted(&plan, &ids[..1]).is_none());
        assert_eq!(s.wanted(&plan, &ids[..2]), Some(key(&ids[..2])));
        s.insert(key(&ids[..2]), prefix(&[5, 6]));
        assert!(s.wanted(&plan, &ids[..2]).is_none(), "kept already");
    }

    #[test]
    fn snapshots_are_taken_and_restored_only_where_they_pay() {
        // Nothing measured yet: try.
        let c = Costs::default();
        assert!(c.checkpoint_pays(0, None, 1.0) && c.restore_pays(0));
        // Raft node programs as measured: a 16 ms start, 1.5 ms steps, a 128 ms restore and a
        // 240 ms snapshot. Never worth it at the depths of its workloads.
        let mut raft = Costs::default();
        raft.started(16_000);
        raft.stepped(1_500);
        raft.restored(128_000);
        raft.checkpointed(240_000);
        assert!(!raft.restore_pays(40) && !raft.checkpoint_pays(40, None, 1.0));
        assert!(
            raft.restore_pays(100),
            "deep enough, a restore beats re-execution"
        );
        // ZooKeeper JVMs: a 2 s start, 30 ms steps, a 0.4 s restore and a 0.8 s snapshot.
        let mut zk = Costs::default();
        zk.started(2_000_000);
        zk.stepped(30_000);
        zk.restored(400_000);
        zk.checkpointed(800_000);
        assert!(zk.restore_pays(0) && zk.checkpoint_pays(0, None, 1.0));
        // Below a kept snapshot, one pays for the steps it saves re-executing from there: 0.8 s
        // is 27 steps of 30 ms, used once; used twice, 14 will do.
        assert!(!zk.checkpoint_pays(120, Some(100), 1.0));
        assert!(zk.checkpoint_pays(130, Some(100), 1.0));
        assert!(zk.checkpoint_pays(115, Some(100), 2.0));
        let mut s = Snapshots::new();
        s.costs = raft;
        let plan = Plan::fifo(vec![EventId(1), EventId(2)]);
        assert_eq!(s.to_take(&plan, &[]), None);
        assert_eq!(s.stats.unprofitable, 1);
        let mut s = s.always(true);
        assert!(s.to_take(&plan, &[]).is_some(), "always: whatever it costs");
    }
}
