//! Workloads: one TOML file each, under `workloads/<system>/<name>.toml`.
//!
//! ```toml
//! version = 1
//! system = "cassandra-sim"
//! description = "two concurrent CAS operations on the 2.0.0 code (CASSANDRA-5925)"
//! nodes = 3
//! max_events = 200          # a run stops after this many events
//! expect = "no-handler-failure"   # the property this workload's bug breaks, if any
//! [faults]
//! crashes = 0               # crash budget per run
//! reboots = 0               # reboot budget per run
//! crash_nodes = [2]         # nodes that may crash (default: all)
//! down = [0]                # nodes down at the start (default: none)
//! when = 'n2.state == "FOLLOWING"'   # offer faults only in states where this holds
//! [params]                  # system-specific: see [`Workload::params`]
//! variant = "bug-5925"
//! [exceptions]              # no-exception: records these regexes cover are no finding
//! allow = ["^java\\.io\\.EOFException"]   # over `TYPE: MESSAGE in WHERE` (crate::exceptions)
//! system = true             # the system's own allow list applies too (default)
//! [logs]                    # no-error-log: node log lines these regexes match are findings
//! patterns = ["ERROR .* - (.*)"]   # group 1, if any, is what is kept
//! system = true             # the system's own log_patterns apply too (default)
//! ```
//!
//! A node in `down` is not started with the others: no process, an empty data directory, and
//! the global state shows it down exactly as a crashed node. The strategy may bring it up
//! like a crashed node, and that first start is a reboot: it spends one of `reboots` (no crash
//! is spent on putting it down). With `reboots = 0` it stays down for the whole run.
//!
//! `when` is a [`Condition`] over the global state's nodes, in the language of sets-file
//! guards ([`flymc_lang`]): `n2.state` is node 2's variable, `any(...)`/`all(...)` range `n.`
//! over every node, `alive` is whether a node is up, and a down node's other variables are
//! `null`. Crashes *and* reboots are offered only in states where it holds (a condition that
//! a crash can make false may keep the crashed node down). Errors are reported with the
//! file, line and column when the workload is loaded.

mod params;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::event::NodeId;
use flymc_lang::{Check, Condition};

pub const WORKLOAD_VERSION: i64 = 1;
/// The largest workload file flymc reads: real ones are a few hundred bytes, and a path file
/// may name any file as its workload.
pub const MAX_WORKLOAD_BYTES: u64 = 1 << 20;
/// The most nodes a workload may have: the local backend gives node `i` 127.0.k.(2+i), up to
/// 127.0.k.251.
pub const MAX_NODES: usize = 250;
/// The most events a run may have: a path file holds at most this many (flymc-core's
/// `pathfile::MAX_EVENTS`), so a longer run could not be saved or replayed.
pub const MAX_EVENTS: usize = 100_000;

#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("cannot read workload {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: malformed workload TOML: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    /// `size`: ` (N bytes)` when the file says its size.
    #[error("{path} is larger than the {max} MiB a workload file may be{size}; check that it is the workload file you meant", max = MAX_WORKLOAD_BYTES >> 20)]
    TooLarge { path: PathBuf, size: String },
    /// `what`: `faults.when`, or `property NAME`.
    #[error("{path}:{line}:{column}: {what}: {message}")]
    Condition {
        path: PathBuf,
        line: usize,
        column: usize,
        what: String,
        message: String,
    },
    /// `at` is `file:line:column`, or `<workload NAME>` when the parameters were made in code.
    #[error("{at}: {message}")]
    Params { at: String, message: String },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFaults {
    #[serde(default)]
    crashes: i64,
    #[serde(default)]
    reboots: i64,
    #[serde(default)]
    crash_nodes: Option<Vec<i64>>,
    #[serde(default)]
    down: Vec<i64>,
    #[serde(default)]
    when: Option<toml::Spanned<String>>,
}

