//! Calls: constructors, sends, disk writes, calls into library code and inlining calls into
//! the analysed sources (with summaries).

use flymc_model::guard::{Expr as GExpr, Op as GOp, Scope as GScope};
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};

use super::dispatch::MAX_TARGETS;
use super::exprs::taint_root_local;
use super::library::{disk_label, getter_field, library_type, ALIASING, INCREMENTS, PURE};
use super::state::{merge_pairs, normalize, Frame};
use super::{Exec, Obj, Sets, Src, St, Status, Val, MAX_DEPTH};
use crate::ir::*;
use crate::spec::CallPat;
use crate::sym::{inconsistent, SOp, Sym};

impl<'a> Exec<'a> {
    pub(super) fn pat_matches(
        &self,
        p: &CallPat,
        name: &str,
        ctor: bool,
        quals: &[String],
    ) -> bool {
        let yes = p.ctor == ctor
            && p.name == name
            && p.qual.as_ref().is_none_or(|q| quals.iter().any(|x| x == q));
        if yes && !self.seen.borrow().matched.contains(p) {
            self.seen.borrow_mut().matched.insert(p.clone());
        }
        yes
    }

    /// Every disk entry: a pattern with one of its files.
    fn disk_entries(&self) -> impl Iterator<Item = (&'a CallPat, &'a Option<String>)> {
        let spec: &'a crate::spec::Spec = self.spec;
        spec.disks
            .iter()
            .flat_map(|(p, files)| files.iter().map(move |f| (p, f)))
    }

    /// Does the call only read its receiver (the library's read-only names, or a side-file
    /// `pure` pattern)?
    pub(super) fn is_pure(&self, name: &str, quals: &[String]) -> bool {
        PURE.contains(&name)
            || self
                .spec
                .pure
                .iter()
                .any(|p| self.pat_matches(p, name, false, quals))
    }

