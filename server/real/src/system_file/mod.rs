//! Systems described in a file: `system.toml` says how to start a node, which hook it speaks
//! through, what it reports, which nodes are interchangeable, what survives a crash, its sets
//! file and its properties; [`FileSystem`] is the [`flymc_model::System`] it describes. The
//! format, field by field, is in `docs/ADDING-A-SYSTEM.md`.
//!
//! Every error names the file, and the line and column where the file says it: a field the
//! format does not know, a property that does not parse or reads a variable the nodes do not
//! report, a program that is not there.

mod schema;
mod system;

use std::path::{Path, PathBuf};
use std::time::Duration;

use flymc_lang::Condition;
use flymc_model::bounded::{read_text, MAX_CONFIG_BYTES, MAX_SETS_BYTES};
use flymc_model::workload::line_col;
use flymc_model::workload::{ConditionProperty, Given};
use serde_json::{Map, Value};
use toml::Spanned;

pub use schema::VERSION;
pub use system::FileSystem;

/// The file name flymc looks for in a system's folder.
pub const FILE_NAME: &str = "system.toml";

/// Variables every node has besides what it reports: `alive`, `id` (the node's number) and
/// `exceptions` (what its hook caught).
const BUILT_IN_VARS: &[&str] = &["alive", "id", "exceptions"];

#[derive(Debug, thiserror::Error)]
pub enum SystemFileError {
    #[error("cannot read system file {0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// `{file}:{line}:{column}: {message}`.
    #[error("{file}:{line}:{column}: {message}")]
    At {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
}

/// How a node's hook reaches flymc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookKind {
    /// The Rust hook crate (`flymc-hook`), linked into the node program.
    Rust,
    /// flymc's Java agent with a hooks file: `{java_agent}` in the arguments becomes
    /// `-javaagent:JAR=CONFIG`. `config` is the hooks file as the agent's JSON.
    JavaAgent { hooks: PathBuf, config: String },
    /// Any program that speaks hooks/PROTOCOL.md itself.
    Protocol,
}

/// A setup check: a command that must succeed before the first run, and what to do if not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetupCheck {
    /// The program and its arguments: never empty.
    pub run: Vec<String>,
    pub fix: String,
    /// How long it may take: past it, it is killed (with what it started) and the run refused.
    pub timeout: Duration,
}

/// A setup check's time when its `timeout_secs` does not say: checks look for a program or a
/// file, so a minute is far more than one needs and still ends a check that hangs.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest `timeout_secs` a check may give.
pub const MAX_CHECK_TIMEOUT: Duration = Duration::from_secs(3600);

/// How to start node programs.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSpec {
    /// A program path, or a bare name looked up next to flymc's executable, then on `PATH`.
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub settle_timeout_ms: Option<u64>,
    pub notices: bool,
}

/// Which nodes are interchangeable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Roles {
    /// No two nodes (no symmetry reduction).
    None,
    /// Every node.
    All,
    /// The nodes the workload may crash, and the others.
    Crashable,
}

/// A parsed, checked `system.toml`.
#[derive(Clone, Debug)]
pub struct SystemFile {
    /// The file as it was named (for messages).
    pub file: PathBuf,
    /// Its folder, absolute: what relative paths in it are relative to. Nodes start in their
    /// own data directories, so a path relative to the current folder would not reach them.
    pub dir: PathBuf,
    pub name: String,
    pub description: String,
    /// The folder of its workloads.
    pub workloads: PathBuf,
    /// The Rust integration that supplies the rest, for systems that have one.
    pub rust: Option<String>,
    pub node: Option<NodeSpec>,
    pub hook: HookKind,
    pub checks: Vec<SetupCheck>,
    /// Workload parameters and their defaults.
    pub params: Map<String, Value>,
    /// Workload parameters without a default, and their types (as [`type_name`] words).
    pub optional_params: Vec<(String, String)>,
    /// `(parameter, event)`: each element of the parameter is a client event.
    pub clients: Option<(String, String)>,
    pub vars: Vec<String>,
    pub node_refs: Vec<String>,
    pub node_ref_fields: Vec<String>,
    pub states_complete: bool,
    pub roles: Roles,
    pub survive_crash: Option<Vec<String>>,
    pub crash_loses_sent: bool,
    pub messages: Option<Vec<String>>,
    /// The sets file's path and text.
    pub sets: Option<(PathBuf, String)>,
    pub exceptions: Vec<String>,
    pub log_patterns: Vec<String>,
    pub properties: Vec<ConditionProperty>,
}