/// A `[[property]]` of the workload: a condition that must always hold, or eventually.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProperty {
    name: String,
    #[serde(default)]
    always: Option<toml::Spanned<String>>,
    #[serde(default)]
    eventually: Option<toml::Spanned<String>>,
    /// An external checker: the program and its arguments, given each state as JSON on
    /// stdin; exit 0 means the property holds, anything else that it does not (the first
    /// line it prints says why). With `kind = "liveness"` it is judged on end states.
    #[serde(default)]
    command: Option<Vec<String>>,
    #[serde(default)]
    kind: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    version: i64,
    system: String,
    #[serde(default)]
    description: String,
    nodes: i64,
    max_events: i64,
    #[serde(default)]
    expect: Option<String>,
    #[serde(default)]
    faults: Option<RawFaults>,
    /// `[[property]] name, always | eventually`: conditions over the global state.
    #[serde(default)]
    property: Vec<RawProperty>,
    #[serde(default)]
    params: toml::Table,
    /// `[exceptions] allow = [...]`, `system = true` (crate::exceptions).
    #[serde(default)]
    exceptions: Option<crate::exceptions::ExceptionRules>,
    /// `[logs] patterns = [...]` (crate::exceptions).
    #[serde(default)]
    logs: Option<crate::exceptions::LogRules>,
}

/// A parsed, validated workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    /// The file stem: `cass-3` for `workloads/cassandra-sim/cass-3.toml`.
    pub name: String,
    pub system: String,
    pub description: String,
    pub nodes: usize,
    pub max_events: usize,
    pub crashes: u32,
    pub reboots: u32,
    pub crash_nodes: Vec<NodeId>,
    /// Nodes down at the start of every run (ascending); bringing one up is a reboot.
    #[serde(default)]
    pub down: Vec<NodeId>,
    /// Faults are offered only in states where this holds (`[faults] when`).
    #[serde(default)]
    pub fault_when: Option<Condition>,
    /// The property this workload's bug is expected to break, for benchmarks and tests.
    pub expect: Option<String>,
    /// The workload's own properties (`[[property]]`), checked beside the system's.
    #[serde(default)]
    pub properties: Vec<ConditionProperty>,
    /// System-specific parameters.
    pub params: Map<String, Value>,
    /// Parameters given on the command line over the file's (`flymc run --variant NAME`):
    /// already in `params`; kept apart so a path file can record and replay them.
    #[serde(default)]
    pub overrides: Map<String, Value>,
    /// Where it was read from.
    pub file: PathBuf,
    /// SHA-256 of the file's bytes, so a path file can tell when its workload changed.
    pub sha256: String,
    /// The system file of the system it runs on, when that system is described by one (set
    /// by whoever pairs the two), so a path file can find the system again.
    #[serde(default)]
    pub system_file: Option<PathBuf>,
    /// The file's text, kept to give parameter errors a line and column.
    #[serde(skip)]
    source: Option<Arc<str>>,
    #[serde(default)]
    exceptions: crate::exceptions::ExceptionRules,
    #[serde(default)]
    logs: crate::exceptions::LogRules,
}

