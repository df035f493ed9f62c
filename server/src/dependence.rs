//! When must two events be explored in both orders?
//!
//! Every reducing strategy judges pairs of events with a [`Dependence`]: MoDist's "same node"
//! rule, SAMC's white-box rules, or FlyMC's sets-file independence. The executor uses the same
//! judgement to honour a plan's sleep set.

use std::collections::HashSet;

use flymc_model::{Event, EventId, GlobalState};

use crate::executor::Run;

pub trait Dependence {
    /// May running `a` then `b` from `state` end differently from `b` then `a`? `b` need not
    /// be enabled in `state` yet (a race's later event usually is not).
    fn dependent_at(&mut self, state: &GlobalState, a: &Event, b: &Event) -> bool;

    /// Steps `i < j` of `run`, judged in the state before step `i`.
    fn dependent(&mut self, run: &Run, i: usize, j: usize) -> bool {
        self.dependent_at(&run.states[i], run.steps[i].event(), run.steps[j].event())
    }

    /// Is running `candidate` from the state before step `i` redundant given the events already
    /// scheduled there (e.g. SAMC's symmetric crashes)? Such candidates are pruned.
    fn redundant(
        &mut self,
        _run: &Run,
        _i: usize,
        _candidate: &Event,
        _scheduled: &HashSet<EventId>,
    ) -> bool {
        false
    }

    /// What pruning by [`Dependence::redundant`] is called in statistics.
    fn redundancy_name(&self) -> &'static str {
        "redundancy"
    }
}

/// The sleep set after running `chosen` from `state`: the sleeping events that commute with it
/// stay asleep (their orders after `chosen` are explored elsewhere), the others wake up.
pub fn propagate_sleep(
    dep: &mut dyn Dependence,
    state: &GlobalState,
    sleep: &[Event],
    chosen: &Event,
) -> Vec<Event> {
    sleep
        .iter()
        .filter(|z| z.id != chosen.id && !dep.dependent_at(state, z, chosen))
        .cloned()
        .collect()
}
