//! From handler paths to a sets file.
//!
//! Every handler yields path groups: the atoms (branch conditions over `n.` and `m.`) they took
//! and the sets they touched. Message kinds: a handler's paths go to the kinds its message can
//! be (see analyzer/README.md, "Message kinds"). For each kind, every distinct atom set becomes
//! an entry whose guard is their conjunction and whose sets are the union over *all* path groups
//! of that kind whose atoms do not contradict it: conditions the guard language could not express
//! were dropped, so a path with a weaker guard may be the one that runs. Entries are ordered most
//! specific first and end with a catch-all `true` entry (the union of everything), so the first
//! entry whose guard holds always covers the path that actually runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use flymc_model::guard::{self, Expr as GExpr, Op, Scope};
use flymc_model::sets::{RawEntry, RawFault, RawMessage, RawSets, FORMAT, VERSION};

use crate::exec::{self, Exec, Origins, Sets, St, Status, Step, Val, KIND_FIELD};
use crate::ir::{rename, snake, Method, Pat, Program, Stmt, StmtKind};
use crate::spec::{FaultSpec, HandlerSpec, Spec};
use crate::sym::{guard_text, inconsistent, Atom, SOp, Sym};
use crate::{AnalyzeError, Gap};

/// One handler's run.
#[derive(Clone, Debug)]
pub struct HandlerReport {
    pub name: String,
    pub file: String,
    /// The handler method's line (which overload was analysed).
    pub line: usize,
    pub message_class: String,
    pub kinds: Vec<String>,
    /// Path groups found (after merging).
    pub paths: usize,
    pub opaque_conditions: Vec<(String, usize)>,
    pub external_calls: Vec<String>,
}

/// Per message kind: the handlers that contribute.
#[derive(Clone, Debug, Default)]
pub struct KindReport {
    pub handlers: Vec<String>,
    pub paths: usize,
    /// Per entry (in the sets file's order): where each variable entered each set.
    pub origins: Vec<Origins>,
}

pub struct Output {
    pub sets: RawSets,
    pub gaps: Vec<Gap>,
    pub handlers: Vec<HandlerReport>,
    pub kinds: BTreeMap<String, KindReport>,
}

struct PathOut {
    atoms: Vec<Atom>,
    sets: Sets,
}

fn gap(file: &str, line: usize, message: String) -> Gap {
    Gap {
        file: file.into(),
        line,
        column: if line == 0 { 0 } else { 1 },
        message,
    }
}

fn method<'p>(prog: &'p Program, class: &str, name: &str) -> Option<&'p Method> {
    if class.is_empty() {
        return prog.functions.get(name);
    }
    let c = prog.classes.get(class)?;
    let mut ms: Vec<&Method> = c.methods.iter().filter(|m| m.name == name).collect();
    ms.sort_by_key(|m| m.body.is_none());
    ms.first().copied()
}

/// The overload a handler names: the one annotated `@FlyMCHandler`, else those whose
/// message `message_of` finds (a parameter of a message class, or the one `message` names).
/// Returns the first and the other candidates (several: the caller warns, naming them).
fn handler_method<'p>(
    prog: &'p Program,
    spec: &Spec,
    h: &HandlerSpec,
    wf: &str,
) -> Result<(&'p Method, Vec<&'p Method>), AnalyzeError> {
    let missing = || AnalyzeError::Annotation {
        file: wf.into(),
        message: format!("handler `{}.{}` does not exist", h.class, h.method),
    };
    if h.class.is_empty() {
        return Ok((
            method(prog, &h.class, &h.method).ok_or_else(missing)?,
            vec![],
        ));
    }
    let c = prog.classes.get(&h.class).ok_or_else(missing)?;
    let all: Vec<&Method> = c
        .methods
        .iter()
        .filter(|m| m.name == h.method && m.body.is_some())
        .collect();
    let annotated: Vec<&Method> = all
        .iter()
        .copied()
        .filter(|m| m.annots.iter().any(|a| a.name == "FlyMCHandler"))
        .collect();
    let fitting: Vec<&Method> = all
        .iter()
        .copied()
        .filter(|m| message_of(prog, spec, h, m, wf).is_ok())
        .collect();
    let pick = [annotated, fitting]
        .into_iter()
        .find(|ms| !ms.is_empty())
        .unwrap_or(all);
    match pick.split_first() {
        Some((m, rest)) => Ok((m, rest.to_vec())),
        None => method(prog, &h.class, &h.method)
            .map(|m| (m, vec![]))
            .ok_or_else(missing),
    }
}

