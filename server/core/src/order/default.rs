//! The default order: the order of a network that delivers promptly, and of clients and timers
//! that wait for it to be quiet.

use flymc_model::EventKind;

use super::Order;
use crate::run::Enabled;

/// [`default_pick`] with timers in the order the target lists them.
#[derive(Debug, Default)]
pub struct DefaultOrder;

impl Order for DefaultOrder {
    fn pick(&mut self, enabled: &[Enabled], asleep: &dyn Fn(&Enabled) -> bool) -> Option<usize> {
        default_pick(enabled, asleep, None)
    }
}

/// How the fair continuation ranks a pending timer.
pub(crate) struct TimerRank {
    /// Virtual time it is due, when its node said how long it waits.
    pub deadline: Option<u64>,
    /// 0 if it never fired at its node, else 1 + the step it last did.
    pub last_fired: usize,
}

/// The default order: the first pending message; a client request only when no message is in
/// flight, a crash-point disk write or timer only when neither is (external inputs arrive, and
/// timeouts fire, when the system is quiet); never a crash or reboot, which stay choices for the
/// strategies. Sleeping events are passed over.
///
/// With `timer_rank` (the fair continuation), timers are judged as a real clock would. A real
/// target lists pending events by node, and a timer that re-arms whenever its node gets a
/// message (ZooKeeper's election poll) would otherwise fire at the first node forever while
/// the others' never do: liveness judged on a schedule no real clock produces. So if the first
/// timer's duration is known, the timer with the earliest deadline among those whose duration
/// is known fires (ties: the one that fired least recently at its node); otherwise the first
/// timer's kind goes, at the node where it fired least recently. (Rotating among all timers
/// instead lets long timers, a leader's wait for its followers, fire as often as short ones,
/// which no real clock does either.)
pub(crate) fn default_pick(
    enabled: &[Enabled],
    asleep: &dyn Fn(&Enabled) -> bool,
    timer_rank: Option<&dyn Fn(&Enabled) -> TimerRank>,
) -> Option<usize> {
    // A crash-point disk write (`disk:<name>`, timer-like in the model) is a write in progress:
    // it completes before timers fire, as on a disk that is not stalled.
    let disk = |e: &Enabled| e.event.is_write();
    [EventKind::Message, EventKind::Client]
        .iter()
        .find_map(|k| {
            enabled
                .iter()
                .position(|e| e.event.kind == *k && !asleep(e))
        })
        .or_else(|| enabled.iter().position(|e| disk(e) && !asleep(e)))
        .or_else(|| {
            let first = enabled
                .iter()
                .position(|e| e.event.kind == EventKind::Timeout && !asleep(e))?;
            let Some(rank) = timer_rank else {
                return Some(first);
            };
            let timers = (0..enabled.len()).filter(|&i| {
                let e = &enabled[i];
                e.event.kind == EventKind::Timeout && !asleep(e)
            });
            if rank(&enabled[first]).deadline.is_some() {
                return timers
                    .filter_map(|i| {
                        let r = rank(&enabled[i]);
                        r.deadline.map(|d| (d, r.last_fired, i))
                    })
                    .min()
                    .map(|(_, _, i)| i);
            }
            // The same timer at another node, if it fired less recently.
            let name = &enabled[first].event.name;
            timers
                .filter(|&i| enabled[i].event.name == *name)
                .min_by_key(|&i| (rank(&enabled[i]).last_fired, i))
        })
}
