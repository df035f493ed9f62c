//! What the developer tells the analysis: node state, message classes, handlers, crash-handling
//! paths and the send / disk / library-call dictionaries. It comes from in-source annotations or
//! from a TOML side file (schema in analyzer/README.md); both are turned into one [`Spec`], so
//! they give identical output.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use crate::ir::{Annot, Class, Method, Program, Stmt, StmtKind};
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

/// A method summary: `means` over `params` (the receiver first when there is one more
/// parameter than the call has arguments).
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub params: Vec<String>,
    pub body: flymc_model::guard::Expr,
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

#[derive(Clone, Debug, PartialEq)]
pub struct QueueModel {
    pub pat: CallPat,
    pub class: String,
    pub method: String,
}

/// A node variable.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeVar {
    pub name: String,
    pub persistent: bool,
    /// Guards may compare it (see `NodeStateDecl::guards`).
    pub guards: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct MsgSpec {
    pub class: String,
    pub kind: Option<String>,
    pub kind_field: Option<String>,
    pub fields: Vec<String>,
    pub external: bool,
    /// Reported fields by their reported names (see `MessageDecl::report`).
    pub report: Option<BTreeMap<String, String>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HandlerSpec {
    pub class: String,
    pub method: String,
    pub message: Option<String>,
    pub receive: Option<String>,
    pub guard: Option<String>,
    pub kind: Option<String>,
    pub reply: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FaultSpec {
    pub class: String,
    pub method: String,
    pub catch: Option<String>,
    pub peer: bool,
}

/// A call pattern: `Type.method`, `field.method`, `new Type` or a bare `method`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CallPat {
    pub qual: Option<String>,
    pub name: String,
    pub ctor: bool,
}

impl CallPat {
    pub fn parse(s: &str) -> CallPat {
        let s = s.trim();
        if let Some(t) = s.strip_prefix("new ") {
            return CallPat {
                qual: None,
                name: t.trim().rsplit('.').next().unwrap_or(t).to_string(),
                ctor: true,
            };
        }
        let s = s.replace("::", ".");
        match s.rsplit_once('.') {
            Some((q, n)) => CallPat {
                qual: Some(q.rsplit('.').next().unwrap_or(q).to_string()).filter(|q| q != "*"),
                name: n.to_string(),
                ctor: false,
            },
            None => CallPat {
                qual: None,
                name: s.to_string(),
                ctor: false,
            },
        }
    }
}

impl std::fmt::Display for CallPat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.ctor {
            write!(f, "new {}", self.name)
        } else if let Some(q) = &self.qual {
            write!(f, "{q}.{}", self.name)
        } else {
            write!(f, "{}", self.name)
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CallModel {
    pub pat: CallPat,
    pub read: Vec<String>,
    pub update: Vec<String>,
    pub increments: Vec<String>,
    pub send: bool,
    pub disk: Option<String>,
    pub returns: Option<String>,
    pub summary: Option<Summary>,
}

/// Everything resolved, from either source.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spec {
    /// (class, field) -> variable.
    pub fields: BTreeMap<(String, String), NodeVar>,
    /// (class, method, local) -> variable.
    pub locals: BTreeMap<(String, String, String), NodeVar>,
    /// Variables that exist only through call models.
    pub virtuals: BTreeMap<String, NodeVar>,
    pub messages: BTreeMap<String, MsgSpec>,
    pub handlers: Vec<HandlerSpec>,
    pub crashes: Vec<FaultSpec>,
    pub reboots: Vec<FaultSpec>,
    pub sends: BTreeSet<CallPat>,
    /// pattern -> its files, one per entry on the pattern (None: derived from the call's
    /// arguments). Several side-file [[disk]] entries on one call combine.
    pub disks: BTreeMap<CallPat, Vec<Option<String>>>,
    pub models: Vec<CallModel>,
    pub queues: Vec<QueueModel>,
    /// variable -> the further reported variables it stands for (`NodeStateDecl::also`).
    pub also: BTreeMap<String, BTreeSet<String>>,
    /// variable -> its object's fields that are reported variables (`NodeStateDecl::parts`).
    /// Such a variable is only its parts: the sets name the parts, never it.
    pub parts: BTreeMap<String, BTreeMap<String, String>>,
    /// Side-file `pure` patterns (see `SideFile::pure`).
    pub pure: BTreeSet<CallPat>,
    /// Every call pattern the side file declares: one that matches no call is reported (see
    /// `unmatched`).
    pub declared: Vec<Declared>,
}

/// A call pattern as the side file declares it.
#[derive(Clone, Debug, PartialEq)]
pub struct Declared {
    /// The key it came from: `send`, `pure`, `[[disk]]`, `[[call]]`, `[[queue]]`.
    pub what: String,
    pub pat: CallPat,
    /// Its line in the side file (0: not found).
    pub line: usize,
}

impl Spec {
    /// `var` and the variables it also stands for.
    /// Variables that only stand for their parts (see `parts`).
    pub fn is_holder(&self, var: &str) -> bool {
        self.parts.contains_key(var)
    }

    pub fn with_also<'s>(&'s self, var: &'s str) -> impl Iterator<Item = &'s str> + 's {
        std::iter::once(var).chain(self.also.get(var).into_iter().flatten().map(|s| s.as_str()))
    }

    pub fn all_vars(&self) -> BTreeMap<String, NodeVar> {
        let mut out = BTreeMap::new();
        for v in self
            .fields
            .values()
            .chain(self.locals.values())
            .chain(self.virtuals.values())
        {
            out.entry(v.name.clone())
                .and_modify(|old: &mut NodeVar| {
                    old.persistent |= v.persistent;
                    old.guards &= v.guards;
                })
                .or_insert_with(|| v.clone());
        }
        // Variables only named by `also` exist too; no guard compares them (no field holds
        // exactly their value). They are part of the value of the fields holding them, so they
        // are persistent when every one of those is (a crash keeps what is on disk); one also
        // declared on its own keeps its own declaration.
        let mut held: BTreeMap<&String, bool> = BTreeMap::new();
        for (holder, extra) in &self.also {
            let persistent = out.get(holder).is_some_and(|v| v.persistent);
            for e in extra {
                *held.entry(e).or_insert(true) &= persistent;
            }
        }
        for (e, persistent) in held {
            out.entry(e.clone()).or_insert_with(|| NodeVar {
                name: e.clone(),
                persistent,
                guards: false,
            });
        }
        out
    }
}

