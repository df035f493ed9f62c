//! [`FileSystem`]: the [`System`] a `system.toml` describes, its nodes real processes started
//! by the file's command line.

use std::path::PathBuf;
use std::time::Duration;

use flymc_model::{
    About, Feature, NodeId, Property, Symmetry, System, Target, TargetError, Workload,
};
use serde_json::{Map, Value};

use super::{HookKind, Roles, SystemFile};
use crate::cluster::{find_program, NodeCommand};
use crate::{which, ClientRequest, Launch, RealConfig, RealOptions, RealTarget};

/// A system described by a file.
pub struct FileSystem {
    pub file: SystemFile,
    /// What the file says, with what the options allow (snapshots).
    about: About,
    options: RealOptions,
    /// The node program, instead of the one the file names (tests run a just-built binary).
    program: Option<PathBuf>,
}

/// What `file` describes, run under `options`.
fn about(file: &SystemFile, options: &RealOptions) -> About {
    let mut features = Vec::new();
    if !file.states_complete {
        features.push(Feature::SummaryStates);
    }
    if options.can_snapshot() {
        features.push(Feature::Snapshots);
    }
    if file.crash_loses_sent {
        features.push(Feature::CrashLosesSent);
    }
    if reports_writes(&file.hook) {
        features.push(Feature::ReportsWrites);
    }
    About {
        name: file.name.clone(),
        description: file.description.clone(),
        features,
        sets: file.sets.as_ref().map(|(_, t)| t.clone()),
        vars: Some(file.vars.clone()),
        fault_vars: file.survive_crash.clone(),
        program_params: Vec::new(),
        allowed_exceptions: file.exceptions.clone(),
        sources: Vec::new(),
        message_kinds: file.messages.clone(),
        workloads_dir: Some(file.workloads.clone()),
        file: file.file.file_name().map(|n| file.dir.join(n)),
    }
}

/// A Java agent's hooks file with a `disk` point: its nodes report their writes.
fn reports_writes(hook: &HookKind) -> bool {
    let HookKind::JavaAgent { config, .. } = hook else {
        return false;
    };
    serde_json::from_str::<Value>(config).is_ok_and(|c| {
        c["points"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["kind"] == "disk"))
    })
}

/// Placeholders a node's arguments and environment may hold.
const PLACEHOLDERS: &str = "{node}, {nodes}, {incarnation}, {addr}, {ip}, {port}, {data_dir}, {peers}, {system_dir}, {params}, {param.NAME}, {java_agent}";

/// Check that `s` uses only known placeholders (and `{param.NAME}` only declared parameters).
pub(super) fn check_placeholders(
    s: &str,
    params: &Map<String, Value>,
    optional: &[(String, String)],
    hook: &HookKind,
) -> Result<(), (usize, String)> {
    let unclosed = |at| (at, format!("`{s}`: a `{{` without its `}}`"));
    fill(
        s,
        |at, name| {
            let ok = match name {
                "node" | "nodes" | "incarnation" | "addr" | "ip" | "port" | "data_dir"
                | "peers" | "system_dir" | "params" => true,
                "java_agent" => matches!(hook, HookKind::JavaAgent { .. }),
                _ => match name.strip_prefix("param.") {
                    Some(p) => params.contains_key(p) || optional.iter().any(|(k, _)| k == p),
                    None => false,
                },
            };
            if ok {
                return Ok(String::new());
            }
            let why = if name == "java_agent" {
                "{java_agent} needs [hook] kind = \"java-agent\"".to_string()
            } else if let Some(p) = name.strip_prefix("param.") {
                format!("{{param.{p}}}: `{p}` is not declared in [params]")
            } else {
                format!("unknown placeholder {{{name}}}; valid: {PLACEHOLDERS}")
            };
            Err((at, why))
        },
        unclosed,
    )
    .map(|_| ())
}