/// `Class.method(T, U) at File.java:12`.
fn signature(m: &Method) -> String {
    format!(
        "{}.{}({}) at {}:{}",
        m.class,
        m.name,
        m.params
            .iter()
            .map(|p| p.ty.clone().unwrap_or_else(|| "_".into()))
            .collect::<Vec<_>>()
            .join(", "),
        exec::file_name(&m.file),
        m.line
    )
}

fn local_type(stmts: &[Stmt], name: &str) -> Option<String> {
    for s in stmts {
        if let StmtKind::Local {
            pat: Pat::Bind(n),
            ty: Some(t),
            ..
        } = &s.kind
        {
            if n == name {
                return Some(t.clone());
            }
        }
        if let Some(t) = s
            .children()
            .iter()
            .find_map(|c| local_type(c.stmts(), name))
        {
            return Some(t);
        }
    }
    None
}

fn declares(s: &Stmt, name: &str) -> bool {
    matches!(&s.kind, StmtKind::Local { pat: Pat::Bind(n), .. } if n == name)
}

fn calls_with_arg(s: &Stmt, call: &str, arg: &str) -> bool {
    use crate::ir::Expr;
    fn in_expr(e: &Expr, call: &str, arg: &str) -> bool {
        match e {
            Expr::Call {
                recv, name, args, ..
            } => {
                (name == call && args.iter().any(|a| matches!(a, Expr::Name(n) if n == arg)))
                    || recv.as_deref().is_some_and(|r| in_expr(r, call, arg))
                    || args.iter().any(|a| in_expr(a, call, arg))
            }
            Expr::Assign { value, .. } => in_expr(value, call, arg),
            Expr::Unary(_, a) => in_expr(a, call, arg),
            _ => false,
        }
    }
    match &s.kind {
        StmtKind::Expr(e) => in_expr(e, call, arg),
        StmtKind::Local { init: Some(e), .. } => in_expr(e, call, arg),
        _ => false,
    }
}

/// A handler guard may name only declared node variables and the message's fields (flymc
/// would reject the sets file, or the guard could never be evaluated).
fn check_guard_names(
    prog: &Program,
    spec: &Spec,
    h: &HandlerSpec,
    g: &str,
    sym: &Sym,
    msg_class: &str,
    wf: &str,
) -> Result<(), AnalyzeError> {
    let bad = |message: String| AnalyzeError::Annotation {
        file: wf.into(),
        message: format!("handler `{}.{}` guard `{g}` {message}", h.class, h.method),
    };
    let list = |s: &BTreeSet<String>| {
        if s.is_empty() {
            "none".to_string()
        } else {
            s.iter().cloned().collect::<Vec<_>>().join(", ")
        }
    };
    let vars: BTreeSet<String> = spec.all_vars().into_keys().collect();
    let mut used = BTreeSet::new();
    sym.node_vars(&mut used);
    if let Some(v) = used.iter().find(|v| !vars.contains(*v)) {
        return Err(bad(format!(
            "names node variable `n.{v}`, which no node state declares (declared: {})",
            list(&vars)
        )));
    }
    let mut used = BTreeSet::new();
    sym.msg_fields(&mut used);
    let Some(f) = used.iter().next() else {
        return Ok(());
    };
    if msg_class.is_empty() {
        return Err(bad(format!(
            "names message field `m.{f}`, but the handler has no message"
        )));
    }
    let Some(fields) = message_fields(prog, spec, msg_class) else {
        return Ok(()); // a class outside the sources with no declared fields: nothing to check
    };
    if let Some(f) = used.iter().find(|f| !fields.contains(*f)) {
        return Err(bad(format!(
            "names message field `m.{f}`, which message `{msg_class}` does not have (fields: {})",
            list(&fields)
        )));
    }
    Ok(())
}

/// The fields a guard may name on `class`: its fields (and its supertypes', getters' and enum
/// variants'), the side file's `fields` and `report` names, the kind field. None when nothing
/// is known of the class.
fn message_fields(prog: &Program, spec: &Spec, class: &str) -> Option<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    let ms = spec.messages.get(class);
    if let Some(m) = ms {
        out.extend(m.fields.iter().cloned());
        out.extend(m.kind_field.iter().cloned());
        for (k, v) in m.report.iter().flatten() {
            out.insert(k.clone());
            out.insert(v.clone());
        }
    }
    let known = !out.is_empty() || prog.classes.contains_key(class);
    out.extend(crate::spec::class_fields(prog, class));
    out.insert(KIND_FIELD.into());
    known.then_some(out)
}