/// flymc's default dictionaries (FlyMC §4.1: "a dictionary of disk IO library calls").
pub const DEFAULT_SENDS: &[&str] = &[
    "Outbox.send",
    "Outbox.timer",
    "Outbox.client",
    "*.send",
    "*.sendMessage",
    "*.writeRecord",
    "DatagramSocket.send",
    "SocketChannel.write",
];

pub const DEFAULT_DISKS: &[&str] = &[
    "new FileOutputStream",
    "new RandomAccessFile",
    "new FileWriter",
    "new AtomicFileOutputStream",
    "new AtomicFileWritingIdiom",
    "FileChannel.write",
    "FileChannel.force",
    "FileOutputStream.write",
    "RandomAccessFile.write",
    "RandomAccessFile.writeLong",
    "RandomAccessFile.writeInt",
    "Files.write",
    "Files.writeString",
    "Files.newOutputStream",
    "Files.newBufferedWriter",
    "Files.move",
    "Files.copy",
    "Files.delete",
    "Files.deleteIfExists",
    "Files.createFile",
    "File.delete",
    "File.renameTo",
    "File.createNewFile",
    "FileDescriptor.sync",
    "fs.write",
    "fs.rename",
    "fs.remove_file",
    "fs.create_dir_all",
    "File.create",
    "OpenOptions.open",
    "File.write_all",
    "File.sync_all",
    "File.sync_data",
];

fn err(file: &Path, msg: String) -> AnalyzeError {
    AnalyzeError::Annotation {
        file: file.display().to_string(),
        message: msg,
    }
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

fn class<'p>(
    prog: &'p Program,
    name: &str,
    file: &Path,
    what: &str,
) -> Result<&'p Class, AnalyzeError> {
    prog.classes.get(name).ok_or_else(|| {
        err(
            file,
            format!("{what} names class `{name}`, which is not in the analysed sources"),
        )
    })
}

