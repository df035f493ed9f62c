//! What the executor hands back: one executed path, step by step, and why it ended.
//!
//! Strategies learn from these, [`dependence`](crate::dependence) judges races in them, and path
//! files write them down; the executor is only one of their users, so they live apart from it.

use flymc_model::{Event, EventId, GlobalState, VectorClock, Violation};
use serde::{Deserialize, Serialize};

use crate::timing::PathTiming;

/// An event as it was enabled in a step, with its causal position.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Enabled {
    pub event: Event,
    /// Vector clock of the event's creation: what happened before it was sent.
    pub vc: VectorClock,
}

/// One step of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Step {
    /// Everything that could have been enabled, in a deterministic order.
    pub enabled: Vec<Enabled>,
    /// Index into `enabled` of the event that was.
    pub chosen: usize,
    /// Vector clock of the step at the node that processed it.
    pub vc: VectorClock,
    /// The state came from the state-event cache rather than from the target.
    pub cached: bool,
}

impl Step {
    pub fn event(&self) -> &Event {
        &self.enabled[self.chosen].event
    }

    /// Does step `self` happen before the creation of `later`?
    pub fn happens_before(&self, later: &Enabled) -> bool {
        let node = self.event().to;
        later.vc.get(node) >= self.vc.get(node)
    }
}

/// Why a run ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ending {
    /// Nothing left to enable.
    Quiescent,
    /// The workload's event limit was reached.
    EventLimit,
    /// A property was violated.
    Violation,
    /// A strict plan named an event that was not enabled at this step.
    Diverged { step: usize, missing: EventId },
    /// Every event the tail could pick was asleep: the rest of this path is explored by others.
    SleepBlocked,
    /// A node did not settle after this step's event: a liveness finding. The step is recorded
    /// but has no resulting state.
    Hang { step: usize },
    /// A node's process ended on its own after this step's event: a finding. The step is
    /// recorded but has no resulting state.
    Exited { step: usize },
}

impl Ending {
    /// The step whose event was recorded without a resulting state, if the run ended so.
    pub fn stateless_step(&self) -> Option<usize> {
        match self {
            Ending::Hang { step } | Ending::Exited { step } => Some(*step),
            _ => None,
        }
    }
}

/// The property name under which hangs are reported.
pub const HANG_PROPERTY: &str = "node-settles";
/// A node's process ended without flymc crashing it.
pub const EXITED_PROPERTY: &str = "node-exited";
/// A rebooted node's process ended before it was ready: it refuses its own disk state.
pub const CANNOT_RESTART_PROPERTY: &str = "cannot-restart";

/// One executed path.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Run {
    pub steps: Vec<Step>,
    /// `states[0]` is the initial state; `states[i + 1]` the state after step `i`.
    pub states: Vec<GlobalState>,
    /// Hashes of `states`, computed once.
    pub hashes: Vec<u64>,
    pub ending: Ending,
    pub violation: Option<Violation>,
    /// What was still enabled when the run ended quiescent (only crashes and reboots, which a
    /// FIFO tail never injects; strategies branch on them like on any other step), or when a
    /// `Stop` tail ended it (everything).
    pub final_enabled: Vec<Enabled>,
    /// First step at which a non-strict plan's prefix could not be followed.
    pub diverged_at: Option<usize>,
    /// Whether the system has [`flymc_model::Feature::CrashLosesSent`], for judging races in this run.
    pub crash_loses_sent: bool,
    /// [`Target::late_reports`] of this run.
    #[serde(default)]
    pub late_reports: u64,
    /// Where this path's wall-clock time went.
    #[serde(default)]
    pub timing: PathTiming,
    /// Where the nodes' logs of this run were kept, if they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs: Option<std::path::PathBuf>,
    /// For a liveness violation whose end state was found dead: the step after which the run
    /// is dead ([`crate::liveness`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical: Option<crate::liveness::Critical>,
}

impl Run {
    pub fn events(&self) -> impl Iterator<Item = &Event> {
        self.steps.iter().map(Step::event)
    }

    pub fn event_ids(&self) -> Vec<EventId> {
        self.events().map(|e| e.id).collect()
    }
}
