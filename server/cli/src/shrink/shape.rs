//! How simple a violating run is, and when one is simpler than another.

use flymc_core::order::{DefaultOrder, Order};
use flymc_core::run::Run;
use flymc_model::EventKind;

/// What a shrunk path is judged by, most important first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub events: usize,
    /// Crashes and reboots.
    pub faults: usize,
    /// Client requests.
    pub clients: usize,
    /// Steps whose event is not the one the default order would have taken there (faults
    /// excluded, which the default order never takes).
    pub reorderings: usize,
}

impl Shape {
    pub fn of(run: &Run) -> Shape {
        let mut shape = Shape {
            events: run.steps.len(),
            faults: 0,
            clients: 0,
            reorderings: 0,
        };
        for step in &run.steps {
            match step.event().kind {
                EventKind::Crash | EventKind::Reboot => shape.faults += 1,
                EventKind::Client => shape.clients += 1,
                _ => {}
            }
            if !step.event().is_fault() && default_choice(step) != Some(step.chosen) {
                shape.reorderings += 1;
            }
        }
        shape
    }

    /// Is `self` simpler than `than`? Never more faults (a shrunk path must not need more of
    /// them), and less in the order events, faults, client requests, reorderings: a strict
    /// decrease in a well-founded order, so shrinking ends.
    pub fn simpler_than(&self, than: &Shape) -> bool {
        self.faults <= than.faults && self.key() < than.key()
    }

    fn key(&self) -> (usize, usize, usize, usize) {
        (self.events, self.faults, self.clients, self.reorderings)
    }
}

/// The index in `step.enabled` the default order picks (nothing asleep).
pub fn default_choice(step: &flymc_core::run::Step) -> Option<usize> {
    DefaultOrder.pick(&step.enabled, &|_| false)
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} events, {} faults, {} client requests, {} reorderings",
            self.events, self.faults, self.clients, self.reorderings
        )
    }
}