impl SystemFile {
    pub fn load(file: &Path) -> Result<SystemFile, SystemFileError> {
        let text = read_text(file, MAX_CONFIG_BYTES)
            .map_err(|e| SystemFileError::Io(file.into(), e.into()))?;
        SystemFile::parse(file, &text)
    }

    /// Parse `text` as the file `file` (relative paths in it are the file's folder's).
    pub fn parse(file: &Path, text: &str) -> Result<SystemFile, SystemFileError> {
        SystemFile::parse_with(file, text, &[])
    }

    /// [`SystemFile::parse`] for a file compiled into flymc: the files it names (sets, hooks)
    /// are taken from `embedded`, by their path as the file writes it, before the disk.
    pub fn parse_with(
        file: &Path,
        text: &str,
        embedded: &[(&str, &str)],
    ) -> Result<SystemFile, SystemFileError> {
        let read = |rel: &str, path: &Path, max: u64| -> std::io::Result<String> {
            match embedded.iter().find(|(name, _)| *name == rel) {
                Some((_, t)) => Ok(t.to_string()),
                None => Ok(read_text(path, max)?),
            }
        };
        let at = |offset: usize, message: String| {
            let (line, column) = line_col(text, offset);
            SystemFileError::At {
                file: file.into(),
                line,
                column,
                message,
            }
        };
        let spanned = |s: &Spanned<String>, message: String| at(s.span().start, message);
        let raw: schema::Raw = toml::from_str(text).map_err(|e| {
            at(
                e.span().map_or(0, |s| s.start),
                format!("malformed system file: {}", e.message().replace('\n', " ")),
            )
        })?;
        if *raw.version.get_ref() != VERSION {
            return Err(at(
                raw.version.span().start,
                format!(
                    "system file format version {} is not supported (this flymc reads version {VERSION})",
                    raw.version.get_ref()
                ),
            ));
        }
        let name = raw.name.get_ref().clone();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(spanned(
                &raw.name,
                format!("name `{name}`: use letters, digits, `-` and `_` (it names the system on the command line)"),
            ));
        }
        let parent = file.parent().filter(|p| !p.as_os_str().is_empty());
        let dir = std::path::absolute(parent.unwrap_or(Path::new(".")))
            .unwrap_or_else(|_| parent.unwrap_or(Path::new(".")).to_path_buf());
        let hook = match raw.hook.kind.as_ref().map(|k| k.get_ref().as_str()) {
            None | Some("rust") => HookKind::Rust,
            Some("protocol") => HookKind::Protocol,
            Some("java-agent") => {
                let Some(hooks) = &raw.hook.hooks else {
                    return Err(spanned(
                        raw.hook.kind.as_ref().unwrap(),
                        "hook kind `java-agent` needs `hooks = \"FILE\"`, the hooks file".into(),
                    ));
                };
                let path = dir.join(hooks.get_ref());
                let text = read(hooks.get_ref(), &path, MAX_CONFIG_BYTES).map_err(|e| {
                    spanned(
                        hooks,
                        match e.kind() {
                            std::io::ErrorKind::NotFound => {
                                format!("the hooks file {} does not exist", path.display())
                            }
                            _ => format!("cannot read the hooks file {}: {e}", path.display()),
                        },
                    )
                })?;
                let config = hooks_config_json(&text).map_err(|e| {
                    spanned(hooks, format!("the hooks file {}: {e}", path.display()))
                })?;
                HookKind::JavaAgent {
                    hooks: path,
                    config,
                }
            }
            Some(other) => {
                return Err(spanned(
                    raw.hook.kind.as_ref().unwrap(),
                    format!("hook kind `{other}`: use `rust`, `java-agent` or `protocol`"),
                ))
            }
        };
        if raw.node.is_none() && raw.rust.is_none() {
            return Err(at(
                0,
                "a system file needs a [node] table (how to start a node program)".into(),
            ));
        }
        let node = raw.node.as_ref().map(|n| NodeSpec {
            program: n.program.get_ref().clone(),
            args: n.args.iter().map(|a| a.get_ref().clone()).collect(),
            env: n
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.get_ref().clone()))
                .collect(),
            settle_timeout_ms: n.settle_timeout_ms,
            notices: n.notices,
        });
        let params = match serde_json::to_value(&raw.params) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let mut optional_params = Vec::new();
        for (k, t) in &raw.optional_params {
            if !TYPES.contains(&t.get_ref().as_str()) || params.contains_key(k) {
                return Err(spanned(
                    t,
                    format!(
                        "optional_params.{k}: give its type, one of {}, and no default in [params]",
                        TYPES.join(", ")
                    ),
                ));
            }
            optional_params.push((k.clone(), t.get_ref().clone()));
        }
        if let Some(n) = &raw.node {
            for a in n.args.iter().chain(n.env.values()) {
                system::check_placeholders(a.get_ref(), &params, &optional_params, &hook)
                    // The string's opening quote, then the placeholder's offset in it.
                    .map_err(|(i, m)| at(a.span().start + 1 + i, m))?;
            }
            if n.program.get_ref().contains('/') {
                let p = dir.join(n.program.get_ref());
                if !p.is_file() {
                    return Err(spanned(
                        &n.program,
                        format!("the node program {} does not exist", p.display()),
                    ));
                }
            }
        }
        let clients = match &raw.clients {
            Some(c) => {
                match params.get(c.param.get_ref()) {
                    Some(Value::Array(_)) => {}
                    _ => return Err(spanned(
                        &c.param,
                        format!(
                            "clients.param `{}` must name a list parameter of [params] (e.g. `{} = []`)",
                            c.param.get_ref(),
                            c.param.get_ref()
                        ),
                    )),
                }
                Some((c.param.get_ref().clone(), c.event.clone()))
            }
            None => None,
        };
        let vars = raw.state.vars.clone();
        let known = |v: &str| vars.iter().any(|k| k == v) || BUILT_IN_VARS.contains(&v);
        for r in raw
            .state
            .node_refs
            .iter()
            .chain(raw.faults.survive_crash.iter().flatten())
        {
            if !known(r.get_ref()) {
                return Err(spanned(
                    r,
                    format!(
                        "unknown variable `{}`: state.vars lists {}",
                        r.get_ref(),
                        vars.join(", ")
                    ),
                ));
            }
        }
        let roles = match raw.symmetry.roles.as_ref().map(|r| r.get_ref().as_str()) {
            None | Some("none") => Roles::None,
            Some("all") => Roles::All,
            Some("crashable") => Roles::Crashable,
            Some(other) => {
                return Err(spanned(
                    raw.symmetry.roles.as_ref().unwrap(),
                    format!("symmetry.roles `{other}`: use `none`, `all` or `crashable`"),
                ))
            }
        };
        let sets = match &raw.sets {
            Some(s) => {
                let p = dir.join(s.get_ref());
                let t = read(s.get_ref(), &p, MAX_SETS_BYTES).map_err(|e| {
                    spanned(s, format!("cannot read the sets file {}: {e}", p.display()))
                })?;
                Some((p, t))
            }
            None => None,
        };
        for p in raw.exceptions.iter().chain(&raw.log_patterns) {
            regex_check(p.get_ref()).map_err(|m| spanned(p, m))?;
        }
        let mut checks = Vec::new();
        for c in raw.checks {
            if c.run.get_ref().first().is_none_or(|p| p.is_empty()) {
                return Err(at(
                    c.run.span().start,
                    "[[check]] `run` is empty: give the program to run and its arguments, e.g. run = [\"sh\", \"-c\", \"command -v mynode\"]".into(),
                ));
            }
            let timeout = match &c.timeout_secs {
                None => CHECK_TIMEOUT,
                Some(t) => {
                    let secs = Duration::from_secs(*t.get_ref());
                    if secs.is_zero() || secs > MAX_CHECK_TIMEOUT {
                        return Err(at(
                            t.span().start,
                            format!(
                                "[[check]] timeout_secs = {}: give 1 to {} seconds",
                                t.get_ref(),
                                MAX_CHECK_TIMEOUT.as_secs()
                            ),
                        ));
                    }
                    secs
                }
            };
            checks.push(SetupCheck {
                run: c.run.into_inner(),
                fix: c.fix,
                timeout,
            });
        }
        let mut properties: Vec<ConditionProperty> = Vec::new();
        for p in &raw.properties {
            let name = p.name.get_ref();
            let what = format!("property `{name}`");
            let here = p.name.span().start;
            if name.trim().is_empty() || properties.iter().any(|q| &q.name == name) {
                return Err(at(
                    here,
                    format!("[[property]] names must be given and distinct (`{name}`)"),
                ));
            }
            let condition = |s: &Spanned<String>| -> Result<Condition, SystemFileError> {
                // The column inside the condition counts from the string's opening quote.
                let base = s.span().start;
                let c = Condition::parse_property(s.get_ref())
                    .map_err(|e| at(base + e.column, format!("{what}: {}", e.message)))?;
                if let Some(v) = c.vars().into_iter().find(|v| !known(v)) {
                    let col = name_at(s.get_ref(), &v).map_or(1, |c| c + 1);
                    return Err(at(
                        base + col,
                        format!(
                            "{what}: unknown variable `{v}`: state.vars lists {}",
                            vars.join(", ")
                        ),
                    ));
                }
                Ok(c)
            };
            let given = Given {
                always: p.always.as_ref(),
                eventually: p.eventually.as_ref(),
                command: p.command.as_deref(),
                kind: p.kind.as_deref(),
            };
            let (check, kind) = given.check(
                &what,
                condition,
                |argv| {
                    if argv.is_empty() {
                        return Err(at(here, format!("{what}: `command` is empty: give the checker program and its arguments")));
                    }
                    let mut argv = argv.to_vec();
                    if argv[0].contains('/') && Path::new(&argv[0]).is_relative() {
                        argv[0] = dir.join(&argv[0]).display().to_string();
                    }
                    Ok(argv)
                },
                |m| at(here, m),
            )?;
            properties.push(ConditionProperty::new(name.clone(), kind, check));
        }
        Ok(SystemFile {
            file: file.into(),
            dir: dir.clone(),
            name,
            description: raw.description,
            workloads: dir.join(raw.workloads.as_deref().unwrap_or("workloads")),
            rust: raw.rust.map(|r| r.into_inner()),
            node,
            hook,
            checks,
            params,
            optional_params,
            clients,
            vars,
            node_refs: raw
                .state
                .node_refs
                .into_iter()
                .map(|r| r.into_inner())
                .collect(),
            node_ref_fields: raw.state.node_ref_fields,
            states_complete: raw.state.complete,
            roles,
            survive_crash: raw
                .faults
                .survive_crash
                .map(|v| v.into_iter().map(|r| r.into_inner()).collect()),
            crash_loses_sent: raw.faults.crash_loses_sent,
            messages: raw.messages,
            sets,
            exceptions: raw.exceptions.into_iter().map(|p| p.into_inner()).collect(),
            log_patterns: raw
                .log_patterns
                .into_iter()
                .map(|p| p.into_inner())
                .collect(),
            properties,
        })
    }
}

