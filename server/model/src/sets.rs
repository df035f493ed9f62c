//! Sets files (FlyMC §3.2, §4.1): for each message kind a node can receive, guarded entries of
//! the state variables its handler reads, updates, sends and writes to disk, plus the update sets
//! of crashes and reboots. Written by hand for simulated targets and by `flymc analyze` for real
//! code; read by the `flymc` and `samc` strategies to decide event independence.
//!
//! ```json
//! { "format": "flymc-sets", "version": 1, "system": "cassandra-sim",
//!   "node_vars": ["promised", "accepted"],
//!   "messages": { "prepare": { "fields": ["ballot"], "entries": [
//!       { "guard": "m.ballot > n.promised", "read": ["promised"], "update": ["promised"],
//!         "send": ["promised", "accepted"], "disk": ["paxos"], "increments": [],
//!         "emits": true } ] } },
//!   "crash":  [ { "guard": "true", "update": ["..."], "peer_update": ["..."] } ],
//!   "reboot": [ { "guard": "true", "update": ["..."], "peer_update": [] } ] }
//! ```
//! `emits` says whether the handler may send anything at all (default true); an entry with empty
//! update and disk sets and `"emits": false` is a discarded message.
//! `shared` (optional) names variables of the environment every node uses, such as a clock that
//! hands out ballots in the order rounds start: entries list them in their read and update sets
//! like node variables, and two events at different nodes are dependent when one updates a
//! shared variable the other reads or updates.
//! Entries are tried in order; the first whose guard holds on the receiving node's state and the
//! message gives the sets at that state.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use flymc_lang::{self as guard, Expr, Scope};

pub const FORMAT: &str = "flymc-sets";
pub const VERSION: u64 = 1;