fn guard_to_sym(e: &GExpr) -> Option<Sym> {
    Some(match e {
        GExpr::Lit(v) => match v {
            serde_json::Value::Bool(b) => Sym::Bool(*b),
            serde_json::Value::Null => Sym::Null,
            serde_json::Value::String(s) => Sym::Str(s.clone()),
            serde_json::Value::Number(n) => Sym::Int(n.as_i64()?),
            _ => return None,
        },
        GExpr::Var { scope, path } if path.len() == 1 => match scope {
            Scope::Node => Sym::N(path[0].clone()),
            Scope::Msg => Sym::M(path[0].clone()),
            // Conditions over a global state; sets-file guards never hold them.
            Scope::At(_) | Scope::Param(_) => return None,
        },
        GExpr::Var { .. }
        | GExpr::Quant(..)
        | GExpr::Unique(..)
        | GExpr::Take(..)
        | GExpr::History(..) => return None,
        GExpr::Not(a) => Sym::Not(Box::new(guard_to_sym(a)?)),
        GExpr::Neg(a) => Sym::Neg(Box::new(guard_to_sym(a)?)),
        GExpr::Len(a) => Sym::Len(Box::new(guard_to_sym(a)?)),
        GExpr::Bin(a, op, b) => {
            let op = match op {
                Op::Or => SOp::Or,
                Op::And => SOp::And,
                Op::Eq => SOp::Eq,
                Op::Ne => SOp::Ne,
                Op::Lt => SOp::Lt,
                Op::Le => SOp::Le,
                Op::Gt => SOp::Gt,
                Op::Ge => SOp::Ge,
                Op::Add => SOp::Add,
                Op::Sub => SOp::Sub,
            };
            Sym::bin(guard_to_sym(a)?, op, guard_to_sym(b)?)
        }
    })
}

fn where_of(spec_file: Option<&Path>) -> String {
    spec_file
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "annotations".into())
}

/// How a handler's message maps to kinds.
enum Kinds {
    Fixed(String),
    /// By a discriminator field (`m.type` constants; `@kind` for Rust enums) with the kinds
    /// known up front (enum variants: name -> value).
    Field(String, Vec<(String, Sym)>),
}

/// One handler's analysis: what it reports, its message class and how that maps to kinds,
/// and the path groups found.
struct HandlerRun {
    report: HandlerReport,
    msg_class: String,
    kinds: Kinds,
    paths: Vec<PathOut>,
}

/// What the phases of a run share: the program, the spec, where the spec came from, and what
/// they found on the way (gaps, and the dictionary patterns some call matched).
struct Run<'p> {
    prog: &'p Program,
    spec: &'p Spec,
    /// Where the spec came from, for errors.
    wf: String,
    gaps: Vec<Gap>,
    /// The dictionary patterns some call matched (see `unmatched`).
    matched: BTreeSet<crate::spec::CallPat>,
}

/// The analysis in three phases: every handler's paths, the paths by message kind, and the
/// sets file (with crashes and reboots).
pub fn run(
    prog: &Program,
    spec: &Spec,
    system: &str,
    spec_file: Option<&Path>,
) -> Result<Output, AnalyzeError> {
    if spec.handlers.is_empty() {
        return Err(AnalyzeError::NoHandlers(
            "no message handler is annotated (@FlyMCHandler, or [[handler]] in the side file)"
                .into(),
        ));
    }
    let mut r = Run {
        prog,
        spec,
        wf: where_of(spec_file),
        gaps: Vec::new(),
        matched: BTreeSet::new(),
    };
    let mut reports = Vec::new();
    // message class -> the handlers' paths
    let mut by_class: BTreeMap<String, Vec<(usize, Vec<PathOut>)>> = BTreeMap::new();
    let mut class_kinds: BTreeMap<String, Kinds> = BTreeMap::new();
    for (hi, h) in spec.handlers.iter().enumerate() {
        let run = r.handler(h)?;
        class_kinds
            .entry(run.msg_class.clone())
            .or_insert(run.kinds);
        reports.push(run.report);
        by_class
            .entry(run.msg_class)
            .or_default()
            .push((hi, run.paths));
    }
    let (kind_paths, mut kind_reports) = r.by_kind(&by_class, &class_kinds, &mut reports);
    let mut messages = BTreeMap::new();
    for (kind, paths) in &kind_paths {
        let (entries, fields, origins) = entries_for(paths);
        let k = kind_reports.entry(kind.clone()).or_default();
        k.paths = paths.len();
        k.origins = origins;
        messages.insert(kind.clone(), RawMessage { fields, entries });
    }
    let sets = r.sets(system, messages)?;
    Ok(Output {
        sets,
        gaps: r.gaps,
        handlers: reports,
        kinds: kind_reports,
    })
}

