//! Conditions: splitting a state on a branch condition, turning it into guard atoms where
//! the guard language can express it.

use std::collections::BTreeSet;

use super::state::normalize;
use super::{Exec, St, Status};
use crate::ir::*;
use crate::sym::{inconsistent, Atom, SOp, Sym};

impl<'a> Exec<'a> {
    /// Split `st` on `cond`: the states where it holds and where it does not.
    pub(super) fn branch(&self, cond: &Expr, st: St, line: usize) -> (Vec<St>, Vec<St>) {
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
                    let mut s = s;
                    s.sets.branched_on(&v);
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
                    let mut s = s;
                    s.sets.branched_on(&v);
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

    pub(super) fn assume_sym(&self, st: St, s: Sym, truth: bool) -> Vec<St> {
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
}

#[cfg(test)]
mod tests {
    use super::super::testing::{java, start, NODE};
    use super::*;
    use crate::sym::guard_text;

    #[test]
    fn a_comparison_becomes_a_guard_and_a_constant_decides() {
        let (prog, spec) = java(NODE);
        let ex = Exec::new(&prog, &spec);
        let (_, st) = start(&ex, "onMsg");
        let cond = Expr::Bin(
            BinOp::Eq,
            Box::new(Expr::Field(Box::new(Expr::Name("m".into())), "kind".into())),
            Box::new(Expr::Lit(Lit::Int(2))),
        );
        let (t, f) = ex.branch(&cond, st.clone(), 1);
        assert_eq!(guard_text(&t[0].atoms), "m.kind == 2");
        assert_eq!(guard_text(&f[0].atoms), "m.kind != 2");
        let (t, f) = ex.branch(&Expr::Lit(Lit::Bool(true)), st, 1);
        assert_eq!((t.len(), f.len()), (1, 0));
    }
}
