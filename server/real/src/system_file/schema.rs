//! The `system.toml` format as serde reads it: every table refuses fields it does not know, so
//! a misspelt field is an error at its line and column, not a setting silently ignored.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

/// The version of the format this flymc reads.
pub const VERSION: i64 = 1;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Raw {
    pub version: Spanned<i64>,
    pub name: Spanned<String>,
    pub description: String,
    /// Folder of the system's workloads, relative to the file (default `workloads`).
    #[serde(default)]
    pub workloads: Option<String>,
    /// A Rust integration compiled into flymc that supplies what the file cannot say.
    #[serde(default)]
    pub rust: Option<Spanned<String>>,
    #[serde(default)]
    pub node: Option<RawNode>,
    #[serde(default)]
    pub hook: RawHook,
    #[serde(default, rename = "check")]
    pub checks: Vec<RawCheck>,
    /// Workload parameters with their defaults.
    #[serde(default)]
    pub params: toml::Table,
    /// Workload parameters without a default, by type (`array`, `integer`, `string`,
    /// `boolean`, `table`): absent unless a workload sets them.
    #[serde(default)]
    pub optional_params: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    pub clients: Option<RawClients>,
    pub state: RawState,
    #[serde(default)]
    pub symmetry: RawSymmetry,
    #[serde(default)]
    pub faults: RawFaults,
    /// Every event name its nodes can receive (messages, timers, client events).
    #[serde(default)]
    pub messages: Option<Vec<String>>,
    /// The sets file (FlyMC §3.2), relative to the file.
    #[serde(default)]
    pub sets: Option<Spanned<String>>,
    #[serde(default)]
    pub exceptions: Vec<Spanned<String>>,
    #[serde(default)]
    pub log_patterns: Vec<Spanned<String>>,
    #[serde(default, rename = "property")]
    pub properties: Vec<RawProperty>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNode {
    pub program: Spanned<String>,
    #[serde(default)]
    pub args: Vec<Spanned<String>>,
    #[serde(default)]
    pub env: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    pub settle_timeout_ms: Option<u64>,
    /// Tell live nodes of every crash and reboot (client events `crashed`/`rebooted`).
    #[serde(default)]
    pub notices: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHook {
    /// `rust`, `java-agent` or `protocol`.
    #[serde(default)]
    pub kind: Option<Spanned<String>>,
    /// For `java-agent`: the hooks file, relative to the system file.
    #[serde(default)]
    pub hooks: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCheck {
    pub run: Spanned<Vec<String>>,
    pub fix: String,
    /// Seconds the check may take before it is killed and the run refused (default 60).
    #[serde(default)]
    pub timeout_secs: Option<Spanned<u64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawClients {
    /// The workload parameter that lists them: tables with `to` and the event's fields.
    pub param: Spanned<String>,
    /// The client event's name.
    pub event: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawState {
    pub vars: Vec<String>,
    /// Variables that hold node ids (or lists of them): symmetry renames them.
    #[serde(default)]
    pub node_refs: Vec<Spanned<String>>,
    /// Event fields that hold node ids.
    #[serde(default)]
    pub node_ref_fields: Vec<String>,
    /// Whether the reported variables decide the nodes' whole future (default false).
    #[serde(default)]
    pub complete: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSymmetry {
    /// `all`, `none` or `crashable` (default `none`).
    #[serde(default)]
    pub roles: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFaults {
    /// Variables that survive a crash, telling fault states apart (`faults` strategy).
    #[serde(default)]
    pub survive_crash: Option<Vec<Spanned<String>>>,
    /// A crash loses what the node sent that flymc has not delivered yet.
    #[serde(default)]
    pub crash_loses_sent: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProperty {
    pub name: Spanned<String>,
    #[serde(default)]
    pub always: Option<Spanned<String>>,
    #[serde(default)]
    pub eventually: Option<Spanned<String>>,
    #[serde(default)]
    pub command: Option<Vec<String>>,
    #[serde(default)]
    pub kind: Option<String>,
}
