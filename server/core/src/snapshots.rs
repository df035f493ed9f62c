//! Snapshots at path prefixes, the core's half. A target that can checkpoint its cluster
//! ([`Target::checkpoint`](flymc_model::Target::checkpoint)) keeps the processes; this keeps
//! what the executor saw along each prefix (enabled sets, states), so that a run restored at a
//! prefix keeps the same books — clocks, sleep sets, faults, properties — as one that
//! re-executed it, and explores the same path. It also decides where to take snapshots.

use std::collections::HashMap;
use std::sync::Arc;

use flymc_model::{Event, EventId, GlobalState};
use serde::Serialize;

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
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SnapshotStats {
    /// Snapshots the target took.
    pub taken: u64,
    /// Checkpoints the target declined (full store) or failed.
    pub declined: u64,
    /// Runs that started from a snapshot.
    pub restored: u64,
    /// Restores that failed or found the snapshot evicted: those runs re-executed their prefix.
    pub fallbacks: u64,
    /// Steps restored runs did not re-execute.
    pub steps_skipped: u64,
}

impl SnapshotStats {
    /// What happened since `before` (counters only grow).
    pub fn since(&self, before: &SnapshotStats) -> SnapshotStats {
        SnapshotStats {
            taken: self.taken - before.taken,
            declined: self.declined - before.declined,
            restored: self.restored - before.restored,
            fallbacks: self.fallbacks - before.fallbacks,
            steps_skipped: self.steps_skipped - before.steps_skipped,
        }
    }

    pub fn add(&mut self, other: &SnapshotStats) {
        self.taken += other.taken;
        self.declined += other.declined;
        self.restored += other.restored;
        self.fallbacks += other.fallbacks;
        self.steps_skipped += other.steps_skipped;
    }
}

/// The prefixes whose snapshots the target holds.
pub struct Snapshots {
    entries: HashMap<u64, Arc<Prefix>>,
    pub stats: SnapshotStats,
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
        }
    }

    /// The deepest snapshot whose prefix begins `ids`, with its key.
    pub fn deepest(&self, ids: &[EventId]) -> Option<(u64, Arc<Prefix>)> {
        let keys = keys(ids);
        keys.iter().enumerate().rev().find_map(|(depth, k)| {
            let p = self.entries.get(k)?;
            (p.ids[..] == ids[..depth]).then(|| (*k, p.clone()))
        })
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
}