impl Run<'_> {
    /// Walk one handler from where it receives its message to its end.
    fn handler(&mut self, h: &HandlerSpec) -> Result<HandlerRun, AnalyzeError> {
        let (prog, spec) = (self.prog, self.spec);
        let wf = self.wf.clone();
        let (m, others) = handler_method(prog, spec, h, &wf)?;
        if !others.is_empty() {
            self.gaps.push(gap(
                &exec::file_name(&m.file),
                m.line,
                format!(
                    "handler `{}.{}` names {} overloads that could handle the message ({}); the one at line {} was analysed: annotate that one, or name the message parameter with `message`",
                    h.class,
                    h.method,
                    others.len() + 1,
                    std::iter::once(m).chain(others.iter().copied()).map(signature).collect::<Vec<_>>().join(", "),
                    m.line
                ),
            ));
        }
        let (msg_var, is_param, msg_class) = message_of(prog, spec, h, m, &wf)?;
        let mut ex = Exec::new(prog, spec);
        let mut init = ex.initial(m, BTreeMap::new());
        let msg = ex.msg_val(&msg_class);
        let guard_atoms = self.handler_guard(h, &msg_class)?;
        let body = m.body.as_ref().ok_or_else(|| AnalyzeError::Annotation {
            file: wf.clone(),
            message: format!("handler `{}.{}` has no body", h.class, h.method),
        })?;
        let sites: Vec<Vec<Step>> = if is_param {
            Exec::bind_local(&mut init, &msg_var, msg.clone());
            vec![vec![Step::Begin]]
        } else {
            receive_sites(h, body, &msg_var, &wf)?
        };
        ex.set_stop_call(h.receive.clone());
        let mut finals: Vec<St> = Vec::new();
        for site in &sites {
            let mut st = init.clone();
            Exec::bind_local(&mut st, &msg_var, msg.clone());
            let start = match &guard_atoms {
                Some(g) => ex.assume(st, g.clone(), true),
                None => vec![st],
            };
            finals.extend(ex.run_from(body, site, start));
        }
        // The commands the handler queued run after it, as part of the same event.
        let (drained, complete) = ex.drain_queue(finals);
        let mut finals = drained;
        let here = |message: String| gap(&exec::file_name(&m.file), m.line, message);
        if !complete {
            self.gaps.push(here(format!(
                "handler `{}.{}`: commands kept queueing commands; the queue was run 4 rounds deep",
                h.class, h.method
            )));
        }
        if ex.over_budget() {
            self.gaps.push(here(format!(
                "handler `{}.{}`: the analysis hit its step limit; paths were cut short",
                h.class, h.method
            )));
        }
        if h.reply {
            // What the handler returns goes back to the sender.
            for st in &mut finals {
                if let Some(v) = st.val.clone() {
                    ex.record_send(st, &v.all_taint());
                }
            }
        }
        let report = spec
            .messages
            .get(&msg_class)
            .and_then(|m| m.report.as_ref());
        let paths: Vec<PathOut> = finals
            .into_iter()
            .map(|s| {
                let mut p = PathOut {
                    atoms: s.atoms,
                    sets: s.sets,
                };
                p.sets.sent_under_control();
                p.sets.widen(spec);
                if let Some(r) = report {
                    as_reported(&mut p, r);
                }
                p
            })
            .collect();
        let seen = ex.seen.into_inner();
        self.matched.extend(seen.matched.iter().cloned());
        self.seen_gaps(h, m, &seen);
        Ok(HandlerRun {
            report: HandlerReport {
                name: format!(
                    "{}.{}",
                    if h.class.is_empty() { "fn" } else { &h.class },
                    h.method
                ),
                file: exec::file_name(&m.file),
                line: m.line,
                message_class: msg_class.clone(),
                kinds: vec![],
                paths: paths.len(),
                opaque_conditions: seen.opaque_conditions.into_iter().collect(),
                external_calls: seen.external_calls.into_iter().collect(),
            },
            kinds: kinds_of(prog, spec, h, &msg_class),
            msg_class,
            paths,
        })
    }

    /// The handler's own guard, checked against the declared names.
    fn handler_guard(&self, h: &HandlerSpec, msg_class: &str) -> Result<Option<Sym>, AnalyzeError> {
        let Some(g) = &h.guard else {
            return Ok(None);
        };
        let e = guard::parse(g).map_err(|e| AnalyzeError::Annotation {
            file: self.wf.clone(),
            message: format!(
                "handler `{}.{}` guard `{g}` does not parse: {e}",
                h.class, h.method
            ),
        })?;
        let sym = guard_to_sym(&e).ok_or_else(|| AnalyzeError::Annotation {
            file: self.wf.clone(),
            message: format!(
                "handler `{}.{}` guard `{g}` uses nested paths",
                h.class, h.method
            ),
        })?;
        check_guard_names(self.prog, self.spec, h, g, &sym, msg_class, &self.wf)?;
        Ok(Some(sym))
    }

    /// What the walk of handler `h` (method `m`) noted, as gaps.
    fn seen_gaps(&mut self, h: &HandlerSpec, m: &Method, seen: &exec::Seen) {
        for n in &seen.notes {
            self.gaps.push(gap(
                &n.file,
                n.line,
                format!("{}.{}: {}", h.class, h.method, n.message),
            ));
        }
        if !seen.opaque_conditions.is_empty() {
            let lines: Vec<String> = seen
                .opaque_conditions
                .iter()
                .take(12)
                .map(|(f, l)| format!("{f}:{l}"))
                .collect();
            self.gaps.push(gap(
                &exec::file_name(&m.file),
                0,
                format!(
                    "handler `{}.{}`: {} branch condition(s) could not become guards (they depend on values the guard language cannot express); both sides were kept: {}{}",
                    h.class,
                    h.method,
                    seen.opaque_conditions.len(),
                    lines.join(", "),
                    if seen.opaque_conditions.len() > 12 { ", ..." } else { "" }
                ),
            ));
        }
    }

    /// Per kind: the path groups, with the discriminator's atoms removed; each handler's
    /// report gets the kinds it contributes to.
    fn by_kind(
        &self,
        by_class: &BTreeMap<String, Vec<(usize, Vec<PathOut>)>>,
        class_kinds: &BTreeMap<String, Kinds>,
        reports: &mut [HandlerReport],
    ) -> (BTreeMap<String, Vec<PathOut>>, BTreeMap<String, KindReport>) {
        let mut kind_paths: BTreeMap<String, Vec<PathOut>> = BTreeMap::new();
        let mut kind_reports: BTreeMap<String, KindReport> = BTreeMap::new();
        for (class, handlers) in by_class {
            let kinds = &class_kinds[class];
            for (hi, paths) in handlers {
                let hname = reports[*hi].name.clone();
                let mut hk = BTreeSet::new();
                let fixed = self.spec.handlers[*hi].kind.clone().or(match kinds {
                    Kinds::Fixed(k) => Some(k.clone()),
                    _ => None,
                });
                match (fixed, kinds) {
                    (Some(k), _) => {
                        for p in paths {
                            kind_paths.entry(k.clone()).or_default().push(PathOut {
                                atoms: p.atoms.clone(),
                                sets: p.sets.clone(),
                            });
                        }
                        hk.insert(k);
                    }
                    (None, Kinds::Field(field, known)) => {
                        let all = field_kinds(field, known, handlers);
                        for (kname, kval) in &all {
                            for p in by_field_kind(paths, field, kval) {
                                kind_paths.entry(kname.clone()).or_default().push(p);
                                hk.insert(kname.clone());
                            }
                        }
                    }
                    (None, Kinds::Fixed(_)) => unreachable!(),
                }
                for k in &hk {
                    let r = kind_reports.entry(k.clone()).or_default();
                    if !r.handlers.contains(&hname) {
                        r.handlers.push(hname.clone());
                    }
                }
                reports[*hi].kinds = hk.into_iter().collect();
            }
        }
        (kind_paths, kind_reports)
    }

    /// The sets file: node variables, the messages' entries, crashes and reboots.
    fn sets(
        &mut self,
        system: &str,
        messages: BTreeMap<String, RawMessage>,
    ) -> Result<RawSets, AnalyzeError> {
        let (prog, spec) = (self.prog, self.spec);
        let vars = spec.all_vars();
        let (crash_self, crash_peer) = fault_sets(
            prog,
            spec,
            &spec.crashes,
            &mut self.gaps,
            &mut self.matched,
            &self.wf,
        )?;
        let (reboot_self, reboot_peer) = fault_sets(
            prog,
            spec,
            &spec.reboots,
            &mut self.gaps,
            &mut self.matched,
            &self.wf,
        )?;
        self.gaps.extend(crate::unmatched::report(
            prog,
            spec,
            &self.matched,
            &self.wf,
        ));
        let volatile: BTreeSet<String> = vars
            .values()
            .filter(|v| !v.persistent && !spec.is_holder(&v.name))
            .map(|v| v.name.clone())
            .collect();
        let all: BTreeSet<String> = vars
            .keys()
            .filter(|v| !spec.is_holder(v))
            .cloned()
            .collect();
        let crash = vec![RawFault {
            guard: "true".into(),
            update: crash_self.unwrap_or(volatile),
            peer_update: crash_peer.unwrap_or_default(),
        }];
        let reboot = vec![RawFault {
            guard: "true".into(),
            update: reboot_self.unwrap_or(all.clone()),
            peer_update: reboot_peer.unwrap_or_default(),
        }];
        Ok(RawSets {
            format: FORMAT.into(),
            version: VERSION,
            system: system.into(),
            node_vars: all,
            shared: Default::default(),
            messages,
            crash,
            reboot,
        })
    }
}

