//! Reading a parsed `system.toml` section by section: each function checks one part of the
//! file ([`schema::Raw`]) and turns it into what [`SystemFile`](super::SystemFile) holds, its
//! errors placed at the line and column where the file says it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use flymc_lang::Condition;
use flymc_model::bounded::{read_text, MAX_CONFIG_BYTES, MAX_SETS_BYTES};
use flymc_model::workload::line_col;
use flymc_model::workload::{ConditionProperty, Given};
use serde_json::{Map, Value};
use toml::Spanned;

use super::schema::{self, Raw, VERSION};
use super::{
    hooks_config_json, name_at, regex_check, system, HookKind, NodeSpec, Roles, SetupCheck,
    SystemFileError, BUILT_IN_VARS, CHECK_TIMEOUT, MAX_CHECK_TIMEOUT, TYPES,
};

/// The file being read: where its errors point and where the files it names are.
pub(super) struct Reader<'a> {
    pub file: &'a Path,
    pub text: &'a str,
    /// The file's folder, absolute.
    pub dir: PathBuf,
    /// Files compiled into flymc, by their path as the file writes it.
    pub embedded: &'a [(&'a str, &'a str)],
}

impl<'a> Reader<'a> {
    pub fn new(file: &'a Path, text: &'a str, embedded: &'a [(&'a str, &'a str)]) -> Reader<'a> {
        let parent = file.parent().filter(|p| !p.as_os_str().is_empty());
        let dir = std::path::absolute(parent.unwrap_or(Path::new(".")))
            .unwrap_or_else(|_| parent.unwrap_or(Path::new(".")).to_path_buf());
        Reader {
            file,
            text,
            dir,
            embedded,
        }
    }

    /// An error at byte `offset` of the file.
    pub fn at(&self, offset: usize, message: String) -> SystemFileError {
        let (line, column) = line_col(self.text, offset);
        SystemFileError::At {
            file: self.file.into(),
            line,
            column,
            message,
        }
    }

    /// An error where the file gives `s`.
    fn spanned<T>(&self, s: &Spanned<T>, message: String) -> SystemFileError {
        self.at(s.span().start, message)
    }

    /// A file it names (`rel` as written), embedded or from the disk.
    fn read(&self, rel: &str, path: &Path, max: u64) -> std::io::Result<String> {
        match self.embedded.iter().find(|(name, _)| *name == rel) {
            Some((_, t)) => Ok(t.to_string()),
            None => Ok(read_text(path, max)?),
        }
    }

    /// The TOML, with the format version this flymc reads.
    pub fn raw(&self) -> Result<Raw, SystemFileError> {
        let raw: Raw = toml::from_str(self.text).map_err(|e| {
            self.at(
                e.span().map_or(0, |s| s.start),
                format!("malformed system file: {}", e.message().replace('\n', " ")),
            )
        })?;
        if *raw.version.get_ref() != VERSION {
            return Err(self.spanned(
                &raw.version,
                format!(
                    "system file format version {} is not supported (this flymc reads version {VERSION})",
                    raw.version.get_ref()
                ),
            ));
        }
        Ok(raw)
    }

    /// `name`: it names the system on the command line.
    pub fn name(&self, name: &Spanned<String>) -> Result<String, SystemFileError> {
        let n = name.get_ref();
        if n.is_empty()
            || !n
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(self.spanned(
                name,
                format!("name `{n}`: use letters, digits, `-` and `_` (it names the system on the command line)"),
            ));
        }
        Ok(n.clone())
    }

    /// `[hook]`: its kind, and a Java agent's hooks file.
    pub fn hook(&self, hook: &schema::RawHook) -> Result<HookKind, SystemFileError> {
        let Some(kind) = &hook.kind else {
            return Ok(HookKind::Rust);
        };
        match kind.get_ref().as_str() {
            "rust" => Ok(HookKind::Rust),
            "protocol" => Ok(HookKind::Protocol),
            "java-agent" => {
                let Some(hooks) = &hook.hooks else {
                    return Err(self.spanned(
                        kind,
                        "hook kind `java-agent` needs `hooks = \"FILE\"`, the hooks file".into(),
                    ));
                };
                let path = self.dir.join(hooks.get_ref());
                let text = self
                    .read(hooks.get_ref(), &path, MAX_CONFIG_BYTES)
                    .map_err(|e| {
                        self.spanned(
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
                    self.spanned(hooks, format!("the hooks file {}: {e}", path.display()))
                })?;
                Ok(HookKind::JavaAgent {
                    hooks: path,
                    config,
                })
            }
            other => Err(self.spanned(
                kind,
                format!("hook kind `{other}`: use `rust`, `java-agent` or `protocol`"),
            )),
        }
    }

    /// `[params]`: the parameters and their defaults.
    pub fn params(&self, raw: &Raw) -> Map<String, Value> {
        match serde_json::to_value(&raw.params) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        }
    }

