//! The analysis: a path-sensitive symbolic walk over the IR from a handler (or a crash-handling
//! path), inlining calls into the analysed sources.
//!
//! A state is one group of paths: the branch conditions taken (atoms over the pre-state `n.` and
//! the message `m.`), the node variables read / updated / sent / written to disk so far, the
//! current symbolic values of written node variables and of locals. States whose atoms and values
//! agree are merged at every statement boundary; conditions the guard language cannot express
//! (calls into unanalysed code, locals of unknown value) fork without adding an atom, so the
//! forks merge again right after the branch. Loops run twice (the second time with the values
//! the first pass changed forgotten), which saturates the sets for the flows that matter here.

use std::cell::{Cell, RefCell};
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::path::Path;

use crate::ir::*;
use crate::spec::{CallPat, Spec};
use crate::sym::{inconsistent, Atom, SOp, Sym};

/// The pseudo message field naming the variant of a Rust message enum.
pub const KIND_FIELD: &str = "@kind";

/// Above this many states, states with the same atoms are merged whatever their values.
const MAX_STATES: usize = 32;
/// Above this many, only the atoms all merged states share are kept.
const MAX_GROUPS: usize = 400;
const MAX_DEPTH: usize = 10;
const MAX_STEPS: usize = 3_000_000;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Src {
    N(String),
    M(String),
    /// A string constant (file names for the disk set).
    S(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Obj {
    Plain,
    /// The message being handled.
    Msg,
    /// A node variable's object (or part of it): mutating it updates the variable.
    Node(String),
    /// A class used as a value (`Leader.PROPOSAL`'s `Leader`).
    Class(String),
    Tuple(Vec<Val>),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Val {
    pub sym: Option<Sym>,
    pub taint: BTreeSet<Src>,
    pub obj: Obj,
    /// Static type (simple name) when known.
    pub ty: Option<String>,
}

impl Val {
    pub fn opaque() -> Val {
        Val {
            sym: None,
            taint: BTreeSet::new(),
            obj: Obj::Plain,
            ty: None,
        }
    }
    fn sym(s: Sym) -> Val {
        Val {
            sym: Some(s),
            ..Val::opaque()
        }
    }
    fn tainted(taint: BTreeSet<Src>) -> Val {
        Val {
            taint,
            ..Val::opaque()
        }
    }
    pub fn all_taint(&self) -> BTreeSet<Src> {
        let mut t = self.taint.clone();
        if let Obj::Tuple(vs) = &self.obj {
            for v in vs {
                t.extend(v.all_taint());
            }
        }
        t
    }
    fn join(&self, o: &Val) -> Val {
        Val {
            sym: if self.sym == o.sym {
                self.sym.clone()
            } else {
                None
            },
            taint: self.taint.union(&o.taint).cloned().collect(),
            obj: if self.obj == o.obj {
                self.obj.clone()
            } else {
                match (&self.obj, &o.obj) {
                    (Obj::Tuple(a), Obj::Tuple(b)) if a.len() == b.len() => {
                        Obj::Tuple(a.iter().zip(b).map(|(x, y)| x.join(y)).collect())
                    }
                    _ => Obj::Plain,
                }
            },
            ty: if self.ty == o.ty {
                self.ty.clone()
            } else {
                None
            },
        }
    }
    fn shape(&self, h: &mut DefaultHasher) {
        self.sym.hash(h);
        match &self.obj {
            Obj::Tuple(vs) => {
                for v in vs {
                    v.shape(h);
                }
            }
            o => o.hash(h),
        }
        self.ty.hash(h);
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sets {
    pub read: BTreeSet<String>,
    pub update: BTreeSet<String>,
    pub send: BTreeSet<String>,
    pub disk: BTreeSet<String>,
    /// Variables updated other than by incrementing.
    pub non_incr: BTreeSet<String>,
    pub msg_fields: BTreeSet<String>,
    /// Does the path send a message at all?
    pub sends: bool,
}

impl Sets {
    pub fn union(&mut self, o: &Sets) {
        self.read.extend(o.read.iter().cloned());
        self.update.extend(o.update.iter().cloned());
        self.send.extend(o.send.iter().cloned());
        self.disk.extend(o.disk.iter().cloned());
        self.non_incr.extend(o.non_incr.iter().cloned());
        self.msg_fields.extend(o.msg_fields.iter().cloned());
        self.sends |= o.sends;
    }
    /// Count every variable for the further reported variables it stands for
    /// (`Spec::also`): a field holding several of them is read, updated and sent as a whole.
    pub fn widen(&mut self, spec: &Spec) {
        if spec.also.is_empty() {
            return;
        }
        let widen = |set: &mut BTreeSet<String>| {
            let extra: Vec<String> = set
                .iter()
                .flat_map(|v| spec.with_also(v).skip(1).map(str::to_string))
                .collect();
            set.extend(extra);
        };
        widen(&mut self.read);
        widen(&mut self.update);
        widen(&mut self.send);
        widen(&mut self.non_incr);
    }

    pub fn increments(&self) -> BTreeSet<String> {
        self.update.difference(&self.non_incr).cloned().collect()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    Normal,
    Return,
    Break(Option<String>),
    Continue(Option<String>),
    Throw,
    /// The handler region ended (the next message is received).
    Done,
}

#[derive(Clone, Debug)]
struct Frame {
    locals: BTreeMap<String, Val>,
    this: Val,
    class: String,
    method: String,
}

#[derive(Clone, Debug)]
pub struct St {
    pub atoms: Vec<Atom>,
    pub sets: Sets,
    node: BTreeMap<String, Val>,
    frames: Vec<Frame>,
    pub status: Status,
    pub val: Option<Val>,
    /// Commands pushed on a `[[queue]]`, run after the handler returns.
    queued: Vec<Val>,
}

impl St {
    fn frame(&mut self) -> &mut Frame {
        self.frames.last_mut().expect("a frame")
    }
    fn key(&self, with_values: bool) -> u64 {
        let mut h = DefaultHasher::new();
        self.atoms.hash(&mut h);
        self.status.hash(&mut h);
        if with_values {
            for (k, v) in &self.node {
                k.hash(&mut h);
                v.shape(&mut h);
            }
            for f in &self.frames {
                for (k, v) in &f.locals {
                    k.hash(&mut h);
                    v.shape(&mut h);
                }
                f.this.shape(&mut h);
            }
            if let Some(v) = &self.val {
                v.shape(&mut h);
            }
        }
        h.finish()
    }
    fn absorb(&mut self, o: &St) {
        self.sets.union(&o.sets);
        // Either path's commands may run: all of them do (more effects, never fewer).
        for c in &o.queued {
            if !self.queued.contains(c) {
                self.queued.push(c.clone());
            }
        }
        let keys: BTreeSet<String> = self.node.keys().chain(o.node.keys()).cloned().collect();
        for k in keys {
            let v = match (self.node.get(&k), o.node.get(&k)) {
                (Some(a), Some(b)) => a.join(b),
                (Some(a), None) | (None, Some(a)) => {
                    let mut x = a.clone();
                    x.sym = None;
                    x
                }
                (None, None) => continue,
            };
            self.node.insert(k, v);
        }
        for (fa, fb) in self.frames.iter_mut().zip(&o.frames) {
            let keys: BTreeSet<String> =
                fa.locals.keys().chain(fb.locals.keys()).cloned().collect();
            for k in keys {
                let v = match (fa.locals.get(&k), fb.locals.get(&k)) {
                    (Some(a), Some(b)) => a.join(b),
                    (Some(a), None) | (None, Some(a)) => a.clone(),
                    (None, None) => continue,
                };
                fa.locals.insert(k, v);
            }
            fa.this = fa.this.join(&fb.this);
        }
        self.val = match (&self.val, &o.val) {
            (Some(a), Some(b)) => Some(a.join(b)),
            (Some(a), None) | (None, Some(a)) => Some(a.clone()),
            (None, None) => None,
        };
    }
}

/// Merge states that agree; when there are still too many, merge harder.
fn normalize(states: Vec<St>) -> Vec<St> {
    if states.len() <= 1 {
        return states;
    }
    let mut out = group(states, |s| s.key(true));
    if out.len() > MAX_STATES {
        out = group(out, |s| s.key(false));
    }
    if out.len() > MAX_GROUPS {
        // Keep the atoms all merged states share.
        let mut by_status: Vec<St> = Vec::new();
        for s in out {
            match by_status.iter_mut().find(|x| x.status == s.status) {
                Some(x) => {
                    x.atoms.retain(|a| s.atoms.contains(a));
                    x.absorb(&s);
                }
                None => by_status.push(s),
            }
        }
        out = by_status;
    }
    out
}

fn group(states: Vec<St>, key: impl Fn(&St) -> u64) -> Vec<St> {
    let mut index: HashMap<u64, usize> = HashMap::new();
    let mut out: Vec<St> = Vec::new();
    for s in states {
        let k = key(&s);
        match index.get(&k) {
            Some(&i) => out[i].absorb(&s),
            None => {
                index.insert(k, out.len());
                out.push(s);
            }
        }
    }
    out
}

fn merge_pairs(pairs: Vec<(St, Val)>) -> Vec<(St, Val)> {
    if pairs.len() <= 4 {
        return pairs;
    }
    let mut out: Vec<(St, Val)> = Vec::new();
    let mut index: HashMap<u64, usize> = HashMap::new();
    for (s, v) in pairs {
        let mut h = DefaultHasher::new();
        s.key(pairs_values_matter()).hash(&mut h);
        v.shape(&mut h);
        let k = h.finish();
        match index.get(&k) {
            Some(&i) => {
                out[i].0.absorb(&s);
                out[i].1 = out[i].1.join(&v);
            }
            None => {
                index.insert(k, out.len());
                out.push((s, v));
            }
        }
    }
    if out.len() > MAX_GROUPS {
        let states = normalize(out.iter().map(|(s, _)| s.clone()).collect());
        let v = out
            .iter()
            .skip(1)
            .fold(out[0].1.clone(), |a, (_, b)| a.join(b));
        return states.into_iter().map(|s| (s, v.clone())).collect();
    }
    out
}

fn pairs_values_matter() -> bool {
    true
}

/// A callee's outcomes from one entry.
type Summary = std::rc::Rc<Vec<(St, Val)>>;

/// Something the analysis could not see, with where.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Note {
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// What a walk found besides its states.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    /// Conditions that could not become guards: (file, line).
    pub opaque_conditions: BTreeSet<(String, usize)>,
    /// Calls into code outside the analysed sources (by name).
    pub external_calls: BTreeSet<String>,
    /// Limits hit and other things to report.
    pub notes: BTreeSet<Note>,
}

pub struct Exec<'a> {
    pub prog: &'a Program,
    pub spec: &'a Spec,
    field_vars: HashMap<(String, String), String>,
    local_vars: HashMap<(String, String, String), String>,
    /// Variables no guard may compare (`guards = false`).
    unguarded: BTreeSet<String>,
    /// Nested message-field paths `report` names, with their prefixes (`vote.leader_id`).
    nested: BTreeSet<String>,
    /// Stop a path at statements calling this (the handler's receive call).
    stop_call: Option<String>,
    stop_cache: RefCell<HashMap<usize, bool>>,
    stack: RefCell<Vec<(String, String)>>,
    steps: Cell<usize>,
    pub seen: RefCell<Seen>,
    /// Subclasses by superclass.
    subs: HashMap<String, Vec<String>>,
    /// Call summaries: the callee's outcomes from a given entry (see `inline_memo`).
    memo: RefCell<HashMap<u64, Summary>>,
    pub memo_hits: Cell<usize>,
}

const PRIMITIVES: &[&str] = &[
    "int",
    "long",
    "short",
    "byte",
    "char",
    "boolean",
    "double",
    "float",
    "Integer",
    "Long",
    "Short",
    "Byte",
    "Character",
    "Boolean",
    "Double",
    "Float",
    "String",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "bool",
    "f32",
    "f64",
    "str",
    "NodeId",
    "Option",
];

const PURE: &[&str] = &[
    "get",
    "size",
    "len",
    "isEmpty",
    "is_empty",
    "contains",
    "containsKey",
    "containsValue",
    "contains_key",
    "equals",
    "hashCode",
    "toString",
    "compareTo",
    "iter",
    "keys",
    "values",
    "keySet",
    "entrySet",
    "stream",
    "last",
    "first",
    "peek",
    "clone",
    "to_vec",
    "to_owned",
    "copied",
    "cloned",
    "unwrap",
    "unwrap_or",
    "unwrap_or_default",
    "expect",
    "map_or",
    "is_some",
    "is_none",
    "as_ref",
    "longValue",
    "intValue",
    "getOrDefault",
    "max",
    "min",
    "binary_search",
    "starts_with",
    "ends_with",
    "getId",
    "name",
    "ordinal",
    "hash",
    "as_slice",
    "as_str",
    "cmp",
    "partial_cmp",
    "eq",
    "ne",
    "getFirst",
    "getLast",
    "peekFirst",
    "peekLast",
    "firstKey",
    "lastKey",
    "headMap",
    "tailMap",
    "subMap",
    "count",
    "sum",
    "any",
    "all",
    "find",
    "position",
    "filter",
    "map",
    "collect",
    "windows",
    "chunks",
    "rev",
    "enumerate",
    "zip",
    "skip",
    "take",
    "chain",
    "flat_map",
    "fold",
    "into_iter",
];

const INCREMENTS: &[&str] = &["incrementAndGet", "getAndIncrement", "increment"];

const ALIASING: &[&str] = &[
    "get",
    "get_mut",
    "iter",
    "iter_mut",
    "values",
    "values_mut",
    "keySet",
    "entrySet",
    "last",
    "first",
    "last_mut",
    "first_mut",
    "peek",
    "entry",
    "as_mut",
    "as_ref",
    "unwrap",
    "expect",
    "stream",
    "getFirst",
    "getLast",
    "peekFirst",
    "peekLast",
    "into_iter",
];

fn getter_field(name: &str) -> Option<String> {
    let rest = name
        .strip_prefix("get")
        .or_else(|| name.strip_prefix("is"))?;
    let mut c = rest.chars();
    let f = c.next()?;
    if !f.is_uppercase() {
        return None;
    }
    Some(f.to_lowercase().collect::<String>() + c.as_str())
}

fn is_file_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && !s.contains(char::is_whitespace)
        && !s.contains('{')
        && !s.contains('%')
}

/// Where to start a region.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Into(usize, usize),
    After(usize),
    Begin,
}

impl<'a> Exec<'a> {
    pub fn new(prog: &'a Program, spec: &'a Spec) -> Exec<'a> {
        let mut field_vars = HashMap::new();
        for ((c, f), v) in &spec.fields {
            field_vars.insert((c.clone(), f.clone()), v.name.clone());
        }
        let mut local_vars = HashMap::new();
        for ((c, m, l), v) in &spec.locals {
            local_vars.insert((c.clone(), m.clone(), l.clone()), v.name.clone());
        }
        let mut subs: HashMap<String, Vec<String>> = HashMap::new();
        for c in prog.classes.values() {
            for s in &c.supers {
                subs.entry(s.clone()).or_default().push(c.name.clone());
            }
        }
        Exec {
            prog,
            spec,
            field_vars,
            local_vars,
            unguarded: spec
                .all_vars()
                .into_values()
                .filter(|v| !v.guards)
                .map(|v| v.name)
                .collect(),
            nested: spec
                .messages
                .values()
                .flat_map(|m| m.report.iter().flat_map(|r| r.keys()))
                .flat_map(|k| {
                    k.match_indices('.')
                        .map(|(i, _)| k[..i].to_string())
                        .chain(k.contains('.').then(|| k.clone()))
                        .collect::<Vec<_>>()
                })
                .collect(),
            stop_call: None,
            stop_cache: RefCell::new(HashMap::new()),
            stack: RefCell::new(Vec::new()),
            steps: Cell::new(0),
            seen: RefCell::new(Seen::default()),
            subs,
            memo: RefCell::new(HashMap::new()),
            memo_hits: Cell::new(0),
        }
    }

    pub fn set_stop_call(&mut self, c: Option<String>) {
        self.stop_call = c;
        self.stop_cache.borrow_mut().clear();
    }

    pub fn over_budget(&self) -> bool {
        self.steps.get() > MAX_STEPS
    }

    fn note(&self, st: &St, line: usize, message: String) {
        let file = self.file_of(st);
        self.seen.borrow_mut().notes.insert(Note {
            file,
            line,
            message,
        });
    }

    fn file_of(&self, st: &St) -> String {
        st.frames
            .last()
            .and_then(|f| self.method(&f.class, &f.method))
            .map(|m| {
                m.file
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default()
            })
            .unwrap_or_default()
    }

    fn method(&self, class: &str, name: &str) -> Option<&'a Method> {
        if class.is_empty() {
            return self.prog.functions.get(name);
        }
        self.prog
            .classes
            .get(class)?
            .methods
            .iter()
            .find(|m| m.name == name)
    }

    /// The initial state for running `m` with `this` and parameter values.
    pub fn initial(&self, m: &Method, args: BTreeMap<String, Val>) -> St {
        let this = Val {
            ty: Some(m.class.clone()),
            ..Val::opaque()
        };
        let mut locals = BTreeMap::new();
        for p in &m.params {
            let v = args.get(&p.name).cloned().unwrap_or_else(|| Val {
                ty: p.ty.clone(),
                ..Val::opaque()
            });
            locals.insert(p.name.clone(), v);
        }
        St {
            atoms: vec![],
            sets: Sets::default(),
            node: BTreeMap::new(),
            frames: vec![Frame {
                locals,
                this,
                class: m.class.clone(),
                method: m.name.clone(),
            }],
            status: Status::Normal,
            val: None,
            queued: vec![],
        }
    }

    pub fn msg_val(&self, class: &str) -> Val {
        Val {
            ty: Some(class.to_string()),
            obj: Obj::Msg,
            ..Val::opaque()
        }
    }

    pub fn bind_local(st: &mut St, name: &str, v: Val) {
        st.frame().locals.insert(name.to_string(), v);
    }

    /// Assume a symbolic condition (from a handler's guard); `None` if it contradicts.
    pub fn assume(&self, st: St, s: Sym, truth: bool) -> Vec<St> {
        self.assume_sym(st, s, truth)
    }

    // ---------------------------------------------------------------- statements

    pub fn block(&self, b: &Block, states: Vec<St>) -> Vec<St> {
        let mut states = self.stmts(&b.stmts, states);
        if let Some(t) = &b.tail {
            let (live, mut rest) = split(states);
            let mut out = Vec::new();
            for s in live {
                for (mut s, v) in self.eval(t, s) {
                    if s.status == Status::Normal {
                        s.val = Some(v);
                    }
                    out.push(s);
                }
            }
            rest.extend(out);
            states = normalize(rest);
        }
        states
    }

    pub fn stmts(&self, stmts: &[Stmt], mut states: Vec<St>) -> Vec<St> {
        for s in stmts {
            let (live, rest) = split(states);
            if live.is_empty() {
                return rest;
            }
            let mut out = rest;
            out.extend(self.stmt(s, live));
            states = normalize(out);
        }
        states
    }

    fn stops(&self, s: &Stmt, st: &St) -> bool {
        let Some(c) = &self.stop_call else {
            return false;
        };
        if st.frames.len() != 1 {
            return false;
        }
        *self
            .stop_cache
            .borrow_mut()
            .entry(s.id)
            .or_insert_with(|| stmt_contains_call(s, c))
    }

    fn stmt(&self, s: &Stmt, states: Vec<St>) -> Vec<St> {
        self.steps.set(self.steps.get() + states.len());
        if self.over_budget() {
            return states
                .into_iter()
                .map(|mut st| {
                    st.status = Status::Done;
                    st
                })
                .collect();
        }
        let mut out = Vec::new();
        let mut live = Vec::new();
        for st in states {
            if self.stops(s, &st) {
                let mut st = st;
                st.status = Status::Done;
                out.push(st);
            } else {
                live.push(st);
            }
        }
        if live.is_empty() {
            return out;
        }
        let res = match &s.kind {
            StmtKind::Local {
                pat, ty, init, els, ..
            } => {
                let mut res = Vec::new();
                for st in live {
                    let pairs = match init {
                        Some(e) => self.eval(e, st),
                        None => vec![(st, Val::opaque())],
                    };
                    for (st, mut v) in pairs {
                        if st.status != Status::Normal {
                            res.push(st);
                            continue;
                        }
                        // the declared type wins when it is an analysed class (downcasts)
                        if ty.is_some()
                            && (v.ty.is_none()
                                || ty
                                    .as_ref()
                                    .is_some_and(|t| self.prog.classes.contains_key(t)))
                        {
                            v.ty = ty.clone();
                        }
                        if let (Pat::Bind(name), Some(_)) = (pat, init) {
                            if let Some(var) = self.node_local(&st, name) {
                                let mut st = st;
                                self.write_var(&mut st, &var, v, false);
                                res.push(st);
                                continue;
                            }
                        }
                        let (m, u) = self.match_pat(st, pat, &v);
                        res.extend(m);
                        if let Some(b) = els {
                            res.extend(self.block(b, u));
                        }
                    }
                }
                res
            }
            StmtKind::Expr(e) => {
                let mut res = Vec::new();
                for st in live {
                    for (st, _) in self.eval(e, st) {
                        res.push(st);
                    }
                }
                res
            }
            StmtKind::If { cond, then, els } => {
                let mut res = Vec::new();
                for st in live {
                    let (t, f) = self.branch(cond, st, s.line);
                    res.extend(self.block(then, t));
                    match els {
                        Some(b) => res.extend(self.block(b, f)),
                        None => res.extend(f.into_iter().map(|mut x| {
                            x.val = None;
                            x
                        })),
                    }
                }
                res
            }
            StmtKind::Match {
                subject,
                arms,
                fallthrough,
            } => self.match_stmt(subject, arms, *fallthrough, live, s.line),
            StmtKind::Loop {
                label,
                init,
                cond,
                update,
                body,
            } => {
                let live = self.stmts(init, live);
                let (live, mut res) = split(live);
                res.extend(self.looped(label, cond.as_ref(), update, body, live, None, s.line));
                res
            }
            StmtKind::ForEach {
                label,
                pat,
                iter,
                body,
                ty,
            } => {
                let mut res = Vec::new();
                for st in live {
                    for (st, v) in self.eval(iter, st) {
                        if st.status != Status::Normal {
                            res.push(st);
                            continue;
                        }
                        let elem = Val {
                            sym: None,
                            taint: v.all_taint(),
                            obj: match v.obj {
                                Obj::Node(x) => Obj::Node(x),
                                _ => Obj::Plain,
                            },
                            ty: ty.clone(),
                        };
                        res.extend(self.looped(
                            label,
                            None,
                            &[],
                            body,
                            vec![st],
                            Some((pat, elem)),
                            s.line,
                        ));
                    }
                }
                res
            }
            StmtKind::Return(e) => {
                let mut res = Vec::new();
                for st in live {
                    let pairs = match e {
                        Some(e) => self.eval(e, st),
                        None => vec![(st, Val::opaque())],
                    };
                    for (mut st, v) in pairs {
                        if st.status == Status::Normal {
                            st.status = Status::Return;
                            st.val = Some(v);
                        }
                        res.push(st);
                    }
                }
                res
            }
            StmtKind::Break(l) => live
                .into_iter()
                .map(|mut st| {
                    st.status = Status::Break(l.clone());
                    st
                })
                .collect(),
            StmtKind::Continue(l) => live
                .into_iter()
                .map(|mut st| {
                    st.status = Status::Continue(l.clone());
                    st
                })
                .collect(),
            StmtKind::Throw(e) => {
                let mut res = Vec::new();
                for st in live {
                    for (mut st, _) in self.eval(e, st) {
                        if st.status == Status::Normal {
                            st.status = Status::Throw;
                        }
                        res.push(st);
                    }
                }
                res
            }
            StmtKind::Try {
                body,
                catches,
                finally,
            } => {
                let entry = live.clone();
                let after = self.block(body, live);
                self.after_try(entry, after, catches, finally.as_ref(), None)
            }
            StmtKind::Block(b) => self.block(b, live),
            StmtKind::Opaque(es) => {
                let mut res = Vec::new();
                for st in live {
                    let mut cur = vec![st];
                    for e in es {
                        let mut next = Vec::new();
                        for st in cur {
                            next.extend(self.eval(e, st).into_iter().map(|(s, _)| s));
                        }
                        cur = next;
                    }
                    res.extend(cur);
                }
                res
            }
        };
        out.extend(res);
        out
    }

    /// Finish a `try` whose body produced `after` (from `entry`). `from_catch`: the region
    /// started inside catch clause `k`, whose output `after` is.
    fn after_try(
        &self,
        entry: Vec<St>,
        after: Vec<St>,
        catches: &[Catch],
        finally: Option<&Block>,
        from_catch: Option<usize>,
    ) -> Vec<St> {
        let mut res = Vec::new();
        if from_catch.is_some() || catches.is_empty() {
            res = after;
        } else {
            // A catch may be entered from anywhere in the body: the states at its end (all
            // effects so far) and at its start over-approximate every such point.
            let mut into_catch = Vec::new();
            for st in after {
                match st.status {
                    Status::Throw => {
                        let mut st = st;
                        st.status = Status::Normal;
                        into_catch.push(st);
                    }
                    Status::Normal => {
                        into_catch.push(st.clone());
                        res.push(st);
                    }
                    _ => res.push(st),
                }
            }
            into_catch.extend(entry);
            let into_catch = normalize(into_catch);
            for c in catches {
                let mut ins = into_catch.clone();
                for st in &mut ins {
                    st.val = None;
                    Exec::bind_local(
                        st,
                        &c.var,
                        Val {
                            ty: c.types.first().cloned(),
                            ..Val::opaque()
                        },
                    );
                }
                res.extend(self.block(&c.body, ins));
            }
        }
        if let Some(f) = finally {
            let mut out = Vec::new();
            for st in res {
                if st.status == Status::Done {
                    out.push(st);
                    continue;
                }
                let status = st.status.clone();
                let val = st.val.clone();
                let mut st = st;
                st.status = Status::Normal;
                for mut s in self.block(f, vec![st]) {
                    if s.status == Status::Normal {
                        s.status = status.clone();
                        s.val = val.clone();
                    }
                    out.push(s);
                }
            }
            res = out;
        }
        normalize(res)
    }

    #[allow(clippy::too_many_arguments)]
    fn looped(
        &self,
        label: &Option<String>,
        cond: Option<&Expr>,
        update: &[Expr],
        body: &Block,
        entry: Vec<St>,
        bind: Option<(&Pat, Val)>,
        line: usize,
    ) -> Vec<St> {
        let mut exits = Vec::new();
        let mut cur = entry;
        let assigned = assigned_names(body);
        for pass in 0..2 {
            if pass == 1 {
                // Forget what the first pass changed.
                let written: BTreeSet<String> = cur
                    .iter()
                    .flat_map(|s| s.sets.update.iter().cloned())
                    .collect();
                for st in &mut cur {
                    for w in &written {
                        if let Some(v) = st.node.get_mut(w) {
                            v.sym = None;
                        } else {
                            st.node.insert(
                                w.clone(),
                                Val {
                                    obj: Obj::Node(w.clone()),
                                    ..Val::opaque()
                                },
                            );
                        }
                    }
                    let f = st.frame();
                    for a in &assigned {
                        if let Some(v) = f.locals.get_mut(a) {
                            v.sym = None;
                        }
                    }
                }
            }
            let mut go = Vec::new();
            for st in cur {
                match cond {
                    Some(c) => {
                        let (t, f) = self.branch(c, st, line);
                        go.extend(t);
                        exits.extend(f);
                    }
                    None => {
                        if bind.is_some() {
                            exits.push(st.clone());
                        }
                        go.push(st);
                    }
                }
            }
            if let Some((pat, v)) = &bind {
                let mut bound = Vec::new();
                for st in go {
                    bound.extend(self.match_pat(st, pat, v).0);
                }
                go = bound;
            }
            let out = self.block(body, normalize(go));
            let mut back = Vec::new();
            for mut st in out {
                match &st.status {
                    Status::Normal => back.push(st),
                    Status::Continue(l) if l.is_none() || l == label => {
                        st.status = Status::Normal;
                        back.push(st);
                    }
                    Status::Break(l) if l.is_none() || l == label => {
                        st.status = Status::Normal;
                        exits.push(st);
                    }
                    _ => exits.push(st),
                }
            }
            let mut next = Vec::new();
            for st in back {
                let mut cur = vec![st];
                for u in update {
                    let mut n = Vec::new();
                    for s in cur {
                        n.extend(self.eval(u, s).into_iter().map(|(s, _)| s));
                    }
                    cur = n;
                }
                next.extend(cur);
            }
            cur = normalize(next);
        }
        // After the second pass the loop may still run on or stop.
        exits.extend(cur);
        normalize(exits)
    }

    fn match_stmt(
        &self,
        subject: &Expr,
        arms: &[Arm],
        fallthrough: bool,
        live: Vec<St>,
        line: usize,
    ) -> Vec<St> {
        let mut res = Vec::new();
        for st in live {
            for (st, v) in self.eval(subject, st) {
                if st.status != Status::Normal {
                    res.push(st);
                    continue;
                }
                let mut remaining = vec![st];
                let mut carry: Vec<St> = Vec::new();
                for arm in arms {
                    let mut matched = Vec::new();
                    let mut unmatched = Vec::new();
                    for s in remaining {
                        let pat = if arm.pats.is_empty() {
                            Pat::Wild
                        } else if arm.pats.len() == 1 {
                            arm.pats[0].clone()
                        } else {
                            Pat::Or(arm.pats.clone())
                        };
                        let (m, u) = self.match_pat(s, &pat, &v);
                        matched.extend(m);
                        unmatched.extend(u);
                    }
                    if let Some(g) = &arm.guard {
                        let mut gm = Vec::new();
                        for s in matched {
                            let (t, f) = self.branch(g, s, line);
                            gm.extend(t);
                            unmatched.extend(f);
                        }
                        matched = gm;
                    }
                    matched.append(&mut carry);
                    let out = self.block(&arm.body, normalize(matched));
                    for mut s in out {
                        match &s.status {
                            Status::Normal if fallthrough => carry.push(s),
                            Status::Break(None) if fallthrough => {
                                s.status = Status::Normal;
                                res.push(s);
                            }
                            _ => res.push(s),
                        }
                    }
                    remaining = normalize(unmatched);
                }
                res.extend(carry);
                res.extend(remaining.into_iter().map(|mut s| {
                    s.val = None;
                    s
                }));
            }
        }
        res
    }

    /// Run the rest of a method from a point inside it: `steps` leads from `b` to the start.
    pub fn run_from(&self, b: &Block, steps: &[Step], states: Vec<St>) -> Vec<St> {
        match steps.first() {
            None | Some(Step::Begin) => self.block(b, states),
            Some(Step::After(i)) => {
                let rest = &b.stmts[(*i + 1).min(b.stmts.len())..];
                let mut out = self.stmts(rest, states);
                if let Some(t) = &b.tail {
                    let (live, mut r) = split(out);
                    for s in live {
                        r.extend(self.eval(t, s).into_iter().map(|(s, _)| s));
                    }
                    out = r;
                }
                out
            }
            Some(Step::Into(i, c)) => {
                let s = &b.stmts[*i];
                let inner_block = child_block(s, *c).expect("a valid region path");
                let inner = self.run_from(inner_block, &steps[1..], states);
                let after: Vec<St> = match &s.kind {
                    StmtKind::Loop { label, .. } | StmtKind::ForEach { label, .. } => inner
                        .into_iter()
                        .map(|mut st| {
                            match &st.status {
                                Status::Normal => st.status = Status::Done,
                                Status::Continue(l) if l.is_none() || l == label => {
                                    st.status = Status::Done
                                }
                                Status::Break(l) if l.is_none() || l == label => {
                                    st.status = Status::Normal
                                }
                                _ => {}
                            }
                            st
                        })
                        .collect(),
                    StmtKind::Match {
                        arms, fallthrough, ..
                    } => {
                        let mut res = Vec::new();
                        let mut carry = Vec::new();
                        for st in inner {
                            match &st.status {
                                Status::Normal if *fallthrough => carry.push(st),
                                Status::Break(None) if *fallthrough => {
                                    let mut st = st;
                                    st.status = Status::Normal;
                                    res.push(st);
                                }
                                _ => res.push(st),
                            }
                        }
                        for arm in arms.iter().skip(c + 1) {
                            if carry.is_empty() {
                                break;
                            }
                            let out = self.block(&arm.body, std::mem::take(&mut carry));
                            for mut st in out {
                                match &st.status {
                                    Status::Normal => carry.push(st),
                                    Status::Break(None) => {
                                        st.status = Status::Normal;
                                        res.push(st);
                                    }
                                    _ => res.push(st),
                                }
                            }
                        }
                        res.extend(carry);
                        res
                    }
                    StmtKind::Try {
                        catches, finally, ..
                    } => {
                        if *c == 0 {
                            self.after_try(vec![], inner, catches, finally.as_ref(), None)
                        } else if *c <= catches.len() {
                            self.after_try(vec![], inner, catches, finally.as_ref(), Some(c - 1))
                        } else {
                            inner
                        }
                    }
                    _ => inner,
                };
                let (live, mut rest) = split(after);
                let tail = &b.stmts[(*i + 1).min(b.stmts.len())..];
                let mut cont = self.stmts(tail, live);
                if let Some(t) = &b.tail {
                    let (live, mut r) = split(cont);
                    for s in live {
                        r.extend(self.eval(t, s).into_iter().map(|(s, _)| s));
                    }
                    cont = r;
                }
                rest.extend(cont);
                normalize(rest)
            }
        }
    }

    // ---------------------------------------------------------------- conditions

    /// Split `st` on `cond`: the states where it holds and where it does not.
    fn branch(&self, cond: &Expr, st: St, line: usize) -> (Vec<St>, Vec<St>) {
        match cond {
            Expr::Bin(BinOp::And, a, b) => {
                let (ta, mut f) = self.branch(a, st, line);
                let mut t = Vec::new();
                for s in ta {
                    let (tb, fb) = self.branch(b, s, line);
                    t.extend(tb);
                    f.extend(fb);
                }
                (normalize(t), normalize(f))
            }
            Expr::Bin(BinOp::Or, a, b) => {
                let (mut t, fa) = self.branch(a, st, line);
                let mut f = Vec::new();
                for s in fa {
                    let (tb, fb) = self.branch(b, s, line);
                    t.extend(tb);
                    f.extend(fb);
                }
                (normalize(t), normalize(f))
            }
            Expr::Unary(UnOp::Not, a) => {
                let (t, f) = self.branch(a, st, line);
                (f, t)
            }
            Expr::Let(pat, e) => {
                let mut t = Vec::new();
                let mut f = Vec::new();
                for (s, v) in self.eval(e, st) {
                    if s.status != Status::Normal {
                        f.push(s);
                        continue;
                    }
                    let (m, u) = self.match_pat(s, pat, &v);
                    t.extend(m);
                    f.extend(u);
                }
                (t, f)
            }
            _ => {
                let mut t = Vec::new();
                let mut f = Vec::new();
                for (s, v) in self.eval(cond, st) {
                    if s.status != Status::Normal {
                        // an exception or early return while evaluating the condition
                        f.push(s);
                        continue;
                    }
                    self.note_reads(&mut s.clone(), &v);
                    match v.sym.map(Sym::simplify) {
                        Some(Sym::Bool(true)) => t.push(s),
                        Some(Sym::Bool(false)) => f.push(s),
                        Some(sym) => {
                            t.extend(self.assume_sym(s.clone(), sym.clone(), true));
                            f.extend(self.assume_sym(s, sym, false));
                        }
                        None => {
                            let file = self.file_of(&s);
                            self.seen
                                .borrow_mut()
                                .opaque_conditions
                                .insert((file, line));
                            t.push(s.clone());
                            f.push(s);
                        }
                    }
                }
                (t, f)
            }
        }
    }

    fn note_reads(&self, _st: &mut St, _v: &Val) {}

    fn assume_sym(&self, st: St, s: Sym, truth: bool) -> Vec<St> {
        // Constants compared with constants (`UpdateCurrentLeader::Unknown` matched against
        // the variants of its enum, `None` against `None`) decide the branch, not a guard.
        match s.simplify() {
            Sym::Not(a) => self.assume_sym(st, *a, !truth),
            Sym::Bool(b) => {
                if b == truth {
                    vec![st]
                } else {
                    vec![]
                }
            }
            Sym::Bin(a, SOp::And, b) if truth => {
                let mut out = Vec::new();
                for s in self.assume_sym(st, *a, true) {
                    out.extend(self.assume_sym(s, (*b).clone(), true));
                }
                out
            }
            Sym::Bin(a, SOp::Or, b) if !truth => {
                let mut out = Vec::new();
                for s in self.assume_sym(st, *a, false) {
                    out.extend(self.assume_sym(s, (*b).clone(), false));
                }
                out
            }
            Sym::Bin(a, SOp::And, b) => {
                // !(a && b): !a, or a && !b
                let mut out = self.assume_sym(st.clone(), (*a).clone(), false);
                for s in self.assume_sym(st, *a, true) {
                    out.extend(self.assume_sym(s, (*b).clone(), false));
                }
                out
            }
            Sym::Bin(a, SOp::Or, b) => {
                // a || b: a, or !a && b
                let mut out = self.assume_sym(st.clone(), (*a).clone(), true);
                for s in self.assume_sym(st, *a, false) {
                    out.extend(self.assume_sym(s, (*b).clone(), true));
                }
                out
            }
            other => {
                let atom = Atom::new(other, truth);
                let mut st = st;
                if st.atoms.contains(&atom) {
                    return vec![st];
                }
                if inconsistent(&st.atoms, std::slice::from_ref(&atom)) {
                    return vec![];
                }
                let mut fields = BTreeSet::new();
                atom.test.msg_fields(&mut fields);
                st.sets.msg_fields.extend(fields);
                st.atoms.push(atom);
                st.atoms.sort();
                vec![st]
            }
        }
    }

    // ---------------------------------------------------------------- patterns

    /// Match `v` against `pat`: the states where it matches (with its bindings) and where not.
    fn match_pat(&self, st: St, pat: &Pat, v: &Val) -> (Vec<St>, Vec<St>) {
        match pat {
            Pat::Wild => (vec![st], vec![]),
            Pat::Bind(name) => {
                let mut st = st;
                Exec::bind_local(&mut st, name, v.clone());
                (vec![st], vec![])
            }
            Pat::Opaque => (vec![st.clone()], vec![st]),
            Pat::Const(e) => {
                let pairs = self.eval(e, st.clone());
                let c = pairs
                    .into_iter()
                    .next()
                    .map(|(_, c)| c)
                    .unwrap_or_else(Val::opaque);
                let c = match (&c.sym, e) {
                    (None, Expr::Name(n)) => Val::sym(Sym::Const {
                        name: n.clone(),
                        value: Box::new(Sym::Str(n.clone())),
                    }),
                    _ => c,
                };
                self.test_eq(st, v, &c)
            }
            Pat::Or(ps) => {
                let mut matched = Vec::new();
                let mut rest = vec![st];
                for p in ps {
                    let mut next = Vec::new();
                    for s in rest {
                        let (m, u) = self.match_pat(s, p, v);
                        matched.extend(m);
                        next.extend(u);
                    }
                    rest = next;
                }
                (matched, rest)
            }
            Pat::Tuple(ps) => {
                let parts: Vec<Val> = match &v.obj {
                    Obj::Tuple(vs) if vs.len() == ps.len() => vs.clone(),
                    _ => ps.iter().map(|_| Val::tainted(v.all_taint())).collect(),
                };
                let mut matched = vec![st];
                let mut unmatched = Vec::new();
                for (p, pv) in ps.iter().zip(&parts) {
                    let mut next = Vec::new();
                    for s in matched {
                        let (m, u) = self.match_pat(s, p, pv);
                        next.extend(m);
                        unmatched.extend(u);
                    }
                    matched = next;
                }
                (matched, unmatched)
            }
            Pat::Variant { path, fields, .. } => {
                let last = path.last().map(String::as_str).unwrap_or("");
                match last {
                    "Some" => {
                        let (t, f) = match &v.sym {
                            Some(s) => (
                                self.assume_sym(
                                    st.clone(),
                                    Sym::bin(s.clone(), SOp::Ne, Sym::Null),
                                    true,
                                ),
                                self.assume_sym(st, Sym::bin(s.clone(), SOp::Ne, Sym::Null), false),
                            ),
                            None => (vec![st.clone()], vec![st]),
                        };
                        let mut m = Vec::new();
                        for s in t {
                            let mut cur = vec![s];
                            for (_, p) in fields {
                                let mut n = Vec::new();
                                for s in cur {
                                    n.extend(self.match_pat(s, p, v).0);
                                }
                                cur = n;
                            }
                            m.extend(cur);
                        }
                        (m, f)
                    }
                    _ => {
                        let enum_name = if path.len() >= 2 {
                            Some(path[path.len() - 2].clone())
                        } else {
                            None
                        };
                        let (t, f) = if v.obj == Obj::Msg {
                            let kind = self.variant_value(enum_name.as_deref(), last);
                            let test = Val::sym(Sym::Const {
                                name: kind.clone(),
                                value: Box::new(Sym::Str(kind)),
                            });
                            let kv = Val::sym(Sym::M(KIND_FIELD.into()));
                            self.test_eq(st, &kv, &test)
                        } else if let Some(en) = self.enum_of(enum_name.as_deref(), last) {
                            // A variant with fields is tested only against a constructed
                            // variant (a constant: decided), never as a guard.
                            let constant = matches!(v.sym, Some(Sym::Const { .. }));
                            if fields.is_empty() || constant {
                                let val = self.variant_value(Some(&en), last);
                                let c = Val::sym(Sym::Const {
                                    name: last.to_string(),
                                    value: Box::new(Sym::Str(val)),
                                });
                                self.test_eq(st, v, &c)
                            } else {
                                (vec![st.clone()], vec![st])
                            }
                        } else {
                            (vec![st.clone()], vec![st])
                        };
                        // The bound fields' declared types, so calls on them resolve
                        // (`Command::Respond { resp, .. } => resp.send()`).
                        let field_ty = |fname: &str| -> Option<String> {
                            let en = self.enum_of(enum_name.as_deref(), last)?;
                            let var = self
                                .prog
                                .classes
                                .get(&en)?
                                .variants
                                .iter()
                                .find(|x| x.name == last)?;
                            let i = var.fields.iter().position(|f| f == fname)?;
                            var.types.get(i).cloned().flatten()
                        };
                        let mut m = Vec::new();
                        for s in t {
                            let mut cur = vec![s];
                            for (fname, p) in fields {
                                let fv = if v.obj == Obj::Msg {
                                    Val {
                                        sym: Some(Sym::M(fname.clone())),
                                        taint: [Src::M(fname.clone())].into(),
                                        obj: Obj::Plain,
                                        ty: None,
                                    }
                                } else {
                                    Val {
                                        ty: field_ty(fname),
                                        ..Val::tainted(v.all_taint())
                                    }
                                };
                                let mut n = Vec::new();
                                for mut s in cur {
                                    if v.obj == Obj::Msg {
                                        s.sets.msg_fields.insert(fname.clone());
                                    }
                                    n.extend(self.match_pat(s, p, &fv).0);
                                }
                                cur = n;
                            }
                            m.extend(cur);
                        }
                        (m, f)
                    }
                }
            }
        }
    }

    fn test_eq(&self, st: St, v: &Val, c: &Val) -> (Vec<St>, Vec<St>) {
        match (&v.sym, &c.sym) {
            (Some(a), Some(b)) => {
                let test = Sym::bin(a.clone(), SOp::Eq, b.clone());
                (
                    self.assume_sym(st.clone(), test.clone(), true),
                    self.assume_sym(st, test, false),
                )
            }
            _ => (vec![st.clone()], vec![st]),
        }
    }

    fn enum_of(&self, enum_name: Option<&str>, variant: &str) -> Option<String> {
        if let Some(e) = enum_name {
            if self.prog.classes.get(e).is_some_and(|c| c.is_enum) {
                return Some(e.to_string());
            }
        }
        self.prog
            .classes
            .values()
            .find(|c| c.is_enum && c.variants.iter().any(|v| v.name == variant))
            .map(|c| c.name.clone())
    }

    fn variant_value(&self, enum_name: Option<&str>, variant: &str) -> String {
        let rule = enum_name
            .and_then(|e| self.prog.classes.get(e))
            .or_else(|| {
                self.prog
                    .classes
                    .values()
                    .find(|c| c.is_enum && c.variants.iter().any(|v| v.name == variant))
            })
            .and_then(|c| c.rename_all.clone());
        rename(variant, rule.as_deref())
    }

    // ---------------------------------------------------------------- node variables

    fn node_local(&self, st: &St, name: &str) -> Option<String> {
        let f = st.frames.last()?;
        self.local_vars
            .get(&(f.class.clone(), f.method.clone(), name.to_string()))
            .cloned()
    }

    fn field_var(&self, class: &str, field: &str) -> Option<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![class.to_string()];
        while let Some(c) = todo.pop() {
            if !seen.insert(c.clone()) {
                continue;
            }
            if let Some(v) = self.field_vars.get(&(c.clone(), field.to_string())) {
                return Some(v.clone());
            }
            if let Some(cl) = self.prog.classes.get(&c) {
                if cl.fields.contains_key(field) {
                    return None;
                }
                todo.extend(cl.supers.iter().cloned());
            }
        }
        None
    }

    /// Which class declares `field`, searching `class`, its supers, then (for bare names) its
    /// outer classes.
    fn field_owner(&self, class: &str, field: &str, outer: bool) -> Option<&'a Class> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![class.to_string()];
        while let Some(c) = todo.pop() {
            if !seen.insert(c.clone()) {
                continue;
            }
            if let Some(cl) = self.prog.classes.get(&c) {
                if cl.fields.contains_key(field) {
                    return Some(cl);
                }
                todo.extend(cl.supers.iter().cloned());
            }
        }
        if outer {
            let o = self.prog.classes.get(class)?.outer.clone()?;
            return self.field_owner(&o, field, true);
        }
        None
    }

    fn var_type(&self, var: &str) -> Option<String> {
        for ((c, f), v) in &self.spec.fields {
            if v.name == var {
                return self
                    .prog
                    .classes
                    .get(c)
                    .and_then(|cl| cl.fields.get(f))
                    .and_then(|f| f.ty.clone());
            }
        }
        None
    }

    fn read_var(&self, st: &mut St, var: &str) -> Val {
        st.sets.read.insert(var.to_string());
        let ty = self.var_type(var);
        let primitive = ty.as_deref().is_some_and(|t| PRIMITIVES.contains(&t));
        // A variable whose reported value is not this value gets no symbol: no guard on it.
        let guards = !self.unguarded.contains(var);
        let mut v = st.node.get(var).cloned().unwrap_or_else(|| Val {
            sym: guards.then(|| Sym::N(var.to_string())),
            taint: BTreeSet::new(),
            obj: Obj::Node(var.to_string()),
            ty: ty.clone(),
        });
        v.taint.insert(Src::N(var.to_string()));
        if primitive && ty.as_deref() != Some("Option") {
            v.obj = Obj::Plain;
        } else {
            v.obj = Obj::Node(var.to_string());
        }
        if v.ty.is_none() {
            v.ty = ty;
        }
        v
    }

    fn write_var(&self, st: &mut St, var: &str, v: Val, increment: bool) {
        st.sets.update.insert(var.to_string());
        if !increment {
            st.sets.non_incr.insert(var.to_string());
        }
        let mut v = v;
        v.obj = Obj::Node(var.to_string());
        st.node.insert(var.to_string(), v);
    }

    /// A mutation of part of a variable's object (`n.log.push(e)`, `map.put(k, v)`).
    fn touch_var(&self, st: &mut St, var: &str, taint: &BTreeSet<Src>) {
        st.sets.update.insert(var.to_string());
        st.sets.non_incr.insert(var.to_string());
        let mut cur = st.node.get(var).cloned().unwrap_or_else(|| Val {
            sym: None,
            taint: BTreeSet::new(),
            obj: Obj::Node(var.to_string()),
            ty: self.var_type(var),
        });
        cur.sym = None;
        cur.taint.extend(taint.iter().cloned());
        st.node.insert(var.to_string(), cur);
    }

    // ---------------------------------------------------------------- expressions

    fn this_class(&self, st: &St) -> String {
        st.frames
            .last()
            .map(|f| f.class.clone())
            .unwrap_or_default()
    }

    fn eval_name(&self, st: &mut St, name: &str) -> Val {
        if let Some(v) = st.frames.last().and_then(|f| f.locals.get(name)).cloned() {
            return v;
        }
        if let Some(var) = self.node_local(st, name) {
            return self.read_var(st, &var);
        }
        let class = self.this_class(st);
        if let Some(owner) = self.field_owner(&class, name, true) {
            let this = st
                .frames
                .last()
                .map(|f| f.this.clone())
                .unwrap_or_else(Val::opaque);
            let this = if owner.name == class || self.field_owner(&class, name, false).is_some() {
                this
            } else {
                Val {
                    ty: Some(owner.name.clone()),
                    ..Val::opaque()
                }
            };
            return self.field_of(st, owner, name, &this);
        }
        if name == "None" {
            return Val::sym(Sym::Null);
        }
        if let Some(c) = self.prog.classes.get("crate") {
            if c.fields.contains_key(name) {
                return self.field_of(st, c, name, &Val::opaque());
            }
        }
        if self.prog.classes.contains_key(name)
            || name.chars().next().is_some_and(char::is_uppercase)
        {
            return Val {
                obj: Obj::Class(name.to_string()),
                ..Val::opaque()
            };
        }
        Val::opaque()
    }

    /// The value of `obj.field` where the field is declared in `owner`.
    fn field_of(&self, st: &mut St, owner: &Class, field: &str, obj: &Val) -> Val {
        if let Obj::Node(var) = &obj.obj {
            // part of a node variable's object
            let mut v = self.read_var(st, var);
            v.sym = None;
            v.ty = owner.fields.get(field).and_then(|f| f.ty.clone());
            return v;
        }
        if obj.obj == Obj::Msg {
            return self.msg_field(st, field);
        }
        if let Some(var) = self.field_var(&owner.name, field) {
            return self.read_var(st, &var);
        }
        let f = owner.fields.get(field);
        if let Some(f) = f {
            if f.is_static && f.is_final {
                if let Some(Expr::Lit(l)) = &f.init {
                    if let Some(s) = lit_sym(l) {
                        let mut v = Val::sym(Sym::Const {
                            name: field.to_string(),
                            value: Box::new(s.clone()),
                        });
                        if let Sym::Str(x) = &s {
                            if is_file_label(x) {
                                v.taint.insert(Src::S(x.clone()));
                            }
                        }
                        return v;
                    }
                }
            }
        }
        Val {
            sym: None,
            taint: obj.taint.clone(),
            obj: Obj::Plain,
            ty: f.and_then(|f| f.ty.clone()),
        }
    }

    fn msg_field(&self, st: &mut St, field: &str) -> Val {
        st.sets.msg_fields.insert(field.to_string());
        Val {
            sym: Some(Sym::M(field.to_string())),
            taint: [Src::M(field.to_string())].into(),
            obj: Obj::Plain,
            ty: None,
        }
    }

    pub fn eval(&self, e: &Expr, st: St) -> Vec<(St, Val)> {
        let mut st = st;
        match e {
            Expr::Lit(l) => {
                let v = match lit_sym(l) {
                    Some(s) => {
                        let mut v = Val::sym(s.clone());
                        if let Sym::Str(x) = &s {
                            if is_file_label(x) {
                                v.taint.insert(Src::S(x.clone()));
                            }
                        }
                        v
                    }
                    None => Val::opaque(),
                };
                vec![(st, v)]
            }
            Expr::Name(n) => {
                let v = self.eval_name(&mut st, n);
                vec![(st, v)]
            }
            Expr::This => {
                let v = st
                    .frames
                    .last()
                    .map(|f| f.this.clone())
                    .unwrap_or_else(Val::opaque);
                vec![(st, v)]
            }
            Expr::Path(p) => {
                let v = self.eval_path(&mut st, p);
                vec![(st, v)]
            }
            Expr::Field(obj, f) => {
                let mut out = Vec::new();
                for (mut st, o) in self.eval(obj, st) {
                    let v = self.field_access(&mut st, &o, f);
                    out.push((st, v));
                }
                out
            }
            Expr::Index(a, i) => {
                let mut out = Vec::new();
                for (st, av) in self.eval(a, st) {
                    for (st, iv) in self.eval(i, st) {
                        let mut taint = av.all_taint();
                        taint.extend(iv.all_taint());
                        let v = Val {
                            sym: None,
                            taint,
                            obj: match &av.obj {
                                Obj::Node(x) => Obj::Node(x.clone()),
                                _ => Obj::Plain,
                            },
                            ty: None,
                        };
                        out.push((st, v));
                    }
                }
                out
            }
            Expr::Call {
                recv,
                name,
                args,
                line,
            } => self.eval_call(recv.as_deref(), name, args, *line, st),
            Expr::New { ty, args, line } => {
                let mut out = Vec::new();
                for (st, vals) in self.eval_list(args, st) {
                    out.extend(self.construct(st, ty, vals, *line));
                }
                merge_pairs(out)
            }
            Expr::Struct { path, fields } => {
                let es: Vec<Expr> = fields.iter().map(|(_, e)| e.clone()).collect();
                let mut out = Vec::new();
                for (st, vals) in self.eval_list(&es, st) {
                    let mut taint = BTreeSet::new();
                    for v in &vals {
                        taint.extend(v.all_taint());
                    }
                    // `Enum::Variant { .. }`: its variant is a constant, so a `match` on
                    // it (a queued command run later) takes that arm only.
                    let sym = match path.as_slice() {
                        [.., e, var]
                            if self.prog.classes.get(e).is_some_and(|c| {
                                c.is_enum && c.variants.iter().any(|v| v.name == *var)
                            }) =>
                        {
                            Some(Sym::Const {
                                name: var.clone(),
                                value: Box::new(Sym::Str(self.variant_value(Some(e), var))),
                            })
                        }
                        _ => None,
                    };
                    out.push((
                        st,
                        Val {
                            sym,
                            taint,
                            obj: Obj::Plain,
                            ty: path.first().cloned(),
                        },
                    ));
                }
                out
            }
            Expr::Tuple(es) => {
                let mut out = Vec::new();
                for (st, vals) in self.eval_list(es, st) {
                    let taint = BTreeSet::new();
                    out.push((
                        st,
                        Val {
                            sym: None,
                            taint,
                            obj: Obj::Tuple(vals),
                            ty: None,
                        },
                    ));
                }
                out
            }
            Expr::Unary(op, a) => {
                let mut out = Vec::new();
                for (st, v) in self.eval(a, st) {
                    let sym = match op {
                        UnOp::Not => v.sym.clone().map(|s| Sym::Not(Box::new(s)).simplify()),
                        UnOp::Neg => v.sym.clone().map(|s| match s {
                            Sym::Int(i) => Sym::Int(-i),
                            s => Sym::Neg(Box::new(s)),
                        }),
                        UnOp::Other => v.sym.clone(),
                    };
                    out.push((st, Val { sym, ..v }));
                }
                out
            }
            Expr::Bin(op, a, b) => {
                if matches!(op, BinOp::And | BinOp::Or) {
                    // short-circuit: evaluate b only where needed, but a value is enough here
                    let mut out = Vec::new();
                    for (st, va) in self.eval(a, st) {
                        for (st, vb) in self.eval(b, st) {
                            let sym = match (&va.sym, &vb.sym) {
                                (Some(x), Some(y)) => Some(
                                    Sym::bin(
                                        x.clone(),
                                        if *op == BinOp::And { SOp::And } else { SOp::Or },
                                        y.clone(),
                                    )
                                    .simplify(),
                                ),
                                _ => None,
                            };
                            let taint = va.all_taint().union(&vb.all_taint()).cloned().collect();
                            out.push((
                                st,
                                Val {
                                    sym,
                                    taint,
                                    obj: Obj::Plain,
                                    ty: None,
                                },
                            ));
                        }
                    }
                    return merge_pairs(out);
                }
                let mut out = Vec::new();
                for (st, va) in self.eval(a, st) {
                    for (st, vb) in self.eval(b, st) {
                        let v = self.binop(*op, &va, &vb);
                        out.push((st, v));
                    }
                }
                merge_pairs(out)
            }
            Expr::Assign { target, op, value } => {
                let mut out = Vec::new();
                for (st, v) in self.eval(value, st) {
                    if st.status != Status::Normal {
                        out.push((st, v));
                        continue;
                    }
                    match op {
                        None => {
                            // `x = x + k` (k > 0) is an increment too
                            let inc = match &**value {
                                Expr::Bin(BinOp::Add, a, b) => {
                                    matches!(&**b, Expr::Lit(Lit::Int(k)) if *k > 0)
                                        && format!("{a:?}") == format!("{target:?}")
                                }
                                _ => false,
                            };
                            let st = self.assign(st, target, v.clone(), inc);
                            out.extend(st.into_iter().map(|s| (s, v.clone())));
                        }
                        Some(o) => {
                            for (st, cur) in self.eval(target, st) {
                                let newv = self.binop(*o, &cur, &v);
                                let inc = *o == BinOp::Add
                                    && matches!(v.sym.as_ref().and_then(Sym::lit).and_then(|x| x.as_i64()), Some(k) if k > 0);
                                let sts = self.assign(st, target, newv.clone(), inc);
                                out.extend(sts.into_iter().map(|s| (s, newv.clone())));
                            }
                        }
                    }
                }
                out
            }
            Expr::IncDec { target, inc } => {
                let mut out = Vec::new();
                for (st, cur) in self.eval(target, st) {
                    let one = Val::sym(Sym::Int(1));
                    let newv = self.binop(if *inc { BinOp::Add } else { BinOp::Sub }, &cur, &one);
                    let sts = self.assign(st, target, newv.clone(), *inc);
                    out.extend(sts.into_iter().map(|s| (s, newv.clone())));
                }
                out
            }
            Expr::Cond(c, a, b) => {
                let (t, f) = self.branch(c, st, 0);
                let mut out = Vec::new();
                for s in t {
                    out.extend(self.eval(a, s));
                }
                for s in f {
                    out.extend(self.eval(b, s));
                }
                merge_pairs(out)
            }
            Expr::InstanceOf(a, _) => {
                let mut out = Vec::new();
                for (st, v) in self.eval(a, st) {
                    out.push((st, Val::tainted(v.all_taint())));
                }
                out
            }
            Expr::Lambda { params, body } => {
                // Counted where created: the body runs once, in a frame of its own.
                let outer = st.frames.last().cloned();
                let Some(mut frame) = outer else {
                    return vec![(st, Val::opaque())];
                };
                for p in params {
                    frame.locals.insert(p.clone(), Val::opaque());
                }
                st.frames.push(frame);
                let depth = st.frames.len();
                let mut out = Vec::new();
                for mut s in self.block(body, vec![st]) {
                    // keep the lambda's writes to captured locals out; its effects on node
                    // variables stay
                    while s.frames.len() >= depth {
                        s.frames.pop();
                    }
                    let v = Val::tainted(s.val.take().map(|v| v.all_taint()).unwrap_or_default());
                    if matches!(s.status, Status::Return | Status::Throw) {
                        s.status = Status::Normal;
                    }
                    out.push((s, v));
                }
                merge_pairs(out)
            }
            Expr::Stmt(s) => {
                let mut st = st;
                st.val = None;
                let mut out = Vec::new();
                for mut s in self.stmt(s, vec![st]) {
                    let v = s.val.take().unwrap_or_else(Val::opaque);
                    out.push((s, v));
                }
                merge_pairs(out)
            }
            Expr::Try(a) => {
                let mut out = Vec::new();
                for (st, v) in self.eval(a, st) {
                    if st.status == Status::Normal {
                        let mut early = st.clone();
                        early.status = Status::Return;
                        early.val = Some(Val::tainted(v.all_taint()));
                        out.push((early, Val::opaque()));
                    }
                    out.push((st, v));
                }
                out
            }
            Expr::Let(pat, a) => {
                let mut out = Vec::new();
                for (st, v) in self.eval(a, st) {
                    let (m, _) = self.match_pat(st, pat, &v);
                    out.extend(m.into_iter().map(|s| (s, Val::opaque())));
                }
                out
            }
            Expr::Opaque(es) => {
                let mut out = Vec::new();
                for (st, vals) in self.eval_list(es, st) {
                    let mut taint = BTreeSet::new();
                    for v in &vals {
                        taint.extend(v.all_taint());
                    }
                    out.push((st, Val::tainted(taint)));
                }
                out
            }
        }
    }

    fn eval_path(&self, st: &mut St, p: &[String]) -> Val {
        // `Role::Leader`, `Self::X`, `Msg::Variant` (unit), `NODES`
        let last = p.last().map(String::as_str).unwrap_or("");
        let owner = if p.len() >= 2 {
            Some(p[p.len() - 2].as_str())
        } else {
            None
        };
        let owner = owner.map(|o| {
            if o == "Self" {
                self.this_class(st)
            } else {
                o.to_string()
            }
        });
        if let Some(o) = &owner {
            if let Some(cl) = self.prog.classes.get(o) {
                if cl.is_enum && cl.variants.iter().any(|v| v.name == last) {
                    return Val::sym(Sym::Const {
                        name: last.to_string(),
                        value: Box::new(Sym::Str(rename(last, cl.rename_all.as_deref()))),
                    });
                }
                if cl.fields.contains_key(last) {
                    return self.field_of(st, cl, last, &Val::opaque());
                }
            }
        }
        if p.len() == 1 {
            return self.eval_name(st, last);
        }
        Val {
            obj: Obj::Class(last.to_string()),
            ..Val::opaque()
        }
    }

    fn field_access(&self, st: &mut St, o: &Val, f: &str) -> Val {
        match &o.obj {
            Obj::Msg => return self.msg_field(st, f),
            Obj::Node(_) => {
                let owner = o.ty.as_ref().and_then(|t| self.prog.classes.get(t));
                return match owner {
                    Some(cl) => self.field_of(st, cl, f, o),
                    None => {
                        let Obj::Node(var) = &o.obj else {
                            unreachable!()
                        };
                        let mut v = self.read_var(st, var);
                        v.sym = None;
                        v.ty = None;
                        v
                    }
                };
            }
            Obj::Class(c) => {
                if let Some(cl) = self.prog.classes.get(c) {
                    if cl.is_enum && cl.variants.iter().any(|v| v.name == f) {
                        return Val::sym(Sym::Const {
                            name: f.to_string(),
                            value: Box::new(Sym::Str(rename(f, cl.rename_all.as_deref()))),
                        });
                    }
                    if let Some(owner) = self.field_owner(c, f, false) {
                        return self.field_of(st, owner, f, &Val::opaque());
                    }
                    if self.prog.classes.contains_key(f) {
                        return Val {
                            obj: Obj::Class(f.to_string()),
                            ..Val::opaque()
                        };
                    }
                }
                if f.chars().next().is_some_and(char::is_uppercase)
                    && self.prog.classes.contains_key(f)
                {
                    return Val {
                        obj: Obj::Class(f.to_string()),
                        ..Val::opaque()
                    };
                }
                return Val::opaque();
            }
            Obj::Tuple(vs) => {
                if let Ok(i) = f.parse::<usize>() {
                    if let Some(v) = vs.get(i) {
                        return v.clone();
                    }
                }
            }
            Obj::Plain => {
                // A field of a message field (`rpc.vote.leader_id.term`) is a nested field of
                // the message, which `report` may name by the hook's flat field name.
                // Only paths a `report` names (or leads to) are split out; any other field of a
                // message field stays part of it, as before.
                if let Some(Sym::M(p)) = &o.sym {
                    let path = format!("{p}.{f}");
                    if self.nested.contains(&path) {
                        return self.msg_field(st, &path);
                    }
                }
            }
        }
        if let Some(t) = &o.ty {
            if let Some(owner) = self.field_owner(t, f, false) {
                return self.field_of(st, owner, f, o);
            }
        }
        Val::tainted(o.all_taint())
    }

    fn binop(&self, op: BinOp, a: &Val, b: &Val) -> Val {
        let sop = match op {
            BinOp::Add => Some(SOp::Add),
            BinOp::Sub => Some(SOp::Sub),
            BinOp::Eq => Some(SOp::Eq),
            BinOp::Ne => Some(SOp::Ne),
            BinOp::Lt => Some(SOp::Lt),
            BinOp::Le => Some(SOp::Le),
            BinOp::Gt => Some(SOp::Gt),
            BinOp::Ge => Some(SOp::Ge),
            BinOp::And => Some(SOp::And),
            BinOp::Or => Some(SOp::Or),
            _ => None,
        };
        let sym = match (sop, &a.sym, &b.sym) {
            (Some(o), Some(x), Some(y)) => {
                // string concatenation is not expressible
                let strings = matches!(o, SOp::Add)
                    && (matches!(x.lit(), Some(serde_json::Value::String(_)))
                        || matches!(y.lit(), Some(serde_json::Value::String(_))));
                if strings {
                    None
                } else {
                    Some(Sym::bin(x.clone(), o, y.clone()).simplify())
                }
            }
            _ => None,
        };
        let mut taint = a.all_taint();
        taint.extend(b.all_taint());
        if matches!(
            op,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        ) {
            taint.retain(|s| !matches!(s, Src::S(_)));
        }
        Val {
            sym,
            taint,
            obj: Obj::Plain,
            ty: None,
        }
    }

    fn eval_list(&self, es: &[Expr], st: St) -> Vec<(St, Vec<Val>)> {
        let mut cur: Vec<(St, Vec<Val>)> = vec![(st, vec![])];
        for e in es {
            let mut next = Vec::new();
            for (st, vals) in cur {
                if st.status != Status::Normal {
                    next.push((st, vals));
                    continue;
                }
                for (st, v) in self.eval(e, st) {
                    let mut vals = vals.clone();
                    vals.push(v);
                    next.push((st, vals));
                }
            }
            if next.len() > 8 {
                // merge argument forks that agree on everything but the sets
                let mut merged: Vec<(St, Vec<Val>)> = Vec::new();
                let mut index: HashMap<u64, usize> = HashMap::new();
                for (s, vals) in next {
                    let mut h = DefaultHasher::new();
                    s.key(true).hash(&mut h);
                    for v in &vals {
                        v.shape(&mut h);
                    }
                    let k = h.finish();
                    match index.get(&k) {
                        Some(&i) => {
                            merged[i].0.absorb(&s);
                            let joined: Vec<Val> = merged[i]
                                .1
                                .iter()
                                .zip(&vals)
                                .map(|(a, b)| a.join(b))
                                .collect();
                            merged[i].1 = joined;
                        }
                        None => {
                            index.insert(k, merged.len());
                            merged.push((s, vals));
                        }
                    }
                }
                next = merged;
            }
            cur = next;
        }
        cur
    }

    fn assign(&self, st: St, target: &Expr, v: Val, increment: bool) -> Vec<St> {
        let mut st = st;
        match target {
            Expr::Name(n) => {
                if st.frames.last().is_some_and(|f| f.locals.contains_key(n)) {
                    let mut v = v;
                    if v.ty.is_none() {
                        v.ty = st
                            .frames
                            .last()
                            .and_then(|f| f.locals.get(n))
                            .and_then(|x| x.ty.clone());
                    }
                    Exec::bind_local(&mut st, n, v);
                    return vec![st];
                }
                if let Some(var) = self.node_local(&st, n) {
                    self.write_var(&mut st, &var, v, increment);
                    return vec![st];
                }
                let class = self.this_class(&st);
                if let Some(owner) = self.field_owner(&class, n, true) {
                    let this = st
                        .frames
                        .last()
                        .map(|f| f.this.clone())
                        .unwrap_or_else(Val::opaque);
                    if let Obj::Node(var) = &this.obj {
                        if owner.name == class {
                            let var = var.clone();
                            self.touch_var(&mut st, &var, &v.all_taint());
                            return vec![st];
                        }
                    }
                    if let Some(var) = self.field_var(&owner.name, n) {
                        self.write_var(&mut st, &var, v, increment);
                    }
                    return vec![st];
                }
                // an undeclared local (a Rust `let` we could not see): bind it
                Exec::bind_local(&mut st, n, v);
                vec![st]
            }
            Expr::Field(obj, f) => {
                let mut out = Vec::new();
                for (mut st, o) in self.eval(obj, st) {
                    match &o.obj {
                        Obj::Msg => {}
                        Obj::Node(var) => {
                            let var = var.clone();
                            self.touch_var(&mut st, &var, &v.all_taint());
                        }
                        Obj::Class(c) => {
                            if let Some(owner) = self.field_owner(c, f, false) {
                                if let Some(var) = self.field_var(&owner.name, f) {
                                    self.write_var(&mut st, &var, v.clone(), increment);
                                }
                            }
                        }
                        _ => {
                            let mut node = false;
                            if let Some(owner) =
                                o.ty.as_ref().and_then(|t| self.field_owner(t, f, false))
                            {
                                if let Some(var) = self.field_var(&owner.name, f) {
                                    self.write_var(&mut st, &var, v.clone(), increment);
                                    node = true;
                                }
                            }
                            if !node {
                                taint_root_local(&mut st, obj, &v.all_taint());
                            }
                        }
                    }
                    out.push(st);
                }
                out
            }
            Expr::Index(a, i) => {
                let mut out = Vec::new();
                for (st, av) in self.eval(a, st) {
                    for (mut st, _) in self.eval(i, st) {
                        match &av.obj {
                            Obj::Node(var) => {
                                let var = var.clone();
                                self.touch_var(&mut st, &var, &v.all_taint());
                            }
                            _ => {
                                if let Expr::Name(n) = &**a {
                                    if let Some(l) = st.frame().locals.get_mut(n) {
                                        l.taint.extend(v.all_taint());
                                        l.sym = None;
                                    }
                                }
                            }
                        }
                        out.push(st);
                    }
                }
                out
            }
            Expr::Unary(_, a) => self.assign(st, a, v, increment),
            _ => {
                let mut out = Vec::new();
                for (s, _) in self.eval(target, st) {
                    out.push(s);
                }
                out
            }
        }
    }

    // ---------------------------------------------------------------- calls

    fn pat_matches(&self, p: &CallPat, name: &str, ctor: bool, quals: &[String]) -> bool {
        p.ctor == ctor
            && p.name == name
            && p.qual.as_ref().is_none_or(|q| quals.iter().any(|x| x == q))
    }

    fn construct(&self, mut st: St, ty: &str, vals: Vec<Val>, line: usize) -> Vec<(St, Val)> {
        let quals = vec![ty.to_string()];
        let mut taint = BTreeSet::new();
        for v in &vals {
            taint.extend(v.all_taint());
        }
        for (p, file) in &self.spec.disks {
            if self.pat_matches(p, ty, true, &quals) {
                let label = file
                    .clone()
                    .unwrap_or_else(|| disk_label(vals.first()).unwrap_or_else(|| ty.to_string()));
                // the stream/file object is known by this file from now on
                taint.retain(|t| !matches!(t, Src::S(_)));
                taint.insert(Src::S(label.clone()));
                st.sets.disk.insert(label);
            }
        }
        for p in &self.spec.sends {
            if self.pat_matches(p, ty, true, &quals) {
                self.record_send(&mut st, &taint);
            }
        }
        let cl = self.prog.classes.get(ty);
        let ctor = cl.and_then(|c| {
            c.methods
                .iter()
                .find(|m| m.name == "<init>" && m.params.len() == vals.len())
        });
        let obj = Val {
            sym: None,
            taint: taint.clone(),
            obj: Obj::Plain,
            ty: Some(ty.to_string()),
        };
        match ctor {
            Some(m) if self.method_allowed(m) => {
                let outs = self.inline(st, m, obj.clone(), vals, line);
                outs.into_iter().map(|(s, _)| (s, obj.clone())).collect()
            }
            _ => {
                if cl.is_none() {
                    self.seen
                        .borrow_mut()
                        .external_calls
                        .insert(format!("new {ty}"));
                }
                vec![(st, obj)]
            }
        }
    }

    pub fn record_send(&self, st: &mut St, taint: &BTreeSet<Src>) {
        st.sets.sends = true;
        for t in taint {
            match t {
                Src::N(v) => {
                    st.sets.send.insert(v.clone());
                    st.sets.read.insert(v.clone());
                }
                Src::M(f) => {
                    st.sets.msg_fields.insert(f.clone());
                }
                Src::S(_) => {}
            }
        }
    }

    fn method_allowed(&self, m: &Method) -> bool {
        let stack = self.stack.borrow();
        stack.len() < MAX_DEPTH && !stack.iter().any(|(c, n)| *c == m.class && *n == m.name)
    }

    fn eval_call(
        &self,
        recv: Option<&Expr>,
        name: &str,
        args: &[Expr],
        line: usize,
        st: St,
    ) -> Vec<(St, Val)> {
        // Rust's Some/Ok/Err and Box::new are transparent.
        if recv.is_none() && matches!(name, "Some" | "Ok" | "Err") && args.len() == 1 {
            return self.eval(&args[0], st);
        }
        let pairs: Vec<(St, Val)> = match recv {
            Some(r) => self.eval(r, st),
            None => {
                let this = st
                    .frames
                    .last()
                    .map(|f| f.this.clone())
                    .unwrap_or_else(Val::opaque);
                vec![(st, this)]
            }
        };
        let mut out = Vec::new();
        for (st, rv) in pairs {
            if st.status != Status::Normal {
                out.push((st, Val::opaque()));
                continue;
            }
            for (st, vals) in self.eval_list(args, st) {
                if st.status != Status::Normal {
                    out.push((st, Val::opaque()));
                    continue;
                }
                out.extend(self.call(st, recv, &rv, name, vals, args, line));
            }
        }
        merge_pairs(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn call(
        &self,
        mut st: St,
        recv: Option<&Expr>,
        rv: &Val,
        name: &str,
        vals: Vec<Val>,
        arg_exprs: &[Expr],
        line: usize,
    ) -> Vec<(St, Val)> {
        let cur_class = self.this_class(&st);
        // The names a dictionary pattern's qualifier may match.
        let mut quals: Vec<String> = Vec::new();
        match recv {
            None => quals.push(cur_class.clone()),
            Some(r) => {
                if let Some(n) = last_name(r) {
                    quals.push(n);
                }
            }
        }
        if let Some(t) = &rv.ty {
            quals.push(t.clone());
            if let Some(c) = self.prog.classes.get(t) {
                quals.extend(c.supers.iter().cloned());
            }
        }
        if let Obj::Class(c) = &rv.obj {
            quals.push(c.clone());
        }
        if let Obj::Node(v) = &rv.obj {
            quals.push(v.clone());
        }
        let mut args_taint = BTreeSet::new();
        for v in &vals {
            args_taint.extend(v.all_taint());
        }
        // a command queue: the command runs after the handler (`drain_queue`)
        if self
            .spec
            .queues
            .iter()
            .any(|q| self.pat_matches(&q.pat, name, false, &quals))
        {
            let cmd = vals.first().cloned().unwrap_or_else(Val::opaque);
            if !st.queued.contains(&cmd) {
                st.queued.push(cmd);
            }
            return vec![(st, Val::opaque())];
        }
        // side-file models of library calls
        if let Some(m) = self
            .spec
            .models
            .iter()
            .find(|m| self.pat_matches(&m.pat, name, false, &quals))
        {
            for r in &m.read {
                st.sets.read.insert(r.clone());
            }
            for u in &m.update {
                st.sets.update.insert(u.clone());
                if !m.increments.contains(u) {
                    st.sets.non_incr.insert(u.clone());
                }
                st.node.insert(
                    u.clone(),
                    Val {
                        obj: Obj::Node(u.clone()),
                        ..Val::opaque()
                    },
                );
            }
            if m.send {
                self.record_send(&mut st, &args_taint);
            }
            if let Some(d) = &m.disk {
                st.sets.disk.insert(d.clone());
            }
            let v = match &m.returns {
                Some(var) => self.read_var(&mut st, var),
                None => Val::tainted(args_taint),
            };
            return vec![(st, v)];
        }
        let mut is_sink = false;
        for p in &self.spec.sends {
            if self.pat_matches(p, name, false, &quals) {
                self.record_send(&mut st, &args_taint);
                is_sink = true;
            }
        }
        for (p, file) in &self.spec.disks {
            if self.pat_matches(p, name, false, &quals) {
                let label = file.clone().unwrap_or_else(|| {
                    let arg_name = || {
                        arg_exprs
                            .first()
                            .filter(|e| matches!(e, Expr::Name(_) | Expr::Field(..)))
                            .and_then(last_name)
                    };
                    let recv_name = || {
                        recv.filter(|r| matches!(r, Expr::Name(_) | Expr::Field(..)))
                            .and_then(last_name)
                    };
                    let node = || match &rv.obj {
                        Obj::Node(v) => Some(v.clone()),
                        _ => None,
                    };
                    if matches!(rv.obj, Obj::Class(_)) {
                        // a static call (`Files.write(path, ...)`): the file is the first argument
                        disk_label(vals.first()).or_else(arg_name)
                    } else {
                        disk_label(Some(rv))
                            .or_else(node)
                            .or_else(recv_name)
                            .or_else(|| disk_label(vals.first()))
                    }
                    .unwrap_or_else(|| p.to_string())
                });
                st.sets.disk.insert(label);
                is_sink = true;
            }
        }
        if is_sink {
            let v = Val::tainted(args_taint);
            return vec![(st, v)];
        }
        // the message object: getters are fields
        if rv.obj == Obj::Msg {
            let cls = rv.ty.clone().unwrap_or_default();
            if let Some(m) = self.find_method(&cls, name, vals.len()) {
                if self.method_allowed(m) {
                    return self.inline(st, m, rv.clone(), vals, line);
                }
            }
            if vals.is_empty() {
                if let Some(f) = getter_field(name) {
                    let v = self.msg_field(&mut st, &f);
                    return vec![(st, v)];
                }
                let is_field = self
                    .spec
                    .messages
                    .get(&cls)
                    .is_some_and(|m| m.fields.iter().any(|f| f == name))
                    || self
                        .prog
                        .classes
                        .get(&cls)
                        .is_some_and(|c| c.fields.contains_key(name));
                if is_field {
                    let v = self.msg_field(&mut st, name);
                    return vec![(st, v)];
                }
            }
            return vec![(st, Val::tainted(args_taint))];
        }
        // analysed methods
        let targets = self.resolve(&st, recv, rv, name, vals.len());
        if !targets.is_empty() {
            let this = match recv {
                None => st
                    .frames
                    .last()
                    .map(|f| f.this.clone())
                    .unwrap_or_else(Val::opaque),
                Some(_) => rv.clone(),
            };
            let mut out = Vec::new();
            let mut cut = false;
            for m in targets {
                if !self.method_allowed(m) {
                    cut = true;
                    continue;
                }
                let this = if m.is_static {
                    Val {
                        ty: Some(m.class.clone()),
                        ..Val::opaque()
                    }
                } else {
                    let mut t = this.clone();
                    if t.ty.is_none() || !matches!(t.obj, Obj::Node(_)) {
                        t.ty = Some(m.class.clone());
                    }
                    t
                };
                let mut res = self.inline_memo(&st, m, this, vals.clone(), line);
                if let Some(r) = recv {
                    if !args_taint.is_empty() {
                        for (s, _) in &mut res {
                            taint_root_local(s, r, &args_taint);
                        }
                    }
                }
                out.extend(res);
            }
            if cut {
                self.note(
                    &st,
                    line,
                    format!("call to `{name}` not followed (recursion or call depth {MAX_DEPTH})"),
                );
                if out.is_empty() {
                    let mut t = args_taint.clone();
                    t.extend(rv.all_taint());
                    out.push((st, Val::tainted(t)));
                }
            }
            return merge_pairs(out);
        }
        // a node variable's object of a library type (collections, atomics, Option)
        if let Obj::Node(var) = &rv.obj {
            let var = var.clone();
            let cur = self.read_var(&mut st, &var);
            let cur_sym = match &cur.sym {
                Some(Sym::N(x)) if *x == var => Some(Sym::N(var.clone())),
                s => s.clone(),
            };
            if INCREMENTS.contains(&name)
                || (name == "addAndGet"
                    && vals.first().and_then(|v| v.sym.as_ref()).and_then(Sym::lit)
                        == Some(serde_json::Value::from(1)))
            {
                let newv = Val {
                    sym: cur_sym.map(|s| Sym::bin(s, SOp::Add, Sym::Int(1)).simplify()),
                    taint: cur.taint.clone(),
                    obj: Obj::Plain,
                    ty: cur.ty.clone(),
                };
                self.write_var(&mut st, &var, newv.clone(), true);
                let mut r = newv;
                r.obj = Obj::Plain;
                return vec![(st, r)];
            }
            if matches!(name, "set" | "lazySet" | "getAndSet" | "replace" | "insert")
                && vals.len() == 1
            {
                let mut newv = vals[0].clone();
                newv.taint.extend(args_taint.clone());
                self.write_var(&mut st, &var, newv, false);
                let mut r = cur.clone();
                r.obj = Obj::Plain;
                return vec![(st, r)];
            }
            if name == "get" && vals.is_empty() {
                let mut r = cur.clone();
                r.obj = Obj::Plain;
                r.sym = cur_sym;
                return vec![(st, r)];
            }
            if matches!(name, "size" | "len") && vals.is_empty() {
                let r = Val {
                    sym: cur_sym
                        .filter(|s| matches!(s, Sym::N(_)))
                        .map(|s| Sym::Len(Box::new(s))),
                    taint: cur.taint.clone(),
                    obj: Obj::Plain,
                    ty: None,
                };
                return vec![(st, r)];
            }
            if matches!(name, "isEmpty" | "is_empty") && vals.is_empty() {
                let r = Val {
                    sym: cur_sym
                        .filter(|s| matches!(s, Sym::N(_)))
                        .map(|s| Sym::bin(Sym::Len(Box::new(s)), SOp::Eq, Sym::Int(0))),
                    taint: cur.taint.clone(),
                    obj: Obj::Plain,
                    ty: None,
                };
                return vec![(st, r)];
            }
            if matches!(name, "is_some" | "is_none") && vals.is_empty() {
                let op = if name == "is_some" { SOp::Ne } else { SOp::Eq };
                let r = Val {
                    sym: cur_sym.map(|s| Sym::bin(s, op, Sym::Null)),
                    taint: cur.taint.clone(),
                    obj: Obj::Plain,
                    ty: None,
                };
                return vec![(st, r)];
            }
            let mut taint = cur.taint.clone();
            taint.extend(args_taint.clone());
            if !PURE.contains(&name) {
                self.touch_var(&mut st, &var, &args_taint);
            }
            let obj = if ALIASING.contains(&name) {
                Obj::Node(var.clone())
            } else {
                Obj::Plain
            };
            return vec![(
                st,
                Val {
                    sym: None,
                    taint,
                    obj,
                    ty: None,
                },
            )];
        }
        // Option-like values
        if vals.is_empty() {
            if let Some(s) = &rv.sym {
                let r = match name {
                    "is_some" => Some(Sym::bin(s.clone(), SOp::Ne, Sym::Null)),
                    "is_none" => Some(Sym::bin(s.clone(), SOp::Eq, Sym::Null)),
                    "unwrap" | "clone" | "copied" | "cloned" | "longValue" | "intValue" => {
                        Some(s.clone())
                    }
                    _ => None,
                };
                if let Some(r) = r {
                    return vec![(
                        st,
                        Val {
                            sym: Some(r),
                            taint: rv.all_taint(),
                            obj: Obj::Plain,
                            ty: None,
                        },
                    )];
                }
            }
        }
        // outside the analysed sources
        let shown = match (&rv.ty, &rv.obj) {
            (_, Obj::Class(c)) => format!("{c}.{name}"),
            (Some(t), _) => format!("{t}.{name}"),
            _ => name.to_string(),
        };
        self.seen.borrow_mut().external_calls.insert(shown);
        if let Some(r) = recv {
            if !args_taint.is_empty() && !PURE.contains(&name) {
                taint_root_local(&mut st, r, &args_taint);
            }
        }
        let mut taint = args_taint;
        taint.extend(rv.all_taint());
        let is_pure_compare = matches!(name, "equals" | "contains" | "containsKey" | "compareTo");
        if is_pure_compare {
            taint.retain(|s| !matches!(s, Src::S(_)));
        }
        vec![(st, Val::tainted(taint))]
    }

    fn find_method(&self, class: &str, name: &str, argc: usize) -> Option<&'a Method> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![class.to_string()];
        while let Some(c) = todo.pop() {
            if !seen.insert(c.clone()) {
                continue;
            }
            let Some(cl) = self.prog.classes.get(&c) else {
                continue;
            };
            let mut cands: Vec<&Method> = cl
                .methods
                .iter()
                .filter(|m| m.name == name && m.params.len() == argc)
                .collect();
            cands.sort_by_key(|m| m.body.is_none());
            if let Some(m) = cands.first() {
                return Some(m);
            }
            todo.extend(cl.supers.iter().cloned());
        }
        None
    }

    fn resolve(
        &self,
        st: &St,
        recv: Option<&Expr>,
        rv: &Val,
        name: &str,
        argc: usize,
    ) -> Vec<&'a Method> {
        let mut classes: Vec<String> = Vec::new();
        match recv {
            None => {
                // this class, then enclosing classes; then free functions
                let mut c = Some(self.this_class(st));
                while let Some(cl) = c {
                    classes.push(cl.clone());
                    c = self.prog.classes.get(&cl).and_then(|x| x.outer.clone());
                }
            }
            Some(_) => {
                if let Obj::Class(c) = &rv.obj {
                    let c = if c == "Self" {
                        self.this_class(st)
                    } else {
                        c.clone()
                    };
                    classes.push(c);
                } else if let Some(t) = &rv.ty {
                    classes.push(t.clone());
                }
            }
        }
        for c in &classes {
            let Some(m) = self.find_method(c, name, argc) else {
                // declared in a subclass only (the receiver's static type is too general)
                let impls: Vec<&Method> = self
                    .subs
                    .get(c)
                    .into_iter()
                    .flatten()
                    .filter_map(|s| self.find_method(s, name, argc))
                    .filter(|m| m.body.is_some())
                    .take(4)
                    .collect();
                if !impls.is_empty() {
                    return impls;
                }
                continue;
            };
            {
                if m.body.is_some() {
                    return vec![m];
                }
                // abstract: the implementations in the analysed sources
                let impls: Vec<&Method> = self
                    .subs
                    .get(c)
                    .into_iter()
                    .flatten()
                    .filter_map(|s| self.find_method(s, name, argc))
                    .filter(|m| m.body.is_some())
                    .take(4)
                    .collect();
                return impls;
            }
        }
        if recv.is_none() {
            if let Some(f) = self.prog.functions.get(name) {
                return vec![f];
            }
        }
        vec![]
    }

    /// Inline `m` through a summary: its outcomes from an entry with no atoms and empty sets but
    /// the caller's node values, keyed by everything the callee can see (receiver, arguments,
    /// node values with their taints), then composed with the caller's state.
    fn inline_memo(
        &self,
        st: &St,
        m: &'a Method,
        this: Val,
        vals: Vec<Val>,
        line: usize,
    ) -> Vec<(St, Val)> {
        let mut h = DefaultHasher::new();
        (m as *const Method as usize).hash(&mut h);
        this.hash(&mut h);
        vals.hash(&mut h);
        for (k, v) in &st.node {
            k.hash(&mut h);
            v.hash(&mut h);
        }
        let key = h.finish();
        let cached = self.memo.borrow().get(&key).cloned();
        let summary = match cached {
            Some(s) => {
                self.memo_hits.set(self.memo_hits.get() + 1);
                s
            }
            None => {
                let base = St {
                    atoms: vec![],
                    sets: Sets::default(),
                    node: st.node.clone(),
                    frames: vec![Frame {
                        locals: BTreeMap::new(),
                        this: this.clone(),
                        class: m.class.clone(),
                        method: String::new(),
                    }],
                    status: Status::Normal,
                    val: None,
                    queued: vec![],
                };
                let res = std::rc::Rc::new(self.inline(base, m, this, vals, line));
                self.memo.borrow_mut().insert(key, res.clone());
                res
            }
        };
        let mut out = Vec::new();
        for (o, v) in summary.iter() {
            if inconsistent(&st.atoms, &o.atoms) {
                continue;
            }
            let mut s = st.clone();
            for a in &o.atoms {
                if !s.atoms.contains(a) {
                    s.atoms.push(a.clone());
                }
            }
            s.atoms.sort();
            s.sets.union(&o.sets);
            for c in &o.queued {
                if !s.queued.contains(c) {
                    s.queued.push(c.clone());
                }
            }
            s.node = o.node.clone();
            s.status = o.status.clone();
            s.val = None;
            out.push((s, v.clone()));
        }
        out
    }

    /// Run the commands a handler queued (`[[queue]]`), in order, after it returned, and those
    /// they queue in turn. The node's values are forgotten first (taint kept): the commands
    /// run later, on whatever state the node is in by then, so their conditions on node state
    /// are not decided by, nor become guards over, the handler's values. `false`: the queue
    /// did not drain within the bound (reported as a gap by the caller).
    pub fn drain_queue(&self, finals: Vec<St>) -> (Vec<St>, bool) {
        const ROUNDS: usize = 4;
        let mut done = Vec::new();
        let mut todo = finals;
        for _ in 0..ROUNDS {
            let mut next = Vec::new();
            for mut st in todo {
                if st.queued.is_empty() {
                    done.push(st);
                    continue;
                }
                let cmds = std::mem::take(&mut st.queued);
                let (status, val) = (st.status.clone(), st.val.clone());
                for v in st.node.values_mut() {
                    v.sym = None;
                }
                st.status = Status::Normal;
                let mut states = vec![st];
                for cmd in cmds {
                    let mut out = Vec::new();
                    for s in states {
                        for q in &self.spec.queues {
                            let Some(m) = self.method(&q.class, &q.method) else {
                                continue;
                            };
                            let this = Val {
                                ty: Some(q.class.clone()),
                                ..Val::opaque()
                            };
                            out.extend(
                                self.inline(s.clone(), m, this, vec![cmd.clone()], m.line)
                                    .into_iter()
                                    .map(|(s, _)| s),
                            );
                        }
                    }
                    states = normalize(out);
                }
                for mut s in states {
                    s.status = status.clone();
                    s.val = val.clone();
                    next.push(s);
                }
            }
            todo = next;
            if todo.is_empty() {
                return (done, true);
            }
        }
        let drained = todo.iter().all(|s| s.queued.is_empty());
        done.extend(todo);
        (done, drained)
    }

    fn inline(
        &self,
        st: St,
        m: &'a Method,
        this: Val,
        vals: Vec<Val>,
        _line: usize,
    ) -> Vec<(St, Val)> {
        let Some(body) = &m.body else {
            return vec![(st, Val::opaque())];
        };
        let mut locals = BTreeMap::new();
        for (i, p) in m.params.iter().enumerate() {
            let mut v = vals.get(i).cloned().unwrap_or_else(Val::opaque);
            if v.ty.is_none() || matches!(v.obj, Obj::Plain) && v.ty.is_none() {
                v.ty = p.ty.clone();
            }
            locals.insert(p.name.clone(), v);
        }
        let mut st = st;
        st.val = None;
        st.frames.push(Frame {
            locals,
            this,
            class: m.class.clone(),
            method: m.name.clone(),
        });
        let depth = st.frames.len();
        self.stack
            .borrow_mut()
            .push((m.class.clone(), m.name.clone()));
        if std::env::var_os("FLYMC_ANALYZER_TRACE").is_some() {
            let stack = self.stack.borrow();
            eprintln!(
                "trace {}",
                stack
                    .iter()
                    .map(|(c, n)| format!("{c}.{n}"))
                    .collect::<Vec<_>>()
                    .join(" > ")
            );
        }
        let outs = self.block(body, vec![st]);
        self.stack.borrow_mut().pop();
        let ret_ty = m.ret.clone().filter(|t| self.prog.classes.contains_key(t));
        let mut res = Vec::new();
        for mut s in outs {
            while s.frames.len() >= depth {
                s.frames.pop();
            }
            let mut v = s.val.take().unwrap_or_else(Val::opaque);
            if v.ty.is_none() {
                v.ty = ret_ty.clone();
            }
            if s.status == Status::Return {
                s.status = Status::Normal;
            }
            res.push((s, v));
        }
        merge_pairs(res)
    }
}