/// The statements where a handler that does not take its message as a parameter receives
/// it: those calling `receive` with it, or declaring it.
fn receive_sites(
    h: &HandlerSpec,
    body: &crate::ir::Block,
    msg_var: &str,
    wf: &str,
) -> Result<Vec<Vec<Step>>, AnalyzeError> {
    let sites = match &h.receive {
        Some(r) => exec::find_sites(body, &|s| calls_with_arg(s, r, msg_var)),
        None => exec::find_sites(body, &|s| declares(s, msg_var)),
    };
    if sites.is_empty() {
        return Err(AnalyzeError::Annotation {
            file: wf.into(),
            message: format!(
                "handler `{}.{}`: no statement {} `{msg_var}`",
                h.class,
                h.method,
                match &h.receive {
                    Some(r) => format!("calls `{r}` with"),
                    None => "declares".into(),
                }
            ),
        });
    }
    Ok(sites)
}

/// The kinds a discriminator field can take: those known up front, then the constants the
/// handlers of the message class compare the field with.
fn field_kinds(
    field: &str,
    known: &[(String, Sym)],
    handlers: &[(usize, Vec<PathOut>)],
) -> Vec<(String, Sym)> {
    let mut all: Vec<(String, Sym)> = known.to_vec();
    for (_, ps) in handlers {
        for p in ps {
            for a in &p.atoms {
                if let Some(Sym::M(f)) = a.equality().map(|(x, _)| x.clone()) {
                    if f == field {
                        let (name, s) = const_of(&a.test);
                        if !all.iter().any(|(n, _)| *n == name) {
                            all.push((name, s));
                        }
                    }
                }
            }
        }
    }
    all
}