/// A problem in a sets file, with the file and line it is on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct SetsError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// What the system says it has, to check a sets file against.
#[derive(Clone, Debug, Default)]
pub struct Known {
    pub node_vars: Option<BTreeSet<String>>,
    pub message_kinds: Option<BTreeSet<String>>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEntry {
    #[serde(default = "always")]
    pub guard: String,
    #[serde(default)]
    pub read: BTreeSet<String>,
    #[serde(default)]
    pub update: BTreeSet<String>,
    #[serde(default)]
    pub send: BTreeSet<String>,
    #[serde(default)]
    pub disk: BTreeSet<String>,
    #[serde(default)]
    pub increments: BTreeSet<String>,
    /// Whether the handler may send messages or arm timers at all (an ACK carries no node
    /// state, so its send set is empty, yet it is sent). Absent means it may.
    #[serde(default = "yes", skip_serializing_if = "Clone::clone")]
    pub emits: bool,
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMessage {
    #[serde(default)]
    pub fields: Vec<String>,
    pub entries: Vec<RawEntry>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFault {
    #[serde(default = "always")]
    pub guard: String,
    #[serde(default)]
    pub update: BTreeSet<String>,
    #[serde(default)]
    pub peer_update: BTreeSet<String>,
}

/// The on-disk form, also what the analyzer writes.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSets {
    pub format: String,
    pub version: u64,
    pub system: String,
    pub node_vars: BTreeSet<String>,
    /// Variables all nodes share (the environment's), see the module docs.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub shared: BTreeSet<String>,
    pub messages: BTreeMap<String, RawMessage>,
    #[serde(default)]
    pub crash: Vec<RawFault>,
    #[serde(default)]
    pub reboot: Vec<RawFault>,
}

fn always() -> String {
    "true".into()
}

/// The sets of one message at one state.
#[derive(Clone, Debug)]
pub struct Entry {
    pub guard: Expr,
    pub read: BTreeSet<String>,
    pub update: BTreeSet<String>,
    pub send: BTreeSet<String>,
    pub disk: BTreeSet<String>,
    pub increments: BTreeSet<String>,
    /// The handler may send messages or arm timers.
    pub emits: bool,
}

impl Entry {
    /// Processing changes no state and produces nothing: SAMC's "discarded" message.
    pub fn changes_nothing(&self) -> bool {
        self.update.is_empty() && self.disk.is_empty() && !self.emits
    }
}

/// The update sets of a crash or reboot at one state.
#[derive(Clone, Debug)]
pub struct FaultEntry {
    pub guard: Expr,
    /// Variables of the node that crashes or reboots.
    pub update: BTreeSet<String>,
    /// Variables every other node changes when it notices.
    pub peer_update: BTreeSet<String>,
}

#[derive(Clone, Debug)]
pub struct SetsFile {
    pub system: String,
    pub node_vars: BTreeSet<String>,
    /// Variables all nodes share: what makes events at different nodes dependent.
    pub shared: BTreeSet<String>,
    pub messages: BTreeMap<String, Vec<Entry>>,
    pub crash: Vec<FaultEntry>,
    pub reboot: Vec<FaultEntry>,
}

impl SetsFile {
    /// Parse and check a sets file. `file` names it in errors.
    pub fn parse(file: &str, text: &str, known: &Known) -> Result<SetsFile, SetsError> {
        let err = |line: usize, message: String| SetsError {
            file: file.into(),
            line,
            message,
        };
        let value: Value =
            serde_json::from_str(text).map_err(|e| err(e.line(), format!("invalid JSON: {e}")))?;
        if value.get("format").and_then(Value::as_str) != Some(FORMAT) {
            return Err(err(
                1,
                format!("not a sets file: it needs \"format\": \"{FORMAT}\""),
            ));
        }
        match value.get("version").and_then(Value::as_u64) {
            Some(VERSION) => {}
            other => {
                return Err(err(
                    line_of(text, "\"version\"", 1),
                    format!("sets file version {other:?} is not supported; this flymc reads version {VERSION}"),
                ))
            }
        }
        let raw: RawSets = serde_json::from_value(value).map_err(|e| {
            let needle = e.to_string().split('`').nth(1).map(|s| format!("\"{s}\""));
            let line = needle.map_or(1, |n| line_of(text, &n, 1));
            err(line, e.to_string())
        })?;
        Self::from_raw(file, text, raw, known)
    }

    fn from_raw(
        file: &str,
        text: &str,
        raw: RawSets,
        known: &Known,
    ) -> Result<SetsFile, SetsError> {
        let err = |line: usize, message: String| SetsError {
            file: file.into(),
            line,
            message,
        };
        if let Some(vars) = &known.node_vars {
            for v in &raw.node_vars {
                if !vars.contains(v) {
                    return Err(err(
                        line_of(text, &format!("\"{v}\""), 1),
                        format!(
                            "unknown variable `{v}`: {} nodes have {}",
                            raw.system,
                            vars.iter().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
            }
        }
        let check_vars = |set: &BTreeSet<String>,
                          what: &str,
                          from: usize|
         -> Result<(), SetsError> {
            for v in set {
                if !raw.node_vars.contains(v) && !raw.shared.contains(v) {
                    return Err(err(
                        line_of(text, &format!("\"{v}\""), from),
                        format!("unknown variable `{v}` in a {what} set: it is not in node_vars or shared"),
                    ));
                }
            }
            Ok(())
        };
        let parse_guard = |g: &str,
                           from: usize,
                           fields: Option<&[String]>|
         -> Result<Expr, SetsError> {
            let line = line_of(text, &json_escape(g), from);
            let e = guard::parse(g)
                .map_err(|e| err(line, format!("guard `{g}` does not parse: {e}")))?;
            let mut vars = Vec::new();
            e.vars(Scope::Node, &mut vars);
            for v in vars {
                if !raw.node_vars.contains(&v) {
                    return Err(err(
                        line,
                        format!("guard `{g}` reads unknown variable `n.{v}`"),
                    ));
                }
            }
            if let Some(fields) = fields {
                let mut used = Vec::new();
                e.vars(Scope::Msg, &mut used);
                for f in used {
                    if !fields.contains(&f) {
                        return Err(err(
                            line,
                            format!("guard `{g}` reads `m.{f}`, which is not in this message's fields [{}]", fields.join(", ")),
                        ));
                    }
                }
            }
            Ok(e)
        };
        let mut messages = BTreeMap::new();
        for (kind, m) in &raw.messages {
            let at = line_of(text, &format!("\"{kind}\""), 1);
            if let Some(kinds) = &known.message_kinds {
                if !kinds.contains(kind) {
                    return Err(err(
                        at,
                        format!(
                            "message kind `{kind}` does not exist in {}; its kinds are {}",
                            raw.system,
                            kinds.iter().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
            }
            let mut entries = Vec::new();
            for e in &m.entries {
                let guard = parse_guard(&e.guard, at, Some(&m.fields))?;
                for (set, what) in [
                    (&e.read, "read"),
                    (&e.update, "update"),
                    (&e.send, "send"),
                    (&e.increments, "increments"),
                ] {
                    check_vars(set, what, at)?;
                }
                if let Some(v) = e.increments.difference(&e.update).next() {
                    return Err(err(
                        line_of(text, &format!("\"{v}\""), at),
                        format!("`{v}` is in increments but not in update for `{kind}`"),
                    ));
                }
                entries.push(Entry {
                    guard,
                    read: e.read.clone(),
                    update: e.update.clone(),
                    send: e.send.clone(),
                    disk: e.disk.clone(),
                    increments: e.increments.clone(),
                    emits: e.emits,
                });
            }
            messages.insert(kind.clone(), entries);
        }
        let faults = |list: &[RawFault], what: &str| -> Result<Vec<FaultEntry>, SetsError> {
            let at = line_of(text, &format!("\"{what}\""), 1);
            list.iter()
                .map(|f| {
                    check_vars(&f.update, what, at)?;
                    check_vars(&f.peer_update, what, at)?;
                    Ok(FaultEntry {
                        guard: parse_guard(&f.guard, at, Some(&[]))?,
                        update: f.update.clone(),
                        peer_update: f.peer_update.clone(),
                    })
                })
                .collect()
        };
        Ok(SetsFile {
            crash: faults(&raw.crash, "crash")?,
            reboot: faults(&raw.reboot, "reboot")?,
            system: raw.system,
            node_vars: raw.node_vars,
            shared: raw.shared,
            messages,
        })
    }

    /// The sets of a message of `kind` with `fields` arriving at a node in state `node`, or `None`
    /// when the file has no entry that applies (callers must then assume the worst).
    pub fn message(
        &self,
        kind: &str,
        node: &Map<String, Value>,
        fields: &Map<String, Value>,
    ) -> Option<&Entry> {
        self.messages
            .get(kind)?
            .iter()
            .find(|e| e.guard.holds(node, fields))
    }

    /// The sets of a crash (or reboot, with `reboot = true`) of a node in state `node`.
    pub fn fault(&self, reboot: bool, node: &Map<String, Value>) -> Option<&FaultEntry> {
        let list = if reboot { &self.reboot } else { &self.crash };
        list.iter().find(|e| e.guard.holds(node, &Map::new()))
    }
}

fn json_escape(s: &str) -> String {
    let quoted = Value::String(s.into()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// 1-based line of the first occurrence of `needle` at or after line `from`, else `from`.
fn line_of(text: &str, needle: &str, from: usize) -> usize {
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .find(|(_, l)| l.contains(needle))
        .map_or(from, |(i, _)| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GOOD: &str = r#"{
  "format": "flymc-sets", "version": 1, "system": "demo",
  "node_vars": ["promised", "acks"],
  "messages": {
    "prepare": {
      "fields": ["ballot"],
      "entries": [
        {"guard": "m.ballot > n.promised", "read": ["promised"], "update": ["promised"], "send": ["promised"], "disk": ["paxos"]},
        {"guard": "true", "read": ["promised"]}
      ]
    },
    "ack": {"entries": [{"update": ["acks"], "increments": ["acks"]}]}
  },
  "crash": [{"update": ["acks"], "peer_update": []}]
}"#;

    fn known() -> Known {
        Known {
            node_vars: Some(["promised", "acks"].iter().map(|s| s.to_string()).collect()),
            message_kinds: Some(["prepare", "ack"].iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn guarded_entries_are_chosen_by_state() {
        let s = SetsFile::parse("demo.json", GOOD, &known()).unwrap();
        let n = json!({"promised": 2}).as_object().unwrap().clone();
        let hi = json!({"ballot": 3}).as_object().unwrap().clone();
        let lo = json!({"ballot": 1}).as_object().unwrap().clone();
        assert!(s
            .message("prepare", &n, &hi)
            .unwrap()
            .update
            .contains("promised"));
        assert!(s.message("prepare", &n, &lo).unwrap().update.is_empty());
        assert!(s.message("nope", &n, &lo).is_none());
        assert!(s.fault(false, &n).unwrap().update.contains("acks"));
    }

    #[test]
    fn errors_name_file_and_line() {
        let bad = GOOD.replace("\"read\": [\"promised\"]}", "\"read\": [\"promize\"]}");
        let e = SetsFile::parse("demo.json", &bad, &known()).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("demo.json", 9));
        assert!(e.message.contains("unknown variable `promize`"), "{e}");

        let bad = GOOD.replace("m.ballot > n.promised", "m.ballot >> n.promised");
        let e = SetsFile::parse("demo.json", &bad, &known()).unwrap_err();
        assert_eq!(e.line, 8);
        assert!(e.message.contains("does not parse"), "{e}");

        let bad = GOOD.replace("\"ack\": {", "\"nack\": {");
        let e = SetsFile::parse("demo.json", &bad, &known()).unwrap_err();
        assert_eq!(e.line, 12);
        assert!(
            e.message.contains("message kind `nack` does not exist"),
            "{e}"
        );

        let bad = GOOD.replace(
            "\"node_vars\": [\"promised\", \"acks\"]",
            "\"node_vars\": [\"promised\", \"acks\", \"ghost\"]",
        );
        let e = SetsFile::parse("demo.json", &bad, &known()).unwrap_err();
        assert_eq!(e.line, 3);

        let e = SetsFile::parse("demo.json", "{\n  \"format\": ", &known()).unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn shared_variables_are_known_in_sets_but_not_in_guards() {
        let with = GOOD.replace(
            "\"node_vars\": [\"promised\", \"acks\"],",
            "\"node_vars\": [\"promised\", \"acks\"], \"shared\": [\"clock\"],",
        );
        let uses = with.replace(
            "\"update\": [\"acks\"], \"increments\"",
            "\"update\": [\"acks\", \"clock\"], \"increments\"",
        );
        let s = SetsFile::parse("demo.json", &uses, &known()).unwrap();
        assert!(s.shared.contains("clock"));
        let n = json!({"acks": 0}).as_object().unwrap().clone();
        assert!(s
            .message("ack", &n, &Map::new())
            .unwrap()
            .update
            .contains("clock"));
        // Without the declaration it is an unknown variable, as before.
        let undeclared = GOOD.replace(
            "\"update\": [\"acks\"], \"increments\"",
            "\"update\": [\"acks\", \"clock\"], \"increments\"",
        );
        let e = SetsFile::parse("demo.json", &undeclared, &known()).unwrap_err();
        assert!(e.message.contains("not in node_vars or shared"), "{e}");
        // A shared variable is no node's state: a guard cannot read it.
        let guarded = with.replace("m.ballot > n.promised", "m.ballot > n.clock");
        let e = SetsFile::parse("demo.json", &guarded, &known()).unwrap_err();
        assert!(e.message.contains("unknown variable `n.clock`"), "{e}");
    }
}