/// Where a condition names variable `v` (`n.v` or `nK.v`): its byte offset.
fn name_at(text: &str, v: &str) -> Option<usize> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(v)
        .map(|(i, _)| i)
        .find(|&i| text[..i].ends_with('.') && !text[i + v.len()..].starts_with(ident))
}

/// The parameter types `optional_params` may name, as [`type_name`] gives them.
const TYPES: &[&str] = &["array", "integer", "string", "boolean", "table", "float"];

/// A JSON value's type in the words of `optional_params`.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "table",
    }
}

fn regex_check(p: &str) -> Result<(), String> {
    flymc_model::exceptions::compile(&[p.to_string()])
        .map(|_| ())
        .map_err(|e| format!("pattern `{p}`: {e}"))
}

/// A hooks file (TOML) as the Java agent's JSON configuration (`[[point]]` becomes `points`).
pub fn hooks_config_json(text: &str) -> Result<String, String> {
    let v: toml::Value = toml::from_str(text).map_err(|e| e.message().to_string())?;
    let mut j = serde_json::to_value(&v).map_err(|e| e.to_string())?;
    if let Some(o) = j.as_object_mut() {
        if let Some(p) = o.remove("point") {
            o.insert("points".into(), p);
        }
    }
    Ok(j.to_string())
}

