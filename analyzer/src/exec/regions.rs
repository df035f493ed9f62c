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
                let inner_block = s.child_block(*c).expect("a valid region path");
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

/// Every statement in `b` satisfying `pred`, as the steps leading to the point right after it.
pub fn find_sites(b: &Block, pred: &dyn Fn(&Stmt) -> bool) -> Vec<Vec<Step>> {
    paths(b, &|i, s| {
        if pred(s) {
            // A site's own nested blocks are not searched: the path resumes after it.
            (vec![vec![Step::After(i)]], false)
        } else {
            (vec![], true)
        }
    })
}

/// Paths to the start of every catch clause catching `ty` (all catches when `None`).
pub fn find_catches(b: &Block, ty: Option<&str>) -> Vec<Vec<Step>> {
    catch_paths(b, &|c| ty.is_none_or(|t| c.types.iter().any(|x| x == t)))
}

/// Catch clauses annotated `@FlyMCCrashHandling` in a method (for in-source annotations).
pub fn annotated_catches(b: &Block) -> Vec<Vec<Step>> {
    catch_paths(b, &|c| {
        c.annots.iter().any(|a| a.name == "FlyMCCrashHandling")
    })
}

fn catch_paths(b: &Block, pred: &dyn Fn(&Catch) -> bool) -> Vec<Vec<Step>> {
    paths(b, &|i, s| {
        let mut found = Vec::new();
        if let StmtKind::Try { catches, .. } = &s.kind {
            for (k, c) in catches.iter().enumerate() {
                if pred(c) {
                    found.push(vec![Step::Into(i, k + 1), Step::Begin]);
                }
            }
        }
        (found, true)
    })
}

/// What a search finds in one statement: its region paths, and whether to search its blocks.
type Found = (Vec<Vec<Step>>, bool);

/// The region paths `here` finds at any depth of `b`. For statement `i`, `here` returns the
/// paths it finds in the statement itself (starting from `b`) and whether to search the
/// statement's blocks too. Only [`Child::Block`]s are searched: a region path can only enter
/// a block (`Step::Into`), never a loop's init statements.
fn paths(b: &Block, here: &dyn Fn(usize, &Stmt) -> Found) -> Vec<Vec<Step>> {
    let mut out = Vec::new();
    for (i, s) in b.stmts.iter().enumerate() {
        let (found, deeper) = here(i, s);
        out.extend(found);
        if !deeper {
            continue;
        }
        for child in s.children() {
            if let Child::Block(c, child) = child {
                for mut p in paths(child, here) {
                    p.insert(0, Step::Into(i, c));
                    out.push(p);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testing::java;
    use super::*;

    const SRC: &str = r#"
        class C {
            void f() {
                for (int i = recv(); i < 3; i++) { recv(); }
                try { recv(); } catch (IOException e) { recv(); } catch (RuntimeException e) { x(); }
            }
        }
    "#;

    #[test]
    fn sites_and_catches_are_found_as_region_paths() {
        let (prog, _) = java(SRC);
        let body = prog.classes["C"].methods[0].body.as_ref().unwrap();
        let calls_recv = |s: &Stmt| crate::ir::stmt_contains_call(s, "recv");
        // Sites nested in blocks, not the loop's init (no region path enters it).
        let leaves = |s: &Stmt| calls_recv(s) && s.children().is_empty();
        assert_eq!(
            find_sites(body, &leaves),
            [
                vec![Step::Into(0, 0), Step::After(0)],
                vec![Step::Into(1, 0), Step::After(0)],
                vec![Step::Into(1, 1), Step::After(0)],
            ]
        );
        // A site's own blocks are not searched further.
        assert_eq!(
            find_sites(body, &calls_recv),
            [vec![Step::After(0)], vec![Step::After(1)]]
        );
        assert_eq!(
            find_catches(body, Some("RuntimeException")),
            [vec![Step::Into(1, 2), Step::Begin]]
        );
        assert_eq!(find_catches(body, None).len(), 2);
        assert!(annotated_catches(body).is_empty());
    }
}
