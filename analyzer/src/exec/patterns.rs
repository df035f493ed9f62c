//! Patterns: matching a value against a `match` arm or `case` label.

use super::{Exec, Obj, Src, St, Val, KIND_FIELD};
use crate::ir::*;
use crate::sym::{SOp, Sym};

impl<'a> Exec<'a> {
    /// Match `v` against `pat`: the states where it matches (with its bindings) and where not.
    /// One function per kind of pattern.
    pub(super) fn match_pat(&self, st: St, pat: &Pat, v: &Val) -> (Vec<St>, Vec<St>) {
        match pat {
            Pat::Wild => (vec![st], vec![]),
            Pat::Bind(name) => {
                let mut st = st;
                Exec::bind_local(&mut st, name, v.clone());
                (vec![st], vec![])
            }
            Pat::Opaque => (vec![st.clone()], vec![st]),
            Pat::Const(e) => self.match_const(st, e, v),
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
            Pat::Tuple(ps) => self.match_tuple(st, ps, v),
            Pat::Variant { path, fields, .. } => {
                let last = path.last().map(String::as_str).unwrap_or("");
                match last {
                    "Some" => self.match_some(st, fields, v),
                    _ => self.match_variant(st, path, fields, v),
                }
            }
        }
    }

    /// A constant (`case 3:`, `Role::Leader`); a name the walk has no value for is a
    /// constant of its own name.
    fn match_const(&self, st: St, e: &Expr, v: &Val) -> (Vec<St>, Vec<St>) {
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

    fn match_tuple(&self, st: St, ps: &[Pat], v: &Val) -> (Vec<St>, Vec<St>) {
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

    /// `Some(p)`: the value is not null, and `p` matches the value itself.
    fn match_some(&self, st: St, fields: &[(String, Pat)], v: &Val) -> (Vec<St>, Vec<St>) {
        let (t, f) = match &v.sym {
            Some(s) => (
                self.assume_sym(st.clone(), Sym::bin(s.clone(), SOp::Ne, Sym::Null), true),
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

    /// An enum variant: on the message, a test of its kind (and its fields are the
    /// message's); on a constant or a unit variant, a test of the value; else undecided.
    fn match_variant(
        &self,
        st: St,
        path: &[String],
        fields: &[(String, Pat)],
        v: &Val,
    ) -> (Vec<St>, Vec<St>) {
        let last = path.last().map(String::as_str).unwrap_or("");
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

    pub(super) fn test_eq(&self, st: St, v: &Val, c: &Val) -> (Vec<St>, Vec<St>) {
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

    pub(super) fn enum_of(&self, enum_name: Option<&str>, variant: &str) -> Option<String> {
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

    pub(super) fn variant_value(&self, enum_name: Option<&str>, variant: &str) -> String {
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
}

#[cfg(test)]
mod tests {
    use super::super::testing::{java, start, NODE};
    use super::*;

    #[test]
    fn constants_decide_a_pattern_and_bindings_bind() {
        let (prog, spec) = java(NODE);
        let ex = Exec::new(&prog, &spec);
        let (_, st) = start(&ex, "onMsg");
        let one = Val::sym(Sym::Int(1));
        let lit = |i| Pat::Const(Expr::Lit(Lit::Int(i)));
        let (yes, no) = ex.match_pat(st.clone(), &lit(1), &one);
        assert_eq!((yes.len(), no.len()), (1, 0));
        let (yes, no) = ex.match_pat(st.clone(), &lit(2), &one);
        assert_eq!((yes.len(), no.len()), (0, 1));
        let (yes, no) = ex.match_pat(st, &Pat::Bind("x".into()), &one);
        assert_eq!(no.len(), 0);
        assert_eq!(yes[0].frames[0].locals["x"].sym, Some(Sym::Int(1)));
    }
}