fn method<'p>(
    c: &'p Class,
    name: &str,
    file: &Path,
    what: &str,
) -> Result<&'p Method, AnalyzeError> {
    c.methods.iter().find(|m| m.name == name).ok_or_else(|| {
        err(
            file,
            format!(
                "{what} names method `{}.{name}`, which does not exist",
                c.name
            ),
        )
    })
}

fn declares_local(stmts: &[Stmt], name: &str) -> bool {
    fn pat_binds(p: &crate::ir::Pat, name: &str) -> bool {
        use crate::ir::Pat;
        match p {
            Pat::Bind(n) => n == name,
            Pat::Tuple(ps) | Pat::Or(ps) => ps.iter().any(|p| pat_binds(p, name)),
            Pat::Variant { fields, .. } => fields.iter().any(|(_, p)| pat_binds(p, name)),
            _ => false,
        }
    }
    stmts.iter().any(|s| {
        let here = match &s.kind {
            StmtKind::Local { pat, .. } | StmtKind::ForEach { pat, .. } => pat_binds(pat, name),
            _ => false,
        };
        here || s.children().iter().any(|c| declares_local(c.stmts(), name))
    })
}

/// Resolve a side file against the program.
pub fn from_side_file(side: &SideFile, prog: &Program, file: &Path) -> Result<Spec, AnalyzeError> {
    let mut spec = Spec::default();
    // A wrapper is often another crate's type (`validit::Valid`): it must wrap some type in
    // the sources, not be one of them.
    for w in &side.wrappers {
        if !prog.unwrapped.contains(w) {
            return Err(err(
                file,
                format!("wrappers names `{w}`, which wraps no type in the analysed sources"),
            ));
        }
    }
    for d in &side.node_state {
        let name_of = |f: &str| d.name.clone().unwrap_or_else(|| f.to_string());
        // A holder of parts is unreported: no guard compares it, its parts are the variables.
        let mut d = d.clone();
        if !d.parts.is_empty() {
            let (Some(_), Some(f)) = (&d.class, &d.field) else {
                return Err(err(
                    file,
                    "[[node_state]] `parts` needs `class` and `field`".into(),
                ));
            };
            let holder = name_of(f);
            if let Some(v) = d.parts.values().find(|v| **v == holder) {
                return Err(err(
                    file,
                    format!("[[node_state]] `{f}`: part `{v}` has the holder's own name; leave `name` out or name the holder apart from its parts"),
                ));
            }
            d.guards = false;
            d.also.extend(d.parts.values().cloned());
            spec.parts.insert(holder, d.parts.clone());
            for v in d.parts.values() {
                spec.virtuals.entry(v.clone()).or_insert(NodeVar {
                    name: v.clone(),
                    persistent: d.persistent,
                    guards: true,
                });
            }
        }
        let d = &d;
        if !d.also.is_empty() {
            let (Some(_), Some(f)) = (&d.class, &d.field) else {
                return Err(err(
                    file,
                    "[[node_state]] `also` needs `class` and `field`".into(),
                ));
            };
            spec.also
                .entry(name_of(f))
                .or_default()
                .extend(d.also.iter().cloned());
        }
        match (&d.class, &d.field, &d.method, &d.local) {
            (Some(c), Some(f), None, None) => {
                let cl = class(prog, c, file, "[[node_state]]")?;
                if f == "*" {
                    for fname in cl.fields.iter().filter(|(_, x)| !x.is_static).map(|(n, _)| n) {
                        spec.fields.insert(
                            (c.clone(), fname.clone()),
                            NodeVar {
                                name: fname.clone(),
                                persistent: d.persistent,
                                guards: d.guards,
                            },
                        );
                    }
                } else {
                    if !cl.fields.contains_key(f) {
                        return Err(err(
                            file,
                            format!("[[node_state]] names field `{c}.{f}`, which does not exist"),
                        ));
                    }
                    spec.fields.insert(
                        (c.clone(), f.clone()),
                        NodeVar {
                            name: name_of(f),
                            persistent: d.persistent,
                            guards: d.guards,
                        },
                    );
                }
            }
            (Some(c), None, Some(m), Some(l)) => {
                let cl = class(prog, c, file, "[[node_state]]")?;
                let me = method(cl, m, file, "[[node_state]]")?;
                let found = me
                    .body
                    .as_ref()
                    .is_some_and(|b| declares_local(&b.stmts, l));
                if !found {
                    return Err(err(
                        file,
                        format!("[[node_state]] names local `{l}` of `{c}.{m}`, which declares no such variable"),
                    ));
                }
                spec.locals.insert(
                    (c.clone(), m.clone(), l.clone()),
                    NodeVar {
                        name: name_of(l),
                        persistent: d.persistent,
                        guards: d.guards,
                    },
                );
            }
            (None, None, None, None) => match &d.name {
                Some(n) => {
                    spec.virtuals.insert(
                        n.clone(),
                        NodeVar {
                            name: n.clone(),
                            persistent: d.persistent,
                            guards: d.guards,
                        },
                    );
                }
                None => {
                    return Err(err(file, "[[node_state]] needs `class` and `field`, `class`, `method` and `local`, or just `name` (a virtual variable)".into()))
                }
            },
            _ => return Err(err(file, "[[node_state]] needs `class` and `field`, `class`, `method` and `local`, or just `name` (a virtual variable)".into())),
        }
    }
    for m in &side.message {
        // A `report` key names a field the message has (a nested one, `vote.leader_id.term`,
        // by its first step): a misspelled key would silently drop every guard on the field.
        let fields: Option<BTreeSet<String>> = if m.external {
            (!m.fields.is_empty()).then(|| m.fields.iter().cloned().collect())
        } else if !prog.classes.contains_key(&m.class) {
            None // named as missing just below
        } else {
            let mut all = class_fields(prog, &m.class);
            all.extend(m.fields.iter().cloned());
            Some(all)
        };
        for key in m.report.iter().flat_map(|r| r.keys()) {
            let f = key.split('.').next().unwrap_or(key);
            if fields.as_ref().is_some_and(|fs| !fs.contains(f)) {
                let line = key_line(&side.text, key);
                return Err(err(
                    file,
                    format!(
                        "line {line}: [[message]] report names field `{}.{f}`, which the message does not have (its fields: {}); fix the key or add the field to `fields`",
                        m.class,
                        fields.iter().flatten().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
        if !m.external {
            let cl = class(prog, &m.class, file, "[[message]]")?;
            if let Some(kf) = &m.kind_field {
                if !cl.fields.contains_key(kf) && !cl.is_enum {
                    return Err(err(
                        file,
                        format!("[[message]] kind_field `{}.{kf}` does not exist", m.class),
                    ));
                }
            }
        }
        spec.messages.insert(
            m.class.clone(),
            MsgSpec {
                class: m.class.clone(),
                kind: m.kind.clone(),
                kind_field: m.kind_field.clone(),
                fields: m.fields.clone(),
                external: m.external,
                report: m.report.clone(),
            },
        );
    }
    for h in &side.handler {
        let cl = class(prog, &h.class, file, "[[handler]]")?;
        method(cl, &h.method, file, "[[handler]]")?;
        spec.handlers.push(HandlerSpec {
            class: h.class.clone(),
            method: h.method.clone(),
            message: h.message.clone(),
            receive: h.receive.clone(),
            guard: h.guard.clone(),
            kind: h.kind.clone(),
            reply: h.reply,
        });
    }
    for (list, out, what) in [
        (&side.crash, &mut spec.crashes, "[[crash]]"),
        (&side.reboot, &mut spec.reboots, "[[reboot]]"),
    ] {
        for f in list {
            let cl = class(prog, &f.class, file, what)?;
            let me = method(cl, &f.method, file, what)?;
            if let Some(t) = &f.catch {
                if !has_catch(me, t) {
                    return Err(err(
                        file,
                        format!(
                            "{what} names a `catch ({t} ...)` in `{}.{}`, which has none",
                            f.class, f.method
                        ),
                    ));
                }
            }
            let peer = match f.side.as_deref() {
                None | Some("peer") => true,
                Some("self") => false,
                Some(o) => {
                    return Err(err(
                        file,
                        format!("{what} side `{o}` is not `peer` or `self`"),
                    ))
                }
            };
            out.push(FaultSpec {
                class: f.class.clone(),
                method: f.method.clone(),
                catch: f.catch.clone(),
                peer,
            });
        }
    }
    if side.defaults {
        add_defaults(&mut spec);
    }
    let mut declare = |what: &str, raw: &str| {
        // the n-th table entry on this pattern is its n-th `call = "raw"` line
        let nth = spec
            .declared
            .iter()
            .filter(|d| d.what == what && d.pat == CallPat::parse(raw))
            .count();
        let quoted = format!("\"{raw}\"");
        let table = what.starts_with('[');
        let line = side
            .text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.contains(&quoted) && l.trim_start().starts_with("call") == table)
            .nth(if table { nth } else { 0 })
            .map_or(0, |(i, _)| i + 1);
        spec.declared.push(Declared {
            what: what.into(),
            pat: CallPat::parse(raw),
            line,
        });
    };
    for s in &side.send {
        declare("send", s);
    }
    for s in &side.pure {
        declare("pure", s);
    }
    for d in &side.disk {
        declare("[[disk]]", &d.call);
    }
    let calls: Vec<(String, Option<Vec<String>>)> =
        side.call.iter().map(|c| split_params(&c.call)).collect();
    for (c, _) in &calls {
        declare("[[call]]", c);
    }
    for q in &side.queue {
        declare("[[queue]]", &q.call);
    }
    for s in &side.send {
        spec.sends.insert(CallPat::parse(s));
    }
    for s in &side.pure {
        spec.pure.insert(CallPat::parse(s));
    }
    // The side file's entries on a pattern replace a default one, and combine with each other.
    let mut own = BTreeSet::new();
    for d in &side.disk {
        let p = CallPat::parse(&d.call);
        if own.insert(p.clone()) {
            spec.disks.insert(p.clone(), vec![]);
        }
        spec.disks.entry(p).or_default().push(d.file.clone());
    }
    for (c, (pat, params)) in side.call.iter().zip(&calls) {
        let summary = match (params, &c.means) {
            (Some(params), Some(means)) => {
                let body = parse_means(means, params).map_err(|e| {
                    let (line, col) = text_position(&side.text, means, e.column);
                    err(
                        file,
                        format!("line {line}, column {col}: [[call]] `{}` means: {}", c.call, e.message),
                    )
                })?;
                Some(Summary {
                    params: params.clone(),
                    body,
                })
            }
            (None, None) => None,
            (None, Some(_)) => {
                return Err(err(
                    file,
                    format!("[[call]] `{}` has `means` but names no parameters: write them in `call`, e.g. `Commit.isAfter(a, b)` (the receiver first)", c.call),
                ))
            }
            (Some(_), None) => {
                return Err(err(
                    file,
                    format!("[[call]] `{}` names parameters but says nothing they mean: add `means = \"...\"` over them, or drop the parentheses", c.call),
                ))
            }
        };
        spec.models.push(CallModel {
            pat: CallPat::parse(pat),
            summary,
            read: c.read.clone(),
            update: c.update.clone(),
            increments: c.increments.clone(),
            send: c.send,
            disk: c.disk.clone(),
            returns: c.returns.clone(),
        });
    }
    for q in &side.queue {
        let Some((c, m)) = q.run.rsplit_once('.') else {
            return Err(err(
                file,
                format!("[[queue]] run `{}` must be `Class.method`", q.run),
            ));
        };
        let cl = class(prog, c, file, "[[queue]]")?;
        let me = method(cl, m, file, "[[queue]]")?;
        if me.params.len() != 1 {
            return Err(err(
                file,
                format!(
                    "[[queue]] run `{}` must take the command as its one parameter",
                    q.run
                ),
            ));
        }
        spec.queues.push(QueueModel {
            pat: CallPat::parse(&q.call),
            class: c.to_string(),
            method: m.to_string(),
        });
    }
    check_model_vars(&spec, file)?;
    Ok(spec)
}

/// The fields of class `c` and its supertypes in the sources, with those its getters name
/// (`getTerm()`: `term`) and its enum variants' fields.
pub(crate) fn class_fields(prog: &Program, c: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut todo = vec![c.to_string()];
    let mut seen = BTreeSet::new();
    while let Some(c) = todo.pop() {
        if !seen.insert(c.clone()) {
            continue;
        }
        let Some(cl) = prog.classes.get(&c) else {
            continue;
        };
        out.extend(cl.fields.keys().cloned());
        out.extend(cl.variants.iter().flat_map(|v| v.fields.iter().cloned()));
        out.extend(
            cl.methods
                .iter()
                .filter(|m| m.params.is_empty())
                .filter_map(|m| crate::exec::getter_field(&m.name)),
        );
        todo.extend(cl.supers.iter().cloned());
    }
    out
}

/// The side file's line that writes `key` as a key (`key =` or `"key" =`); 0 if none does.
fn key_line(text: &str, key: &str) -> usize {
    let quoted = format!("\"{key}\"");
    text.lines()
        .position(|l| {
            l.contains(&quoted)
                || l.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                    .any(|w| w == key)
        })
        .map_or(0, |i| i + 1)
}

/// The name `means` uses for the receiving node's state (`n.last_log_term`), unless a
/// parameter has that name.
pub const NODE_SCOPE: &str = "n";

/// A summary's `means` over its parameters and the node's state: `n` is parsed as one more
/// parameter, after the real ones (`Summary::node_vars` reads it back).
fn parse_means(
    means: &str,
    params: &[String],
) -> Result<flymc_model::guard::Expr, flymc_model::guard::ParseError> {
    let mut all = params.to_vec();
    if !all.iter().any(|p| p == NODE_SCOPE) {
        all.push(NODE_SCOPE.to_string());
    }
    flymc_model::guard::parse_summary(means, &all)
}

impl Summary {
    /// Does parameter `k` of the body stand for the node (`n.x`)?
    pub fn is_node(&self, k: usize) -> bool {
        k == self.params.len()
    }

    /// The node variables the body reads (`n.x`: `x`).
    pub fn node_vars(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut todo = vec![&self.body];
        while let Some(e) = todo.pop() {
            if let flymc_model::guard::Expr::Var {
                scope: flymc_model::guard::Scope::Param(k),
                path,
            } = e
            {
                if self.is_node(*k) {
                    out.extend(path.first().cloned());
                }
            }
            todo.extend(e.children());
        }
        out
    }
}

/// `Commit.isAfter(a, b)` -> (`Commit.isAfter`, the parameters `a`, `b`); no parentheses:
/// no parameters.
fn split_params(call: &str) -> (String, Option<Vec<String>>) {
    match call
        .trim()
        .strip_suffix(')')
        .and_then(|c| c.split_once('('))
    {
        Some((pat, params)) => (
            pat.trim().to_string(),
            Some(
                params
                    .split(',')
                    .map(|p| p.trim().to_string())
                    .filter(|p| !p.is_empty())
                    .collect(),
            ),
        ),
        None => (call.trim().to_string(), None),
    }
}

/// The 1-based line and column in the side file of `column` (1-based) within the first
/// quoted occurrence of `inner` (0, 0 when it is not found verbatim, e.g. it had escapes).
fn text_position(text: &str, inner: &str, column: usize) -> (usize, usize) {
    let quoted = format!("\"{inner}\"");
    text.lines()
        .enumerate()
        .find_map(|(i, l)| {
            l.find(&quoted)
                .map(|at| (i + 1, l[..at].chars().count() + 1 + column))
        })
        .unwrap_or((0, 0))
}

fn check_model_vars(spec: &Spec, file: &Path) -> Result<(), AnalyzeError> {
    let vars = spec.all_vars();
    for m in &spec.models {
        for v in m
            .read
            .iter()
            .chain(&m.update)
            .chain(&m.increments)
            .chain(m.returns.iter())
        {
            if !vars.contains_key(v) {
                return Err(err(
                    file,
                    format!(
                        "[[call]] `{}` names variable `{v}`, which no [[node_state]] declares",
                        m.pat
                    ),
                ));
            }
        }
        for v in m.summary.iter().flat_map(Summary::node_vars) {
            if !vars.contains_key(&v) {
                return Err(err(
                    file,
                    format!(
                        "[[call]] `{}` means reads `n.{v}`, which no [[node_state]] declares",
                        m.pat
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Null checks the guard language can say, as summaries (`[[call]] ... means`).
pub const DEFAULT_SUMMARIES: &[(&str, &str)] = &[
    ("Objects.isNull(x)", "x == null"),
    ("Objects.nonNull(x)", "x != null"),
    ("Optional.isPresent(o)", "o != null"),
];

pub fn add_defaults(spec: &mut Spec) {
    for (call, means) in DEFAULT_SUMMARIES {
        let (pat, params) = split_params(call);
        let params = params.unwrap_or_default();
        let body =
            flymc_model::guard::parse_summary(means, &params).expect("the default summaries parse");
        spec.models.push(CallModel {
            pat: CallPat::parse(&pat),
            read: vec![],
            update: vec![],
            increments: vec![],
            send: false,
            disk: None,
            returns: None,
            summary: Some(Summary { params, body }),
        });
    }
    for s in DEFAULT_SENDS {
        spec.sends.insert(CallPat::parse(s));
    }
    for d in DEFAULT_DISKS {
        spec.disks.insert(CallPat::parse(d), vec![None]);
    }
}

fn has_catch(m: &Method, ty: &str) -> bool {
    fn walk(stmts: &[Stmt], ty: &str) -> bool {
        stmts.iter().any(|s| {
            let here = match &s.kind {
                StmtKind::Try { catches, .. } => {
                    catches.iter().any(|c| c.types.iter().any(|t| t == ty))
                }
                _ => false,
            };
            here || s.children().iter().any(|c| walk(c.stmts(), ty))
        })
    }
    m.body.as_ref().is_some_and(|b| walk(&b.stmts, ty))
}

/// An in-source `report = "term last_log_index:last_index"`: fields, each optionally renamed.
fn parse_report(s: &str) -> BTreeMap<String, String> {
    s.split_whitespace()
        .map(|f| match f.split_once(':') {
            Some((field, name)) => (field.to_string(), name.to_string()),
            None => (f.to_string(), f.to_string()),
        })
        .collect()
}

fn annot<'a>(annots: &'a [Annot], name: &str) -> Option<&'a Annot> {
    annots.iter().find(|a| a.name == name)
}

fn flag(a: &Annot, key: &str) -> bool {
    a.args.get(key).is_some_and(|v| v == "true")
}

/// Collect the in-source annotations into a spec; `defaults`: add flymc's default send and
/// disk dictionaries (a side file's `defaults = false` turns them off for both).
pub fn from_source(prog: &Program, defaults: bool) -> Spec {
    let mut spec = Spec::default();
    let mut methods: Vec<&Method> = prog
        .classes
        .values()
        .flat_map(|c| c.methods.iter())
        .collect();
    methods.extend(prog.functions.values());
    for c in prog.classes.values() {
        for f in c.fields.values() {
            if let Some(a) = annot(&f.annots, "FlyMCNodeState") {
                spec.fields.insert(
                    (c.name.clone(), f.name.clone()),
                    NodeVar {
                        name: a
                            .args
                            .get("name")
                            .or(a.args.get("value"))
                            .cloned()
                            .unwrap_or_else(|| f.name.clone()),
                        persistent: flag(a, "persistent"),
                        guards: a.args.get("guards").is_none_or(|v| v != "false"),
                    },
                );
                if let Some(also) = a.args.get("also") {
                    let name = a
                        .args
                        .get("name")
                        .or(a.args.get("value"))
                        .cloned()
                        .unwrap_or_else(|| f.name.clone());
                    spec.also
                        .entry(name)
                        .or_default()
                        .extend(also.split_whitespace().map(str::to_string));
                }
            }
        }
        if let Some(a) = annot(&c.annots, "FlyMCMessage") {
            spec.messages.insert(
                c.name.clone(),
                MsgSpec {
                    class: c.name.clone(),
                    kind: a.args.get("kind").or(a.args.get("value")).cloned(),
                    kind_field: a.args.get("kind_field").cloned(),
                    fields: vec![],
                    external: false,
                    report: a.args.get("report").map(|r| parse_report(r)),
                },
            );
        }
    }
    for m in methods {
        if let Some(a) = annot(&m.annots, "FlyMCHandler") {
            spec.handlers.push(HandlerSpec {
                class: m.class.clone(),
                method: m.name.clone(),
                message: a.args.get("message").or(a.args.get("value")).cloned(),
                receive: a.args.get("receive").cloned(),
                guard: a.args.get("guard").cloned(),
                kind: a.args.get("kind").cloned(),
                reply: flag(a, "reply"),
            });
        }
        for (name, list) in [
            ("FlyMCCrashHandling", &mut spec.crashes),
            ("FlyMCRebootHandling", &mut spec.reboots),
        ] {
            if let Some(a) = annot(&m.annots, name) {
                list.push(FaultSpec {
                    class: m.class.clone(),
                    method: m.name.clone(),
                    catch: None,
                    peer: a.args.get("side").is_none_or(|s| s != "self"),
                });
            }
        }
        let qual = if m.class.is_empty() {
            None
        } else {
            Some(m.class.clone())
        };
        if annot(&m.annots, "FlyMCSend").is_some() {
            spec.sends.insert(CallPat {
                qual: qual.clone(),
                name: m.name.clone(),
                ctor: false,
            });
        }
        if let Some(a) = annot(&m.annots, "FlyMCDisk") {
            spec.disks.insert(
                CallPat {
                    qual: qual.clone(),
                    name: m.name.clone(),
                    ctor: false,
                },
                vec![a.args.get("file").or(a.args.get("value")).cloned()],
            );
        }
        if let Some(body) = &m.body {
            collect_local_annots(&body.stmts, m, &mut spec);
            collect_catch_annots(&body.stmts, m, &mut spec);
        }
    }
    if defaults {
        add_defaults(&mut spec);
    }
    spec
}

fn collect_local_annots(stmts: &[Stmt], m: &Method, spec: &mut Spec) {
    for s in stmts {
        if let StmtKind::Local {
            pat: crate::ir::Pat::Bind(name),
            annots,
            ..
        } = &s.kind
        {
            if let Some(a) = annot(annots, "FlyMCNodeState") {
                spec.locals.insert(
                    (m.class.clone(), m.name.clone(), name.clone()),
                    NodeVar {
                        name: a
                            .args
                            .get("name")
                            .or(a.args.get("value"))
                            .cloned()
                            .unwrap_or_else(|| name.clone()),
                        persistent: flag(a, "persistent"),
                        guards: a.args.get("guards").is_none_or(|v| v != "false"),
                    },
                );
            }
        }
        for c in s.children() {
            collect_local_annots(c.stmts(), m, spec);
        }
    }
}

fn collect_catch_annots(stmts: &[Stmt], m: &Method, spec: &mut Spec) {
    for s in stmts {
        if let StmtKind::Try { catches, .. } = &s.kind {
            for c in catches {
                for (name, peer_default) in [("FlyMCCrashHandling", true)] {
                    if let Some(a) = annot(&c.annots, name) {
                        let fs = FaultSpec {
                            class: m.class.clone(),
                            method: m.name.clone(),
                            catch: c.types.first().cloned(),
                            peer: a.args.get("side").map_or(peer_default, |s| s != "self"),
                        };
                        if !spec.crashes.contains(&fs) {
                            spec.crashes.push(fs);
                        }
                    }
                }
            }
        }
        for c in s.children() {
            collect_catch_annots(c.stmts(), m, spec);
        }
    }
}

/// Merge a side-file spec into an in-source one.
pub fn merge(mut a: Spec, b: Spec) -> Spec {
    a.fields.extend(b.fields);
    a.locals.extend(b.locals);
    a.virtuals.extend(b.virtuals);
    a.messages.extend(b.messages);
    for h in b.handlers {
        if !a.handlers.contains(&h) {
            a.handlers.push(h);
        }
    }
    for h in b.crashes {
        if !a.crashes.contains(&h) {
            a.crashes.push(h);
        }
    }
    for h in b.reboots {
        if !a.reboots.contains(&h) {
            a.reboots.push(h);
        }
    }
    a.sends.extend(b.sends);
    a.disks.extend(b.disks);
    a.models.extend(b.models);
    a.queues.extend(b.queues);
    for (k, v) in b.also {
        a.also.entry(k).or_default().extend(v);
    }
    a.parts.extend(b.parts);
    a.pure.extend(b.pure);
    a.declared.extend(b.declared);
    a
}
