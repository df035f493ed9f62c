//! Path files: a run written down so `flymc replay` can re-execute it deterministically.
//!
//! Versioned JSON holding the system, the workload (with a hash of its file, and the nodes down
//! at the start and the fault condition it was run with), the strategy and seed, the events by
//! identity, every state seen, and the violation.

use std::path::{Path, PathBuf};

use flymc_model::{EventId, GlobalState, NodeId, Violation, Workload};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::run::{Ending, Run};

pub const FORMAT: &str = "flymc-path";
pub const VERSION: u64 = 1;

#[derive(Debug, thiserror::Error)]
pub enum PathFileError {
    #[error("cannot read path file {0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("{0} is not a flymc path file: {1}")]
    NotAPathFile(PathBuf, String),
    #[error("{0} is a path file of format version {1}, but this flymc reads version {VERSION}; re-run the exploration with this flymc to get a new path")]
    Version(PathBuf, u64),
    #[error("{0} is corrupt: {1}")]
    Corrupt(PathBuf, String),
    #[error("cannot write path file {0}: {1}")]
    Write(PathBuf, std::io::Error),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkloadRef {
    pub name: String,
    /// The workload file as it was given to `flymc run`.
    pub file: PathBuf,
    /// SHA-256 of that file when the path was recorded.
    pub sha256: String,
    /// The nodes down at the start of the run ([`Workload::down`]); none in files written
    /// before flymc knew them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub down: Vec<NodeId>,
    /// The condition faults were offered under ([`Workload::fault_when`]); none: everywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_when: Option<String>,
}

impl WorkloadRef {
    /// What `w` is run with, as a path file records it.
    pub fn of(w: &Workload) -> WorkloadRef {
        WorkloadRef {
            name: w.name.clone(),
            file: w.file.clone(),
            sha256: w.sha256.clone(),
            down: w.down.clone(),
            fault_when: w.fault_when.as_ref().map(|c| c.text().to_string()),
        }
    }

    /// How `[faults] down` and `when` read, for messages.
    pub fn faults_text(&self) -> String {
        format!(
            "down = {:?}, when = {}",
            self.down,
            self.fault_when
                .as_deref()
                .map_or("(none)".to_string(), |c| format!("'{c}'"))
        )
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathEvent {
    pub id: EventId,
    /// Human-readable, for people reading the file; replay uses `id` only.
    pub description: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateRecord {
    /// Hex of the state's stable hash.
    pub hash: String,
    pub state: GlobalState,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathFile {
    pub format: String,
    pub version: u64,
    pub flymc_version: String,
    pub system: String,
    pub workload: WorkloadRef,
    pub strategy: String,
    pub seed: u64,
    /// Which explored path this was (1-based).
    pub path_number: u64,
    pub events: Vec<PathEvent>,
    /// The initial state, then the state after each event.
    pub states: Vec<StateRecord>,
    pub ending: Ending,
    pub violation: Option<Violation>,
    /// Events the nodes reported late while this path was recorded ([`Run::late_reports`]):
    /// where a replay diverges, that timing is the first suspect.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub late_reports: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl PathFile {
    pub fn from_run(
        workload: &Workload,
        strategy: &str,
        seed: u64,
        path_number: u64,
        run: &Run,
    ) -> PathFile {
        PathFile {
            format: FORMAT.into(),
            version: VERSION,
            flymc_version: env!("CARGO_PKG_VERSION").into(),
            system: workload.system.clone(),
            workload: WorkloadRef::of(workload),
            strategy: strategy.into(),
            seed,
            path_number,
            events: run
                .events()
                .map(|e| PathEvent {
                    id: e.id,
                    description: e.describe(),
                })
                .collect(),
            states: run
                .states
                .iter()
                .zip(&run.hashes)
                .map(|(s, h)| StateRecord {
                    hash: format!("{h:016x}"),
                    state: s.clone(),
                })
                .collect(),
            ending: run.ending.clone(),
            violation: run.violation.clone(),
            late_reports: run.late_reports,
        }
    }

    pub fn load(path: &Path) -> Result<PathFile, PathFileError> {
        let text = std::fs::read_to_string(path).map_err(|e| PathFileError::Io(path.into(), e))?;
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            PathFileError::NotAPathFile(
                path.into(),
                format!("invalid JSON at line {} column {}", e.line(), e.column()),
            )
        })?;
        match value.get("format").and_then(Value::as_str) {
            Some(FORMAT) => {}
            _ => {
                return Err(PathFileError::NotAPathFile(
                    path.into(),
                    format!("it has no \"format\": \"{FORMAT}\" field"),
                ))
            }
        }
        match value.get("version").and_then(Value::as_u64) {
            Some(VERSION) => {}
            Some(v) => return Err(PathFileError::Version(path.into(), v)),
            None => {
                return Err(PathFileError::Corrupt(
                    path.into(),
                    "it has no \"version\" number".into(),
                ))
            }
        }
        let file: PathFile = serde_json::from_value(value)
            .map_err(|e| PathFileError::Corrupt(path.into(), e.to_string()))?;
        let stateless = file.ending.stateless_step().is_some();
        if file.states.len() != file.events.len() + usize::from(!stateless) {
            return Err(PathFileError::Corrupt(
                path.into(),
                format!(
                    "{} events but {} states (expected one more state than events)",
                    file.events.len(),
                    file.states.len()
                ),
            ));
        }
        for (i, rec) in file.states.iter().enumerate() {
            if format!("{:016x}", rec.state.hash()) != rec.hash {
                return Err(PathFileError::Corrupt(
                    path.into(),
                    format!("state {i} does not match its recorded hash (edited by hand?)"),
                ));
            }
        }
        Ok(file)
    }

    pub fn save(&self, path: &Path) -> Result<(), PathFileError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| PathFileError::Write(path.into(), e))?;
        }
        let text = serde_json::to_string_pretty(self).expect("path files always serialise");
        // Write then rename, so an interrupted run never leaves half a path file.
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(|e| PathFileError::Write(path.into(), e))?;
        std::fs::rename(&tmp, path).map_err(|e| PathFileError::Write(path.into(), e))
    }

    pub fn event_ids(&self) -> Vec<EventId> {
        self.events.iter().map(|e| e.id).collect()
    }
}