fn disk_label(v: Option<&Val>) -> Option<String> {
    let v = v?;
    if let Some(Sym::Str(s)) = v.sym.as_ref().map(|s| match s {
        Sym::Const { value, .. } => (**value).clone(),
        s => s.clone(),
    }) {
        if is_file_label(&s) {
            return Some(s);
        }
    }
    let labels: Vec<String> = v
        .all_taint()
        .into_iter()
        .filter_map(|t| match t {
            Src::S(s) => Some(s),
            _ => None,
        })
        .collect();
    if labels.is_empty() {
        None
    } else {
        Some(labels.join("+"))
    }
}

fn lit_sym(l: &Lit) -> Option<Sym> {
    Some(match l {
        Lit::Int(i) => Sym::Int(*i),
        Lit::Str(s) => Sym::Str(s.clone()),
        Lit::Bool(b) => Sym::Bool(*b),
        Lit::Null => Sym::Null,
        Lit::Other => return None,
    })
}

fn last_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Name(n) => Some(n.clone()),
        Expr::Field(_, f) => Some(f.clone()),
        Expr::Path(p) => p.last().cloned(),
        Expr::Call { name, .. } => Some(name.clone()),
        Expr::Unary(_, a) => last_name(a),
        _ => None,
    }
}

/// A local object gets the taint of what is stored into it (no heap: the object is the local).
fn taint_root_local(st: &mut St, e: &Expr, taint: &BTreeSet<Src>) {
    match e {
        Expr::Name(n) => {
            if let Some(l) = st.frame().locals.get_mut(n) {
                l.taint.extend(taint.iter().cloned());
                l.sym = None;
            }
        }
        Expr::Field(a, _) | Expr::Index(a, _) | Expr::Unary(_, a) => taint_root_local(st, a, taint),
        _ => {}
    }
}

