//! Fault budgets: which crashes and reboots a run may still inject, and where they may strike
//! (the workload's `[faults] when`, and the run's [`CrashPoints`]). A node down at the start is
//! crashed without a crash spent: its first reboot is its first start.

use flymc_lang::Condition;
use flymc_model::{Event, EventId, GlobalState, NodeId, VectorClock, Workload};

use crate::clocks::Clocks;
use crate::run::Enabled;

/// The moments at which a crash is offered.
///
/// A crash destroys what a node holds in memory and keeps what it wrote to disk, so the crashes
/// that lead somewhere new are those that strike right after a persistent write (CrashTuner's
/// meta-info rule). Between two writes of a node, a crash before or after a message it handled
/// leaves the same disk behind; it differs only in what the other nodes saw of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CrashPoints {
    /// Before every step, for every node the budget allows.
    #[default]
    Everywhere,
    /// For node `n` only when `n`'s last step was a crash-point write (a `disk:` event), or
    /// at a rest point (nothing pending but timers: no message, client request or write).
    /// Given up: a crash while messages are in flight between writes (a node that handled a
    /// message, changed its memory and sent replies, but wrote nothing since its last write),
    /// and a crash with a write pending (taken as the crash right after the previous one).
    /// For systems whose nodes report their writes; others have only rest points.
    AfterWrites,
}

impl CrashPoints {
    /// After writes for a system whose nodes report them, everywhere for the rest.
    pub fn for_system(system: &dyn flymc_model::System) -> Self {
        if system.has(flymc_model::Feature::ReportsWrites) {
            CrashPoints::AfterWrites
        } else {
            CrashPoints::Everywhere
        }
    }
}

#[derive(Clone)]
pub(crate) struct Faults {
    crashes_left: u32,
    reboots_left: u32,
    crash_nodes: Vec<NodeId>,
    crashed: Vec<bool>,
    crash_count: Vec<u32>,
    reboot_count: Vec<u32>,
    when: Option<Condition>,
    points: CrashPoints,
    /// Per node: its last step was a crash-point write.
    just_wrote: Vec<bool>,
}

impl Faults {
    pub fn new(w: &Workload, points: CrashPoints) -> Self {
        let mut crashed = vec![false; w.nodes];
        for &node in &w.down {
            crashed[node] = true;
        }
        Faults {
            crashes_left: w.crashes,
            reboots_left: w.reboots,
            crash_nodes: w.crash_nodes.clone(),
            crashed,
            crash_count: vec![0; w.nodes],
            reboot_count: vec![0; w.nodes],
            when: w.fault_when.clone(),
            points,
            just_wrote: vec![false; w.nodes],
        }
    }

    /// Crash and reboot candidates allowed by the budgets in `state`, appended to `enabled`.
    pub fn add_candidates(&self, enabled: &mut Vec<Enabled>, clocks: &Clocks, state: &GlobalState) {
        if self.when.as_ref().is_some_and(|c| !c.holds(&state.nodes)) {
            return;
        }
        let at_rest =
            self.points == CrashPoints::Everywhere || enabled.iter().all(|e| e.event.is_timer());
        for node in 0..self.crashed.len() {
            if self.crashed[node] {
                if self.reboots_left > 0 {
                    // A reboot comes causally after the crash it undoes; the first start of a
                    // node down from the start has no causal past.
                    let vc = match self.crash_count[node] {
                        0 => VectorClock::new(self.crashed.len()),
                        k => clocks.of_step(EventId::crash(node, k - 1)),
                    };
                    enabled.push(Enabled {
                        event: Event::reboot(node, self.reboot_count[node]),
                        vc,
                    });
                }
            } else if self.crashes_left > 0
                && self.crash_nodes.contains(&node)
                && (at_rest || self.just_wrote[node])
            {
                // A crash can strike at any moment: no causal past. The nth crash of a node
                // comes after its previous reboot.
                let vc = match self.reboot_count[node] {
                    0 => VectorClock::new(self.crashed.len()),
                    k => clocks.of_step(EventId::reboot(node, k - 1)),
                };
                enabled.push(Enabled {
                    event: Event::crash(node, self.crash_count[node]),
                    vc,
                });
            }
        }
    }

    /// After every step, with the step's event: whose last step was a write.
    pub fn stepped(&mut self, event: &Event) {
        if let Some(w) = self.just_wrote.get_mut(event.to) {
            *w = event.is_write();
        }
    }

    pub fn crashed(&mut self, node: NodeId) {
        self.crashes_left -= 1;
        self.crashed[node] = true;
        self.crash_count[node] += 1;
    }

    pub fn rebooted(&mut self, node: NodeId) {
        self.reboots_left -= 1;
        self.crashed[node] = false;
        self.reboot_count[node] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::workload;
    use flymc_model::EventKind;

    fn event(kind: EventKind, name: &str, to: NodeId) -> Event {
        Event {
            id: EventId(flymc_model::stable_hash(name.as_bytes()) ^ to as u64),
            kind,
            name: name.into(),
            from: None,
            to,
            fields: Default::default(),
            parent: None,
            delay_ms: None,
        }
    }

    /// The nodes a crash is offered for, with `pending` enabled.
    fn crashable(f: &Faults, pending: &[Event]) -> Vec<NodeId> {
        let clocks = Clocks::new(2);
        let mut enabled: Vec<Enabled> = pending
            .iter()
            .map(|e| Enabled {
                event: e.clone(),
                vc: VectorClock::new(2),
            })
            .collect();
        f.add_candidates(&mut enabled, &clocks, &GlobalState::new(Vec::new(), &[]));
        enabled
            .iter()
            .filter(|e| e.event.kind == EventKind::Crash)
            .map(|e| e.event.to)
            .collect()
    }

    #[test]
    fn after_writes_offers_a_crash_right_after_the_nodes_write_or_at_rest() {
        let w = workload(2, "[]", "[faults]\ncrashes = 2");
        let msg = event(EventKind::Message, "prepare", 1);
        let write = event(EventKind::Timeout, "disk:log", 0);
        let timer = event(EventKind::Timeout, "tick", 1);

        let mut f = Faults::new(&w, CrashPoints::AfterWrites);
        // A message in flight and no write yet: no crash point.
        assert_eq!(
            crashable(&f, std::slice::from_ref(&msg)),
            Vec::<NodeId>::new()
        );
        // A write pending is no rest point either.
        assert_eq!(
            crashable(&f, std::slice::from_ref(&write)),
            Vec::<NodeId>::new()
        );
        // n0 just wrote: n0 may crash, n1 (which wrote nothing) may not.
        f.stepped(&write);
        assert_eq!(crashable(&f, std::slice::from_ref(&msg)), vec![0]);
        // Another node's step leaves n0 right after its write.
        f.stepped(&msg);
        assert_eq!(crashable(&f, std::slice::from_ref(&msg)), vec![0]);
        // n0 handles a message: its write is no longer its last step.
        f.stepped(&event(EventKind::Message, "ack", 0));
        assert_eq!(
            crashable(&f, std::slice::from_ref(&msg)),
            Vec::<NodeId>::new()
        );
        // Nothing pending but timers (or nothing at all): a rest point, every node may crash.
        assert_eq!(crashable(&f, std::slice::from_ref(&timer)), vec![0, 1]);
        assert_eq!(crashable(&f, &[]), vec![0, 1]);

        // Everywhere: before every step.
        let f = Faults::new(&w, CrashPoints::Everywhere);
        assert_eq!(crashable(&f, std::slice::from_ref(&msg)), vec![0, 1]);
    }
}
