//! What a hunt found, as data: the one value every report (JSON, JUnit, SARIF, HTML) is written
//! from, and what `flymc hunt merge` reads back from each shard's `hunt.json`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `hunt.json`'s format tag and version.
pub const FORMAT: &str = "flymc-hunt";
pub const VERSION: u64 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HuntReport {
    pub format: String,
    pub version: u64,
    pub flymc_version: String,
    /// When the hunt started (RFC 3339, UTC) and how long it took.
    pub started: String,
    pub seconds: f64,
    /// `Some((k, n))` for shard k of n; `None` for an unsharded hunt or a merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<(u32, u32)>,
    /// The budget as given (`120s`, `30m`, `500 paths`).
    pub budget: String,
    /// What makes the exit code 1: `new`, `regressed` or `any`.
    pub fail_on: String,
    pub workloads: Vec<WorkloadReport>,
    pub findings: Vec<FindingReport>,
}

/// One workload's share of the hunt (summed over its seeds and, after a merge, its shards).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkloadReport {
    pub system: String,
    pub workload: String,
    pub strategy: String,
    /// The seeds this hunt ran (randomized strategies), or the shard's branch share
    /// (systematic ones run seed 0).
    pub seeds: Vec<u64>,
    pub paths: u64,
    pub events: u64,
    pub unique_states: u64,
    pub seconds: f64,
    pub paths_per_hour: f64,
    /// Every seed's exploration ran out of paths (systematic strategies).
    pub exhausted: bool,
    /// Samples over the workload's time: paths, unique states and abstract states so far.
    pub coverage: Vec<CoveragePoint>,
    /// Why the workload could not be explored (a setup error), if it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct CoveragePoint {
    pub seconds: f64,
    pub paths: u64,
    pub unique_states: u64,
    pub abstract_states: u64,
}

/// What a finding is to this hunt, against the corpus it started from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Not in the corpus before this hunt.
    New,
    /// In the corpus as fixed, and violating again.
    Regressed,
    /// In the corpus, and still violating (replayed or found again).
    Known,
    /// In the corpus, and its path no longer violates its property.
    Fixed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::New => "new",
            Status::Regressed => "regressed",
            Status::Known => "known",
            Status::Fixed => "fixed",
        }
    }
}

/// One finding: a distinct bug by its [`Signature`], with one path that shows it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FindingReport {
    /// 16 hex digits of the signature's hash: the finding's name in the corpus.
    pub id: String,
    pub status: Status,
    pub signature: Signature,
    pub system: String,
    pub workload: String,
    /// `safety` or `liveness`.
    pub kind: String,
    pub message: String,
    /// The path file that shows it, absolute (in the corpus or the output folder).
    pub path_file: PathBuf,
    /// How to see it again: `flymc replay FILE`.
    pub replay: String,
    /// Events on the path, and the step after which the property failed.
    pub steps: usize,
    pub step: usize,
    pub strategy: String,
    pub seed: u64,
    /// When the corpus first saw it (RFC 3339), and this hunt's verdict on it.
    pub first_seen: String,
    /// Where the property (or the handler) is defined, when the integration knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<SourceLocation>,
}

/// What makes two findings the same bug: the system, the property and the violation's message
/// abstracted; with the abstract events just before it to show (see [`super::signature`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Signature {
    pub system: String,
    pub property: String,
    pub events: Vec<String>,
    /// The violation's message with its numbers left out (safety), empty for liveness.
    pub message: String,
    /// The workload, for liveness findings: their message describes the state a run ended in,
    /// which differs from run to run, so the workload stands in for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
}

/// A place in the source tree, relative to the checkout (SARIF's `SRCROOT`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceLocation {
    pub file: String,
    pub line: u32,
}
