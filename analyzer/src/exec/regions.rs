//! Regions: where inside a method a walk starts (a handler's receive site, a catch clause),
//! and running the rest of the method from there.

use super::state::{normalize, split};
use super::{Exec, St, Status};
use crate::ir::*;

/// Where to start a region.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Into(usize, usize),
    After(usize),
    Begin,
}

impl<'a> Exec<'a> {
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
