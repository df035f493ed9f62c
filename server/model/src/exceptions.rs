//! What nodes hide: exceptions they catch and lines they log. Generic for every system.
//!
//! A hook records what its node caught (Java: `exception` points of hooks.toml; Rust: panics and
//! errors a handler hands to `Hook::error`) in the node variable `exceptions`, a list of
//! records `{type, message, where, frames}` kept over the node's incarnation; the real target
//! puts the node log lines that match the configured patterns into the node variable `logged`.
//! Two safety properties read them for every system:
//!
//! - `no-exception` fires on the first state where a node has a record that no allow pattern
//!   covers. An allow pattern is a regular expression searched (anywhere, unless anchored with
//!   `^`/`$`) in the record's text `TYPE: MESSAGE in WHERE` (`TYPE in WHERE` when the message
//!   is null), e.g. `^java\.io\.EOFException`, `SocketException: .* in .*Follower\.followLeader$`.
//!   The allow list is the system's ([`About::allowed_exceptions`](crate::About::allowed_exceptions): what it treats as normal)
//!   plus the workload's `[exceptions] allow = [...]`; `system = false` there drops the
//!   system's part.
//! - `no-error-log` fires on the first state where a node has a `logged` line. The patterns are
//!   the system's plus the workload's `[logs] patterns = [...]`, regular expressions searched in
//!   each line of the node's log; a pattern with a capture group keeps only the group's text
//!   (so timestamps and thread names stay out of the state).

pub use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::property::{safety, Property};
use crate::state::GlobalState;
use crate::system::System;
use crate::workload::Workload;

pub const NO_EXCEPTION: &str = "no-exception";
pub const NO_ERROR_LOG: &str = "no-error-log";
/// The node variable hooks record exceptions in.
pub const EXCEPTIONS_VAR: &str = "exceptions";
/// The node variable matching log lines go to.
pub const LOGGED_VAR: &str = "logged";

/// A workload's `[exceptions]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExceptionRules {
    /// Patterns of records that are not findings (see the module docs).
    #[serde(default)]
    pub allow: Vec<String>,
    /// Whether the system's own allow list applies too.
    #[serde(default = "yes")]
    pub system: bool,
}

impl Default for ExceptionRules {
    fn default() -> ExceptionRules {
        ExceptionRules {
            allow: Vec::new(),
            system: true,
        }
    }
}

fn yes() -> bool {
    true
}

/// A workload's `[logs]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogRules {
    /// Regular expressions over the lines of a node's log (see the module docs).
    #[serde(default)]
    pub patterns: Vec<String>,
    /// Whether the system's own `log_patterns` apply too (the twin of `[exceptions] system`).
    #[serde(default = "yes")]
    pub system: bool,
}

impl Default for LogRules {
    fn default() -> LogRules {
        LogRules {
            patterns: Vec::new(),
            system: true,
        }
    }
}

/// Compile `patterns`; the error names the first bad one.
pub fn compile(patterns: &[impl AsRef<str>]) -> Result<Vec<Regex>, String> {
    patterns
        .iter()
        .map(|p| {
            Regex::new(p.as_ref()).map_err(|e| {
                format!(
                    "`{}` is not a regular expression: {}",
                    p.as_ref(),
                    e.to_string().lines().last().unwrap_or("")
                )
            })
        })
        .collect()
}

/// The text allow patterns are matched against: `TYPE: MESSAGE in WHERE`.
pub fn subject(record: &Value) -> String {
    let ty = text(record, "type");
    let place = text(record, "where");
    match record.get("message").and_then(Value::as_str) {
        Some(m) => format!("{ty}: {m} in {place}"),
        None => format!("{ty} in {place}"),
    }
}

fn text<'a>(record: &'a Value, key: &str) -> &'a str {
    record.get(key).and_then(Value::as_str).unwrap_or("?")
}

