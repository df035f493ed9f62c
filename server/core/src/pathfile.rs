//! Path files: a run written down so `flymc replay` can re-execute it deterministically.
//!
//! Versioned JSON holding the system, the workload (with a hash of its file, and the nodes down
//! at the start and the fault condition it was run with), the strategy and seed, the events by
//! identity, every state seen, and the violation.
//!
//! Reading one is bounded: a file over [`MAX_BYTES`] is refused before it is read, and one
//! with over [`MAX_EVENTS`] events before it is parsed into states, so a wrong or hostile file
//! costs a refusal, not gigabytes. Event ids must be written as flymc writes them (16
//! lowercase hex digits) and `version` as an integer.

use std::path::{Path, PathBuf};

use flymc_model::{EventId, GlobalState, NodeId, Violation, Workload};
use serde::de::{self, IgnoredAny};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::error::Category;
use serde_json::Value;

use crate::run::{Ending, Run};

pub const FORMAT: &str = "flymc-path";
pub const VERSION: u64 = 1;
/// The largest path file flymc reads. Every state is stored whole, so a real ZooKeeper path
/// at its workload's event limit with a fair continuation (800 events) is about 60 MB; this
/// holds four times that. Parsing takes about twice the file's size in memory.
pub const MAX_BYTES: u64 = 256 << 20;
/// The most events a path file may hold. A workload's `max_events` keeps real paths in the
/// hundreds; this only stops files that are not paths flymc wrote.
pub const MAX_EVENTS: usize = 100_000;

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
    /// The second field: ` (N bytes)` when the file says its size.
    #[error("{0} is larger than the {max} MiB a path file may be{1}; flymc writes far smaller ones, so check that it is the path file you meant", max = MAX_BYTES >> 20)]
    TooLarge(PathBuf, String),
    #[error("{0} holds {1} {2}, but a path file may hold at most {MAX_EVENTS} events and one state more; flymc writes far fewer, so check that it is the path file you meant")]
    TooManyEvents(PathBuf, usize, &'static str),
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
    /// Parameters the command line set over the file's ([`Workload::overrides`]); replays
    /// set them again.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub params: serde_json::Map<String, serde_json::Value>,
    /// The system file of a system described by one (absolute), so replays find it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_file: Option<PathBuf>,
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
            params: w.overrides.clone(),
            system_file: w.system_file.clone(),
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
    #[serde(deserialize_with = "canonical_id")]
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
    /// For a liveness violation: the step after which the path is dead (MaceMC's critical
    /// transition, [`crate::liveness`]); absent in files written before flymc found them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical: Option<crate::liveness::Critical>,
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
            critical: run.critical.clone(),
        }
    }

    pub fn load(path: &Path) -> Result<PathFile, PathFileError> {
        let text = read_bounded(path)?;
        // One pass that keeps nothing but the format, the version and how many events and
        // states there are, so that what is refused is refused before it is parsed.
        let head: Head = serde_json::from_str(&text).map_err(|e| match e.classify() {
            Category::Data if e.to_string().starts_with("duplicate field") => {
                PathFileError::Corrupt(path.into(), e.to_string())
            }
            // Valid JSON, but not an object: no path file's fields at all.
            Category::Data => PathFileError::NotAPathFile(
                path.into(),
                format!("it has no \"format\": \"{FORMAT}\" field"),
            ),
            _ => PathFileError::NotAPathFile(
                path.into(),
                format!("invalid JSON at line {} column {}", e.line(), e.column()),
            ),
        })?;
        match head.format.as_ref().and_then(Value::as_str) {
            Some(FORMAT) => {}
            _ => {
                return Err(PathFileError::NotAPathFile(
                    path.into(),
                    format!("it has no \"format\": \"{FORMAT}\" field"),
                ))
            }
        }
        match head.version {
            Some(Value::Number(n)) if n.as_u64() == Some(VERSION) => {}
            Some(Value::Number(n)) if n.as_u64().is_some() => {
                return Err(PathFileError::Version(path.into(), n.as_u64().unwrap_or(0)))
            }
            // `1.0` or `"1"` is not what flymc writes; saying so beats guessing what was meant.
            Some(other) => {
                return Err(PathFileError::Corrupt(
                    path.into(),
                    format!(
                        "its \"version\" is {}, but it must be an integer (this flymc reads version {VERSION})",
                        shorten(&other.to_string())
                    ),
                ))
            }
            None => {
                return Err(PathFileError::Corrupt(
                    path.into(),
                    "it has no \"version\" field".into(),
                ))
            }
        }
        if head.events.0 > MAX_EVENTS {
            return Err(PathFileError::TooManyEvents(
                path.into(),
                head.events.0,
                "events",
            ));
        }
        if head.states.0 > MAX_EVENTS + 1 {
            return Err(PathFileError::TooManyEvents(
                path.into(),
                head.states.0,
                "states",
            ));
        }
        let mut file: PathFile = serde_json::from_str(&text)
            .map_err(|e| PathFileError::Corrupt(path.into(), e.to_string()))?;
        // A path file shipped with a system (integrations/pysyncobj/paths/) names its system and
        // workload files relative to itself, so it replays from any checkout.
        if let Some(dir) = path.parent() {
            let beside = |p: &mut PathBuf| {
                if p.is_relative() && dir.join(&*p).is_file() {
                    *p = dir.join(&*p);
                }
            };
            beside(&mut file.workload.file);
            if let Some(f) = file.workload.system_file.as_mut() {
                beside(f);
            }
        }
        file.check()
            .map_err(|m| PathFileError::Corrupt(path.into(), m))?;
        Ok(file)
    }

    /// What a path file holds beyond its syntax: one state per event plus the initial state
    /// (none after an event that ended the run without one), each matching its hash.
    fn check(&self) -> Result<(), String> {
        if self.states.is_empty() {
            // Without the initial state a replay would compare nothing and "match".
            return Err("it records no states; a path holds at least the initial state".into());
        }
        let stateless = self.ending.stateless_step();
        if self.states.len() != self.events.len() + usize::from(stateless.is_none()) {
            return Err(format!(
                "{} events but {} states (expected one more state than events)",
                self.events.len(),
                self.states.len()
            ));
        }
        if let Some(step) = stateless.filter(|&s| s + 1 != self.events.len()) {
            return Err(format!(
                "it ends without a state after step {step}, but its last step is {}",
                self.events.len() as i64 - 1
            ));
        }
        for (i, rec) in self.states.iter().enumerate() {
            if format!("{:016x}", rec.state.hash()) != rec.hash {
                return Err(format!(
                    "state {i} does not match its recorded hash (edited by hand?)"
                ));
            }
        }
        Ok(())
    }

    pub fn save(&self, path: &Path) -> Result<(), PathFileError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| PathFileError::Write(path.into(), e))?;
        }
        let text = serde_json::to_string_pretty(self).expect("path files always serialise");
        // Never half a path file, and never through a symlink someone left in the folder.
        crate::outfile::write_atomically(path, text.as_bytes())
            .map_err(|e| PathFileError::Write(path.into(), e))
    }

    pub fn event_ids(&self) -> Vec<EventId> {
        self.events.iter().map(|e| e.id).collect()
    }
}