/// `s` with every `{NAME}` replaced by `value(offset of its brace, NAME)`; a `{` without its
/// `}` is `unclosed(offset)`. What checks a node's arguments and what fills them in share it.
fn fill<E>(
    s: &str,
    mut value: impl FnMut(usize, &str) -> Result<String, E>,
    unclosed: impl FnOnce(usize) -> E,
) -> Result<String, E> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        let at = s.len() - rest.len() + open;
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            return Err(unclosed(at));
        };
        out.push_str(&value(at, &rest[open + 1..open + close])?);
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl FileSystem {
    pub fn new(file: SystemFile, options: RealOptions) -> FileSystem {
        FileSystem {
            about: about(&file, &options),
            options,
            file,
            program: None,
        }
    }

    /// Runs under the user's options (backend, event server address, snapshots).
    pub fn options(mut self, options: RealOptions) -> FileSystem {
        self.about = about(&self.file, &options);
        self.options = options;
        self
    }

    /// The options it runs under.
    pub fn options_ref(&self) -> &RealOptions {
        &self.options
    }

    /// Runs `program` as the node program instead of the one the file names.
    pub fn with_program(mut self, program: impl Into<PathBuf>) -> FileSystem {
        self.program = Some(program.into());
        self
    }

    /// The workload's parameters over the file's defaults, each checked against its default's
    /// type.
    pub fn params(&self, w: &Workload) -> Result<Map<String, Value>, TargetError> {
        let mut out = self.file.params.clone();
        for (k, v) in &w.params {
            let declared = out.get(k).map(super::type_name).or_else(|| {
                (self.file.optional_params.iter())
                    .find(|(o, _)| o == k)
                    .map(|(_, t)| t.as_str())
            });
            let Some(want) = declared else {
                let valid: Vec<&str> = (self.file.params.keys())
                    .chain(self.file.optional_params.iter().map(|(k, _)| k))
                    .map(String::as_str)
                    .collect();
                return Err(TargetError::Workload(format!(
                    "{}: unknown parameter `{k}` in [params]; valid: {}",
                    w.file.display(),
                    if valid.is_empty() {
                        "none".to_string()
                    } else {
                        valid.join(", ")
                    }
                )));
            };
            if want != super::type_name(v) {
                return Err(TargetError::Workload(format!(
                    "{}: params.{k} must be of type {want}, got {v}",
                    w.file.display(),
                )));
            }
            out.insert(k.clone(), v.clone());
        }
        Ok(out)
    }

    fn program(&self) -> Result<PathBuf, TargetError> {
        if let Some(p) = &self.program {
            return Ok(p.clone());
        }
        let node = self.file.node.as_ref().ok_or_else(|| {
            TargetError::Other(format!(
                "{}: no [node] table: this system's nodes are started by its Rust integration",
                self.file.file.display()
            ))
        })?;
        if node.program.contains('/') {
            return Ok(self.dir().join(&node.program));
        }
        find_program(&node.program)
            .ok()
            .or_else(|| which(&node.program))
            .ok_or_else(|| {
                TargetError::Other(format!(
                    "{}: the node program `{}` is neither next to flymc nor on PATH: build or install it",
                    self.file.file.display(),
                    node.program
                ))
            })
    }

    fn dir(&self) -> PathBuf {
        self.file.dir.clone()
    }

    /// The setup checks, in order; the first that fails is one line with its fix.
    pub fn run_checks(&self) -> Result<(), TargetError> {
        for c in &self.file.checks {
            let Some((prog, args)) = c.run.split_first() else {
                continue; // the file's parse refused an empty `run`
            };
            let mut cmd = std::process::Command::new(prog);
            cmd.args(args)
                .current_dir(self.dir())
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            let failed = |why: String| {
                TargetError::Other(format!(
                    "{}: setup check `{}` {why}",
                    self.file.file.display(),
                    c.run.join(" "),
                ))
            };
            match crate::cluster::run_bounded(cmd, c.timeout) {
                Ok(Some(how)) if how == "exit status 0" => {}
                Ok(Some(_)) | Err(_) => return Err(failed(format!("failed: {}", c.fix))),
                Ok(None) => {
                    return Err(failed(format!(
                        "did not end within {} s, so it was killed: make it end, or give it more time with `timeout_secs` in its [[check]]",
                        c.timeout.as_secs()
                    )))
                }
            }
        }
        if let HookKind::JavaAgent { .. } = self.file.hook {
            let jar = java_agent_jar();
            flymc_java_hook::check_stamp(
                &jar,
                &flymc_java_hook::agent_digest(),
                "flymc setup zookeeper",
            )
            .map_err(|e| {
                TargetError::Other(format!(
                    "{}: flymc's Java agent: {e} (it builds the agent)",
                    self.file.file.display()
                ))
            })?;
        }
        Ok(())
    }

    /// The [`RealConfig`] of a run of `w`.
    pub fn config(&self, w: &Workload) -> Result<RealConfig, TargetError> {
        let params = self.params(w)?;
        self.run_checks()?;
        let program = self.program()?;
        let node = self.file.node.clone().expect("program() checked it");
        let clients = match &self.file.clients {
            Some((param, event)) => clients(&params, param, event, w)?,
            None => Vec::new(),
        };
        let hooks_json = match &self.file.hook {
            HookKind::JavaAgent { config, .. } => Some(config.clone()),
            _ => None,
        };
        let dir = self.dir();
        let params_json = Value::Object(params.clone()).to_string();
        let mut cfg = RealConfig::new(&self.about.name, move |l: &Launch| {
            let fill = |s: &str| expand(s, l, &params, &params_json, &dir, hooks_json.as_deref());
            let mut c = NodeCommand::new(&program);
            c.args = node.args.iter().map(|a| fill(a)).collect();
            c.env = node.env.iter().map(|(k, v)| (k.clone(), fill(v))).collect();
            c
        })
        .clients(clients)
        .notices(self.file.node.as_ref().is_some_and(|n| n.notices))
        .crash_loses_outbound(self.file.crash_loses_sent)
        .log_patterns(
            &self
                .file
                .log_patterns
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        )
        .options(&self.options);
        if let Some(ms) = self.file.node.as_ref().and_then(|n| n.settle_timeout_ms) {
            cfg = cfg.settle_timeout(Duration::from_millis(ms));
        }
        Ok(cfg)
    }
}

