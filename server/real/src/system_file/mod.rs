//! Systems described in a file: `system.toml` says how to start a node, which hook it speaks
//! through, what it reports, which nodes are interchangeable, what survives a crash, its sets
//! file and its properties; [`FileSystem`] is the [`flymc_model::System`] it describes. The
//! format, field by field, is in `docs/ADDING-A-SYSTEM.md`.
//!
//! Every error names the file, and the line and column where the file says it: a field the
//! format does not know, a property that does not parse or reads a variable the nodes do not
//! report, a program that is not there.

mod schema;
mod sections;
mod system;

use std::path::{Path, PathBuf};
use std::time::Duration;

use flymc_model::bounded::{read_text, MAX_CONFIG_BYTES};
use flymc_model::workload::ConditionProperty;
use serde_json::{Map, Value};
use toml::Spanned;

use sections::Reader;

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
        let r = Reader::new(file, text, embedded);
        let raw = r.raw()?;
        let name = r.name(&raw.name)?;
        let hook = r.hook(&raw.hook)?;
        let params = r.params(&raw);
        let optional_params = r.optional_params(&raw, &params)?;
        let node = r.node(&raw, &params, &optional_params, &hook)?;
        let clients = r.clients(raw.clients.as_ref(), &params)?;
        r.variables(&raw)?;
        let roles = r.roles(raw.symmetry.roles.as_ref())?;
        let sets = r.sets(raw.sets.as_ref())?;
        r.patterns(&raw)?;
        let checks = r.checks(&raw.checks)?;
        let properties = r.properties(&raw)?;
        let inner = |v: Vec<Spanned<String>>| v.into_iter().map(|s| s.into_inner()).collect();
        Ok(SystemFile {
            file: file.into(),
            workloads: r.dir.join(raw.workloads.as_deref().unwrap_or("workloads")),
            dir: r.dir,
            name,
            description: raw.description,
            rust: raw.rust.map(|r| r.into_inner()),
            node,
            hook,
            checks,
            params,
            optional_params,
            clients,
            vars: raw.state.vars,
            node_refs: inner(raw.state.node_refs),
            node_ref_fields: raw.state.node_ref_fields,
            states_complete: raw.state.complete,
            roles,
            survive_crash: raw.faults.survive_crash.map(inner),
            crash_loses_sent: raw.faults.crash_loses_sent,
            messages: raw.messages,
            sets,
            exceptions: inner(raw.exceptions),
            log_patterns: inner(raw.log_patterns),
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
