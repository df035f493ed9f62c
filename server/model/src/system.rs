//! A system flymc can check: what it is ([`About`], built once), how to build its target, its
//! properties and its symmetric roles.

use std::path::PathBuf;

use crate::property::Property;
use crate::symmetry::Symmetry;
use crate::target::{Target, TargetError};
use crate::workload::Workload;

pub trait System: Send + Sync {
    /// What the system is: its name, description, features and what it ships. A system
    /// builds it once (a system file's from the file) and hands out the same one.
    fn about(&self) -> &About;
    /// A fresh target for one run of `workload`; rejects parameters the system does not know.
    fn target(&self, workload: &Workload) -> Result<Box<dyn Target>, TargetError>;
    /// Safety and liveness properties, fresh for each run (they may keep per-run memory).
    fn properties(&self, workload: &Workload) -> Vec<Box<dyn Property>>;
    /// Which nodes are interchangeable.
    fn symmetry(&self, workload: &Workload) -> Symmetry;

    /// The name used on the command line (`--system NAME`) and as the workloads folder.
    fn name(&self) -> &str {
        &self.about().name
    }
    /// Whether it has `feature`.
    fn has(&self, feature: Feature) -> bool {
        self.about().features.contains(&feature)
    }
}

/// What a system can do or how it behaves, where that differs from the plain case (complete
/// states, local processes only, no snapshots, crashes that lose nothing sent, no disk events).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Feature {
    /// The node states it reports are summaries (a Raft library's term, log and role, not its
    /// replication progress), not everything that decides the nodes' future: the executor must
    /// run every event rather than take S' from the state-event cache for S + e.
    SummaryStates,
    /// Its nodes can run as Docker containers (`--backend docker`).
    Docker,
    /// Its targets, as built, can checkpoint their cluster at branch points
    /// ([`crate::Target::checkpoint`]); the explorer asks them to only then.
    Snapshots,
    /// A crash loses what the node sent and flymc has not yet delivered (a Raft RPC that never
    /// left the process): then a crash of a sender and the delivery of its message do not
    /// commute, although they happen at different nodes.
    CrashLosesSent,
    /// The nodes report their persistent writes as crash-point events (`disk:<what>`): then a
    /// run offers crashes right after writes and at rest points, not before every step
    /// (`flymc run --crash-points`).
    ReportsWrites,
}

/// A system's description: everything about it but its targets, properties and symmetry.
/// `About::new(name, description)` is a system with nothing else to say; the builder methods
/// add the rest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct About {
    /// The name used on the command line (`--system NAME`) and as the workloads folder.
    pub name: String,
    /// One line for `flymc systems`.
    pub description: String,
    pub features: Vec<Feature>,
    /// Its sets file (FlyMC §3.2) as JSON text, if it ships one.
    pub sets: Option<String>,
    /// The state variables its nodes report, when it declares them (a system file's
    /// `state.vars`): sets files are checked against them without starting a cluster.
    pub vars: Option<Vec<String>>,
    /// The node variables that tell fault states apart for the `faults` strategy: what
    /// survives a crash (epochs, logs) and the roles, not the counters and queues that change
    /// with every message. `None`: all of them.
    pub fault_vars: Option<Vec<String>>,
    /// Workload parameters whose value chooses the programs that run (a folder holding a
    /// build's jars): the value a path file records is a file's word, so a replay uses it
    /// only when the user says so (docs/SECURITY.md).
    pub program_params: Vec<String>,
    /// Exceptions its nodes catch as a matter of course (a closed connection when a peer
    /// crashes, an interrupt at shutdown): regular expressions over `TYPE: MESSAGE in WHERE`
    /// that `no-exception` lets pass (see [`crate::exceptions`]). A workload adds its own.
    pub allowed_exceptions: Vec<String>,
    /// Source files, relative to the checkout root, that define its properties: where a
    /// report (SARIF, JUnit) points a finding at, by the line that names the property.
    pub sources: Vec<String>,
    /// Every message kind (event name) its nodes can receive, for checking sets files;
    /// `None` when the system cannot say.
    pub message_kinds: Option<Vec<String>>,
    /// The folder that holds its workload files directly, for a system described by a file
    /// (`<its folder>/workloads`); `None`: `workloads/<name>/` of the workloads folder.
    pub workloads_dir: Option<PathBuf>,
    /// The system file it was loaded from (absolute), for one described by a file on disk.
    pub file: Option<PathBuf>,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

impl About {
    pub fn new(name: &str, description: &str) -> About {
        About {
            name: name.into(),
            description: description.into(),
            ..About::default()
        }
    }

    pub fn feature(mut self, feature: Feature) -> About {
        if !self.features.contains(&feature) {
            self.features.push(feature);
        }
        self
    }

    pub fn sets(mut self, json: &str) -> About {
        self.sets = Some(json.into());
        self
    }

    pub fn vars(mut self, vars: &[&str]) -> About {
        self.vars = Some(strings(vars));
        self
    }

    pub fn fault_vars(mut self, vars: &[&str]) -> About {
        self.fault_vars = Some(strings(vars));
        self
    }

    pub fn program_params(mut self, params: &[&str]) -> About {
        self.program_params = strings(params);
        self
    }

    pub fn allowed_exceptions(mut self, patterns: &[&str]) -> About {
        self.allowed_exceptions = strings(patterns);
        self
    }

    pub fn sources(mut self, files: &[&str]) -> About {
        self.sources = strings(files);
        self
    }

    pub fn message_kinds(mut self, kinds: &[&str]) -> About {
        self.message_kinds = Some(strings(kinds));
        self
    }
}
