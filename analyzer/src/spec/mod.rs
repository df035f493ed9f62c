//! What the developer tells the analysis: node state, message classes, handlers, crash-handling
//! paths and the send / disk / library-call dictionaries. It comes from in-source annotations or
//! from a TOML side file (schema in analyzer/README.md); both are turned into one [`Spec`], so
//! they give identical output.
//!
//! By phase: `side_file` reads the TOML, `resolve` checks it against the program,
//! `in_source` collects the annotations, `means` parses call summaries; this module holds
//! what they produce and the default dictionaries.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::AnalyzeError;

mod in_source;
mod means;
mod resolve;
mod side_file;

pub use in_source::from_source;
use means::split_params;
pub use means::NODE_SCOPE;
pub(crate) use resolve::class_fields;
pub use resolve::from_side_file;
pub use side_file::{
    read_side_file, CallDecl, DiskDecl, FaultDecl, HandlerDecl, MessageDecl, NodeStateDecl,
    QueueDecl, SideFile, SIDE_FILE_VERSION,
};

/// A method summary: `means` over `params` (the receiver first when there is one more
/// parameter than the call has arguments).
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub params: Vec<String>,
    pub body: flymc_model::guard::Expr,
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