fn split(states: Vec<St>) -> (Vec<St>, Vec<St>) {
    states.into_iter().partition(|s| s.status == Status::Normal)
}

fn assigned_names(b: &Block) -> BTreeSet<String> {
    fn expr(e: &Expr, out: &mut BTreeSet<String>) {
        match e {
            Expr::Assign { target, value, .. } => {
                if let Expr::Name(n) = &**target {
                    out.insert(n.clone());
                }
                expr(value, out);
            }
            Expr::IncDec { target, .. } => {
                if let Expr::Name(n) = &**target {
                    out.insert(n.clone());
                }
            }
            Expr::Call { recv, args, .. } => {
                if let Some(r) = recv {
                    expr(r, out);
                }
                for a in args {
                    expr(a, out);
                }
            }
            Expr::Bin(_, a, b) | Expr::Index(a, b) => {
                expr(a, out);
                expr(b, out);
            }
            Expr::Unary(_, a) | Expr::Field(a, _) | Expr::Try(a) => expr(a, out),
            Expr::Stmt(s) => stmt(s, out),
            _ => {}
        }
    }
    fn stmt(s: &Stmt, out: &mut BTreeSet<String>) {
        match &s.kind {
            StmtKind::Local {
                pat: Pat::Bind(n),
                init,
                ..
            } => {
                out.insert(n.clone());
                if let Some(e) = init {
                    expr(e, out);
                }
            }
            StmtKind::Expr(e) => expr(e, out),
            StmtKind::If { cond, .. } => expr(cond, out),
            _ => {}
        }
        crate::spec::for_children(s, &mut |b| {
            for s in b {
                stmt(s, out);
            }
        });
    }
    let mut out = BTreeSet::new();
    for s in &b.stmts {
        stmt(s, &mut out);
    }
    out
}