/// The paths that may be of the kind `field == kval`, without their atoms on the field.
fn by_field_kind(paths: &[PathOut], field: &str, kval: &Sym) -> Vec<PathOut> {
    let k_atom = Atom::new(
        Sym::bin(Sym::M(field.to_string()), SOp::Eq, kval.clone()),
        true,
    );
    let mut out = Vec::new();
    for p in paths {
        if inconsistent(&p.atoms, std::slice::from_ref(&k_atom)) {
            continue;
        }
        let atoms: Vec<Atom> = p
            .atoms
            .iter()
            .filter(|a| !a.test.mentions_msg_field(field))
            .cloned()
            .collect();
        let mut sets = p.sets.clone();
        sets.msg_fields.remove(KIND_FIELD);
        out.push(PathOut { atoms, sets });
    }
    out
}

/// Keep only the conditions on message fields the hook reports, under the names it reports
/// them by. Dropping a condition widens the path to where flymc cannot tell (as for a
/// condition the guard language cannot express); contradictions were already pruned on the
/// real fields, so that stays sound.
fn as_reported(p: &mut PathOut, report: &BTreeMap<String, String>) {
    fn rename(s: &Sym, r: &BTreeMap<String, String>) -> Sym {
        match s {
            Sym::M(f) => Sym::M(r.get(f).cloned().unwrap_or_else(|| f.clone())),
            Sym::Not(a) => Sym::Not(Box::new(rename(a, r))),
            Sym::Neg(a) => Sym::Neg(Box::new(rename(a, r))),
            Sym::Len(a) => Sym::Len(Box::new(rename(a, r))),
            Sym::Bin(a, op, b) => Sym::bin(rename(a, r), op.clone(), rename(b, r)),
            other => other.clone(),
        }
    }
    let visible = |f: &String| f == KIND_FIELD || report.contains_key(f);
    p.atoms.retain(|a| {
        let mut fs = BTreeSet::new();
        a.test.msg_fields(&mut fs);
        fs.iter().all(visible)
    });
    for a in &mut p.atoms {
        *a = Atom::new(rename(&a.test, report), a.holds);
    }
    p.atoms.sort();
    p.atoms.dedup();
    p.sets.msg_fields = std::mem::take(&mut p.sets.msg_fields)
        .into_iter()
        .filter(visible)
        .map(|f| report.get(&f).cloned().unwrap_or(f))
        .collect();
}

fn const_of(test: &Sym) -> (String, Sym) {
    if let Sym::Bin(_, _, b) = test {
        let name = match &**b {
            Sym::Const { name, .. } => name.clone(),
            Sym::Str(s) => s.clone(),
            other => other.to_string(),
        };
        return (name, (**b).clone());
    }
    (test.to_string(), test.clone())
}

