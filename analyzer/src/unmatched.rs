//! Side-file call patterns that match no call the walk reached: each is a warning (a gap)
//! naming the pattern and the call sites in the sources nearest to it, since a pattern that
//! silently matches nothing leaves send, disk or update sets empty.

use std::collections::{BTreeMap, BTreeSet};

use crate::ir::{Block, Expr, Program, Stmt};
use crate::spec::{CallPat, Spec};
use crate::Gap;

/// How many candidates a warning names.
const CANDIDATES: usize = 3;

/// The warnings for `spec.declared` patterns not in `matched`; `side_file` names the file.
pub fn report(
    prog: &Program,
    spec: &Spec,
    matched: &BTreeSet<CallPat>,
    side_file: &str,
) -> Vec<Gap> {
    let mut seen = BTreeSet::new();
    let mut sites: Option<Vec<Site>> = None;
    let mut out = Vec::new();
    for d in &spec.declared {
        let (what, p) = (&d.what, &d.pat);
        if matched.contains(p) || !seen.insert((what, p)) {
            continue;
        }
        let sites = sites.get_or_insert_with(|| call_sites(prog));
        let present: Vec<String> = sites
            .iter()
            .filter(|s| written_as(p, s))
            .take(CANDIDATES)
            .map(|s| format!("`{}` ({})", s.text, s.at))
            .collect();
        if !present.is_empty() {
            // the call is in the sources, but no handler reaches it (another thread, a
            // callback, code the handlers do not call)
            out.push(Gap {
                file: side_file.into(),
                line: d.line,
                column: usize::from(d.line > 0),
                message: format!(
                    "{what} pattern `{p}` matches calls in the sources ({}) but none is reachable from any handler or crash path (run on another thread or a callback?): add a handler for the code that makes them, or drop the pattern",
                    present.join(", ")
                ),
            });
            continue;
        }
        let near = nearest(p, sites);
        // `pure` is only asked of calls on node state
        let calls = if what == "pure" {
            "call on node state"
        } else {
            "call"
        };
        let hint = if near.is_empty() {
            "no call of that name or a similar one is in the analysed sources".to_string()
        } else {
            format!("nearest calls seen: {}", near.join(", "))
        };
        out.push(Gap {
            file: side_file.into(),
            line: d.line,
            column: usize::from(d.line > 0),
            message: format!(
                "{what} pattern `{p}` matches no {calls} reached from a handler or crash path; {hint}"
            ),
        });
    }
    out
}

/// A call in the sources: its text (`MessagingService.instance().sendReply`), the method's
/// name, the last name of its receiver, and where.
struct Site {
    text: String,
    name: String,
    qual: Option<String>,
    /// The declared type of that receiver, when it is a field of the class or a parameter.
    qual_ty: Option<String>,
    ctor: bool,
    at: String,
}

/// Where call sites are collected: the file, and the declared types of the names in scope
/// (the class's fields and the method's parameters).
struct Where {
    file: String,
    types: BTreeMap<String, String>,
}

fn call_sites(prog: &Program) -> Vec<Site> {
    let mut out = Vec::new();
    let methods = prog
        .classes
        .values()
        .flat_map(|c| c.methods.iter())
        .chain(prog.functions.values());
    for m in methods {
        let Some(b) = &m.body else {
            continue;
        };
        let fields = prog.classes.get(&m.class).into_iter().flat_map(|c| {
            c.fields
                .values()
                .filter_map(|f| Some((f.name.clone(), f.ty.clone()?)))
        });
        let params = m
            .params
            .iter()
            .filter_map(|p| Some((p.name.clone(), p.ty.clone()?)));
        let at = Where {
            file: crate::exec::file_name(&m.file),
            types: fields.chain(params).collect(),
        };
        block(b, &at, &mut out);
    }
    out
}

fn block(b: &Block, file: &Where, out: &mut Vec<Site>) {
    for s in &b.stmts {
        stmt(s, file, out);
    }
    if let Some(e) = &b.tail {
        expr(e, file, out);
    }
}

fn stmt(s: &Stmt, file: &Where, out: &mut Vec<Site>) {
    for e in s.exprs() {
        expr(e, file, out);
    }
    for c in s.children() {
        for s in c.stmts() {
            stmt(s, file, out);
        }
        if let Some(e) = c.tail() {
            expr(e, file, out);
        }
    }
}

