//! What a strategy hands the executor: event identities to follow, then the order to go on in.

use flymc_model::EventId;
use serde::{Deserialize, Serialize};

use crate::order::{
    DefaultOrder, FairAfter, FairOrder, FairParams, Order, PctOrder, PctParams, RandomOrder, Stop,
};

/// What to do once the prefix is used up: the order policy a strategy chooses for the rest of
/// the run. A plan names the policy rather than holding it, so plans stay plain values that
/// strategies queue, clone and compare; [`Tail::order`] builds the policy for one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Tail {
    /// The oldest pending message first, then client requests, then timers; never a crash or
    /// reboot: the order of a network that delivers promptly and clients and timers that wait.
    Fifo,
    /// A uniformly random enabled event, crashes and reboots included, from this seed.
    Random(u64),
    /// PCTCP: random priorities over causal chains with priority change points, and crashes
    /// and reboots at random steps ([`PctOrder`]).
    Pct(PctParams),
    /// Stop when the prefix is used up (replay).
    Stop,
    /// A random walk from the prefix's end state (MaceMC): `depth` random events, never a
    /// crash or reboot, biased to a prompt network ([`RandomOrder::walk`]), and no fair
    /// continuation; how [`crate::liveness`] asks whether a state can still reach `p`.
    Walk { seed: u64, depth: usize },
    /// CHESS's fair scheduler ([`FairOrder`]) up to its depth bound.
    Fair(FairParams),
}

impl Tail {
    /// The policy that picks this tail's events in one run. The default order, random runs and
    /// PCTCP hand over to the fair scheduler at the event limit ([`FairAfter`]); a replay stops,
    /// and a liveness walk and the fair scheduler itself go on to their own length.
    pub fn order(self) -> Box<dyn Order> {
        match self {
            Tail::Fifo => Box::new(FairAfter::new(DefaultOrder)),
            Tail::Random(seed) => Box::new(FairAfter::new(RandomOrder::new(seed))),
            Tail::Pct(p) => Box::new(FairAfter::new(PctOrder::new(p))),
            Tail::Stop => Box::new(Stop),
            Tail::Walk { seed, .. } => Box::new(RandomOrder::walk(seed)),
            Tail::Fair(p) => Box::new(FairOrder::new(p)),
        }
    }

    /// The step count a run with this tail and a prefix of `prefix` events ends at, when the
    /// tail sets its own rather than the workload's event limit.
    pub fn limit(self, prefix: usize) -> Option<usize> {
        match self {
            Tail::Walk { depth, .. } => Some(prefix + depth),
            Tail::Fair(p) => Some(prefix.max(p.bound)),
            _ => None,
        }
    }

    /// Does this tail honour a plan's sleep set? Sleep sets are worked out for default-order
    /// branches (DPOR's); a random walk picks regardless and a replay picks nothing.
    pub fn sleeps(self) -> bool {
        self == Tail::Fifo
    }
}

/// A path to explore: forced event identities, then the tail rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub prefix: Vec<EventId>,
    pub tail: Tail,
    /// Give up (instead of continuing with the tail) when a prefix event is not enabled.
    pub strict: bool,
    /// The sleep set from step `sleep_at` on: events whose orders from there are explored by
    /// other paths, so the tail does not pick them until an event they depend on runs
    /// (Godefroid's sleep sets). It is carried through the rest of the prefix, which it does not
    /// constrain. Honoured only when the executor is given a dependence judgement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sleep: Vec<EventId>,
    #[serde(default)]
    pub sleep_at: usize,
}

impl Plan {
    pub fn fifo(prefix: Vec<EventId>) -> Self {
        Plan {
            prefix,
            tail: Tail::Fifo,
            strict: false,
            sleep: Vec::new(),
            sleep_at: 0,
        }
    }

    /// Exactly these events, in this order, and nothing after: a replay. An event that never
    /// becomes enabled ends the run as diverged.
    pub fn replay(prefix: Vec<EventId>) -> Self {
        Plan {
            prefix,
            tail: Tail::Stop,
            strict: true,
            sleep: Vec::new(),
            sleep_at: 0,
        }
    }
}