fn message_of(
    prog: &Program,
    spec: &Spec,
    h: &HandlerSpec,
    m: &Method,
    wf: &str,
) -> Result<(String, bool, String), AnalyzeError> {
    let is_msg = |t: &str| spec.messages.contains_key(t);
    let named = |v: &str| -> Result<(String, bool, String), AnalyzeError> {
        if let Some(p) = m.params.iter().find(|p| p.name == v) {
            let t = p.ty.clone().unwrap_or_default();
            return Ok((v.to_string(), true, t));
        }
        let t = m
            .body
            .as_ref()
            .and_then(|b| local_type(&b.stmts, v))
            .ok_or_else(|| AnalyzeError::Annotation {
                file: wf.into(),
                message: format!(
                    "handler `{}.{}` names message `{v}`, which is neither a parameter nor a declared local",
                    h.class, h.method
                ),
            })?;
        Ok((v.to_string(), false, t))
    };
    let (v, is_param, t) = match &h.message {
        Some(v) => named(v)?,
        None => {
            let p = m
                .params
                .iter()
                .find(|p| p.ty.as_deref().is_some_and(is_msg));
            if p.is_none() && h.kind.is_some() {
                // An event without a message (what a state transition runs next): the whole
                // method is the handler of the kind it names.
                return Ok((String::new(), true, String::new()));
            }
            let p = p.ok_or_else(|| AnalyzeError::Annotation {
                    file: wf.into(),
                    message: format!(
                        "handler `{}.{}` has no parameter of a message class ({}); name the message with `message = \"...\"`",
                        h.class,
                        h.method,
                        spec.messages.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                })?;
            (p.name.clone(), true, p.ty.clone().unwrap_or_default())
        }
    };
    if !is_msg(&t) && h.kind.is_none() {
        return Err(AnalyzeError::Annotation {
            file: wf.into(),
            message: format!(
                "handler `{}.{}`: message `{v}` has type `{t}`, which is not an annotated message class",
                h.class, h.method
            ),
        });
    }
    let _ = prog;
    Ok((v, is_param, t))
}

fn kinds_of(prog: &Program, spec: &Spec, h: &HandlerSpec, class: &str) -> Kinds {
    if let Some(k) = &h.kind {
        return Kinds::Fixed(k.clone());
    }
    let ms = spec.messages.get(class).cloned().unwrap_or_default();
    let cl = prog.classes.get(class);
    if let Some(kf) = &ms.kind_field {
        // an enum-typed discriminator: all its constants are kinds
        let mut known = Vec::new();
        if let Some(t) = cl.and_then(|c| c.fields.get(kf)).and_then(|f| f.ty.clone()) {
            if let Some(e) = prog.classes.get(&t).filter(|e| e.is_enum) {
                for v in &e.variants {
                    let val = rename(&v.name, e.rename_all.as_deref());
                    known.push((
                        v.name.clone(),
                        Sym::Const {
                            name: v.name.clone(),
                            value: Box::new(Sym::Str(val)),
                        },
                    ));
                }
            }
        }
        return Kinds::Field(kf.clone(), known);
    }
    if ms.kind.is_none() {
        if let Some(c) = cl.filter(|c| c.is_enum && !c.variants.is_empty()) {
            let known = c
                .variants
                .iter()
                .map(|v| {
                    let val = rename(&v.name, c.rename_all.as_deref());
                    (
                        val.clone(),
                        Sym::Const {
                            name: val.clone(),
                            value: Box::new(Sym::Str(val)),
                        },
                    )
                })
                .collect();
            return Kinds::Field(KIND_FIELD.into(), known);
        }
    }
    Kinds::Fixed(ms.kind.unwrap_or_else(|| snake(class)))
}

/// Drop atoms implied by others: `x != d` when `x == c` holds for a literal `c != d`.
fn simplify_atoms(atoms: &[Atom]) -> Vec<Atom> {
    let mut out: Vec<Atom> = Vec::new();
    for a in atoms {
        let implied = !a.holds
            && a.equality().is_some_and(|(x, d)| {
                atoms
                    .iter()
                    .any(|b| b.holds && b.equality().is_some_and(|(y, c)| y == x && c != d))
            });
        if !implied && !out.contains(a) {
            out.push(a.clone());
        }
    }
    out
}

/// The guarded entries of one kind, and the message fields they use.
///
/// Every entry is sound on its own (its sets cover every path whose atoms do not contradict its
/// guard), so the order only affects precision, and entries may be merged or dropped as long
/// as the catch-all stays last.
fn entries_for(paths: &[PathOut]) -> (Vec<RawEntry>, Vec<String>, Vec<Origins>) {
    let mut groups: Vec<Vec<Atom>> = Vec::new();
    for p in paths {
        if !groups.contains(&p.atoms) {
            groups.push(p.atoms.clone());
        }
    }
    // most specific first; stable otherwise
    groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
    let mut fields: BTreeSet<String> = BTreeSet::new();
    let mut all = Sets::default();
    for p in paths {
        all.union(&p.sets);
    }
    let mut list: Vec<(Vec<Atom>, Sets)> = Vec::new();
    for g in &groups {
        let mut sets = Sets::default();
        for p in paths {
            if !inconsistent(g, &p.atoms) {
                sets.union(&p.sets);
            }
        }
        for a in g {
            a.test.msg_fields(&mut fields);
        }
        list.push((simplify_atoms(g), sets));
    }
    // Merge `G && x` and `G && !x` with the same sets into `G`.
    loop {
        let mut merged = false;
        'outer: for i in 0..list.len() {
            for j in i + 1..list.len() {
                if list[i].1 != list[j].1 || list[i].0.len() != list[j].0.len() {
                    continue;
                }
                let (a, b) = (&list[i].0, &list[j].0);
                let diff: Vec<&Atom> = a.iter().filter(|x| !b.contains(x)).collect();
                if diff.len() == 1 {
                    let flipped = Atom {
                        test: diff[0].test.clone(),
                        holds: !diff[0].holds,
                    };
                    if b.contains(&flipped) {
                        let common: Vec<Atom> =
                            a.iter().filter(|x| *x != diff[0]).cloned().collect();
                        list[i].0 = common;
                        list.remove(j);
                        merged = true;
                        break 'outer;
                    }
                }
            }
        }
        if !merged {
            break;
        }
    }
    let mut entries: Vec<RawEntry> = Vec::new();
    let mut origins: Vec<Origins> = Vec::new();
    let mut seen = BTreeSet::new();
    for (g, sets) in &list {
        if g.is_empty() {
            continue;
        }
        let e = entry(guard_text(g), sets);
        if seen.insert(e.guard.clone()) {
            entries.push(e);
            origins.push(sets.origins.clone());
        }
    }
    entries.push(entry("true".into(), &all));
    origins.push(all.origins);
    fields.extend(all.msg_fields.iter().cloned());
    fields.remove(KIND_FIELD);
    (entries, fields.into_iter().collect(), origins)
}

