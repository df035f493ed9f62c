//! When must two events be explored in both orders?
//!
//! Every reducing strategy judges pairs of events with a [`Dependence`]: MoDist's "same node"
//! rule, SAMC's white-box rules, or FlyMC's sets-file independence. The executor uses the same
//! judgement to honour a plan's sleep set.

use std::collections::HashSet;

use flymc_model::{Event, EventId, EventKind, GlobalState};

use crate::executor::Run;

pub trait Dependence {
    /// May running `a` then `b` from `state` end differently from `b` then `a`? `b` need not
    /// be enabled in `state` yet (a race's later event usually is not).
    fn dependent_at(&mut self, state: &GlobalState, a: &Event, b: &Event) -> bool;

    /// Steps `i < j` of `run`, judged in the state before step `i`. Besides what
    /// [`Dependence::dependent_at`] says, on a system whose crashes lose what was sent
    /// (`Run::crash_loses_sent`), a message from node `c` delivered at `i` and a crash of `c`
    /// at `j` are dependent ([`crash_may_drop`]).
    fn dependent(&mut self, run: &Run, i: usize, j: usize) -> bool {
        let (a, b) = (run.steps[i].event(), run.steps[j].event());
        (run.crash_loses_sent && crash_may_drop(a, b)) || self.dependent_at(&run.states[i], a, b)
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

/// Is `later` a crash of the node that sent message `earlier`? Run first, the crash may drop
/// the message before it leaves (real Raft nodes lose the requests they had not sent:
/// `RealConfig::crash_loses_outbound`), so the two do not commute, although they happen at
/// different nodes. Without this a search never places a crash between a node's step and the
/// delivery of what that step sent (async-raft's apply-before-match needs the leader to crash
/// with its new entry sent to nobody). Where a crash keeps its node's messages in flight (the
/// simulated targets) the two commute, and the rule is off.
pub fn crash_may_drop(earlier: &Event, later: &Event) -> bool {
    later.kind == EventKind::Crash
        && earlier.kind == EventKind::Message
        && earlier.from == Some(later.to)
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