/// One line for a record found at node `node`.
pub fn describe(node: usize, record: &Value) -> String {
    let ty = text(record, "type");
    let place = text(record, "where");
    let msg = match record.get("message").and_then(Value::as_str) {
        Some(m) => format!(" ({m})"),
        None => String::new(),
    };
    let how = if record.get("escaped").and_then(Value::as_bool) == Some(true) {
        format!("n{node}: {ty}{msg} escaped {place}")
    } else {
        format!("n{node} caught {ty}{msg} in {place}")
    };
    match record
        .get("frames")
        .and_then(Value::as_array)
        .and_then(|f| f.first())
        .and_then(Value::as_str)
    {
        Some(top) => format!("{how}, thrown at {top}"),
        None => how,
    }
}

/// `no-exception` over `allow` (compiled patterns).
pub fn no_exception(allow: Vec<Regex>) -> Box<dyn Property> {
    safety(NO_EXCEPTION, move |s: &GlobalState| {
        for (i, n) in s.nodes.iter().enumerate() {
            let Some(list) = n.vars.get(EXCEPTIONS_VAR).and_then(Value::as_array) else {
                continue;
            };
            for r in list {
                let subj = subject(r);
                if !allow.iter().any(|a| a.is_match(&subj)) {
                    return Err(describe(i, r));
                }
            }
        }
        Ok(())
    })
}

/// `no-error-log`: no node logged a line that a log pattern matched.
pub fn no_error_log() -> Box<dyn Property> {
    safety(NO_ERROR_LOG, |s: &GlobalState| {
        for (i, n) in s.nodes.iter().enumerate() {
            let first = n
                .vars
                .get(LOGGED_VAR)
                .and_then(Value::as_array)
                .and_then(|l| l.first());
            if let Some(line) = first {
                let line = line
                    .as_str()
                    .map_or_else(|| line.to_string(), str::to_string);
                return Err(format!("n{i} logged: {line}"));
            }
        }
        Ok(())
    })
}

/// The allow list of `system` for `workload` (the workload's patterns were checked when it was
/// read; a bad pattern of a system's own is left out with a warning on stderr).
pub fn allow_list(system: &dyn System, workload: &Workload) -> Vec<Regex> {
    let rules = workload.exception_rules();
    let mut out = Vec::new();
    if rules.system {
        for p in &system.about().allowed_exceptions {
            match Regex::new(p) {
                Ok(r) => out.push(r),
                Err(e) => eprintln!("flymc: {}: allowed exception `{p}`: {e}", system.name()),
            }
        }
    }
    out.extend(compile(&rules.allow).unwrap_or_default());
    out
}

/// The properties that hold for every system: `no-exception` and `no-error-log`.
pub fn generic_properties(system: &dyn System, workload: &Workload) -> Vec<Box<dyn Property>> {
    vec![no_exception(allow_list(system, workload)), no_error_log()]
}

/// Every property a run of `workload` on `system` checks: the system's own, then the generic
/// ones.
pub fn run_properties(system: &dyn System, workload: &Workload) -> Vec<Box<dyn Property>> {
    let mut props = system.properties(workload);
    props.extend(generic_properties(system, workload));
    props.extend(
        workload
            .properties
            .iter()
            .map(|p| Box::new(p.clone()) as Box<dyn Property>),
    );
    props
}

