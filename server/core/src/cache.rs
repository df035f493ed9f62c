//! The state-event cache (FlyMC §5): when S + e -> S' has been seen, the executor can take S'
//! from history instead of waiting for the target to settle.

use std::collections::HashMap;

use flymc_model::{EventId, GlobalState};

/// Entries beyond this are not stored (lookups still count), bounding memory on long runs.
const MAX_ENTRIES: usize = 500_000;

#[derive(Default)]
pub struct StateEventCache {
    map: HashMap<(u64, EventId), (GlobalState, u64)>,
    pub hits: u64,
    pub misses: u64,
}

impl StateEventCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// S' for `event` enabled in the state hashed `before`, counting the hit or miss.
    pub fn lookup(&mut self, before: u64, event: EventId) -> Option<(GlobalState, u64)> {
        match self.map.get(&(before, event)) {
            Some(v) => {
                self.hits += 1;
                Some(v.clone())
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    pub fn insert(&mut self, before: u64, event: EventId, after: &GlobalState, hash: u64) {
        if self.map.len() < MAX_ENTRIES {
            self.map.insert((before, event), (after.clone(), hash));
        }
    }

    pub fn hit_rate(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            0.0
        } else {
            self.hits as f64 / total as f64
        }
    }
}