/// flymc's Java agent, as `flymc setup zookeeper` builds it.
fn java_agent_jar() -> PathBuf {
    crate::snapshot::cache_dir()
        .join("java")
        .join(flymc_java_hook::AGENT_JAR)
}

/// Each element of list parameter `param` (a table with `to` and the event's fields) as a
/// client event `event` at node `to`.
fn clients(
    params: &Map<String, Value>,
    param: &str,
    event: &str,
    w: &Workload,
) -> Result<Vec<ClientRequest>, TargetError> {
    let bad = |m: String| TargetError::Workload(format!("{}: params.{param}{m}", w.file.display()));
    let list = params
        .get(param)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    list.into_iter()
        .enumerate()
        .map(|(i, item)| {
            let Value::Object(mut fields) = item else {
                return Err(bad(format!(
                    "[{i}] must be a table with `to` (a node) and the event's fields"
                )));
            };
            let to = fields
                .remove("to")
                .and_then(|t| t.as_u64())
                .map(|t| t as NodeId)
                .filter(|&t| t < w.nodes)
                .ok_or_else(|| {
                    bad(format!(
                        "[{i}].to must name a node 0..{}",
                        w.nodes.saturating_sub(1)
                    ))
                })?;
            Ok(ClientRequest {
                to,
                name: event.into(),
                fields,
                payload: Value::Null,
            })
        })
        .collect()
}

/// A node's argument or environment value with its placeholders filled in.
fn expand(
    s: &str,
    l: &Launch,
    params: &Map<String, Value>,
    params_json: &str,
    dir: &std::path::Path,
    hooks_json: Option<&str>,
) -> String {
    let slot = l.slot();
    let run_dir = slot.data_dir.parent().unwrap_or(&slot.data_dir);
    let value = |_, name: &str| -> Result<String, ()> {
        Ok(match name {
            "node" => l.node.to_string(),
            "nodes" => l.slots.len().to_string(),
            "incarnation" => l.incarnation.to_string(),
            "addr" => slot.addr.to_string(),
            "ip" => slot.addr.ip().to_string(),
            "port" => slot.addr.port().to_string(),
            "data_dir" => slot.data_dir.display().to_string(),
            "peers" => l
                .slots
                .iter()
                .map(|s| s.addr.to_string())
                .collect::<Vec<_>>()
                .join(","),
            "system_dir" => dir.display().to_string(),
            "params" => params_json.to_string(),
            "java_agent" => {
                // The agent reads its configuration from a file next to the nodes' folders.
                let config = run_dir.join("flymc-hook.json");
                if !config.is_file() {
                    let _ = std::fs::write(&config, hooks_json.unwrap_or("{}"));
                }
                format!(
                    "-javaagent:{}={}",
                    java_agent_jar().display(),
                    config.display()
                )
            }
            _ => match name.strip_prefix("param.").and_then(|p| params.get(p)) {
                Some(Value::String(v)) => v.clone(),
                Some(v) => v.to_string(),
                None => String::new(),
            },
        })
    };
    // The file's check refused unclosed braces; should one get here, the text stays as written.
    fill(s, value, |_| ()).unwrap_or_else(|()| s.to_string())
}

impl System for FileSystem {
    fn about(&self) -> &About {
        &self.about
    }

    fn target(&self, w: &Workload) -> Result<Box<dyn Target>, TargetError> {
        Ok(Box::new(RealTarget::with_backend(
            self.config(w)?,
            Box::new(self.options.local_backend()),
        )))
    }

    fn properties(&self, _w: &Workload) -> Vec<Box<dyn Property>> {
        self.file
            .properties
            .iter()
            .map(|p| Box::new(p.clone()) as Box<dyn Property>)
            .collect()
    }

    fn symmetry(&self, w: &Workload) -> Symmetry {
        let groups = match self.file.roles {
            Roles::None => Vec::new(),
            Roles::All => vec![(0..w.nodes).collect()],
            Roles::Crashable => {
                let crashable: Vec<NodeId> = (0..w.nodes)
                    .filter(|n| w.crashes == 0 || w.crash_nodes.contains(n))
                    .collect();
                let rest = (0..w.nodes).filter(|n| !crashable.contains(n)).collect();
                vec![crashable, rest]
            }
        };
        Symmetry {
            groups: groups
                .into_iter()
                .filter(|g: &Vec<NodeId>| g.len() > 1)
                .collect(),
            node_ref_vars: self.file.node_refs.clone(),
            node_ref_fields: self.file.node_ref_fields.clone(),
        }
    }
}
