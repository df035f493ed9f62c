//! A system flymc can check: how to build its target, its properties and its symmetric roles.

use crate::property::Property;
use crate::symmetry::Symmetry;
use crate::target::{Target, TargetError};
use crate::workload::Workload;

pub trait System: Send + Sync {
    /// The name used on the command line (`--system NAME`) and as the workloads folder.
    fn name(&self) -> &'static str;
    /// One line for `flymc systems`.
    fn description(&self) -> &'static str;
    /// A fresh target for one run of `workload`; rejects parameters the system does not know.
    fn target(&self, workload: &Workload) -> Result<Box<dyn Target>, TargetError>;
    /// Safety and liveness properties, fresh for each run (they may keep per-run memory).
    fn properties(&self, workload: &Workload) -> Vec<Box<dyn Property>>;
    /// Which nodes are interchangeable.
    fn symmetry(&self, workload: &Workload) -> Symmetry;
    /// The system's sets file (FlyMC §3.2) as JSON text, if it ships one.
    fn sets_file(&self) -> Option<&'static str> {
        None
    }
    /// Whether the node states it reports hold everything that decides the nodes' future.
    /// Only then may the executor take S' from the state-event cache for S + e instead of
    /// running e: a real system that reports a summary of its nodes (a Raft library's term,
    /// log and role, not its replication progress) says no, and every event is run.
    fn states_are_complete(&self) -> bool {
        true
    }
    /// Whether its nodes can run as Docker containers (`--backend docker`).
    fn runs_in_docker(&self) -> bool {
        false
    }
    /// Whether its targets, as built, can checkpoint their cluster at branch points
    /// ([`crate::Target::checkpoint`]); the explorer asks them to only then.
    fn snapshots(&self) -> bool {
        false
    }
    /// Whether a crash loses what the node sent and flymc has not yet delivered (a Raft RPC
    /// that never left the process). Then a crash of a sender and the delivery of its message
    /// do not commute, although they happen at different nodes.
    fn crash_loses_sent(&self) -> bool {
        false
    }
    /// Whether the nodes report their persistent writes as crash-point events (`disk:<what>`):
    /// then a run offers crashes right after writes and at rest points, not before every step
    /// (`flymc run --crash-points`).
    fn reports_writes(&self) -> bool {
        false
    }
    /// The node variables that tell fault states apart for the `faults` strategy: what
    /// survives a crash (epochs, logs) and the roles, not the counters and queues that change
    /// with every message. `None`: all of them.
    fn fault_vars(&self) -> Option<&'static [&'static str]> {
        None
    }
    /// Workload parameters whose value chooses the programs that run (a folder holding a
    /// build's jars): the value a path file records is a file's word, so a replay uses it
    /// only when the user says so (docs/SECURITY.md).
    fn program_params(&self) -> &'static [&'static str] {
        &[]
    }
    /// Exceptions its nodes catch as a matter of course (a closed connection when a peer
    /// crashes, an interrupt at shutdown): regular expressions over `TYPE: MESSAGE in WHERE`
    /// that `no-exception` lets pass (see [`crate::exceptions`]). A workload adds its own.
    fn allowed_exceptions(&self) -> &'static [&'static str] {
        &[]
    }
    /// Source files, relative to the checkout root, that define its properties: where a
    /// report (SARIF, JUnit) points a finding at, by the line that names the property.
    fn sources(&self) -> &'static [&'static str] {
        &[]
    }
    /// Every message kind (event name) its nodes can receive, for checking sets files;
    /// `None` when the system cannot say.
    fn message_kinds(&self) -> Option<Vec<&'static str>> {
        None
    }
    /// The folder that holds its workload files directly, for a system described by a file
    /// (`<its folder>/workloads`); `None`: `workloads/<name>/` of the workloads folder.
    fn workloads_dir(&self) -> Option<std::path::PathBuf> {
        None
    }
    /// The system file it was loaded from (absolute), for one described by a file on disk.
    fn file(&self) -> Option<std::path::PathBuf> {
        None
    }
}
