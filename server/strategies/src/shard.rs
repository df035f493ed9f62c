//! One shard of a systematic search (`flymc hunt --shard K/N`): the paths whose first
//! [`DEPTH`] events fall to this shard, found by hashing those events' identities, plus the few
//! paths above that depth, which every shard runs because their runs are where the branches
//! come from.
//!
//! Sound for strategies whose new paths extend the prefix of the path they came from (`dfs`):
//! a shard then generates, from its own paths, every path below them, so the shards together
//! reach every state one unsharded search reaches (each keeps its own visited states, so a
//! state two shards reach is expanded by both). Strategies that backtrack into a path's prefix
//! (the DPOR family) would hand a shard paths it drops and another never generates, so they
//! are not sharded this way ([`shards_by_branches`]).

use flymc_core::plan::Plan;
use flymc_core::run::Run;
use flymc_model::stable_hash;

use super::{Strategy, StrategyStats};

/// Events of the prefix that decide a path's shard: enough first choice points that a
/// handful of shards each get a share.
pub const DEPTH: usize = 2;

/// Strategies that [`Sharded`] splits soundly.
pub fn shards_by_branches(kind: crate::StrategyKind) -> bool {
    kind == crate::StrategyKind::Dfs
}

pub struct Sharded {
    inner: Box<dyn Strategy>,
    shard: u32,
    of: u32,
    /// Paths another shard runs.
    skipped: u64,
}

impl Sharded {
    pub fn new(inner: Box<dyn Strategy>, shard: u32, of: u32) -> Self {
        assert!(shard < of, "shard {shard} of {of}");
        Sharded {
            inner,
            shard,
            of,
            skipped: 0,
        }
    }

    /// Whose path is this: every shard's (shorter prefix) or one shard's.
    fn owner(&self, plan: &Plan) -> Option<u32> {
        let first = plan.prefix.get(..DEPTH)?;
        let bytes: Vec<u8> = first.iter().flat_map(|id| id.0.to_le_bytes()).collect();
        Some((stable_hash(&bytes) % u64::from(self.of)) as u32)
    }
}

impl Strategy for Sharded {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn next_plan(&mut self) -> Option<Plan> {
        loop {
            let plan = self.inner.next_plan()?;
            match self.owner(&plan) {
                Some(k) if k != self.shard => self.skipped += 1,
                _ => return Some(plan),
            }
        }
    }

    fn observe(&mut self, plan: &Plan, run: &Run) {
        self.inner.observe(plan, run)
    }

    fn queue_len(&self) -> usize {
        self.inner.queue_len()
    }

    fn dependence(&self) -> Option<Box<dyn flymc_core::dependence::Dependence + Send>> {
        self.inner.dependence()
    }

    fn stats(&self) -> StrategyStats {
        let mut s = self.inner.stats();
        s.pruned.push(("another shard".into(), self.skipped));
        s
    }

    fn exhaustion(&self) -> &'static str {
        "this shard's part of the search space is exhausted"
    }
}