fn entry(guard: String, s: &Sets) -> RawEntry {
    RawEntry {
        guard,
        read: s.read.clone(),
        update: s.update.clone(),
        send: s.send.clone(),
        disk: s.disk.clone(),
        increments: s.increments(),
        emits: s.sends,
    }
}

/// The update sets of fault handlers: (the faulty node's own, the peers').
type FaultSets = (Option<BTreeSet<String>>, Option<BTreeSet<String>>);

fn fault_sets(
    prog: &Program,
    spec: &Spec,
    list: &[FaultSpec],
    gaps: &mut Vec<Gap>,
    matched: &mut BTreeSet<crate::spec::CallPat>,
    wf: &str,
) -> Result<FaultSets, AnalyzeError> {
    let mut own: Option<BTreeSet<String>> = None;
    let mut peer: Option<BTreeSet<String>> = None;
    for f in list {
        let m = method(prog, &f.class, &f.method).ok_or_else(|| AnalyzeError::Annotation {
            file: wf.into(),
            message: format!("crash handler `{}.{}` does not exist", f.class, f.method),
        })?;
        let Some(body) = &m.body else { continue };
        let ex = Exec::new(prog, spec);
        let init = ex.initial(m, BTreeMap::new());
        let starts = match &f.catch {
            Some(t) => exec::find_catches(body, Some(t)),
            None => vec![vec![Step::Begin]],
        };
        let mut upd = BTreeSet::new();
        for s in starts {
            let mut st = init.clone();
            if let Some(Step::Into(..)) = s.first() {
                // the caught exception
                Exec::bind_local(&mut st, "__exception", Val::opaque());
            }
            let (outs, _) = ex.drain_queue(ex.run_from(body, &s, vec![st]));
            for out in outs {
                let _ = out.status == Status::Normal;
                let mut sets = out.sets.clone();
                sets.widen(spec);
                upd.extend(sets.update);
            }
        }
        if ex.over_budget() {
            gaps.push(gap(
                &exec::file_name(&m.file),
                m.line,
                format!(
                    "crash handler `{}.{}` hit the step limit",
                    f.class, f.method
                ),
            ));
        }
        matched.extend(ex.seen.borrow().matched.iter().cloned());
        let target = if f.peer { &mut peer } else { &mut own };
        target.get_or_insert_with(BTreeSet::new).extend(upd);
    }
    Ok((own, peer))
}
