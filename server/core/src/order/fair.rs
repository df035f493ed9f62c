//! The fair continuation (MaceMC): how a run that reaches its event limit goes on before
//! liveness is judged.
//!
//! A run that reaches the event limit is not a dead state: before liveness is judged it gets a
//! fair continuation (the default order, no faults, timers by deadline) of up to the limit
//! again. A random walk needs it to leave its random choices behind; a default-order tail needs
//! it too, as it fires the first timer listed, and a timer that re-arms itself there starves
//! the others'. A path that holds such a continuation replays past the limit.

use std::collections::HashMap;

use flymc_model::{EventId, EventKind, NodeId};

use super::{default_pick, Order, TimerRank};
use crate::run::Enabled;

/// Virtual time for ranking timers: when each pending timer was armed, on a clock that only
/// fired timers advance (to their deadline); messages take no time. Kept from a run's first
/// step, not from the limit on, as timers armed earlier are due earlier.
#[derive(Debug, Default)]
struct TimerClock {
    /// When each node's timer of each name last fired.
    last_fired: HashMap<(NodeId, String), usize>,
    armed: HashMap<EventId, u64>,
    now: u64,
}

impl TimerClock {
    fn observe(&mut self, enabled: &[Enabled], chosen: usize, step: usize) {
        for e in enabled.iter().filter(|e| e.event.delay_ms.is_some()) {
            self.armed.entry(e.event.id).or_insert(self.now);
        }
        let event = &enabled[chosen].event;
        if event.kind == EventKind::Timeout {
            self.last_fired.insert((event.to, event.name.clone()), step);
            if let (Some(d), Some(at)) = (event.delay_ms, self.armed.get(&event.id)) {
                self.now = self.now.max(at + d);
            }
        }
    }

    fn rank(&self, e: &Enabled) -> TimerRank {
        TimerRank {
            deadline: e
                .event
                .delay_ms
                .map(|d| self.armed.get(&e.event.id).copied().unwrap_or(self.now) + d),
            last_fired: self
                .last_fired
                .get(&(e.event.to, e.event.name.clone()))
                .map_or(0, |s| s + 1),
        }
    }
}

/// The fair continuation itself: the default order with timers ranked as a real clock would
/// fire them. It gets no continuation of its own.
#[derive(Debug)]
pub struct Fair {
    clock: TimerClock,
}

impl Order for Fair {
    fn pick(&mut self, enabled: &[Enabled], asleep: &dyn Fn(&Enabled) -> bool) -> Option<usize> {
        default_pick(enabled, asleep, Some(&|e: &Enabled| self.clock.rank(e)))
    }

    fn observe(&mut self, enabled: &[Enabled], chosen: usize, step: usize) {
        self.clock.observe(enabled, chosen, step);
    }
}

/// `first` until the event limit, then the fair continuation, which starts from the clock kept
/// while `first` (and the prefix) ran.
#[derive(Debug)]
pub struct FairAfter<O> {
    first: O,
    clock: TimerClock,
}

impl<O: Order> FairAfter<O> {
    pub fn new(first: O) -> Self {
        FairAfter {
            first,
            clock: TimerClock::default(),
        }
    }
}

impl<O: Order> Order for FairAfter<O> {
    fn pick(&mut self, enabled: &[Enabled], asleep: &dyn Fn(&Enabled) -> bool) -> Option<usize> {
        self.first.pick(enabled, asleep)
    }

    fn observe(&mut self, enabled: &[Enabled], chosen: usize, step: usize) {
        self.clock.observe(enabled, chosen, step);
        self.first.observe(enabled, chosen, step);
    }

    fn continuation(&mut self) -> Option<Box<dyn Order>> {
        let clock = std::mem::take(&mut self.clock);
        Some(Box::new(Fair { clock }))
    }
}