impl Workload {
    /// Read and parse `path`, refusing a file over [`MAX_WORKLOAD_BYTES`] by its size before
    /// reading it (and one that grows past it as it is read), and anything but a regular file.
    pub fn load(path: &Path) -> Result<Workload, WorkloadError> {
        use crate::bounded::{read_text, BoundedError};
        let text = read_text(path, MAX_WORKLOAD_BYTES).map_err(|e| match e {
            BoundedError::TooLarge { size, .. } => WorkloadError::TooLarge {
                path: path.into(),
                size: size.map_or(String::new(), |s| format!(" ({s} bytes)")),
            },
            other => WorkloadError::Io {
                path: path.into(),
                source: other.into(),
            },
        })?;
        Self::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Workload, WorkloadError> {
        let invalid = |message: String| WorkloadError::Invalid {
            path: path.into(),
            message,
        };
        let raw: RawWorkload = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
            WorkloadError::Parse {
                path: path.into(),
                line,
                column,
                message: e.message().replace('\n', " "),
            }
        })?;
        if raw.version != WORKLOAD_VERSION {
            return Err(invalid(format!(
                "workload format version {} is not supported (this flymc reads version {WORKLOAD_VERSION})",
                raw.version
            )));
        }
        // Checked conversions: a number past its limit is refused, never truncated.
        let within = |what: &str, v: i64, max: usize| -> Result<usize, WorkloadError> {
            match usize::try_from(v) {
                Ok(n) if n <= max => Ok(n),
                _ if v < 0 => Err(invalid(format!("{what} is {v}, but it must be 0 or more"))),
                _ => Err(invalid(format!(
                    "{what} is {v}, but it may be at most {max}"
                ))),
            }
        };
        let nodes = within("nodes", raw.nodes, MAX_NODES)?;
        if nodes == 0 {
            return Err(invalid("nodes must be at least 1".into()));
        }
        let max_events = within("max_events", raw.max_events, MAX_EVENTS)?;
        let faults = raw.faults.unwrap_or(RawFaults {
            crashes: 0,
            reboots: 0,
            crash_nodes: None,
            down: Vec::new(),
            when: None,
        });
        // A fault is an event: no run has more of them than events.
        let crashes = within("faults.crashes", faults.crashes, MAX_EVENTS)? as u32;
        let reboots = within("faults.reboots", faults.reboots, MAX_EVENTS)? as u32;
        let node_list = |what: &str, list: Vec<i64>| -> Result<Vec<NodeId>, WorkloadError> {
            list.into_iter()
                .map(|n| {
                    if n < 0 || n as usize >= nodes {
                        Err(invalid(format!(
                            "{what} names node {n}, but nodes are 0..{}",
                            nodes - 1
                        )))
                    } else {
                        Ok(n as usize)
                    }
                })
                .collect()
        };
        let crash_nodes = match faults.crash_nodes {
            None => (0..nodes).collect(),
            Some(list) => node_list("faults.crash_nodes", list)?,
        };
        let mut down = node_list("faults.down", faults.down)?;
        down.sort_unstable();
        down.dedup();
        if down.len() == nodes {
            return Err(invalid(format!(
                "faults.down lists every node (0..{}), but at least one must be up at the start",
                nodes - 1
            )));
        }
        let fault_when = faults
            .when
            .map(|w| condition(path, text, &w, nodes, "faults.when", false))
            .transpose()?;
        let mut properties: Vec<ConditionProperty> = Vec::new();
        for p in &raw.property {
            let what = format!("property `{}`", p.name);
            if p.name.trim().is_empty() || properties.iter().any(|q| q.name == p.name) {
                return Err(invalid(format!(
                    "[[property]] names must be given and distinct (`{}`)",
                    p.name
                )));
            }
            let given = Given {
                always: p.always.as_ref(),
                eventually: p.eventually.as_ref(),
                command: p.command.as_deref(),
                kind: p.kind.as_deref(),
            };
            let (check, kind) = given.check(
                &what,
                |c| condition(path, text, c, nodes, &what, true),
                |argv| checker(path, argv, &what),
                invalid,
            )?;
            properties.push(ConditionProperty::new(p.name.clone(), kind, check));
        }
        let exceptions = raw.exceptions.unwrap_or_default();
        let logs = raw.logs.unwrap_or_default();
        crate::exceptions::compile(&exceptions.allow)
            .map_err(|e| invalid(format!("exceptions.allow: {e}")))?;
        crate::exceptions::compile(&logs.patterns)
            .map_err(|e| invalid(format!("logs.patterns: {e}")))?;
        let params = match serde_json::to_value(&raw.params) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "workload".into());
        Ok(Workload {
            name,
            system: raw.system,
            description: raw.description,
            nodes,
            max_events,
            crashes,
            reboots,
            crash_nodes,
            down,
            fault_when,
            expect: raw.expect,
            properties,
            params,
            overrides: Map::new(),
            file: path.into(),
            sha256: sha256_hex(text.as_bytes()),
            system_file: None,
            source: Some(text.into()),
            exceptions,
            logs,
        })
    }

    /// Set parameter `key` over the file's, as the command line does (see `overrides`).
    pub fn set_param(&mut self, key: &str, value: Value) {
        self.params.insert(key.to_string(), value.clone());
        self.overrides.insert(key.to_string(), value);
    }

    /// The workload's `[exceptions]` table (allow list of caught exceptions).
    pub fn exception_rules(&self) -> &crate::exceptions::ExceptionRules {
        &self.exceptions
    }

    /// The workload's `[logs]` table (patterns of node log lines that are findings).
    pub fn log_rules(&self) -> &crate::exceptions::LogRules {
        &self.logs
    }
}