/// Systems described by `systems/*/system.toml` under `dir` (the user's own), sorted by path.
pub fn discover(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir.join("systems"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join(FILE_NAME))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "version = 1\nname = \"x\"\ndescription = \"d\"\n[node]\nprogram = \"sh\"\nargs = [\"-c\", \"exit 0\"]\n[state]\nvars = [\"term\", \"role\"]\n";

    fn error(extra: &str) -> String {
        let text = format!("{HEAD}{extra}");
        let e = SystemFile::parse(Path::new("sys/system.toml"), &text)
            .expect_err("must be refused")
            .to_string();
        assert!(!e.contains('\n'), "one line: {e}");
        e
    }

    #[test]
    fn a_minimal_file_loads() {
        let f = SystemFile::parse(Path::new("sys/system.toml"), HEAD).unwrap();
        assert_eq!(f.name, "x");
        // Relative paths in the file are its folder's, made absolute: nodes start elsewhere.
        assert!(f.workloads.is_absolute(), "{}", f.workloads.display());
        assert!(f.workloads.ends_with("sys/workloads"));
        assert_eq!(f.hook, HookKind::Rust);
        assert_eq!(f.roles, Roles::None);
    }

    #[test]
    fn an_unknown_field_is_named_at_its_line_and_column() {
        let e = error("colour = 3\n");
        assert!(e.starts_with("sys/system.toml:9:1: "), "{e}");
        assert!(e.contains("unknown field `colour`"), "{e}");
        let e = SystemFile::parse(
            Path::new("s.toml"),
            &HEAD.replace("program = \"sh\"", "program = \"sh\"\nnotify = true"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("s.toml:6:1: ") && e.contains("`notify`"),
            "{e}"
        );
    }

    #[test]
    fn a_property_that_does_not_parse_is_placed_in_the_file() {
        let e = error("[[property]]\nname = \"p\"\nalways = 'any(n.term >)'\n");
        // Line 11; the column counts from the string's opening quote.
        assert!(e.starts_with("sys/system.toml:11:"), "{e}");
        assert!(e.contains("property `p`"), "{e}");
    }

    #[test]
    fn a_property_reading_an_unknown_variable_is_refused() {
        let e = error("[[property]]\nname = \"p\"\nalways = 'all(n.trem >= 0)'\n");
        assert_eq!(
            e,
            "sys/system.toml:11:17: property `p`: unknown variable `trem`: state.vars lists term, role"
        );
        // Built-in variables are always there.
        let text = format!(
            "{HEAD}[[property]]\nname = \"p\"\nalways = 'all(!n.alive || n.id >= 0 || len(n.exceptions) > 0)'\n"
        );
        SystemFile::parse(Path::new("s.toml"), &text).unwrap();
    }

    #[test]
    fn history_built_ins_are_allowed_in_properties() {
        let text = format!(
            "{HEAD}[[property]]\nname = \"one-leader\"\nalways = 'ever_unique(n.id per n.term where n.role == \"leader\")'\n"
        );
        let f = SystemFile::parse(Path::new("s.toml"), &text).unwrap();
        assert_eq!(f.properties.len(), 1);
    }

    #[test]
    fn placeholders_and_parameters_are_checked() {
        let bad = HEAD.replace("exit 0", "{nod}");
        let e = SystemFile::parse(Path::new("s.toml"), &bad)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("s.toml:6:16: unknown placeholder {nod}"),
            "{e}"
        );
        let bad = HEAD.replace("exit 0", "{param.rounds}");
        let e = SystemFile::parse(Path::new("s.toml"), &bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`rounds` is not declared in [params]"), "{e}");
        let ok = format!(
            "{}[params]\nrounds = 2\n",
            HEAD.replace("exit 0", "{param.rounds}")
        );
        SystemFile::parse(Path::new("s.toml"), &ok).unwrap();
        let e = error("[optional_params]\nlimit = \"number\"\n");
        assert!(e.contains("optional_params.limit: give its type"), "{e}");
    }

    #[test]
    fn wrong_enumerations_name_the_valid_values() {
        assert!(error("[symmetry]\nroles = \"some\"\n")
            .contains("symmetry.roles `some`: use `none`, `all` or `crashable`"));
        assert!(
            error("[hook]\nkind = \"python\"\n").contains("use `rust`, `java-agent` or `protocol`")
        );
        assert!(
            error("[faults]\nsurvive_crash = [\"epoch\"]\n").contains("unknown variable `epoch`")
        );
        assert!(error("[clients]\nparam = \"writes\"\nevent = \"write\"\n")
            .contains("clients.param `writes` must name a list parameter of [params]"));
    }

    #[test]
    fn the_version_must_be_known() {
        let e = SystemFile::parse(
            Path::new("s.toml"),
            &HEAD.replace("version = 1", "version = 2"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("s.toml:1:11: system file format version 2 is not supported"),
            "{e}"
        );
    }
}
