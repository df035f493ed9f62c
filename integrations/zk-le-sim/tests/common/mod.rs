//! A small test-only executor: enable events chosen by the test, settle, check properties.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use flymc_model::{
    Event, EventKind, GlobalState, NodeId, Property, PropertyKind, System, Target, Workload,
};
use flymc_zk_le_sim::ZkLeSimSystem;

pub fn workload_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../workloads/zk-le-sim")
        .join(format!("{name}.toml"))
}

pub fn workload(name: &str) -> Workload {
    Workload::load(&workload_path(name)).expect("workload parses")
}

/// The workload `name` with `variant = "..."` replaced.
pub fn workload_with_variant(name: &str, variant: &str) -> Workload {
    let path = workload_path(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("variant"))
        .expect("workload names a variant");
    let text = text.replace(line, &format!("variant = \"{variant}\""));
    Workload::parse(&path, &text).unwrap()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Event(usize), // index into pending()
    Crash(NodeId),
    Reboot(NodeId),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    Quiescent,
    MaxEvents,
    Violation { property: String, message: String },
}

pub struct Run {
    pub workload: Workload,
    pub target: Box<dyn Target>,
    props: Vec<Box<dyn Property>>,
    pub states: Vec<GlobalState>,
    pub trace: Vec<String>,
    pub ids: Vec<String>,
    pub crashes_left: u32,
    pub reboots_left: u32,
}

impl Run {
    pub fn new(workload: Workload) -> Run {
        let sys = ZkLeSimSystem;
        let mut target = sys.target(&workload).expect("target");
        target.start(&workload).expect("start");
        let s0 = target.settle().unwrap();
        let props = sys.properties(&workload);
        let mut run = Run {
            crashes_left: workload.crashes,
            reboots_left: workload.reboots,
            workload,
            target,
            props,
            states: Vec::new(),
            trace: Vec::new(),
            ids: Vec::new(),
        };
        run.states.push(s0);
        run
    }

    pub fn pending(&self) -> Vec<Event> {
        self.target.pending()
    }

    pub fn state(&self) -> &GlobalState {
        self.states.last().unwrap()
    }

    pub fn alive(&self, n: NodeId) -> bool {
        self.state().nodes[n].alive
    }

    /// Apply one step, settle, check safety. `Some(End)` when the run is over.
    pub fn step(&mut self, step: Step) -> Option<End> {
        match step {
            Step::Event(i) => {
                let e = self.pending()[i].clone();
                self.trace.push(e.describe());
                self.ids.push(e.id.to_string());
                self.target.enable(e.id).unwrap();
            }
            Step::Crash(n) => {
                assert!(self.crashes_left > 0);
                self.crashes_left -= 1;
                self.trace.push(format!("crash n{n}"));
                self.ids.push(format!("crash n{n}"));
                self.target.crash(n).unwrap();
            }
            Step::Reboot(n) => {
                assert!(self.reboots_left > 0);
                self.reboots_left -= 1;
                self.trace.push(format!("reboot n{n}"));
                self.ids.push(format!("reboot n{n}"));
                self.target.reboot(n).unwrap();
            }
        }
        let s = self.target.settle().unwrap();
        self.states.push(s);
        let s = self.states.last().unwrap();
        for p in self.props.iter_mut() {
            if p.kind() == PropertyKind::Safety {
                if let Err(message) = p.check(s) {
                    return Some(End::Violation {
                        property: p.name().to_string(),
                        message,
                    });
                }
            }
        }
        None
    }

    /// The end of a run: liveness on the final state.
    pub fn finish(&mut self, end: End) -> End {
        if matches!(end, End::Violation { .. }) {
            return end;
        }
        let s = self.states.last().unwrap().clone();
        for p in self.props.iter_mut() {
            if p.kind() == PropertyKind::Liveness {
                if let Err(message) = p.check(&s) {
                    return End::Violation {
                        property: p.name().to_string(),
                        message,
                    };
                }
            }
        }
        end
    }

    /// Drive with `policy` (given the pending events, returns a step or `None` to stop) until
    /// nothing is pending, a violation, or max_events.
    pub fn drive(&mut self, mut policy: impl FnMut(&Run, &[Event]) -> Option<Step>) -> End {
        loop {
            if self.trace.len() >= self.workload.max_events {
                return self.finish(End::MaxEvents);
            }
            let pending = self.pending();
            let Some(step) = policy(self, &pending) else {
                return self.finish(End::Quiescent);
            };
            if let Some(end) = self.step(step) {
                return self.finish(end);
            }
        }
    }

    pub fn var(&self, node: NodeId, name: &str) -> serde_json::Value {
        self.state().var(node, name).cloned().unwrap_or_default()
    }
}

/// FIFO: the oldest pending event.
pub fn fifo(_: &Run, pending: &[Event]) -> Option<Step> {
    if pending.is_empty() {
        None
    } else {
        Some(Step::Event(0))
    }
}

/// FIFO, except that a `finalize` timer fires only when nothing else is pending (finalizeWait
/// is long compared with message delays).
pub fn finalize_last(_: &Run, pending: &[Event]) -> Option<Step> {
    pending
        .iter()
        .position(|e| !(e.kind == EventKind::Timeout && e.name == "finalize"))
        .or(if pending.is_empty() { None } else { Some(0) })
        .map(Step::Event)
}

/// The first pending event matching `pred`.
pub fn find(pending: &[Event], pred: impl Fn(&Event) -> bool) -> Option<usize> {
    pending.iter().position(pred)
}

/// A deterministic xorshift generator for random schedules.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A random schedule with crashes and reboots drawn from the workload's budgets.
/// `fault_per_mille`: chance of a fault at each step when one is possible.
pub fn random_policy(
    seed: u64,
    fault_per_mille: u64,
) -> impl FnMut(&Run, &[Event]) -> Option<Step> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    move |run: &Run, pending: &[Event]| {
        let n = run.workload.nodes;
        let mut faults = Vec::new();
        if run.crashes_left > 0 {
            for &c in &run.workload.crash_nodes {
                if run.alive(c) {
                    faults.push(Step::Crash(c));
                }
            }
        }
        if run.reboots_left > 0 {
            for c in 0..n {
                if !run.alive(c) {
                    faults.push(Step::Reboot(c));
                }
            }
        }
        let fault_now = !faults.is_empty()
            && (pending.is_empty() && rng.below(2) == 0
                || rng.below(1000) < fault_per_mille as usize);
        if fault_now {
            return Some(faults[rng.below(faults.len())]);
        }
        if pending.is_empty() {
            return None;
        }
        Some(Step::Event(rng.below(pending.len())))
    }
}