/// The sub-block `c` of a statement (see `Step::Into`).
pub fn child_block(s: &Stmt, c: usize) -> Option<&Block> {
    match &s.kind {
        StmtKind::If { then, els, .. } => match c {
            0 => Some(then),
            1 => els.as_ref(),
            _ => None,
        },
        StmtKind::Loop { body, .. } | StmtKind::ForEach { body, .. } if c == 0 => Some(body),
        StmtKind::Match { arms, .. } => arms.get(c).map(|a| &a.body),
        StmtKind::Try {
            body,
            catches,
            finally,
        } => {
            if c == 0 {
                Some(body)
            } else if c <= catches.len() {
                Some(&catches[c - 1].body)
            } else if c == catches.len() + 1 {
                finally.as_ref()
            } else {
                None
            }
        }
        StmtKind::Block(b) if c == 0 => Some(b),
        StmtKind::Local { els: Some(b), .. } if c == 0 => Some(b),
        _ => None,
    }
}

/// Every statement in `b` satisfying `pred`, as the steps leading to the point right after it.
pub fn find_sites(b: &Block, pred: &dyn Fn(&Stmt) -> bool) -> Vec<Vec<Step>> {
    let mut out = Vec::new();
    for (i, s) in b.stmts.iter().enumerate() {
        if pred(s) {
            out.push(vec![Step::After(i)]);
            continue;
        }
        let mut c = 0;
        while let Some(child) = child_block(s, c) {
            for mut p in find_sites(child, pred) {
                p.insert(0, Step::Into(i, c));
                out.push(p);
            }
            c += 1;
        }
        // an If without else has child 1 = None but nothing after; Try numbering is dense
    }
    out
}