/// The file's text, refusing a file over [`MAX_BYTES`] by its size before reading it, one
/// that grows past it as it is read, and anything but a regular file (a pipe, a device).
fn read_bounded(path: &Path) -> Result<String, PathFileError> {
    use flymc_model::bounded::{read_text, BoundedError};
    read_text(path, MAX_BYTES).map_err(|e| match e {
        BoundedError::TooLarge { size, .. } => PathFileError::TooLarge(
            path.into(),
            size.map_or(String::new(), |s| format!(" ({s} bytes)")),
        ),
        other => PathFileError::Io(path.into(), other.into()),
    })
}

/// What [`PathFile::load`] looks at before parsing the whole file; everything else is skipped
/// without being kept.
#[derive(Deserialize)]
struct Head {
    format: Option<Value>,
    version: Option<Value>,
    #[serde(default)]
    events: Count,
    #[serde(default)]
    states: Count,
}

/// The length of a JSON array, counted without keeping its items; 0 for anything else (the
/// full parse then says what is wrong with it).
#[derive(Default)]
struct Count(usize);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Count, D::Error> {
        d.deserialize_any(CountVisitor)
    }
}

struct CountVisitor;

impl<'de> de::Visitor<'de> for CountVisitor {
    type Value = Count;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
        let mut n = 0;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            n += 1;
        }
        Ok(Count(n))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Count, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Count(0))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Count, E> {
        Ok(Count(0))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Count, E> {
        Ok(Count(0))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Count, E> {
        Ok(Count(0))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Count, E> {
        Ok(Count(0))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Count, E> {
        Ok(Count(0))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Count, E> {
        Ok(Count(0))
    }
}

/// An event id exactly as flymc writes it ([`EventId`]'s `Display`: 16 lowercase hex digits),
/// so a path file names each event one way only.
fn canonical_id<'de, D: Deserializer<'de>>(d: D) -> Result<EventId, D::Error> {
    let s = String::deserialize(d)?;
    match s.parse::<EventId>() {
        Ok(id) if id.to_string() == s => Ok(id),
        _ => Err(de::Error::custom(format!(
            "`{}` is not an event id as flymc writes them (16 lowercase hex digits)",
            shorten(&s)
        ))),
    }
}

/// A value from a file, cut short enough for a one-line message.
pub fn shorten(s: &str) -> String {
    match s.char_indices().nth(40) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}