    pub(super) fn construct(
        &self,
        mut st: St,
        ty: &str,
        vals: Vec<Val>,
        line: usize,
    ) -> Vec<(St, Val)> {
        self.line.set(line);
        let quals = vec![ty.to_string()];
        let mut taint = BTreeSet::new();
        for v in &vals {
            taint.extend(v.all_taint());
        }
        for (p, file) in self.disk_entries() {
            if self.pat_matches(p, ty, true, &quals) {
                let label = file
                    .clone()
                    .unwrap_or_else(|| disk_label(vals.first()).unwrap_or_else(|| ty.to_string()));
                // the stream/file object is known by this file from now on
                taint.retain(|t| !matches!(t, Src::S(_)));
                taint.insert(Src::S(label.clone()));
                self.mark(&mut st, "disk", &label);
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
                    self.mark(st, "send", v);
                    self.mark(st, "read", v);
                }
                Src::M(f) => {
                    st.sets.msg_fields.insert(f.clone());
                }
                Src::S(_) => {}
            }
        }
    }

    pub(super) fn method_allowed(&self, m: &Method) -> bool {
        let stack = self.stack.borrow();
        stack.len() < MAX_DEPTH && !stack.iter().any(|(c, n)| *c == m.class && *n == m.name)
    }

    pub(super) fn eval_call(
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
                self.line.set(line);
                let quals = self.call_quals(&st, recv, &rv);
                let mut args_taint = BTreeSet::new();
                for v in &vals {
                    args_taint.extend(v.all_taint());
                }
                let call = Call {
                    recv,
                    rv: &rv,
                    name,
                    vals,
                    arg_exprs: args,
                    line,
                    quals,
                    args_taint,
                };
                out.extend(self.call(st, &call));
            }
        }
        merge_pairs(out)
    }

    /// The names a dictionary pattern's qualifier may match for a call on `recv` (valued `rv`).
    fn call_quals(&self, st: &St, recv: Option<&Expr>, rv: &Val) -> Vec<String> {
        // The names a dictionary pattern's qualifier may match.
        let mut quals: Vec<String> = Vec::new();
        match recv {
            None => quals.push(self.this_class(st)),
            Some(r) => {
                if let Some(n) = last_name(r) {
                    quals.push(n);
                }
                if let Some(c) = singleton_class(r) {
                    quals.push(c);
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
        quals
    }

    /// A call, in the order its meanings win: a command queue, side-file models and sinks,
    /// a message's methods, the analysed sources, a node variable's library object, an
    /// Option-like value, and last code outside the analysed sources.
    fn call(&self, mut st: St, c: &Call) -> Vec<(St, Val)> {
        // a command queue: the command runs after the handler (`drain_queue`)
        if self
            .spec
            .queues
            .iter()
            .any(|q| self.pat_matches(&q.pat, c.name, false, &c.quals))
        {
            let cmd = c.vals.first().cloned().unwrap_or_else(Val::opaque);
            if !st.queued.contains(&cmd) {
                st.queued.push(cmd);
            }
            return vec![(st, Val::opaque())];
        }
        let modelled = self.apply_models(&mut st, c);
        let is_sink = self.apply_sinks(&mut st, c);
        if let Some(v) = modelled {
            return vec![(st, v)];
        }
        if is_sink {
            let v = Val::tainted(c.args_taint.clone());
            return vec![(st, v)];
        }
        if c.rv.obj == Obj::Msg {
            return self.call_on_message(st, c);
        }
        // a getter on a message field (`r.getServerRequest().getRequestorId()`): a field of
        // its own when a `report` path names it
        if c.vals.is_empty() {
            if let Some(v) =
                getter_field(c.name).and_then(|f| self.nested_msg_field(&mut st, c.rv, &f))
            {
                return vec![(st, v)];
            }
        }
        let mut cut = false;
        let targets = self.resolve(&st, c.recv, c.rv, c.name, &c.vals, &mut cut);
        if cut {
            self.note(
                &st,
                c.line,
                format!(
                    "call to `{}` may run more than {MAX_TARGETS} methods of the sources; the first {MAX_TARGETS} were followed",
                    c.name
                ),
            );
        }
        if !targets.is_empty() {
            return self.call_sources(st, c, targets);
        }
        if let Obj::Node(var) = &c.rv.obj {
            return self.call_on_node_var(st, c, var);
        }
        if let Some(v) = option_like(c) {
            return vec![(st, v)];
        }
        self.call_external(st, c)
    }

    /// Side-file models of library calls. Every model of the call counts, and a call that
    /// is also a send or disk pattern is that sink too (entries on one pattern combine).
    /// Returns the value the models give, if any matched.
    fn apply_models(&self, st: &mut St, c: &Call) -> Option<Val> {
        let models: Vec<_> = self
            .spec
            .models
            .iter()
            .filter(|m| self.pat_matches(&m.pat, c.name, false, &c.quals))
            .collect();
        let mut modelled: Option<Val> = None;
        for m in models {
            for r in &m.read {
                self.mark(st, "read", r);
            }
            for u in &m.update {
                self.mark(st, "update", u);
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
                self.record_send(st, &c.args_taint);
            }
            if let Some(d) = &m.disk {
                self.mark(st, "disk", d);
            }
            // A summary says what the value is; it wins over `returns` and the arguments.
            let summed = m.summary.as_ref().and_then(|sum| {
                let binds: Vec<Val> = if sum.params.len() == c.vals.len() + 1 {
                    std::iter::once(c.rv.clone())
                        .chain(c.vals.iter().cloned())
                        .collect()
                } else if sum.params.len() == c.vals.len() {
                    c.vals.clone()
                } else {
                    return None;
                };
                Some(self.summary_val(st, &sum.body, &binds))
            });
            let v = match (summed, &m.returns) {
                (Some(v), _) => v,
                (None, Some(var)) => self.read_var(st, var),
                (None, None) => Val::tainted(c.args_taint.clone()),
            };
            if m.summary.is_some() || m.returns.is_some() || modelled.is_none() {
                modelled = Some(v);
            }
        }
        modelled
    }

    /// The send and disk dictionaries: records every pattern the call matches; true if any.
    fn apply_sinks(&self, st: &mut St, c: &Call) -> bool {
        let mut is_sink = false;
        for p in &self.spec.sends {
            if self.pat_matches(p, c.name, false, &c.quals) {
                self.record_send(st, &c.args_taint);
                is_sink = true;
            }
        }
        for (p, file) in self.disk_entries() {
            if self.pat_matches(p, c.name, false, &c.quals) {
                let label = file.clone().unwrap_or_else(|| disk_call_label(c, p));
                self.mark(st, "disk", &label);
                is_sink = true;
            }
        }
        is_sink
    }

    /// A call into the analysed sources: every method it may run, inlined.
    fn call_sources(&self, st: St, c: &Call, targets: Vec<&'a Method>) -> Vec<(St, Val)> {
        let this = match c.recv {
            None => st
                .frames
                .last()
                .map(|f| f.this.clone())
                .unwrap_or_else(Val::opaque),
            Some(_) => c.rv.clone(),
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
                // the object keeps the most derived class the walk knows, so calls
                // on `this` in an inherited method take the overrides of that class
                let mut t = this.clone();
                let derived = t.ty.as_ref().is_some_and(|c| self.is_subtype(c, &m.class));
                if t.ty.is_none() || !matches!(t.obj, Obj::Node(_)) && !derived {
                    t.ty = Some(m.class.clone());
                }
                t
            };
            let mut res = self.inline_memo(&st, m, this, c.vals.clone(), c.line);
            // A call on the message (or a field of it: `proposal.hasBallot(b)`) leaves it
            // as delivered: its fields stay the message's, for the next condition on them.
            let on_message = matches!(c.rv.sym, Some(Sym::M(_)));
            if let Some(r) = c.recv.filter(|_| !on_message) {
                if !c.args_taint.is_empty() {
                    for (s, _) in &mut res {
                        taint_root_local(s, r, &c.args_taint);
                    }
                }
            }
            out.extend(res);
        }
        if cut {
            self.note(
                &st,
                c.line,
                format!(
                    "call to `{}` not followed (recursion or call depth {MAX_DEPTH})",
                    c.name
                ),
            );
            if out.is_empty() {
                let mut t = c.args_taint.clone();
                t.extend(c.rv.all_taint());
                out.push((st, Val::tainted(t)));
            }
        }
        merge_pairs(out)
    }

    /// A call on a node variable's object of a library type (collections, atomics, Option).
    fn call_on_node_var(&self, mut st: St, c: &Call, var: &str) -> Vec<(St, Val)> {
        let name = c.name;
        let cur = self.read_var(&mut st, var);
        // A part of the variable's object (`qv.votingMembers` of a node field `qv`) is not
        // the variable's value: its `get` or `size` is no guard over the variable.
        let cur_sym = match &cur.sym {
            _ if c.rv.sym != cur.sym => None,
            Some(Sym::N(x)) if *x == var => Some(Sym::N(var.to_string())),
            s => s.clone(),
        };
        if INCREMENTS.contains(&name)
            || (name == "addAndGet"
                && c.vals
                    .first()
                    .and_then(|v| v.sym.as_ref())
                    .and_then(Sym::lit)
                    == Some(serde_json::Value::from(1)))
        {
            let newv = Val {
                sym: cur_sym.map(|s| Sym::bin(s, SOp::Add, Sym::Int(1)).simplify()),
                taint: cur.taint.clone(),
                obj: Obj::Plain,
                ty: cur.ty.clone(),
            };
            self.write_var(&mut st, var, newv.clone(), true);
            let mut r = newv;
            r.obj = Obj::Plain;
            return vec![(st, r)];
        }
        if matches!(name, "set" | "lazySet" | "getAndSet" | "replace" | "insert")
            && c.vals.len() == 1
        {
            let mut newv = c.vals[0].clone();
            newv.taint.extend(c.args_taint.clone());
            self.write_var(&mut st, var, newv, false);
            let mut r = cur.clone();
            r.obj = Obj::Plain;
            return vec![(st, r)];
        }
        if let Some(r) = node_var_query(name, c.vals.is_empty(), &cur, cur_sym) {
            return vec![(st, r)];
        }
        let mut taint = cur.taint.clone();
        taint.extend(c.args_taint.clone());
        if !self.is_pure(name, &c.quals) {
            self.touch_var(&mut st, var, &c.args_taint);
        }
        let obj = if ALIASING.contains(&name) {
            Obj::Node(var.to_string())
        } else {
            Obj::Plain
        };
        vec![(
            st,
            Val {
                sym: None,
                taint,
                obj,
                ty: None,
            },
        )]
    }

    /// A call outside the analysed sources: its value carries the taint of the receiver and
    /// the arguments, and a mutating call taints the local it was made on.
    fn call_external(&self, mut st: St, c: &Call) -> Vec<(St, Val)> {
        let name = c.name;
        let shown = match (&c.rv.ty, &c.rv.obj) {
            (_, Obj::Class(cl)) => format!("{cl}.{name}"),
            (Some(t), _) => format!("{t}.{name}"),
            _ => name.to_string(),
        };
        self.seen.borrow_mut().external_calls.insert(shown);
        if let Some(r) = c.recv {
            if !c.args_taint.is_empty() && !PURE.contains(&name) {
                taint_root_local(&mut st, r, &c.args_taint);
            }
        }
        let mut taint = c.args_taint.clone();
        taint.extend(c.rv.all_taint());
        let is_pure_compare = matches!(name, "equals" | "contains" | "containsKey" | "compareTo");
        if is_pure_compare {
            taint.retain(|s| !matches!(s, Src::S(_)));
        }
        let class = match &c.rv.obj {
            Obj::Class(cl) => Some(cl.as_str()),
            _ => None,
        };
        let v = Val {
            ty: library_type(name, class),
            ..Val::tainted(taint)
        };
        vec![(st, v)]
    }

    /// A call on the message object: a method of its class is inlined, a getter (or a
    /// method named like a field) is that field.
    fn call_on_message(&self, mut st: St, c: &Call) -> Vec<(St, Val)> {
        let name = c.name;
        let cls = c.rv.ty.clone().unwrap_or_default();
        if let Some(m) = self.find_method(&cls, name, &c.vals) {
            if self.method_allowed(m) {
                return self.inline(st, m, c.rv.clone(), c.vals.clone(), c.line);
            }
        }
        if c.vals.is_empty() {
            if let Some(f) = getter_field(name) {
                let v = self.typed_msg_field(&mut st, &cls, &f);
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
                let v = self.typed_msg_field(&mut st, &cls, name);
                return vec![(st, v)];
            }
        }
        vec![(st, Val::tainted(c.args_taint.clone()))]
    }

    /// A summary's body with its parameters bound to what the call passes: `a.ballot` is
    /// the field of the first argument (so a node object's part or a message field), and the
    /// value is symbolic where every operand is.
    fn summary_val(&self, st: &mut St, e: &GExpr, binds: &[Val]) -> Val {
        let un = |st: &mut St, a: &GExpr, f: fn(Sym) -> Sym| {
            let x = self.summary_val(st, a, binds);
            let taint = x.all_taint();
            Val {
                sym: x.sym.map(f),
                ..Val::tainted(taint)
            }
        };
        match e {
            GExpr::Lit(v) => Val::sym(match v {
                serde_json::Value::Bool(b) => Sym::Bool(*b),
                serde_json::Value::String(t) => Sym::Str(t.clone()),
                serde_json::Value::Number(n) => match n.as_i64() {
                    Some(i) => Sym::Int(i),
                    None => return Val::opaque(),
                },
                _ => Sym::Null,
            }),
            // one past the parameters: the node (`n.last_log_term`, `spec::parse_means`)
            GExpr::Var {
                scope: GScope::Param(k),
                path,
            } if *k == binds.len() => match path.split_first() {
                Some((var, rest)) => {
                    let mut v = self.read_var(st, var);
                    for f in rest {
                        v = self.field_access(st, &v, f);
                    }
                    v
                }
                None => Val::opaque(),
            },
            GExpr::Var {
                scope: GScope::Param(k),
                path,
            } => {
                let mut v = binds.get(*k).cloned().unwrap_or_else(Val::opaque);
                for f in path {
                    v = self.field_access(st, &v, f);
                }
                v
            }
            GExpr::Not(a) => un(st, a, |s| Sym::Not(Box::new(s))),
            GExpr::Neg(a) => un(st, a, |s| Sym::Neg(Box::new(s))),
            GExpr::Len(a) => un(st, a, |s| Sym::Len(Box::new(s))),
            GExpr::Bin(a, op, b) => {
                let x = self.summary_val(st, a, binds);
                let y = self.summary_val(st, b, binds);
                let op = match op {
                    GOp::Or => SOp::Or,
                    GOp::And => SOp::And,
                    GOp::Eq => SOp::Eq,
                    GOp::Ne => SOp::Ne,
                    GOp::Lt => SOp::Lt,
                    GOp::Le => SOp::Le,
                    GOp::Gt => SOp::Gt,
                    GOp::Ge => SOp::Ge,
                    GOp::Add => SOp::Add,
                    GOp::Sub => SOp::Sub,
                };
                let mut taint = x.all_taint();
                taint.extend(y.all_taint());
                Val {
                    sym: x.sym.zip(y.sym).map(|(x, y)| Sym::bin(x, op, y).simplify()),
                    ..Val::tainted(taint)
                }
            }
            // Summary bodies name only their parameters and `n` (`spec::parse_means`).
            GExpr::Var { .. }
            | GExpr::Quant(..)
            | GExpr::Unique(..)
            | GExpr::Take(..)
            | GExpr::History(..) => Val::opaque(),
        }
    }

    /// The one method `class.name` a call with `args` selects, if exactly one (tests, and
    /// getters on a message class).
    pub(super) fn find_method(&self, class: &str, name: &str, args: &[Val]) -> Option<&'a Method> {
        match self.lookup(class, name, args)[..] {
            [m] => Some(m),
            _ => None,
        }
    }

    /// The methods of the analysed sources a call may run (see `dispatch`), at most
    /// `MAX_TARGETS`; `cut` is set when there were more (the caller names the call in a gap).
    pub(super) fn resolve(
        &self,
        st: &St,
        recv: Option<&Expr>,
        rv: &Val,
        name: &str,
        args: &[Val],
        cut: &mut bool,
    ) -> Vec<&'a Method> {
        let mut classes: Vec<String> = Vec::new();
        match recv {
            None => {
                // this object's class (the most derived the walk knows), then enclosing
                // classes; then free functions
                let mut c = Some(self.this_class(st));
                if let Some(t) = st.frames.last().and_then(|f| f.this.ty.clone()) {
                    if c.as_ref()
                        .is_some_and(|c| *c != t && self.is_subtype(&t, c))
                    {
                        classes.push(t);
                    }
                }
                while let Some(cl) = c {
                    classes.push(cl.clone());
                    c = self.prog.classes.get(&cl).and_then(|x| x.outer.clone());
                }
            }
            Some(Expr::Name(s)) if s == "super" => {
                if let Some(c) = self.prog.classes.get(&self.this_class(st)) {
                    classes.extend(c.supers.iter().cloned());
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
            let decls = self.lookup(c, name, args);
            let mut out: Vec<&'a Method> = Vec::new();
            if decls.is_empty() {
                // declared in a subclass only (the receiver's static type is too general)
                for s in self.descendants(c) {
                    for m in self.lookup(s, name, args) {
                        if m.body.is_some() && !out.iter().any(|x| std::ptr::eq(*x, m)) {
                            out.push(m);
                        }
                    }
                }
            }
            // a static method or a constructor runs as declared; otherwise every override
            for d in decls {
                let is_super = matches!(recv, Some(Expr::Name(s)) if s == "super");
                let run =
                    if d.is_static || is_super || matches!(rv.obj, Obj::Class(_)) && recv.is_some()
                    {
                        vec![d]
                    } else {
                        self.overrides(c, d)
                    };
                for m in run {
                    if m.body.is_some() && !out.iter().any(|x| std::ptr::eq(*x, m)) {
                        out.push(m);
                    }
                }
            }
            if out.is_empty() {
                continue;
            }
            if out.len() > MAX_TARGETS {
                *cut = true;
                out.truncate(MAX_TARGETS);
            }
            return out;
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
    pub(super) fn inline_memo(
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

    pub(super) fn inline(
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
            let mut v = if p.varargs && vals.len() != m.params.len() {
                // `T... xs` given zero or several arguments: an array of all of them
                let mut t = BTreeSet::new();
                for v in vals.iter().skip(i) {
                    t.extend(v.all_taint());
                }
                Val::tainted(t)
            } else {
                vals.get(i).cloned().unwrap_or_else(Val::opaque)
            };
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
        let caller_line = self.line.get();
        let outs = self.block(body, vec![st]);
        self.line.set(caller_line);
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

/// One call being evaluated: its receiver and arguments as written and as valued, with the
/// names a dictionary pattern's qualifier may match and the taint its arguments carry.
struct Call<'c> {
    recv: Option<&'c Expr>,
    rv: &'c Val,
    name: &'c str,
    vals: Vec<Val>,
    arg_exprs: &'c [Expr],
    line: usize,
    quals: Vec<String>,
    args_taint: BTreeSet<Src>,
}

/// The file a disk pattern `p` without its own file writes: for a static call
/// (`Files.write(path, ...)`) the first argument, else the receiver (a file label, a node
/// variable or its name), else the first argument; the pattern itself when none is known.
fn disk_call_label(c: &Call, p: &CallPat) -> String {
    let arg_name = || {
        c.arg_exprs
            .first()
            .filter(|e| matches!(e, Expr::Name(_) | Expr::Field(..)))
            .and_then(last_name)
    };
    let recv_name = || {
        c.recv
            .filter(|r| matches!(r, Expr::Name(_) | Expr::Field(..)))
            .and_then(last_name)
    };
    let node = || match &c.rv.obj {
        Obj::Node(v) => Some(v.clone()),
        _ => None,
    };
    if matches!(c.rv.obj, Obj::Class(_)) {
        disk_label(c.vals.first()).or_else(arg_name)
    } else {
        disk_label(Some(c.rv))
            .or_else(node)
            .or_else(recv_name)
            .or_else(|| disk_label(c.vals.first()))
    }
    .unwrap_or_else(|| p.to_string())
}

/// A query without arguments on a node variable's object (`get`, `size`, `isEmpty`,
/// `is_some`): its value, over the variable's symbol when `cur_sym` is it.
fn node_var_query(name: &str, no_args: bool, cur: &Val, cur_sym: Option<Sym>) -> Option<Val> {
    if !no_args {
        return None;
    }
    let sym = match name {
        "get" => {
            let mut r = cur.clone();
            r.obj = Obj::Plain;
            r.sym = cur_sym;
            return Some(r);
        }
        "size" | "len" => cur_sym
            .filter(|s| matches!(s, Sym::N(_)))
            .map(|s| Sym::Len(Box::new(s))),
        "isEmpty" | "is_empty" => cur_sym
            .filter(|s| matches!(s, Sym::N(_)))
            .map(|s| Sym::bin(Sym::Len(Box::new(s)), SOp::Eq, Sym::Int(0))),
        "is_some" => cur_sym.map(|s| Sym::bin(s, SOp::Ne, Sym::Null)),
        "is_none" => cur_sym.map(|s| Sym::bin(s, SOp::Eq, Sym::Null)),
        _ => return None,
    };
    Some(Val {
        sym,
        taint: cur.taint.clone(),
        obj: Obj::Plain,
        ty: None,
    })
}

/// An Option-like value's query or unwrapping without arguments (`is_some`, `unwrap`,
/// `longValue`), over its symbol.
fn option_like(c: &Call) -> Option<Val> {
    if !c.vals.is_empty() {
        return None;
    }
    let s = c.rv.sym.as_ref()?;
    let r = match c.name {
        "is_some" => Sym::bin(s.clone(), SOp::Ne, Sym::Null),
        "is_none" => Sym::bin(s.clone(), SOp::Eq, Sym::Null),
        "unwrap" | "clone" | "copied" | "cloned" | "longValue" | "intValue" => s.clone(),
        _ => return None,
    };
    Some(Val {
        sym: Some(r),
        taint: c.rv.all_taint(),
        obj: Obj::Plain,
        ty: None,
    })
}

/// `Q.instance()`, `Q.getInstance()`, `Q.instance`, `Q.INSTANCE`: the singleton accessor of
/// class `Q`, whose value's static type is `Q` by that idiom (Cassandra's
/// `MessagingService.instance().sendReply(..)`), so a `Q.method` pattern matches calls on it.
pub(super) fn singleton_class(e: &Expr) -> Option<String> {
    const ACCESSORS: &[&str] = &["instance", "getInstance", "INSTANCE"];
    let (q, name) = match e {
        Expr::Call {
            recv: Some(q),
            name,
            args,
            ..
        } if args.is_empty() => (q, name),
        Expr::Field(q, name) => (q, name),
        _ => return None,
    };
    if !ACCESSORS.contains(&name.as_str()) {
        return None;
    }
    match &**q {
        Expr::Name(c) => Some(c.clone()),
        Expr::Path(p) => p.last().cloned(),
        Expr::Field(_, c) => Some(c.clone()),
        _ => None,
    }
}

pub(super) fn last_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Name(n) => Some(n.clone()),
        Expr::Field(_, f) => Some(f.clone()),
        Expr::Path(p) => p.last().cloned(),
        Expr::Call { name, .. } => Some(name.clone()),
        Expr::Unary(_, a) => last_name(a),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{java, start, NODE};
    use super::*;

    #[test]
    fn singleton_accessors_name_their_class() {
        let name = |n: &str| Box::new(Expr::Name(n.into()));
        let call = |q: Box<Expr>, n: &str, args: Vec<Expr>| Expr::Call {
            recv: Some(q),
            name: n.into(),
            args,
            line: 1,
        };
        let ms = || name("MessagingService");
        assert_eq!(
            singleton_class(&call(ms(), "instance", vec![])).as_deref(),
            Some("MessagingService")
        );
        let field = Expr::Field(ms(), "instance".into());
        assert_eq!(singleton_class(&field).as_deref(), Some("MessagingService"));
        // an accessor with arguments, or another method, is not the singleton
        assert_eq!(
            singleton_class(&call(ms(), "instance", vec![Expr::Name("x".into())])),
            None
        );
        assert_eq!(singleton_class(&call(ms(), "peers", vec![])), None);
    }

    #[test]
    fn a_call_resolves_to_the_method_and_is_inlined() {
        let (prog, spec) = java(NODE);
        let ex = Exec::new(&prog, &spec);
        assert_eq!(
            ex.find_method("Node", "twice", &[Val::opaque()])
                .map(|m| &m.name[..]),
            Some("twice")
        );
        assert!(ex
            .find_method("Node", "twice", &[Val::opaque(), Val::opaque()])
            .is_none());
        let (m, st) = start(&ex, "onVote");
        let out = ex.block(m.body.as_ref().unwrap(), vec![st]);
        assert_eq!(out.len(), 1);
        // `bump()` increments `votes`: an update that is an increment only.
        assert_eq!(out[0].sets.update, ["votes".to_string()].into());
        assert_eq!(out[0].sets.increments(), ["votes".to_string()].into());
    }

    #[test]
    fn an_inlined_call_returns_its_value() {
        let (prog, spec) = java(NODE);
        let ex = Exec::new(&prog, &spec);
        let (_, st) = start(&ex, "onMsg");
        let e = Expr::Call {
            recv: None,
            name: "twice".into(),
            args: vec![Expr::Lit(Lit::Int(3))],
            line: 1,
        };
        let vals: Vec<Option<Sym>> = ex.eval(&e, st).into_iter().map(|(_, v)| v.sym).collect();
        assert_eq!(vals.len(), 1);
        assert_eq!(vals, [Some(Sym::Int(6))]);
    }
}
