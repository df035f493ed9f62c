//! `fair`: CHESS's fair stateless model checking (Musuvathi and Qadeer, PLDI'08) for
//! message-passing nodes. Every path runs the fair scheduler ([`FairOrder`]: Algorithm 1 with
//! nodes as threads, a node yielding when an event takes it back to a state it held) to a
//! large depth bound, ten times the workload's event limit.
//!
//! A path that reaches the bound with the liveness property failing is a *livelock*, a fair
//! run that never settles; it is judged like every liveness finding (dead end states only,
//! with their critical transition, [`flymc_core::liveness`]). A node the scheduler kept
//! running for the workload's event limit of its own steps without one yield breaks the good
//! samaritan property (`good-samaritan`), which fairness relies on, and is reported under that
//! name instead.
//!
//! The first path chooses among what the scheduler allows as the default order does; later
//! paths choose at random (CHESS's demonic choice, sampled rather than enumerated: a
//! depth-first search of every choice to a bound of thousands of events would never end).
//! Faults are never injected: fairness is about the schedule of the nodes' own events.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Strategy, StrategyContext};
use flymc_core::order::FairParams;
use flymc_core::plan::{Plan, Tail};
use flymc_core::run::Run;

/// The depth bound, in workload event limits.
pub const BOUND_LIMITS: usize = 10;

pub struct Fair {
    rng: ChaCha8Rng,
    limit: usize,
    first: bool,
}

impl Fair {
    pub fn new(ctx: &StrategyContext) -> Self {
        Fair {
            rng: ChaCha8Rng::seed_from_u64(ctx.seed),
            limit: ctx.workload.max_events,
            first: true,
        }
    }
}

impl Strategy for Fair {
    fn name(&self) -> &'static str {
        crate::StrategyKind::Fair.name()
    }

    /// Never exhausts: every path after the first is a fresh draw.
    fn next_plan(&mut self) -> Option<Plan> {
        let random = !std::mem::take(&mut self.first);
        Some(Plan {
            prefix: Vec::new(),
            tail: Tail::Fair(FairParams {
                seed: self.rng.gen(),
                random,
                bound: BOUND_LIMITS * self.limit,
                samaritan: self.limit,
            }),
            strict: false,
            sleep: Vec::new(),
            sleep_at: 0,
        })
    }

    fn observe(&mut self, _plan: &Plan, _run: &Run) {}

    fn queue_len(&self) -> usize {
        0
    }
}
