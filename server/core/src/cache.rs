//! The state-event cache (FlyMC §5): when S + e -> S' has been seen, the executor can take S'
//! from history instead of waiting for the target to settle.
//!
//! Runs may be under way side by side (`--jobs`), and what a run finds here must not depend
//! on which other runs happened to finish first. So every entry carries the number of the path
//! that recorded it; a run looks through a [`CacheView`] that sees only the entries of paths
//! already observed when its plan was handed out (its horizon), and its own. The explore loop
//! merges a run's new entries when it observes the run, in path order.

use std::collections::HashMap;
use std::sync::{RwLock, RwLockReadGuard};

use flymc_model::{EventId, GlobalState};

/// Entries beyond this are not stored (lookups still count), bounding memory on long runs.
const MAX_ENTRIES: usize = 500_000;

type Key = (u64, EventId);

struct Entry {
    state: GlobalState,
    hash: u64,
    /// The path whose run recorded it.
    path: u64,
}

#[derive(Default)]
pub struct StateEventCache {
    map: RwLock<HashMap<Key, Entry>>,
}

impl StateEventCache {
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> RwLockReadGuard<'_, HashMap<Key, Entry>> {
        self.map.read().unwrap_or_else(|p| p.into_inner())
    }

    /// What one run sees: the entries of paths up to `horizon` (the last path observed when
    /// its plan was handed out), then its own.
    pub fn view(&self, horizon: u64) -> CacheView<'_> {
        CacheView {
            shared: self,
            horizon,
            own: HashMap::new(),
            hits: 0,
            misses: 0,
        }
    }

    /// Add what the run of path `path` recorded; an entry already there stays (the earlier
    /// path's, for a deterministic target the same state).
    pub fn merge(&self, path: u64, entries: RunEntries) {
        let mut map = self.map.write().unwrap_or_else(|p| p.into_inner());
        for (key, (state, hash)) in entries.0 {
            if map.len() >= MAX_ENTRIES {
                break;
            }
            map.entry(key).or_insert(Entry { state, hash, path });
        }
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What one run records, to be merged when it is observed.
#[derive(Default)]
pub struct RunEntries(HashMap<Key, (GlobalState, u64)>);

/// One run's window on the cache ([`StateEventCache::view`]), counting its hits and misses.
pub struct CacheView<'c> {
    shared: &'c StateEventCache,
    horizon: u64,
    own: HashMap<Key, (GlobalState, u64)>,
    pub hits: u64,
    pub misses: u64,
}

impl CacheView<'_> {
    /// S' for `event` enabled in the state hashed `before`, counting the hit or miss.
    pub fn lookup(&mut self, before: u64, event: EventId) -> Option<(GlobalState, u64)> {
        let key = (before, event);
        let found = self.own.get(&key).cloned().or_else(|| {
            self.shared
                .read()
                .get(&key)
                .filter(|e| e.path <= self.horizon)
                .map(|e| (e.state.clone(), e.hash))
        });
        match found {
            Some(v) => {
                self.hits += 1;
                Some(v)
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    pub fn insert(&mut self, before: u64, event: EventId, after: &GlobalState, hash: u64) {
        if self.own.len() < MAX_ENTRIES {
            self.own.insert((before, event), (after.clone(), hash));
        }
    }

    /// What this run recorded.
    pub fn into_entries(self) -> RunEntries {
        RunEntries(self.own)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_sees_the_paths_before_its_horizon_and_itself_never_later_ones() {
        let cache = StateEventCache::new();
        let s = GlobalState::new(Vec::new(), &[]);
        let (e1, e2, e3) = (EventId(1), EventId(2), EventId(3));
        let mut path1 = cache.view(0);
        path1.insert(10, e1, &s, 11);
        assert!(path1.lookup(10, e1).is_some(), "a run sees its own entries");
        // Path 2 was handed out before path 1 was observed (two jobs): horizon 0.
        let mut path2 = cache.view(0);
        path2.insert(10, e2, &s, 12);
        cache.merge(1, path1.into_entries());
        assert_eq!(
            path2.lookup(10, e1),
            None,
            "path 1 was observed after path 2 began"
        );
        // Path 3 was handed out after path 1 was observed, but path 2 still runs.
        let mut path3 = cache.view(1);
        cache.merge(2, path2.into_entries());
        assert_eq!(path3.lookup(10, e1).map(|(_, h)| h), Some(11));
        assert_eq!(path3.lookup(10, e2), None, "path 2 is beyond its horizon");
        assert_eq!(path3.lookup(10, e3), None);
        assert_eq!((path3.hits, path3.misses), (1, 2));
        // A later path sees both.
        let mut path4 = cache.view(2);
        assert_eq!(path4.lookup(10, e2).map(|(_, h)| h), Some(12));
    }
}
