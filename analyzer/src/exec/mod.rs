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
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use crate::ir::*;
use crate::spec::Spec;
use crate::sym::Sym;

/// The pseudo message field naming the variant of a Rust message enum.
pub const KIND_FIELD: &str = "@kind";

/// Above this many states, states with the same atoms are merged whatever their values.
const MAX_STATES: usize = 32;
/// Above this many, only the atoms all merged states share are kept. (512, not 400: running
/// every override below an interface, ZooKeeper's `LearnerHandler.run` reaches 401 groups, and
/// collapsing them would drop the message-type atoms of every ZAB packet's paths.)
const MAX_GROUPS: usize = 512;
const MAX_DEPTH: usize = 10;
const MAX_STEPS: usize = 3_000_000;

mod calls;
mod conditions;
mod dispatch;
mod exprs;
mod library;
mod patterns;
mod regions;
mod state;
mod stmts;
mod values;
mod vars;

pub use library::getter_field;
pub use regions::{annotated_catches, find_catches, find_sites, Step};
use state::Frame;
pub use state::{Origins, Sets, St, Status};
pub use values::{Obj, Src, Val};

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
    /// The dictionary patterns that matched some call (side-file patterns that match none
    /// are reported).
    pub matched: BTreeSet<crate::spec::CallPat>,
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
    /// The line of the statement or call being walked (for `Sets::origins`).
    line: Cell<usize>,
    pub seen: RefCell<Seen>,
    /// Subclasses by superclass.
    subs: HashMap<String, Vec<String>>,
    /// Call summaries: the callee's outcomes from a given entry (see `inline_memo`).
    memo: RefCell<HashMap<u64, Summary>>,
    pub memo_hits: Cell<usize>,
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
            line: Cell::new(0),
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

    /// Put `var` in the path's `set` (`read`, `update`, `send`, `disk`), recording where
    /// when it is new there.
    fn mark(&self, st: &mut St, set: &'static str, var: &str) {
        if st.sets.named(set).insert(var.to_string()) {
            let at = match st.frames.last() {
                Some(f) if !f.method.is_empty() => format!(
                    "{}:{} ({}{})",
                    self.file_of(st),
                    self.line.get(),
                    if f.class.is_empty() {
                        String::new()
                    } else {
                        format!("{}.", f.class)
                    },
                    f.method
                ),
                _ => format!("{}:{}", self.file_of(st), self.line.get()),
            };
            st.sets
                .origins
                .entry((set, var.to_string()))
                .or_default()
                .insert(at);
        }
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
}

pub fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default()
}

/// What the unit tests of the walk's parts share: a small Java node, parsed and annotated.
#[cfg(test)]
mod testing {
    use super::*;

    pub(super) const NODE: &str = r#"
        @FlyMCMessage
        class Msg { long term; int kind; }
        class Node {
            @FlyMCNodeState long term;
            @FlyMCNodeState long votes;
            @FlyMCHandler
            void onMsg(Msg m) {
                if (m.term > term) { term = m.term; }
            }
            void onVote(Msg m) { bump(); }
            void bump() { votes++; }
            long twice(long x) { return x + x; }
        }
    "#;

    /// The program parsed from `java` and the spec its annotations give.
    pub(super) fn java(java: &str) -> (Program, Spec) {
        let mut prog = Program::default();
        let mut next_id = 0;
        let gaps = crate::java::parse_file(Path::new("Node.java"), java, &mut prog, &mut next_id)
            .expect("parses");
        assert!(gaps.is_empty(), "{gaps:?}");
        let spec = crate::spec::from_source(&prog, true);
        (prog, spec)
    }

    /// `Node.<method>` and its start state with `m` bound to the message.
    pub(super) fn start<'p>(ex: &Exec<'p>, method: &str) -> (&'p Method, St) {
        let m = ex.method("Node", method).expect("method");
        let args = BTreeMap::from([("m".to_string(), ex.msg_val("Msg"))]);
        (m, ex.initial(m, args))
    }
}