/// Parse `[faults] when`, or (`property`) a `[[property]]`'s condition with its history
/// built-ins, its errors placed in the workload file: the column inside the condition counts
/// from its string's opening quote (exact for strings without escapes).
fn condition(
    path: &Path,
    text: &str,
    when: &toml::Spanned<String>,
    nodes: usize,
    what: &str,
    property: bool,
) -> Result<Condition, WorkloadError> {
    let at = |column_in: usize, message: String| {
        let (line, column) = line_col(text, when.span().start);
        WorkloadError::Condition {
            path: path.into(),
            line,
            column: column + column_in,
            what: what.to_string(),
            message,
        }
    };
    // A property's condition may remember the run (history built-ins); `when` may not.
    let parse = match property {
        false => Condition::parse,
        true => Condition::parse_property,
    };
    let c = parse(when.get_ref()).map_err(|e| at(e.column, e.message))?;
    if let Some(k) = c.nodes().into_iter().find(|&k| k >= nodes) {
        return Err(at(
            1,
            format!("names node n{k}, but nodes are n0..n{}", nodes - 1),
        ));
    }
    Ok(c)
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// 1-based line and column of byte `offset` in `text`, for errors placed in a file.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.len(), |i| before.len() - i - 1)
        + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
version = 1
system = "cassandra-sim"
nodes = 3
max_events = 100
[faults]
crashes = 1
reboots = 1
crash_nodes = [2]
[params]
variant = "fixed"
"#;

    #[test]
    fn parses_a_workload() {
        let w = Workload::parse(Path::new("w/cass-1.toml"), GOOD).unwrap();
        assert_eq!(w.name, "cass-1");
        assert_eq!((w.nodes, w.crashes, w.reboots), (3, 1, 1));
        assert_eq!(w.crash_nodes, vec![2]);
        assert_eq!(w.params["variant"], "fixed");
        assert_eq!(w.sha256.len(), 64);
    }

    #[test]
    fn negative_budgets_are_named() {
        let text = GOOD.replace("crashes = 1", "crashes = -1");
        let e = Workload::parse(Path::new("x.toml"), &text)
            .unwrap_err()
            .to_string();
        assert!(e.contains("faults.crashes is -1"), "{e}");
    }

    #[test]
    fn numbers_past_their_limits_are_refused_not_truncated() {
        for (from, to, says) in [
            (
                "nodes = 3",
                "nodes = 1000000000000000000",
                "nodes is 1000000000000000000, but it may be at most 250",
            ),
            (
                "max_events = 100",
                "max_events = 9223372036854775807",
                "max_events is 9223372036854775807, but it may be at most 100000",
            ),
            // 4294967297 as u32 was 1.
            (
                "crashes = 1",
                "crashes = 4294967297",
                "faults.crashes is 4294967297, but it may be at most 100000",
            ),
            (
                "reboots = 1",
                "reboots = 100001",
                "faults.reboots is 100001, but it may be at most 100000",
            ),
        ] {
            let e = Workload::parse(Path::new("x.toml"), &GOOD.replace(from, to))
                .unwrap_err()
                .to_string();
            assert!(e.ends_with(says), "{e}");
        }
        let most = GOOD
            .replace("nodes = 3", "nodes = 250")
            .replace("max_events = 100", "max_events = 100000");
        let w = Workload::parse(Path::new("x.toml"), &most).unwrap();
        assert_eq!((w.nodes, w.max_events), (MAX_NODES, MAX_EVENTS));
    }

    #[test]
    fn malformed_toml_gives_line_and_column() {
        let e = Workload::parse(Path::new("x.toml"), "version = 1\nnodes = [\n").unwrap_err();
        match e {
            WorkloadError::Parse { line, .. } => assert!(line >= 2),
            other => panic!("{other}"),
        }
    }

    #[test]
    fn unknown_keys_and_versions_are_rejected() {
        let text = GOOD.replace("max_events = 100", "max_events = 100\nmax_event = 3");
        assert!(Workload::parse(Path::new("x.toml"), &text).is_err());
        let text = GOOD.replace("version = 1", "version = 7");
        let e = Workload::parse(Path::new("x.toml"), &text)
            .unwrap_err()
            .to_string();
        assert!(e.contains("version 7"), "{e}");
    }

    #[test]
    fn a_file_over_the_limit_is_refused_by_its_size() {
        let file =
            std::env::temp_dir().join(format!("flymc-big-workload-{}.toml", std::process::id()));
        let f = std::fs::File::create(&file).unwrap();
        // Sparse: no disk is spent, and the file is not read.
        f.set_len(MAX_WORKLOAD_BYTES + 1).unwrap();
        let e = Workload::load(&file).unwrap_err().to_string();
        std::fs::remove_file(&file).unwrap();
        assert!(
            e.ends_with("is larger than the 1 MiB a workload file may be (1048577 bytes); check that it is the workload file you meant"),
            "{e}"
        );
    }

    #[test]
    fn a_cluster_larger_than_the_limit_is_refused_before_anything_is_built_for_it() {
        // Found by the fuzzer (fuzz/regressions/workload/): 2^32 nodes allocated 32 GB.
        let text = "version = 1\nsystem = \"raft-sim\"\ndescription = \"d\"\nnodes = 4294967296\nmax_events = 5\n";
        let e = Workload::parse(Path::new("x.toml"), text)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("nodes is 4294967296, but it may be at most 250"),
            "{e}"
        );
    }

    #[test]
    fn down_nodes_and_the_fault_condition_are_read_and_checked() {
        let text = GOOD.replace(
            "crash_nodes = [2]",
            "crash_nodes = [2]\ndown = [1, 0, 1]\nwhen = 'n2.state == \"FOLLOWING\"'",
        );
        let w = Workload::parse(Path::new("w/x.toml"), &text).unwrap();
        assert_eq!(w.down, vec![0, 1]);
        assert_eq!(
            w.fault_when.as_ref().unwrap().text(),
            r#"n2.state == "FOLLOWING""#
        );
        let err = |from: &str, to: &str| {
            Workload::parse(Path::new("w/x.toml"), &GOOD.replace(from, to))
                .unwrap_err()
                .to_string()
        };
        let e = err("crash_nodes = [2]", "down = [3]");
        assert_eq!(e, "w/x.toml: faults.down names node 3, but nodes are 0..2");
        let e = err("crash_nodes = [2]", "down = [0, 1, 2]");
        assert!(e.contains("at least one must be up"), "{e}");
        // Line 10 is `when = ...`; the error's column is the `>>`'s in the file.
        let e = err(
            "crash_nodes = [2]",
            "crash_nodes = [2]\nwhen = \"n2.x >> 1\"",
        );
        assert!(e.starts_with("w/x.toml:10:"), "{e}");
        assert!(e.contains("faults.when"), "{e}");
        let col: usize = e.split(':').nth(2).unwrap().parse().unwrap();
        // The guard parser points at the second `>`.
        assert_eq!(&"when = \"n2.x >> 1\""[col - 2..col], ">>");
        let e = err("crash_nodes = [2]", "when = \"n3.alive\"");
        assert!(e.contains("names node n3, but nodes are n0..n2"), "{e}");
        let e = err("crash_nodes = [2]", "when = \"n.alive\"");
        assert!(e.contains("only inside any"), "{e}");
        let e = err("crash_nodes = [2]", "when = 'ever_unique(n.id per n.term)'");
        assert!(
            e.ends_with("faults.when: `ever_unique(...)` remembers the run's history: it is for properties, not `when`"),
            "{e}"
        );
    }

    #[test]
    fn properties_may_remember_the_run() {
        let text = format!(
            "{GOOD}\n[[property]]\nname = \"election-safety\"\nalways = 'ever_unique(n.id per n.term where n.role == \"leader\")'\n\n[[property]]\nname = \"completeness\"\nalways = 'kept(take(n.log, n.commit) at n.term in n.log where n.role == \"leader\") && ever_agree(n.applied)'\n"
        );
        let w = Workload::parse(Path::new("w/x.toml"), &text).unwrap();
        assert_eq!(w.properties.len(), 2);
        // A path file records the workload: its properties read back.
        let back: Workload = serde_json::from_value(serde_json::to_value(&w).unwrap()).unwrap();
        assert_eq!(back.properties, w.properties);
        // Each run's property remembers its own run.
        let mut p = w.properties[0].clone();
        let leader = |term: i64| crate::NodeView {
            alive: true,
            vars: serde_json::json!({"role": "leader", "term": term})
                .as_object()
                .unwrap()
                .clone(),
        };
        let state = |nodes: Vec<crate::NodeView>| crate::GlobalState::new(nodes, &[]);
        let follower = crate::NodeView {
            alive: true,
            vars: Map::new(),
        };
        use crate::Property;
        assert!(p
            .check(&state(vec![leader(1), follower.clone(), follower.clone()]))
            .is_ok());
        let e = p
            .check(&state(vec![follower.clone(), leader(1), follower.clone()]))
            .unwrap_err();
        assert!(
            e.ends_with("n1 has n.id = 1 where n.term = 1, but n0 had 0 earlier in the run"),
            "{e}"
        );
        let mut fresh = w.properties[0].clone();
        assert!(fresh
            .check(&state(vec![follower.clone(), leader(1), follower]))
            .is_ok());
        // Inside any(...) a history built-in is an error at its column.
        let bad = text
            .replace("always = 'ever_unique", "always = 'any(ever_unique")
            .replace("leader\")'\n\n", "leader\"))'\n\n");
        let e = Workload::parse(Path::new("w/x.toml"), &bad)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("property `election-safety`: `ever_unique(...)` judges the whole run"),
            "{e}"
        );
    }
}

