//! Statements: blocks, branches, loops, `match`/`switch`, `try`, and their control flow.

use std::collections::BTreeSet;

use super::state::{normalize, split};
use super::{Exec, Obj, St, Status, Val};
use crate::ir::*;

impl<'a> Exec<'a> {
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

    pub(super) fn stops(&self, s: &Stmt, st: &St) -> bool {
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

    /// A statement run from `states`: one function per kind of statement.
    pub(super) fn stmt(&self, s: &Stmt, states: Vec<St>) -> Vec<St> {
        self.steps.set(self.steps.get() + states.len());
        self.line.set(s.line);
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
            } => self.stmt_local(pat, ty.as_deref(), init.as_ref(), els.as_ref(), live),
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
                let l = Loop {
                    label,
                    cond: cond.as_ref(),
                    update,
                    body,
                    bind: None,
                    line: s.line,
                };
                res.extend(self.looped(&l, live));
                res
            }
            StmtKind::ForEach {
                label,
                pat,
                iter,
                body,
                ty,
            } => {
                let l = Loop {
                    label,
                    cond: None,
                    update: &[],
                    body,
                    bind: None,
                    line: s.line,
                };
                self.stmt_for_each(&l, pat, iter, ty, live)
            }
            StmtKind::Return(e) => self.stmt_return(e.as_ref(), live),
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
            StmtKind::Opaque(es) => self.stmt_opaque(es, live),
        };
        out.extend(res);
        out
    }

    /// `let pat: ty = init else { els }` (or a Java local declaration).
    fn stmt_local(
        &self,
        pat: &Pat,
        ty: Option<&str>,
        init: Option<&Expr>,
        els: Option<&Block>,
        live: Vec<St>,
    ) -> Vec<St> {
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
                if let Some(t) = ty.filter(|t| self.declared_type_wins(t, &v)) {
                    v.ty = Some(t.to_string());
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

    /// `for pat in iter { body }`: the element carries the collection's taint, and an element
    /// of a node variable's object is still that variable's.
    fn stmt_for_each(
        &self,
        l: &Loop,
        pat: &Pat,
        iter: &Expr,
        ty: &Option<String>,
        live: Vec<St>,
    ) -> Vec<St> {
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
                let each = Loop {
                    bind: Some((pat, elem)),
                    ..l.clone()
                };
                res.extend(self.looped(&each, vec![st]));
            }
        }
        res
    }

    fn stmt_return(&self, e: Option<&Expr>, live: Vec<St>) -> Vec<St> {
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

    /// A statement the IR does not model: its expressions run in order.
    fn stmt_opaque(&self, es: &[Expr], live: Vec<St>) -> Vec<St> {
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

    /// Finish a `try` whose body produced `after` (from `entry`). `from_catch`: the region
    /// started inside catch clause `k`, whose output `after` is.
    /// Does a local's declared type replace what the walk knows of its value's type? When it
    /// is an analysed class (downcasts); when the value's type is unknown; and when the value
    /// is a library object (`final PeerId cur = leaderId.get()`: `get` gives the reference's
    /// type), so call patterns on the declared type match. A value of a class below the
    /// declared one keeps its class (more precise dispatch), and `var` declares nothing.
    pub(super) fn declared_type_wins(&self, declared: &str, v: &Val) -> bool {
        if declared == "var" {
            return false;
        }
        match &v.ty {
            None => true,
            Some(t) if self.prog.classes.contains_key(declared) => {
                !(t != declared && self.is_subtype(t, declared))
            }
            Some(t) => !self.prog.classes.contains_key(t) && !matches!(v.obj, Obj::Node(_)),
        }
    }

    pub(super) fn after_try(
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

    /// A loop from `entry`, run twice (see the module doc).
    pub(super) fn looped(&self, l: &Loop, entry: Vec<St>) -> Vec<St> {
        let (label, cond, update, body, line) = (l.label, l.cond, l.update, l.body, l.line);
        let bind = &l.bind;
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
            if let Some((pat, v)) = bind {
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

    pub(super) fn match_stmt(
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
                let mut st = st;
                st.sets.branched_on(&v);
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
}

/// The locals a loop body may assign (their values are forgotten before the second pass).
///
/// It looks only at local declarations, expression statements and `if` conditions, not at
/// every expression `Stmt::exprs` offers (a `while` condition, a `return`): assignments there
/// are not counted today, and counting them would forget more values and change the analysis'
/// output, which this walker keeps as it is.
pub(super) fn assigned_names(b: &Block) -> BTreeSet<String> {
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
        for c in s.children() {
            for s in c.stmts() {
                stmt(s, out);
            }
        }
    }
    let mut out = BTreeSet::new();
    for s in &b.stmts {
        stmt(s, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testing::{java, start, NODE};
    use super::*;
    use crate::sym::guard_text;

    #[test]
    fn an_if_splits_the_paths_on_its_condition() {
        let (prog, spec) = java(NODE);
        let ex = Exec::new(&prog, &spec);
        let (m, st) = start(&ex, "onMsg");
        let mut out: Vec<(String, Vec<String>)> = ex
            .block(m.body.as_ref().unwrap(), vec![st])
            .into_iter()
            .map(|s| (guard_text(&s.atoms), s.sets.update.into_iter().collect()))
            .collect();
        out.sort();
        assert_eq!(
            out,
            [
                ("m.term <= n.term".to_string(), vec![]),
                ("m.term > n.term".to_string(), vec!["term".to_string()]),
            ]
        );
    }

    #[test]
    fn a_loop_forgets_the_locals_its_body_assigns() {
        let (prog, _) = java(
            "class C { void f(int n) { int i = 0; while (i < n) { i = i + 1; int j = 2; } } }",
        );
        let body = prog.classes["C"].methods[0].body.as_ref().unwrap();
        let StmtKind::Loop { body, .. } = &body.stmts[1].kind else {
            panic!("{:?}", body.stmts[1])
        };
        assert_eq!(
            assigned_names(body),
            ["i".to_string(), "j".to_string()].into()
        );
    }
}

/// A loop as the walk runs it: a `for`/`while` with its condition and update, or a for-each
/// with the pattern bound to each element.
#[derive(Clone)]
pub(super) struct Loop<'s> {
    pub label: &'s Option<String>,
    pub cond: Option<&'s Expr>,
    pub update: &'s [Expr],
    pub body: &'s Block,
    pub bind: Option<(&'s Pat, Val)>,
    pub line: usize,
}