/// Log scanning: the lines of `text` that a pattern matches, each as its first capture group
/// (the whole match's line when the pattern has none).
pub fn matching_lines(patterns: &[Regex], text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        for p in patterns {
            if let Some(c) = p.captures(line) {
                let kept = c.get(1).map_or(line, |g| g.as_str());
                out.push(kept.to_string());
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::NodeView;
    use serde_json::{json, Map};

    fn state(vars: Vec<Value>) -> GlobalState {
        let nodes = vars
            .into_iter()
            .map(|v| NodeView {
                alive: true,
                vars: match v {
                    Value::Object(m) => m,
                    _ => Map::new(),
                },
            })
            .collect();
        GlobalState::new(nodes, &[])
    }

    fn npe() -> Value {
        json!({
            "type": "java.lang.NullPointerException",
            "message": "boom",
            "where": "org.example.Learner.syncWithLeader",
            "frames": ["org.example.Learner.syncWithLeader:42"],
        })
    }

    #[test]
    fn a_record_no_pattern_allows_is_a_violation_naming_node_type_message_and_method() {
        let mut p = no_exception(Vec::new());
        assert!(p.check(&state(vec![json!({}), json!({})])).is_ok());
        let e = p
            .check(&state(vec![json!({}), json!({ "exceptions": [npe()] })]))
            .unwrap_err();
        assert_eq!(
            e,
            "n1 caught java.lang.NullPointerException (boom) in org.example.Learner.syncWithLeader, \
             thrown at org.example.Learner.syncWithLeader:42"
        );
    }

    #[test]
    fn allow_patterns_are_searched_in_type_message_and_where() {
        let s = state(vec![json!({ "exceptions": [npe()] })]);
        for allowed in [
            "^java\\.lang\\.NullPointerException",
            "NullPointerException: boom",
            "in .*Learner\\.syncWithLeader$",
        ] {
            let mut p = no_exception(compile(&[allowed]).unwrap());
            assert!(p.check(&s).is_ok(), "{allowed}");
        }
        let mut p = no_exception(compile(&["^java\\.io\\.", "boom$"]).unwrap());
        assert!(p.check(&s).is_err());
        let null_msg = json!({ "type": "T", "message": null, "where": "W", "escaped": true });
        assert_eq!(subject(&null_msg), "T in W");
        assert_eq!(describe(0, &null_msg), "n0: T escaped W");
    }

    #[test]
    fn workloads_carry_their_tables_and_bad_patterns_are_refused() {
        let base = "version = 1\nsystem = \"s\"\nnodes = 1\nmax_events = 5\n";
        let w = Workload::parse(
            std::path::Path::new("w.toml"),
            &format!("{base}[exceptions]\nallow = [\"^java\"]\nsystem = false\n[logs]\npatterns = [\"ERROR (.*)\"]\nsystem = false\n"),
        )
        .unwrap();
        assert_eq!(w.exception_rules().allow, vec!["^java"]);
        assert!(!w.exception_rules().system);
        assert_eq!(w.log_rules().patterns, vec!["ERROR (.*)"]);
        assert!(!w.log_rules().system);
        let plain = Workload::parse(std::path::Path::new("w.toml"), base).unwrap();
        assert!(plain.exception_rules().system && plain.log_rules().patterns.is_empty());
        assert!(plain.log_rules().system);
        let e = Workload::parse(
            std::path::Path::new("w.toml"),
            &format!("{base}[logs]\npatterns = [\"(\"]\n"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("logs.patterns: `(` is not a regular expression"),
            "{e}"
        );
    }

    #[test]
    fn a_bad_pattern_is_named() {
        let e = compile(&["ok", "(unclosed"]).unwrap_err();
        assert!(
            e.starts_with("`(unclosed` is not a regular expression"),
            "{e}"
        );
    }

    #[test]
    fn log_lines_keep_their_first_group_and_fire_no_error_log() {
        let pats = compile(&["ERROR \\[[^]]*\\] - (.*)$", "FATAL"]).unwrap();
        let text = "2026 WARN [x] - fine\n2026 ERROR [main:Foo@12] - disk full\nFATAL thing\n";
        let lines = matching_lines(&pats, text);
        assert_eq!(lines, vec!["disk full", "FATAL thing"]);
        let mut p = no_error_log();
        assert!(p.check(&state(vec![json!({})])).is_ok());
        let e = p
            .check(&state(vec![json!({}), json!({ "logged": lines })]))
            .unwrap_err();
        assert_eq!(e, "n1 logged: disk full");
    }
}
