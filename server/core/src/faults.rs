//! Fault budgets: which crashes and reboots a run may still inject, and where the workload
//! lets them strike (`[faults] when`). A node down at the start is crashed without a crash
//! spent: its first reboot is its first start.

use flymc_model::guard::Condition;
use flymc_model::{Event, EventId, GlobalState, NodeId, VectorClock, Workload};

use crate::clocks::Clocks;
use crate::run::Enabled;

pub(crate) struct Faults {
    crashes_left: u32,
    reboots_left: u32,
    crash_nodes: Vec<NodeId>,
    crashed: Vec<bool>,
    crash_count: Vec<u32>,
    reboot_count: Vec<u32>,
    when: Option<Condition>,
}

impl Faults {
    pub fn new(w: &Workload) -> Self {
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
        }
    }

    /// Crash and reboot candidates allowed by the budgets in `state`, appended to `enabled`.
    pub fn add_candidates(&self, enabled: &mut Vec<Enabled>, clocks: &Clocks, state: &GlobalState) {
        if self.when.as_ref().is_some_and(|c| !c.holds(state)) {
            return;
        }
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
            } else if self.crashes_left > 0 && self.crash_nodes.contains(&node) {
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
