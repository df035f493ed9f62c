//! Reading a side file: the TOML tables as declared, checked for version and misplaced keys.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::err;
use crate::AnalyzeError;

pub const SIDE_FILE_VERSION: u64 = 1;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SideFile {
    pub version: u64,
    #[serde(default)]
    pub node_state: Vec<NodeStateDecl>,
    #[serde(default)]
    pub message: Vec<MessageDecl>,
    #[serde(default)]
    pub handler: Vec<HandlerDecl>,
    #[serde(default)]
    pub crash: Vec<FaultDecl>,
    #[serde(default)]
    pub reboot: Vec<FaultDecl>,
    #[serde(default)]
    pub send: Vec<String>,
    #[serde(default)]
    pub disk: Vec<DiskDecl>,
    #[serde(default)]
    pub call: Vec<CallDecl>,
    #[serde(default)]
    pub queue: Vec<QueueDecl>,
    /// Add flymc's default send and disk dictionaries (default true).
    #[serde(default = "yes")]
    pub defaults: bool,
    /// Generic types that stand for their first type argument (`Valid<T>`, `UTime<T, I>`:
    /// wrappers that `Deref` to it): a field, parameter or local of such a type is resolved as
    /// the wrapped type (Rust only).
    #[serde(default)]
    pub wrappers: Vec<String>,
    /// Calls outside the sources that only read their receiver (`UUID.timestamp`): on a node
    /// variable they are a read, not an update.
    #[serde(default)]
    pub pure: Vec<String>,
    /// The file's text, to find where a pattern is written (warnings name its line).
    #[serde(skip)]
    pub text: String,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct NodeStateDecl {
    pub class: Option<String>,
    pub field: Option<String>,
    pub method: Option<String>,
    pub local: Option<String>,
    pub name: Option<String>,
    #[serde(default)]
    pub persistent: bool,
    /// `false`: the variable the node reports under `name` is not this field's value (the
    /// library keeps the log's last index, the node reports the entries), so no guard may
    /// compare it; reads and updates still count.
    #[serde(default = "yes")]
    pub guards: bool,
    /// More reported variables this field holds (openraft's `vote` is the term, the vote and
    /// the leader): reading, updating or sending it counts for all of them.
    #[serde(default)]
    pub also: Vec<String>,
    /// Fields of this field's object that are reported variables of their own
    /// (`{ ballot = "in_progress_ballot", update = "proposal" }` for Cassandra's in-progress
    /// `Commit`): `x.ballot` reads and guards as `in_progress_ballot`; the object as a whole
    /// stands for all of its parts and is no variable of its own.
    #[serde(default)]
    pub parts: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct MessageDecl {
    pub class: String,
    pub kind: Option<String>,
    pub kind_field: Option<String>,
    #[serde(default)]
    pub fields: Vec<String>,
    #[serde(default)]
    pub external: bool,
    /// The fields the node's hook reports for this message, by the name it reports them under
    /// (`{ last_log_index = "last_index" }`). When given, guards use only these fields, under
    /// these names: a condition on any other field cannot be checked by flymc and is dropped.
    pub report: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct HandlerDecl {
    pub class: String,
    pub method: String,
    pub message: Option<String>,
    pub receive: Option<String>,
    pub guard: Option<String>,
    pub kind: Option<String>,
    /// The handler's return value is the reply sent back to the message's sender (an RPC
    /// handler whose caller sends what it returns): node variables flowing into it are sent.
    #[serde(default)]
    pub reply: bool,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct FaultDecl {
    pub class: String,
    pub method: String,
    pub catch: Option<String>,
    /// `peer` (default): code other nodes run when they notice; `self`: the faulty node's own.
    pub side: Option<String>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct DiskDecl {
    pub call: String,
    pub file: Option<String>,
}

#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct CallDecl {
    pub call: String,
    #[serde(default)]
    pub read: Vec<String>,
    #[serde(default)]
    pub update: Vec<String>,
    #[serde(default)]
    pub increments: Vec<String>,
    #[serde(default)]
    pub send: bool,
    pub disk: Option<String>,
    /// The node variable whose value the call returns.
    pub returns: Option<String>,
    /// What the call's value means, in the guard language over the parameters that `call`
    /// names (`call = "Commit.isAfter(a, b)"`, `means = "a.ballot > b.ballot"`): conditions on
    /// it become guards and what it reads counts, instead of inlining or an opaque result.
    pub means: Option<String>,
}

/// A command queue: `call` pushes its argument, `run` (`Class.method`, taking the command)
/// runs it after the handler returns (openraft's `output.push_command` and
/// `RaftCore::run_command`). What the commands do counts for the event that queued them.
#[derive(Debug, Default, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct QueueDecl {
    pub call: String,
    pub run: String,
}

/// Read the side file.
pub fn read_side_file(path: &Path) -> Result<SideFile, AnalyzeError> {
    let text = std::fs::read_to_string(path).map_err(|e| AnalyzeError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let mut side: SideFile = toml::from_str(&text).map_err(|e| {
        let at = e.span().map(|s| s.start.min(text.len())).unwrap_or(0);
        let before = &text[..at];
        let line = before.matches('\n').count() + 1;
        let column = at - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        let mut msg = e.message().replace('\n', " ");
        if let Some(hint) = misplaced_top_level_key(&msg, before) {
            msg = format!("{msg}; {hint}");
        }
        err(path, format!("line {line}, column {column}: {msg}"))
    })?;
    side.text = text;
    if side.version != SIDE_FILE_VERSION {
        return Err(err(
            path,
            format!(
                "annotations version {} is not supported; this analyzer reads version {SIDE_FILE_VERSION}",
                side.version
            ),
        ));
    }
    Ok(side)
}

/// The side file's top-level keys (`SideFile`'s plain fields).
const TOP_LEVEL_KEYS: &[&str] = &["version", "send", "defaults", "wrappers", "pure"];

/// A top-level key written after a table header is read by TOML as a key of that table, which
/// serde then calls an unknown field: say so, naming the header (`before`: the text up to it).
fn misplaced_top_level_key(msg: &str, before: &str) -> Option<String> {
    let key = msg.strip_prefix("unknown field `")?.split('`').next()?;
    if !TOP_LEVEL_KEYS.contains(&key) {
        return None;
    }
    let (n, header) = before
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with('['))
        .last()?;
    Some(format!(
        "`{key}` is a top-level key, but TOML reads every key after a table header as part of that table (here `{}` at line {}): move `{key}` before the first table header",
        header.trim(),
        n + 1
    ))
}