/// What a `[[property]]` table (a workload's or a system file's) gives: exactly one of
/// `always`, `eventually` and `command` (with `kind` for a command).
pub struct Given<'a, S> {
    pub always: Option<&'a S>,
    pub eventually: Option<&'a S>,
    pub command: Option<&'a [String]>,
    pub kind: Option<&'a str>,
}

impl<S> Given<'_, S> {
    /// Its check and kind; `condition` parses a condition where its file has it, `checker`
    /// resolves a checker command, `invalid` makes an error of a message.
    pub fn check<E>(
        &self,
        what: &str,
        condition: impl Fn(&S) -> Result<Condition, E>,
        checker: impl Fn(&[String]) -> Result<Vec<String>, E>,
        invalid: impl Fn(String) -> E,
    ) -> Result<(Check, crate::PropertyKind), E> {
        use crate::PropertyKind::{Liveness, Safety};
        Ok(match (self.always, self.eventually, self.command) {
            (Some(c), None, None) if self.kind.is_none() => (Check::Condition(condition(c)?), Safety),
            (None, Some(c), None) if self.kind.is_none() => {
                (Check::Condition(condition(c)?), Liveness)
            }
            (None, None, Some(argv)) => {
                let kind = match self.kind {
                    None | Some("safety") => Safety,
                    Some("liveness") => Liveness,
                    Some(k) => {
                        return Err(invalid(format!(
                            "{what}: kind `{k}` is not `safety` or `liveness`"
                        )))
                    }
                };
                (Check::Command(checker(argv)?), kind)
            }
            _ => return Err(invalid(format!(
                "{what}: give exactly one of `always = \"...\"` (safety), `eventually = \"...\"` (liveness) or `command = [...]` (with `kind` for liveness)"
            ))),
        })
    }
}

