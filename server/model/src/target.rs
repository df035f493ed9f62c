//! The one narrow interface between the executor and a system under test.

use crate::event::{Event, EventId, NodeId};
use crate::state::GlobalState;
use crate::workload::Workload;

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("event {0} is not pending")]
    NotPending(EventId),
    #[error("node n{0} does not exist or is in the wrong state for this: {1}")]
    BadNode(NodeId, String),
    #[error("the workload does not fit this system: {0}")]
    Workload(String),
    #[error("node n{node} did not settle within {millis} ms")]
    Hang { node: NodeId, millis: u64 },
    #[error("{0}")]
    Other(String),
}

/// A cluster the executor can drive one event at a time.
///
/// Simulated targets implement it in memory; real ones over the event server. The executor never
/// assumes which: it only starts, looks at pending events, enables one, waits for the state to
/// settle, and injects crashes and reboots.
pub trait Target: Send {
    /// Start the workload's cluster from its initial state.
    fn start(&mut self, workload: &Workload) -> Result<(), TargetError>;
    /// Events in flight, in a deterministic order (crashes and reboots are the executor's).
    fn pending(&self) -> Vec<Event>;
    /// Deliver one pending event.
    fn enable(&mut self, id: EventId) -> Result<(), TargetError>;
    /// Wait until the nodes have processed what was enabled, then report the global state.
    fn settle(&mut self) -> Result<GlobalState, TargetError>;
    /// Crash a live node (its in-flight inbound messages are lost).
    fn crash(&mut self, node: NodeId) -> Result<(), TargetError>;
    /// Reboot a crashed node from its persisted state.
    fn reboot(&mut self, node: NodeId) -> Result<(), TargetError>;
    /// Stop everything; must leave nothing running.
    fn stop(&mut self) -> Result<(), TargetError>;
    /// Events of this run that nodes reported after saying they were done with the step that
    /// caused them: a hook's quiescence detection missed them, so the step's successors were
    /// chosen without them and the path may not replay. Only real targets have any.
    fn late_reports(&self) -> u64 {
        0
    }
}
