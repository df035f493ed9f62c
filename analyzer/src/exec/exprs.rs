//! Expressions: evaluating an expression to its values, one per resulting state.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

use super::library::is_file_label;
use super::state::merge_pairs;
use super::{Exec, Obj, Src, St, Status, Val};
use crate::ir::*;
use crate::sym::{SOp, Sym};

impl<'a> Exec<'a> {
    pub(super) fn this_class(&self, st: &St) -> String {
        st.frames
            .last()
            .map(|f| f.class.clone())
            .unwrap_or_default()
    }

    pub(super) fn eval_name(&self, st: &mut St, name: &str) -> Val {
        if name == "super" {
            return st
                .frames
                .last()
                .map(|f| f.this.clone())
                .unwrap_or_else(Val::opaque);
        }
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
    pub(super) fn field_of(&self, st: &mut St, owner: &Class, field: &str, obj: &Val) -> Val {
        if let Obj::Node(var) = &obj.obj {
            let ty = owner.fields.get(field).and_then(|f| f.ty.clone());
            // a part the side file names: a variable of its own
            if let Some(part) = self.spec.parts.get(var).and_then(|p| p.get(field)) {
                let mut v = self.read_var(st, part);
                v.ty = ty;
                return v;
            }
            // part of a node variable's object
            let mut v = self.read_var(st, var);
            v.sym = None;
            v.ty = owner.fields.get(field).and_then(|f| f.ty.clone());
            return v;
        }
        if obj.obj == Obj::Msg {
            return self.typed_msg_field(st, &owner.name, field);
        }
        // `ballot` inside a method of the message field's class (`this` is the field)
        if let Some(v) = self.nested_msg_field(st, obj, field) {
            return v;
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

    /// A field of a message field (`rpc.vote.leader_id.term`) is a nested field of the
    /// message, which `report` may name by the hook's flat field name. Only paths a `report`
    /// names (or leads to) are split out; any other field of a message field stays part of it.
    /// It keeps its declared type, so calls on it match patterns by type (`UUID.equals`).
    pub(super) fn nested_msg_field(&self, st: &mut St, o: &Val, f: &str) -> Option<Val> {
        let Some(Sym::M(p)) = &o.sym else {
            return None;
        };
        let path = format!("{p}.{f}");
        if !self.nested.contains(&path) {
            return None;
        }
        let mut v = self.msg_field(st, &path);
        v.ty =
            o.ty.as_ref()
                .and_then(|t| self.field_owner(t, f, false))
                .and_then(|c| c.fields.get(f))
                .and_then(|x| x.ty.clone());
        Some(v)
    }

    /// A message field with its declared type when that is a library type (`List<Long>
    /// entries`), which overload resolution uses; a class of the sources is left untyped so
    /// calls on the field stay as they were (opaque).
    pub(super) fn typed_msg_field(&self, st: &mut St, class: &str, field: &str) -> Val {
        let mut v = self.msg_field(st, field);
        v.ty = self
            .field_owner(class, field, false)
            .and_then(|c| c.fields.get(field))
            .and_then(|f| f.ty.clone())
            .filter(|t| !self.prog.classes.contains_key(t));
        v
    }

    pub(super) fn msg_field(&self, st: &mut St, field: &str) -> Val {
        st.sets.msg_fields.insert(field.to_string());
        Val {
            sym: Some(Sym::M(field.to_string())),
            taint: [Src::M(field.to_string())].into(),
            obj: Obj::Plain,
            ty: None,
        }
    }

    /// An expression's values, one per resulting state: one function per kind of expression.
    pub fn eval(&self, e: &Expr, st: St) -> Vec<(St, Val)> {
        let mut st = st;
        match e {
            Expr::Lit(l) => vec![(st, lit_val(l))],
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
            Expr::Index(a, i) => self.eval_index(a, i, st),
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
            Expr::Struct { path, fields } => self.eval_struct(path, fields, st),
            Expr::Tuple(es) => {
                let mut out = Vec::new();
                for (st, vals) in self.eval_list(es, st) {
                    let v = Val {
                        sym: None,
                        taint: BTreeSet::new(),
                        obj: Obj::Tuple(vals),
                        ty: None,
                    };
                    out.push((st, v));
                }
                out
            }
            Expr::Unary(op, a) => self.eval_unary(*op, a, st),
            Expr::Bin(op, a, b) => self.eval_bin(*op, a, b, st),
            Expr::Assign { target, op, value } => self.eval_assign(target, *op, value, st),
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
            Expr::Cond(c, a, b, line) => {
                let (t, f) = self.branch(c, st, *line);
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
            Expr::Lambda { params, body } => self.eval_lambda(params, body, st),
            Expr::Stmt(s) => {
                st.val = None;
                let mut out = Vec::new();
                for mut s in self.stmt(s, vec![st]) {
                    let v = s.val.take().unwrap_or_else(Val::opaque);
                    out.push((s, v));
                }
                merge_pairs(out)
            }
            Expr::Try(a) => self.eval_try(a, st),
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

    /// `a[i]`: no symbol; an element of a node variable's object is still that variable's.
    fn eval_index(&self, a: &Expr, i: &Expr, st: St) -> Vec<(St, Val)> {
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

    /// A struct (or struct variant) literal: the taint of its fields.
    fn eval_struct(&self, path: &[String], fields: &[(String, Expr)], st: St) -> Vec<(St, Val)> {
        let es: Vec<Expr> = fields.iter().map(|(_, e)| e.clone()).collect();
        let mut out = Vec::new();
        for (st, vals) in self.eval_list(&es, st) {
            let mut taint = BTreeSet::new();
            for v in &vals {
                taint.extend(v.all_taint());
            }
            // `Enum::Variant { .. }`: its variant is a constant, so a `match` on
            // it (a queued command run later) takes that arm only.
            let sym = match path {
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

    fn eval_unary(&self, op: UnOp, a: &Expr, st: St) -> Vec<(St, Val)> {
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

    fn eval_bin(&self, op: BinOp, a: &Expr, b: &Expr, st: St) -> Vec<(St, Val)> {
        let mut out = Vec::new();
        for (st, va) in self.eval(a, st) {
            for (st, vb) in self.eval(b, st) {
                let v = if matches!(op, BinOp::And | BinOp::Or) {
                    // short-circuit: evaluate b only where needed, but a value is enough here
                    logical(op, &va, &vb)
                } else {
                    self.binop(op, &va, &vb)
                };
                out.push((st, v));
            }
        }
        merge_pairs(out)
    }

    /// `target = value` or `target op= value`: the assigned value.
    fn eval_assign(
        &self,
        target: &Expr,
        op: Option<BinOp>,
        value: &Expr,
        st: St,
    ) -> Vec<(St, Val)> {
        let mut out = Vec::new();
        for (st, v) in self.eval(value, st) {
            if st.status != Status::Normal {
                out.push((st, v));
                continue;
            }
            match op {
                None => {
                    // `x = x + k` (k > 0) is an increment too
                    let inc = match value {
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
                        let newv = self.binop(o, &cur, &v);
                        let inc = o == BinOp::Add
                            && matches!(v.sym.as_ref().and_then(Sym::lit).and_then(|x| x.as_i64()), Some(k) if k > 0);
                        let sts = self.assign(st, target, newv.clone(), inc);
                        out.extend(sts.into_iter().map(|s| (s, newv.clone())));
                    }
                }
            }
        }
        out
    }

    /// A lambda or closure: counted where created, the body runs once, in a frame of its own.
    fn eval_lambda(&self, params: &[String], body: &Block, mut st: St) -> Vec<(St, Val)> {
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

    /// `a?`: also an early return carrying the error's taint.
    fn eval_try(&self, a: &Expr, st: St) -> Vec<(St, Val)> {
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

    pub(super) fn eval_path(&self, st: &mut St, p: &[String]) -> Val {
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

    pub(super) fn field_access(&self, st: &mut St, o: &Val, f: &str) -> Val {
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
                if let Some(v) = self.nested_msg_field(st, o, f) {
                    return v;
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

    pub(super) fn binop(&self, op: BinOp, a: &Val, b: &Val) -> Val {
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

    pub(super) fn eval_list(&self, es: &[Expr], st: St) -> Vec<(St, Vec<Val>)> {
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

    pub(super) fn assign(&self, st: St, target: &Expr, v: Val, increment: bool) -> Vec<St> {
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
                        Obj::Node(var) => match self.spec.parts.get(var).and_then(|p| p.get(f)) {
                            Some(part) => {
                                let part = part.clone();
                                self.write_var(&mut st, &part, v.clone(), increment);
                            }
                            None => {
                                let var = var.clone();
                                self.touch_var(&mut st, &var, &v.all_taint());
                            }
                        },
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
}

pub(super) fn lit_sym(l: &Lit) -> Option<Sym> {
    Some(match l {
        Lit::Int(i) => Sym::Int(*i),
        Lit::Str(s) => Sym::Str(s.clone()),
        Lit::Bool(b) => Sym::Bool(*b),
        Lit::Null => Sym::Null,
        Lit::Other => return None,
    })
}

/// A local object gets the taint of what is stored into it (no heap: the object is the local).
pub(super) fn taint_root_local(st: &mut St, e: &Expr, taint: &BTreeSet<Src>) {
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

/// A literal's value; a string naming a file is that file's label.
fn lit_val(l: &Lit) -> Val {
    match lit_sym(l) {
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
    }
}

/// `a && b`, `a || b`: symbolic where both sides are.
fn logical(op: BinOp, va: &Val, vb: &Val) -> Val {
    let sym = match (&va.sym, &vb.sym) {
        (Some(x), Some(y)) => Some(
            Sym::bin(
                x.clone(),
                if op == BinOp::And { SOp::And } else { SOp::Or },
                y.clone(),
            )
            .simplify(),
        ),
        _ => None,
    };
    let taint = va.all_taint().union(&vb.all_taint()).cloned().collect();
    Val {
        sym,
        taint,
        obj: Obj::Plain,
        ty: None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{java, start, NODE};
    use super::*;

    #[test]
    fn a_node_field_reads_as_its_pre_state_value() {
        let (prog, spec) = java(NODE);
        let ex = Exec::new(&prog, &spec);
        let (_, st) = start(&ex, "onMsg");
        let e = Expr::Bin(
            BinOp::Add,
            Box::new(Expr::Name("term".into())),
            Box::new(Expr::Lit(Lit::Int(1))),
        );
        let out = ex.eval(&e, st);
        assert_eq!(out.len(), 1);
        let (st, v) = &out[0];
        assert!(st.sets.read.contains("term"), "{:?}", st.sets);
        assert_eq!(
            v.sym.as_ref().map(ToString::to_string).as_deref(),
            Some("n.term + 1")
        );
        assert!(v.taint.contains(&Src::N("term".into())));
    }

    #[test]
    fn an_assignment_to_a_node_field_updates_it() {
        let (prog, spec) = java(NODE);
        let ex = Exec::new(&prog, &spec);
        let (_, st) = start(&ex, "onMsg");
        let e = Expr::Assign {
            target: Box::new(Expr::Name("votes".into())),
            op: None,
            value: Box::new(Expr::Field(Box::new(Expr::Name("m".into())), "term".into())),
        };
        let (st, _) = ex.eval(&e, st).pop().unwrap();
        assert_eq!(st.sets.update, ["votes".to_string()].into());
        assert_eq!(st.sets.non_incr, ["votes".to_string()].into());
        // The message field the value came from.
        assert_eq!(st.sets.msg_fields, ["term".to_string()].into());
    }
}
