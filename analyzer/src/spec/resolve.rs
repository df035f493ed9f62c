//! Resolving a side file against the program: every class, method, field and local it names
//! exists, and its tables become a [`Spec`].

use std::collections::BTreeSet;
use std::path::Path;

use super::means::{parse_means, split_params};
use super::side_file::{CallDecl, FaultDecl, MessageDecl, NodeStateDecl, QueueDecl, SideFile};
use super::{
    add_defaults, err, CallModel, CallPat, Declared, FaultSpec, HandlerSpec, MsgSpec, NodeVar,
    QueueModel, Spec, Summary,
};
use crate::ir::{Class, Method, Program, Stmt, StmtKind};
use crate::AnalyzeError;

fn class<'p>(
    prog: &'p Program,
    name: &str,
    file: &Path,
    what: &str,
) -> Result<&'p Class, AnalyzeError> {
    prog.classes.get(name).ok_or_else(|| {
        err(
            file,
            format!("{what} names class `{name}`, which is not in the analysed sources"),
        )
    })
}

fn method<'p>(
    c: &'p Class,
    name: &str,
    file: &Path,
    what: &str,
) -> Result<&'p Method, AnalyzeError> {
    c.methods.iter().find(|m| m.name == name).ok_or_else(|| {
        err(
            file,
            format!(
                "{what} names method `{}.{name}`, which does not exist",
                c.name
            ),
        )
    })
}

fn declares_local(stmts: &[Stmt], name: &str) -> bool {
    fn pat_binds(p: &crate::ir::Pat, name: &str) -> bool {
        use crate::ir::Pat;
        match p {
            Pat::Bind(n) => n == name,
            Pat::Tuple(ps) | Pat::Or(ps) => ps.iter().any(|p| pat_binds(p, name)),
            Pat::Variant { fields, .. } => fields.iter().any(|(_, p)| pat_binds(p, name)),
            _ => false,
        }
    }
    stmts.iter().any(|s| {
        let here = match &s.kind {
            StmtKind::Local { pat, .. } | StmtKind::ForEach { pat, .. } => pat_binds(pat, name),
            _ => false,
        };
        here || s.children().iter().any(|c| declares_local(c.stmts(), name))
    })
}

/// Resolve a side file against the program, a phase per kind of table.
pub fn from_side_file(side: &SideFile, prog: &Program, file: &Path) -> Result<Spec, AnalyzeError> {
    let mut r = Resolve {
        side,
        prog,
        file,
        spec: Spec::default(),
    };
    // A wrapper is often another crate's type (`validit::Valid`): it must wrap some type in
    // the sources, not be one of them.
    for w in &side.wrappers {
        if !prog.unwrapped.contains(w) {
            return Err(err(
                file,
                format!("wrappers names `{w}`, which wraps no type in the analysed sources"),
            ));
        }
    }
    for d in &side.node_state {
        r.node_state(d)?;
    }
    for m in &side.message {
        r.message(m)?;
    }
    for h in &side.handler {
        let cl = class(prog, &h.class, file, "[[handler]]")?;
        method(cl, &h.method, file, "[[handler]]")?;
        r.spec.handlers.push(HandlerSpec {
            class: h.class.clone(),
            method: h.method.clone(),
            message: h.message.clone(),
            receive: h.receive.clone(),
            guard: h.guard.clone(),
            kind: h.kind.clone(),
            reply: h.reply,
        });
    }
    r.spec.crashes = r.faults(&side.crash, "[[crash]]")?;
    r.spec.reboots = r.faults(&side.reboot, "[[reboot]]")?;
    if side.defaults {
        add_defaults(&mut r.spec);
    }
    r.dictionaries()?;
    for q in &side.queue {
        r.queue(q)?;
    }
    check_model_vars(&r.spec, file)?;
    Ok(r.spec)
}

/// A side file being resolved against the program into `spec`.
struct Resolve<'s> {
    side: &'s SideFile,
    prog: &'s Program,
    file: &'s Path,
    spec: Spec,
}

const NODE_STATE_FORMS: &str = "[[node_state]] needs `class` and `field`, `class`, `method` and `local`, or just `name` (a virtual variable)";