    /// `[optional_params]`: the parameters without a default, and their types.
    pub fn optional_params(
        &self,
        raw: &Raw,
        params: &Map<String, Value>,
    ) -> Result<Vec<(String, String)>, SystemFileError> {
        let mut optional = Vec::new();
        for (k, t) in &raw.optional_params {
            if !TYPES.contains(&t.get_ref().as_str()) || params.contains_key(k) {
                return Err(self.spanned(
                    t,
                    format!(
                        "optional_params.{k}: give its type, one of {}, and no default in [params]",
                        TYPES.join(", ")
                    ),
                ));
            }
            optional.push((k.clone(), t.get_ref().clone()));
        }
        Ok(optional)
    }

    /// `[node]`: its placeholders name parameters there are, its program exists.
    pub fn node(
        &self,
        raw: &Raw,
        params: &Map<String, Value>,
        optional: &[(String, String)],
        hook: &HookKind,
    ) -> Result<Option<NodeSpec>, SystemFileError> {
        let Some(n) = &raw.node else {
            if raw.rust.is_none() {
                return Err(self.at(
                    0,
                    "a system file needs a [node] table (how to start a node program)".into(),
                ));
            }
            return Ok(None);
        };
        for a in n.args.iter().chain(n.env.values()) {
            system::check_placeholders(a.get_ref(), params, optional, hook)
                // The string's opening quote, then the placeholder's offset in it.
                .map_err(|(i, m)| self.at(a.span().start + 1 + i, m))?;
        }
        if n.program.get_ref().contains('/') {
            let p = self.dir.join(n.program.get_ref());
            if !p.is_file() {
                return Err(self.spanned(
                    &n.program,
                    format!("the node program {} does not exist", p.display()),
                ));
            }
        }
        Ok(Some(NodeSpec {
            program: n.program.get_ref().clone(),
            args: n.args.iter().map(|a| a.get_ref().clone()).collect(),
            env: n
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.get_ref().clone()))
                .collect(),
            settle_timeout_ms: n.settle_timeout_ms,
            notices: n.notices,
        }))
    }

    /// `[clients]`: the list parameter whose elements are client events, and their event.
    pub fn clients(
        &self,
        clients: Option<&schema::RawClients>,
        params: &Map<String, Value>,
    ) -> Result<Option<(String, String)>, SystemFileError> {
        let Some(c) = clients else {
            return Ok(None);
        };
        let p = c.param.get_ref();
        if !matches!(params.get(p), Some(Value::Array(_))) {
            return Err(self.spanned(
                &c.param,
                format!(
                    "clients.param `{p}` must name a list parameter of [params] (e.g. `{p} = []`)"
                ),
            ));
        }
        Ok(Some((p.clone(), c.event.clone())))
    }

    /// `[state] node_refs` and `[faults] survive_crash` name variables the nodes report.
    pub fn variables(&self, raw: &Raw) -> Result<(), SystemFileError> {
        let vars = &raw.state.vars;
        let refs = raw.state.node_refs.iter();
        for r in refs.chain(raw.faults.survive_crash.iter().flatten()) {
            if !known(vars, r.get_ref()) {
                return Err(self.spanned(
                    r,
                    format!(
                        "unknown variable `{}`: state.vars lists {}",
                        r.get_ref(),
                        vars.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `[symmetry] roles`.
    pub fn roles(&self, roles: Option<&Spanned<String>>) -> Result<Roles, SystemFileError> {
        let Some(r) = roles else {
            return Ok(Roles::None);
        };
        match r.get_ref().as_str() {
            "none" => Ok(Roles::None),
            "all" => Ok(Roles::All),
            "crashable" => Ok(Roles::Crashable),
            other => Err(self.spanned(
                r,
                format!("symmetry.roles `{other}`: use `none`, `all` or `crashable`"),
            )),
        }
    }

    /// `sets`: the sets file's path and text.
    pub fn sets(
        &self,
        sets: Option<&Spanned<String>>,
    ) -> Result<Option<(PathBuf, String)>, SystemFileError> {
        let Some(s) = sets else {
            return Ok(None);
        };
        let p = self.dir.join(s.get_ref());
        let t = self.read(s.get_ref(), &p, MAX_SETS_BYTES).map_err(|e| {
            self.spanned(s, format!("cannot read the sets file {}: {e}", p.display()))
        })?;
        Ok(Some((p, t)))
    }

    /// `exceptions` and `log_patterns` are regular expressions.
    pub fn patterns(&self, raw: &Raw) -> Result<(), SystemFileError> {
        for p in raw.exceptions.iter().chain(&raw.log_patterns) {
            regex_check(p.get_ref()).map_err(|m| self.spanned(p, m))?;
        }
        Ok(())
    }

    /// `[[check]]`: setup checks, each with a program and a time limit.
    pub fn checks(&self, raw: &[schema::RawCheck]) -> Result<Vec<SetupCheck>, SystemFileError> {
        let mut checks = Vec::new();
        for c in raw {
            if c.run.get_ref().first().is_none_or(|p| p.is_empty()) {
                return Err(self.spanned(
                    &c.run,
                    "[[check]] `run` is empty: give the program to run and its arguments, e.g. run = [\"sh\", \"-c\", \"command -v mynode\"]".into(),
                ));
            }
            let timeout = match &c.timeout_secs {
                None => CHECK_TIMEOUT,
                Some(t) => {
                    let secs = Duration::from_secs(*t.get_ref());
                    if secs.is_zero() || secs > MAX_CHECK_TIMEOUT {
                        return Err(self.spanned(
                            t,
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
                run: c.run.get_ref().clone(),
                fix: c.fix.clone(),
                timeout,
            });
        }
        Ok(checks)
    }

    /// `[[property]]`: distinct names, conditions that parse and read variables the nodes
    /// report, or checker commands.
    pub fn properties(&self, raw: &Raw) -> Result<Vec<ConditionProperty>, SystemFileError> {
        let mut properties: Vec<ConditionProperty> = Vec::new();
        for p in &raw.properties {
            let name = p.name.get_ref();
            let what = format!("property `{name}`");
            let here = p.name.span().start;
            if name.trim().is_empty() || properties.iter().any(|q| &q.name == name) {
                return Err(self.at(
                    here,
                    format!("[[property]] names must be given and distinct (`{name}`)"),
                ));
            }
            let given = Given {
                always: p.always.as_ref(),
                eventually: p.eventually.as_ref(),
                command: p.command.as_deref(),
                kind: p.kind.as_deref(),
            };
            let (check, kind) = given.check(
                &what,
                |s| self.condition(s, &what, &raw.state.vars),
                |argv| self.checker(argv, here, &what),
                |m| self.at(here, m),
            )?;
            properties.push(ConditionProperty::new(name.clone(), kind, check));
        }
        Ok(properties)
    }

    /// A property's condition: it parses, and reads only variables in `vars`.
    fn condition(
        &self,
        s: &Spanned<String>,
        what: &str,
        vars: &[String],
    ) -> Result<Condition, SystemFileError> {
        // The column inside the condition counts from the string's opening quote.
        let base = s.span().start;
        let c = Condition::parse_property(s.get_ref())
            .map_err(|e| self.at(base + e.column, format!("{what}: {}", e.message)))?;
        if let Some(v) = c.vars().into_iter().find(|v| !known(vars, v)) {
            let col = name_at(s.get_ref(), &v).map_or(1, |c| c + 1);
            return Err(self.at(
                base + col,
                format!(
                    "{what}: unknown variable `{v}`: state.vars lists {}",
                    vars.join(", ")
                ),
            ));
        }
        Ok(c)
    }

    /// A checker command: not empty, a relative program the file's folder's.
    fn checker(
        &self,
        argv: &[String],
        here: usize,
        what: &str,
    ) -> Result<Vec<String>, SystemFileError> {
        if argv.is_empty() {
            return Err(self.at(
                here,
                format!("{what}: `command` is empty: give the checker program and its arguments"),
            ));
        }
        let mut argv = argv.to_vec();
        if argv[0].contains('/') && Path::new(&argv[0]).is_relative() {
            argv[0] = self.dir.join(&argv[0]).display().to_string();
        }
        Ok(argv)
    }
}

/// A variable the nodes report, or one every node has.
fn known(vars: &[String], v: &str) -> bool {
    vars.iter().any(|k| k == v) || BUILT_IN_VARS.contains(&v)
}