/// Paths to the start of every catch clause catching `ty` (all catches when `None`).
pub fn find_catches(b: &Block, ty: Option<&str>) -> Vec<Vec<Step>> {
    let mut out = Vec::new();
    for (i, s) in b.stmts.iter().enumerate() {
        if let StmtKind::Try { catches, .. } = &s.kind {
            for (k, c) in catches.iter().enumerate() {
                if ty.is_none_or(|t| c.types.iter().any(|x| x == t)) {
                    out.push(vec![Step::Into(i, k + 1), Step::Begin]);
                }
            }
        }
        let mut c = 0;
        while let Some(child) = child_block(s, c) {
            for mut p in find_catches(child, ty) {
                p.insert(0, Step::Into(i, c));
                out.push(p);
            }
            c += 1;
        }
    }
    out
}

/// Catch clauses annotated `@FlyMCCrashHandling` in a method (for in-source annotations).
pub fn annotated_catches(b: &Block) -> Vec<Vec<Step>> {
    let mut out = Vec::new();
    for (i, s) in b.stmts.iter().enumerate() {
        if let StmtKind::Try { catches, .. } = &s.kind {
            for (k, c) in catches.iter().enumerate() {
                if c.annots.iter().any(|a| a.name == "FlyMCCrashHandling") {
                    out.push(vec![Step::Into(i, k + 1), Step::Begin]);
                }
            }
        }
        let mut c = 0;
        while let Some(child) = child_block(s, c) {
            for mut p in annotated_catches(child) {
                p.insert(0, Step::Into(i, c));
                out.push(p);
            }
            c += 1;
        }
    }
    out
}

pub fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default()
}