impl Resolve<'_> {
    /// A `[[node_state]]`: a field (or all of a class's), a method's local, or a virtual
    /// variable; with its parts and the variables it also stands for.
    fn node_state(&mut self, d: &NodeStateDecl) -> Result<(), AnalyzeError> {
        let (prog, file, spec) = (self.prog, self.file, &mut self.spec);
        let name_of = |f: &str| d.name.clone().unwrap_or_else(|| f.to_string());
        // A holder of parts is unreported: no guard compares it, its parts are the variables.
        let mut d = d.clone();
        if !d.parts.is_empty() {
            let (Some(_), Some(f)) = (&d.class, &d.field) else {
                return Err(err(
                    file,
                    "[[node_state]] `parts` needs `class` and `field`".into(),
                ));
            };
            let holder = name_of(f);
            if let Some(v) = d.parts.values().find(|v| **v == holder) {
                return Err(err(
                    file,
                    format!("[[node_state]] `{f}`: part `{v}` has the holder's own name; leave `name` out or name the holder apart from its parts"),
                ));
            }
            d.guards = false;
            d.also.extend(d.parts.values().cloned());
            spec.parts.insert(holder, d.parts.clone());
            for v in d.parts.values() {
                spec.virtuals.entry(v.clone()).or_insert(NodeVar {
                    name: v.clone(),
                    persistent: d.persistent,
                    guards: true,
                });
            }
        }
        let d = &d;
        let var = |name: String| NodeVar {
            name,
            persistent: d.persistent,
            guards: d.guards,
        };
        if !d.also.is_empty() {
            let (Some(_), Some(f)) = (&d.class, &d.field) else {
                return Err(err(
                    file,
                    "[[node_state]] `also` needs `class` and `field`".into(),
                ));
            };
            spec.also
                .entry(name_of(f))
                .or_default()
                .extend(d.also.iter().cloned());
        }
        match (&d.class, &d.field, &d.method, &d.local) {
            (Some(c), Some(f), None, None) => {
                let cl = class(prog, c, file, "[[node_state]]")?;
                if f == "*" {
                    for fname in cl
                        .fields
                        .iter()
                        .filter(|(_, x)| !x.is_static)
                        .map(|(n, _)| n)
                    {
                        spec.fields
                            .insert((c.clone(), fname.clone()), var(fname.clone()));
                    }
                } else {
                    if !cl.fields.contains_key(f) {
                        return Err(err(
                            file,
                            format!("[[node_state]] names field `{c}.{f}`, which does not exist"),
                        ));
                    }
                    spec.fields.insert((c.clone(), f.clone()), var(name_of(f)));
                }
            }
            (Some(c), None, Some(m), Some(l)) => {
                let cl = class(prog, c, file, "[[node_state]]")?;
                let me = method(cl, m, file, "[[node_state]]")?;
                let found = me
                    .body
                    .as_ref()
                    .is_some_and(|b| declares_local(&b.stmts, l));
                if !found {
                    return Err(err(
                        file,
                        format!("[[node_state]] names local `{l}` of `{c}.{m}`, which declares no such variable"),
                    ));
                }
                spec.locals
                    .insert((c.clone(), m.clone(), l.clone()), var(name_of(l)));
            }
            (None, None, None, None) => match &d.name {
                Some(n) => {
                    spec.virtuals.insert(n.clone(), var(n.clone()));
                }
                None => return Err(err(file, NODE_STATE_FORMS.into())),
            },
            _ => return Err(err(file, NODE_STATE_FORMS.into())),
        }
        Ok(())
    }

    /// A `[[message]]`: its class (unless external), kind field and `report` keys checked.
    fn message(&mut self, m: &MessageDecl) -> Result<(), AnalyzeError> {
        let (prog, file) = (self.prog, self.file);
        // A `report` key names a field the message has (a nested one, `vote.leader_id.term`,
        // by its first step): a misspelled key would silently drop every guard on the field.
        let fields: Option<BTreeSet<String>> = if m.external {
            (!m.fields.is_empty()).then(|| m.fields.iter().cloned().collect())
        } else if !prog.classes.contains_key(&m.class) {
            None // named as missing just below
        } else {
            let mut all = class_fields(prog, &m.class);
            all.extend(m.fields.iter().cloned());
            Some(all)
        };
        for key in m.report.iter().flat_map(|r| r.keys()) {
            let f = key.split('.').next().unwrap_or(key);
            if fields.as_ref().is_some_and(|fs| !fs.contains(f)) {
                let line = key_line(&self.side.text, key);
                return Err(err(
                    file,
                    format!(
                        "line {line}: [[message]] report names field `{}.{f}`, which the message does not have (its fields: {}); fix the key or add the field to `fields`",
                        m.class,
                        fields.iter().flatten().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
        if !m.external {
            let cl = class(prog, &m.class, file, "[[message]]")?;
            if let Some(kf) = &m.kind_field {
                if !cl.fields.contains_key(kf) && !cl.is_enum {
                    return Err(err(
                        file,
                        format!("[[message]] kind_field `{}.{kf}` does not exist", m.class),
                    ));
                }
            }
        }
        self.spec.messages.insert(
            m.class.clone(),
            MsgSpec {
                class: m.class.clone(),
                kind: m.kind.clone(),
                kind_field: m.kind_field.clone(),
                fields: m.fields.clone(),
                external: m.external,
                report: m.report.clone(),
            },
        );
        Ok(())
    }

    /// `[[crash]]` or `[[reboot]]` (`what`) entries: their methods and catch clauses exist.
    fn faults(&self, list: &[FaultDecl], what: &str) -> Result<Vec<FaultSpec>, AnalyzeError> {
        let (prog, file) = (self.prog, self.file);
        let mut out = Vec::new();
        for f in list {
            let cl = class(prog, &f.class, file, what)?;
            let me = method(cl, &f.method, file, what)?;
            if let Some(t) = &f.catch {
                if !has_catch(me, t) {
                    return Err(err(
                        file,
                        format!(
                            "{what} names a `catch ({t} ...)` in `{}.{}`, which has none",
                            f.class, f.method
                        ),
                    ));
                }
            }
            let peer = match f.side.as_deref() {
                None | Some("peer") => true,
                Some("self") => false,
                Some(o) => {
                    return Err(err(
                        file,
                        format!("{what} side `{o}` is not `peer` or `self`"),
                    ))
                }
            };
            out.push(FaultSpec {
                class: f.class.clone(),
                method: f.method.clone(),
                catch: f.catch.clone(),
                peer,
            });
        }
        Ok(out)
    }

    /// The send, pure, disk and call dictionaries (and where each pattern is declared).
    fn dictionaries(&mut self) -> Result<(), AnalyzeError> {
        let side = self.side;
        for s in &side.send {
            self.declare("send", s);
        }
        for s in &side.pure {
            self.declare("pure", s);
        }
        for d in &side.disk {
            self.declare("[[disk]]", &d.call);
        }
        let calls: Vec<(String, Option<Vec<String>>)> =
            side.call.iter().map(|c| split_params(&c.call)).collect();
        for (c, _) in &calls {
            self.declare("[[call]]", c);
        }
        for q in &side.queue {
            self.declare("[[queue]]", &q.call);
        }
        let spec = &mut self.spec;
        for s in &side.send {
            spec.sends.insert(CallPat::parse(s));
        }
        for s in &side.pure {
            spec.pure.insert(CallPat::parse(s));
        }
        // The side file's entries on a pattern replace a default one, and combine with each other.
        let mut own = BTreeSet::new();
        for d in &side.disk {
            let p = CallPat::parse(&d.call);
            if own.insert(p.clone()) {
                spec.disks.insert(p.clone(), vec![]);
            }
            spec.disks.entry(p).or_default().push(d.file.clone());
        }
        for (c, (pat, params)) in side.call.iter().zip(&calls) {
            let summary = self.summary(c, params.as_ref())?;
            self.spec.models.push(CallModel {
                pat: CallPat::parse(pat),
                summary,
                read: c.read.clone(),
                update: c.update.clone(),
                increments: c.increments.clone(),
                send: c.send,
                disk: c.disk.clone(),
                returns: c.returns.clone(),
            });
        }
        Ok(())
    }

    /// Record where pattern `raw` of table or key `what` is written.
    fn declare(&mut self, what: &str, raw: &str) {
        // the n-th table entry on this pattern is its n-th `call = "raw"` line
        let nth = self
            .spec
            .declared
            .iter()
            .filter(|d| d.what == what && d.pat == CallPat::parse(raw))
            .count();
        let quoted = format!("\"{raw}\"");
        let table = what.starts_with('[');
        let line = self
            .side
            .text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.contains(&quoted) && l.trim_start().starts_with("call") == table)
            .nth(if table { nth } else { 0 })
            .map_or(0, |(i, _)| i + 1);
        self.spec.declared.push(Declared {
            what: what.into(),
            pat: CallPat::parse(raw),
            line,
        });
    }

    /// A `[[call]]`'s summary: `means` over the parameters its `call` names (both or neither).
    fn summary(
        &self,
        c: &CallDecl,
        params: Option<&Vec<String>>,
    ) -> Result<Option<Summary>, AnalyzeError> {
        let file = self.file;
        match (params, &c.means) {
            (Some(params), Some(means)) => {
                let body = parse_means(means, params).map_err(|e| {
                    let (line, col) = text_position(&self.side.text, means, e.column);
                    err(
                        file,
                        format!("line {line}, column {col}: [[call]] `{}` means: {}", c.call, e.message),
                    )
                })?;
                Ok(Some(Summary {
                    params: params.clone(),
                    body,
                }))
            }
            (None, None) => Ok(None),
            (None, Some(_)) => Err(err(
                file,
                format!("[[call]] `{}` has `means` but names no parameters: write them in `call`, e.g. `Commit.isAfter(a, b)` (the receiver first)", c.call),
            )),
            (Some(_), None) => Err(err(
                file,
                format!("[[call]] `{}` names parameters but says nothing they mean: add `means = \"...\"` over them, or drop the parentheses", c.call),
            )),
        }
    }

    /// A `[[queue]]`: `run` is a method of the sources taking the command.
    fn queue(&mut self, q: &QueueDecl) -> Result<(), AnalyzeError> {
        let (prog, file) = (self.prog, self.file);
        let Some((c, m)) = q.run.rsplit_once('.') else {
            return Err(err(
                file,
                format!("[[queue]] run `{}` must be `Class.method`", q.run),
            ));
        };
        let cl = class(prog, c, file, "[[queue]]")?;
        let me = method(cl, m, file, "[[queue]]")?;
        if me.params.len() != 1 {
            return Err(err(
                file,
                format!(
                    "[[queue]] run `{}` must take the command as its one parameter",
                    q.run
                ),
            ));
        }
        self.spec.queues.push(QueueModel {
            pat: CallPat::parse(&q.call),
            class: c.to_string(),
            method: m.to_string(),
        });
        Ok(())
    }
}

/// The fields of class `c` and its supertypes in the sources, with those its getters name
/// (`getTerm()`: `term`) and its enum variants' fields.
pub(crate) fn class_fields(prog: &Program, c: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut todo = vec![c.to_string()];
    let mut seen = BTreeSet::new();
    while let Some(c) = todo.pop() {
        if !seen.insert(c.clone()) {
            continue;
        }
        let Some(cl) = prog.classes.get(&c) else {
            continue;
        };
        out.extend(cl.fields.keys().cloned());
        out.extend(cl.variants.iter().flat_map(|v| v.fields.iter().cloned()));
        out.extend(
            cl.methods
                .iter()
                .filter(|m| m.params.is_empty())
                .filter_map(|m| crate::exec::getter_field(&m.name)),
        );
        todo.extend(cl.supers.iter().cloned());
    }
    out
}

/// The side file's line that writes `key` as a key (`key =` or `"key" =`); 0 if none does.
fn key_line(text: &str, key: &str) -> usize {
    let quoted = format!("\"{key}\"");
    text.lines()
        .position(|l| {
            l.contains(&quoted)
                || l.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                    .any(|w| w == key)
        })
        .map_or(0, |i| i + 1)
}

/// The 1-based line and column in the side file of `column` (1-based) within the first
/// quoted occurrence of `inner` (0, 0 when it is not found verbatim, e.g. it had escapes).
fn text_position(text: &str, inner: &str, column: usize) -> (usize, usize) {
    let quoted = format!("\"{inner}\"");
    text.lines()
        .enumerate()
        .find_map(|(i, l)| {
            l.find(&quoted)
                .map(|at| (i + 1, l[..at].chars().count() + 1 + column))
        })
        .unwrap_or((0, 0))
}

fn check_model_vars(spec: &Spec, file: &Path) -> Result<(), AnalyzeError> {
    let vars = spec.all_vars();
    for m in &spec.models {
        for v in m
            .read
            .iter()
            .chain(&m.update)
            .chain(&m.increments)
            .chain(m.returns.iter())
        {
            if !vars.contains_key(v) {
                return Err(err(
                    file,
                    format!(
                        "[[call]] `{}` names variable `{v}`, which no [[node_state]] declares",
                        m.pat
                    ),
                ));
            }
        }
        for v in m.summary.iter().flat_map(Summary::node_vars) {
            if !vars.contains_key(&v) {
                return Err(err(
                    file,
                    format!(
                        "[[call]] `{}` means reads `n.{v}`, which no [[node_state]] declares",
                        m.pat
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn has_catch(m: &Method, ty: &str) -> bool {
    fn walk(stmts: &[Stmt], ty: &str) -> bool {
        stmts.iter().any(|s| {
            let here = match &s.kind {
                StmtKind::Try { catches, .. } => {
                    catches.iter().any(|c| c.types.iter().any(|t| t == ty))
                }
                _ => false,
            };
            here || s.children().iter().any(|c| walk(c.stmts(), ty))
        })
    }
    m.body.as_ref().is_some_and(|b| walk(&b.stmts, ty))
}