fn expr(e: &Expr, file: &Where, out: &mut Vec<Site>) {
    match e {
        Expr::Call {
            recv,
            name,
            args,
            line,
        } => {
            let text = match recv {
                Some(r) => format!("{}.{name}", render(r)),
                None => name.clone(),
            };
            let qual = recv.as_deref().and_then(last_name);
            out.push(Site {
                text,
                name: name.clone(),
                qual_ty: match recv.as_deref() {
                    Some(Expr::Name(n)) => file.types.get(n).cloned(),
                    Some(Expr::Field(t, n)) if matches!(**t, Expr::This) => {
                        file.types.get(n).cloned()
                    }
                    _ => None,
                },
                qual,
                ctor: false,
                at: format!("{}:{line}", file.file),
            });
            if let Some(r) = recv {
                expr(r, file, out);
            }
            for a in args {
                expr(a, file, out);
            }
        }
        Expr::New { ty, args, line } => {
            out.push(Site {
                text: format!("new {ty}"),
                name: ty.clone(),
                qual: None,
                qual_ty: None,
                ctor: true,
                at: format!("{}:{line}", file.file),
            });
            for a in args {
                expr(a, file, out);
            }
        }
        Expr::Field(a, _)
        | Expr::Unary(_, a)
        | Expr::IncDec { target: a, .. }
        | Expr::Try(a)
        | Expr::InstanceOf(a, _)
        | Expr::Let(_, a) => expr(a, file, out),
        Expr::Index(a, b) | Expr::Bin(_, a, b) => {
            expr(a, file, out);
            expr(b, file, out);
        }
        Expr::Assign { target, value, .. } => {
            expr(target, file, out);
            expr(value, file, out);
        }
        Expr::Cond(a, b, c, _) => {
            expr(a, file, out);
            expr(b, file, out);
            expr(c, file, out);
        }
        Expr::Tuple(xs) | Expr::Opaque(xs) => {
            for a in xs {
                expr(a, file, out);
            }
        }
        Expr::Struct { fields, .. } => {
            for (_, a) in fields {
                expr(a, file, out);
            }
        }
        Expr::Lambda { body, .. } => block(body, file, out),
        Expr::Stmt(s) => stmt(s, file, out),
        Expr::Lit(_) | Expr::Name(_) | Expr::This | Expr::Path(_) => {}
    }
}

/// Is `s` written as a call `p` matches (same method, and the pattern's qualifier as the
/// receiver's last name or anywhere in the receiver's text)? Static types are not known
/// here, so this is how the call reads, not what the walk would match.
fn written_as(p: &CallPat, s: &Site) -> bool {
    s.ctor == p.ctor
        && s.name == p.name
        && p.qual.as_ref().is_none_or(|q| {
            s.qual.as_deref() == Some(q.as_str())
                || s.qual_ty.as_deref() == Some(q.as_str())
                || s.text.contains(q.as_str())
        })
}

/// The name a receiver ends in (`zk.getZKDatabase()`: `getZKDatabase`).
fn last_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Name(n) | Expr::Field(_, n) | Expr::Call { name: n, .. } => Some(n.clone()),
        Expr::Path(p) => p.last().cloned(),
        _ => None,
    }
}

/// A receiver as written, calls kept (`MessagingService.instance()`), anything else `..`.
fn render(e: &Expr) -> String {
    match e {
        Expr::Name(n) => n.clone(),
        Expr::This => "this".into(),
        Expr::Path(p) => p.join("."),
        Expr::Field(a, f) => format!("{}.{f}", render(a)),
        Expr::Call { recv, name, .. } => match recv {
            Some(r) => format!("{}.{name}()", render(r)),
            None => format!("{name}()"),
        },
        Expr::Unary(_, a) | Expr::Try(a) => render(a),
        _ => "..".into(),
    }
}

/// The sites nearest `p`: calls of the same method (any receiver), then of a method whose
/// name is a few edits away; within each, those whose text names the pattern's qualifier
/// first (`MessagingService.instance().sendReply` for `MessagingService.sendRepl`).
fn nearest(p: &CallPat, sites: &[Site]) -> Vec<String> {
    let mut scored: Vec<(usize, bool, &Site)> = Vec::new();
    for s in sites.iter().filter(|s| s.ctor == p.ctor) {
        let d = distance(&p.name, &s.name);
        let qual_d = match (&p.qual, &s.qual) {
            (Some(q), Some(sq)) => distance(q, sq),
            _ => usize::MAX,
        };
        let names_qual = p.qual.as_ref().is_some_and(|q| s.text.contains(q.as_str()));
        // a method a few edits away, or the same receiver name with a similar method
        let close =
            d <= (p.name.len() / 4).max(1) || (qual_d <= 1 && d <= (p.name.len() / 2).max(2));
        if close {
            scored.push((d, !names_qual, s));
        }
    }
    scored.sort_by(|a, b| (a.0, a.1, &a.2.text).cmp(&(b.0, b.1, &b.2.text)));
    let mut texts = BTreeSet::new();
    let mut out = Vec::new();
    for (_, _, s) in scored {
        if texts.insert(s.text.clone()) {
            out.push(format!("`{}` ({})", s.text, s.at));
        }
        if out.len() == CANDIDATES {
            break;
        }
    }
    out
}

/// Levenshtein distance, by characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(distance("sendReply", "sendReply"), 0);
        assert_eq!(distance("sendRepl", "sendReply"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
    }
}
