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
    /// A node's process ended without flymc crashing it: a finding, not a tool error (a
    /// rebooted node that refuses its own disk state, a failed assertion, `System.exit`).
    #[error("node n{node} exited on its own ({status}){}", last_lines(.log_tail))]
    Exited {
        node: NodeId,
        /// How it ended, e.g. `exit status 1`.
        status: String,
        /// It was started by a reboot and never reported ready: it cannot restart.
        restarting: bool,
        /// The last lines of its log, oldest first.
        log_tail: Vec<String>,
    },
    /// A cluster restored from a snapshot is not the one that was snapshotted: a node reported
    /// another state on going on than it had reported before the pause. The run must not go
    /// on from it; the caller re-executes the prefix.
    #[error("the restored cluster differs from its snapshot: {0}")]
    RestoreDiffers(String),
    #[error("{0}")]
    Other(String),
}

fn last_lines(tail: &[String]) -> String {
    match tail.is_empty() {
        true => String::new(),
        false => format!("; its log ends: {}", tail.join(" | ")),
    }
}

/// A cluster the executor can drive one event at a time.
///
/// Simulated targets implement it in memory; real ones over the event server. The executor never
/// assumes which: it only starts, looks at pending events, enables one, waits for the state to
/// settle, and injects crashes and reboots.
pub trait Target: Send {
    /// Start the workload's cluster from its initial state.
    fn start(&mut self, workload: &Workload) -> Result<(), TargetError>;
    /// Wait until the cluster has settled after whatever came last (a crash, a reboot, a step
    /// whose state came from the cache): a real target reports here a node that hung or ended
    /// on its own since. Simulated targets are always settled.
    fn settled(&mut self) -> Result<(), TargetError> {
        Ok(())
    }
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
    /// Copy every node's log of this run into the folder `into` (created), before `stop`
    /// removes them; returns how many files. Simulated targets have none.
    fn keep_logs(&mut self, _into: &std::path::Path) -> Result<usize, TargetError> {
        Ok(0)
    }
    /// Keep the cluster as it is now (settled, between two steps) under `key`, so that a later
    /// run can start here with [`Target::restore`] instead of re-executing the steps that led
    /// here. `Ok(false)`: this target keeps no snapshots, or declined this one (its store is
    /// full); the run goes on either way.
    fn checkpoint(&mut self, _key: u64) -> Result<bool, TargetError> {
        Ok(false)
    }
    /// Start a run of `workload` at the snapshot `key` instead of [`Target::start`], settled.
    /// `Ok(false)`: the target no longer holds it (evicted) and started nothing; the caller
    /// starts from the beginning. An error leaves nothing running, and the caller may still
    /// start from the beginning.
    fn restore(&mut self, _workload: &Workload, _key: u64) -> Result<bool, TargetError> {
        Ok(false)
    }
    /// An independent copy of the cluster as it is now (settled), for exploring its futures
    /// while this one runs on (`flymc watch`'s consequence prediction). `None`: this target
    /// cannot copy itself in memory; the caller re-executes the history on a second target.
    fn fork(&self) -> Option<Box<dyn Target>> {
        None
    }
}
