//! When must two events be explored in both orders?
//!
//! Every reducing strategy judges pairs of events with a [`Dependence`]: MoDist's "same node"
//! rule, SAMC's white-box rules, or FlyMC's sets-file independence. The executor uses the same
//! judgement to honour a plan's sleep set.

use std::collections::HashSet;

use flymc_model::{Event, EventId, EventKind, GlobalState};

use crate::run::Run;

pub trait Dependence {
    /// May running `a` then `b` from `state` end differently from `b` then `a`? `b` need not
    /// be enabled in `state` yet (a race's later event usually is not).
    fn dependent_at(&mut self, state: &GlobalState, a: &Event, b: &Event) -> bool;

    /// [`Dependence::dependent_at`], and on a system whose crashes lose what was sent
    /// (`crash_loses_sent`, [`Feature::CrashLosesSent`](flymc_model::Feature::CrashLosesSent)),
    /// also a message from node `c` and a crash of `c`, in either order ([`crash_may_drop`]).
    /// Sleep sets judge with this: a crash asleep must wake when its node's message is
    /// delivered, or the crash between that delivery and the next is never tried.
    fn dependent_on(
        &mut self,
        state: &GlobalState,
        a: &Event,
        b: &Event,
        crash_loses_sent: bool,
    ) -> bool {
        (crash_loses_sent && (crash_may_drop(a, b) || crash_may_drop(b, a)))
            || self.dependent_at(state, a, b)
    }

    /// Steps `i < j` of `run`, judged in the state before step `i`
    /// ([`Dependence::dependent_on`] with the run's `crash_loses_sent`).
    fn dependent(&mut self, run: &Run, i: usize, j: usize) -> bool {
        let (a, b) = (run.steps[i].event(), run.steps[j].event());
        self.dependent_on(&run.states[i], a, b, run.crash_loses_sent)
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
    crash_loses_sent: bool,
) -> Vec<Event> {
    sleep
        .iter()
        .filter(|z| z.id != chosen.id && !dep.dependent_on(state, z, chosen, crash_loses_sent))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use flymc_model::{EventId, EventKind, GlobalState};
    use serde_json::Map;

    use super::*;

    /// Dependent only at the same node, as MoDist judges.
    struct SameNode;
    impl Dependence for SameNode {
        fn dependent_at(&mut self, _state: &GlobalState, a: &Event, b: &Event) -> bool {
            a.to == b.to
        }
    }

    fn message(id: u64, from: usize, to: usize) -> Event {
        Event {
            id: EventId(id),
            kind: EventKind::Message,
            name: "append".into(),
            from: Some(from),
            to,
            fields: Map::new(),
            parent: None,
            delay_ms: None,
        }
    }

    #[test]
    fn a_sleeping_crash_wakes_when_its_node_s_message_is_delivered_if_crashes_lose_what_was_sent() {
        let state = GlobalState::new(Vec::new(), &[]);
        let crash = Event::crash(1, 0);
        let from_n1 = message(7, 1, 0);
        let from_n2 = message(8, 2, 0);
        let sleep = [crash.clone()];
        // Where a crash keeps what its node sent in flight, the two commute at different nodes.
        assert_eq!(
            propagate_sleep(&mut SameNode, &state, &sleep, &from_n1, false).len(),
            1
        );
        // Where it drops it, crashing n1 before or after n0 takes n1's message differs: the
        // crash must be tried after the delivery too.
        assert!(propagate_sleep(&mut SameNode, &state, &sleep, &from_n1, true).is_empty());
        // Another node's message still commutes with the crash.
        assert_eq!(
            propagate_sleep(&mut SameNode, &state, &sleep, &from_n2, true).len(),
            1
        );
        // Symmetric: a sleeping message of n1 wakes when n1 crashes.
        assert!(propagate_sleep(&mut SameNode, &state, &[from_n1], &crash, true).is_empty());
    }
}