/// A workload's `[[property]]`: `always` a condition (safety, on every state) or
/// `eventually` (liveness, judged on a run's end state), or an external checker.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConditionProperty {
    pub name: String,
    pub kind: crate::PropertyKind,
    pub check: Check,
    /// What the condition's history built-ins remember of the run so far (a property is
    /// fresh per run).
    #[serde(skip)]
    memory: flymc_lang::Memory,
}

impl ConditionProperty {
    pub fn new(name: String, kind: crate::PropertyKind, check: Check) -> ConditionProperty {
        ConditionProperty {
            name,
            kind,
            check,
            memory: Default::default(),
        }
    }
}

/// Two properties are the same when their name, kind and check are (not what they saw).
impl PartialEq for ConditionProperty {
    fn eq(&self, other: &ConditionProperty) -> bool {
        (&self.name, self.kind, &self.check) == (&other.name, other.kind, &other.check)
    }
}

/// A checker command: its program must exist (a relative path is the workload folder's).
fn checker(path: &Path, argv: &[String], what: &str) -> Result<Vec<String>, WorkloadError> {
    let invalid = |message: String| WorkloadError::Invalid {
        path: path.into(),
        message,
    };
    let Some(program) = argv.first() else {
        return Err(invalid(format!(
            "{what}: `command` is empty: give the checker program and its arguments"
        )));
    };
    let mut argv = argv.to_vec();
    if program.contains('/') {
        let p = Path::new(program);
        let p = if p.is_relative() {
            path.parent().unwrap_or(Path::new(".")).join(p)
        } else {
            p.to_path_buf()
        };
        if !p.is_file() {
            return Err(invalid(format!(
                "{what}: the checker {} does not exist",
                p.display()
            )));
        }
        argv[0] = p.display().to_string();
    }
    Ok(argv)
}

impl crate::Property for ConditionProperty {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> crate::PropertyKind {
        self.kind
    }
    fn check(&mut self, state: &crate::GlobalState) -> Result<(), String> {
        self.check.check(&state.nodes, state, &mut self.memory)
    }
}
