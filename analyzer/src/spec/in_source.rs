//! In-source annotations (`@FlyMCNodeState`, `@FlyMCHandler`, ...) collected into a [`Spec`].

use std::collections::BTreeMap;

use super::{add_defaults, CallPat, FaultSpec, HandlerSpec, MsgSpec, NodeVar, Spec};
use crate::ir::{Annot, Method, Program, Stmt, StmtKind};

/// An in-source `report = "term last_log_index:last_index"`: fields, each optionally renamed.
fn parse_report(s: &str) -> BTreeMap<String, String> {
    s.split_whitespace()
        .map(|f| match f.split_once(':') {
            Some((field, name)) => (field.to_string(), name.to_string()),
            None => (f.to_string(), f.to_string()),
        })
        .collect()
}

fn annot<'a>(annots: &'a [Annot], name: &str) -> Option<&'a Annot> {
    annots.iter().find(|a| a.name == name)
}

fn flag(a: &Annot, key: &str) -> bool {
    a.args.get(key).is_some_and(|v| v == "true")
}

/// Collect the in-source annotations into a spec; `defaults`: add flymc's default send and
/// disk dictionaries (a side file's `defaults = false` turns them off for both).
pub fn from_source(prog: &Program, defaults: bool) -> Spec {
    let mut spec = Spec::default();
    let mut methods: Vec<&Method> = prog
        .classes
        .values()
        .flat_map(|c| c.methods.iter())
        .collect();
    methods.extend(prog.functions.values());
    for c in prog.classes.values() {
        for f in c.fields.values() {
            if let Some(a) = annot(&f.annots, "FlyMCNodeState") {
                spec.fields.insert(
                    (c.name.clone(), f.name.clone()),
                    NodeVar {
                        name: a
                            .args
                            .get("name")
                            .or(a.args.get("value"))
                            .cloned()
                            .unwrap_or_else(|| f.name.clone()),
                        persistent: flag(a, "persistent"),
                        guards: a.args.get("guards").is_none_or(|v| v != "false"),
                    },
                );
                if let Some(also) = a.args.get("also") {
                    let name = a
                        .args
                        .get("name")
                        .or(a.args.get("value"))
                        .cloned()
                        .unwrap_or_else(|| f.name.clone());
                    spec.also
                        .entry(name)
                        .or_default()
                        .extend(also.split_whitespace().map(str::to_string));
                }
            }
        }
        if let Some(a) = annot(&c.annots, "FlyMCMessage") {
            spec.messages.insert(
                c.name.clone(),
                MsgSpec {
                    class: c.name.clone(),
                    kind: a.args.get("kind").or(a.args.get("value")).cloned(),
                    kind_field: a.args.get("kind_field").cloned(),
                    fields: vec![],
                    external: false,
                    report: a.args.get("report").map(|r| parse_report(r)),
                },
            );
        }
    }
    for m in methods {
        if let Some(a) = annot(&m.annots, "FlyMCHandler") {
            spec.handlers.push(HandlerSpec {
                class: m.class.clone(),
                method: m.name.clone(),
                message: a.args.get("message").or(a.args.get("value")).cloned(),
                receive: a.args.get("receive").cloned(),
                guard: a.args.get("guard").cloned(),
                kind: a.args.get("kind").cloned(),
                reply: flag(a, "reply"),
            });
        }
        for (name, list) in [
            ("FlyMCCrashHandling", &mut spec.crashes),
            ("FlyMCRebootHandling", &mut spec.reboots),
        ] {
            if let Some(a) = annot(&m.annots, name) {
                list.push(FaultSpec {
                    class: m.class.clone(),
                    method: m.name.clone(),
                    catch: None,
                    peer: a.args.get("side").is_none_or(|s| s != "self"),
                });
            }
        }
        let qual = if m.class.is_empty() {
            None
        } else {
            Some(m.class.clone())
        };
        if annot(&m.annots, "FlyMCSend").is_some() {
            spec.sends.insert(CallPat {
                qual: qual.clone(),
                name: m.name.clone(),
                ctor: false,
            });
        }
        if let Some(a) = annot(&m.annots, "FlyMCDisk") {
            spec.disks.insert(
                CallPat {
                    qual: qual.clone(),
                    name: m.name.clone(),
                    ctor: false,
                },
                vec![a.args.get("file").or(a.args.get("value")).cloned()],
            );
        }
        if let Some(body) = &m.body {
            collect_local_annots(&body.stmts, m, &mut spec);
            collect_catch_annots(&body.stmts, m, &mut spec);
        }
    }
    if defaults {
        add_defaults(&mut spec);
    }
    spec
}

fn collect_local_annots(stmts: &[Stmt], m: &Method, spec: &mut Spec) {
    for s in stmts {
        if let StmtKind::Local {
            pat: crate::ir::Pat::Bind(name),
            annots,
            ..
        } = &s.kind
        {
            if let Some(a) = annot(annots, "FlyMCNodeState") {
                spec.locals.insert(
                    (m.class.clone(), m.name.clone(), name.clone()),
                    NodeVar {
                        name: a
                            .args
                            .get("name")
                            .or(a.args.get("value"))
                            .cloned()
                            .unwrap_or_else(|| name.clone()),
                        persistent: flag(a, "persistent"),
                        guards: a.args.get("guards").is_none_or(|v| v != "false"),
                    },
                );
            }
        }
        for c in s.children() {
            collect_local_annots(c.stmts(), m, spec);
        }
    }
}

fn collect_catch_annots(stmts: &[Stmt], m: &Method, spec: &mut Spec) {
    for s in stmts {
        if let StmtKind::Try { catches, .. } = &s.kind {
            for c in catches {
                for (name, peer_default) in [("FlyMCCrashHandling", true)] {
                    if let Some(a) = annot(&c.annots, name) {
                        let fs = FaultSpec {
                            class: m.class.clone(),
                            method: m.name.clone(),
                            catch: c.types.first().cloned(),
                            peer: a.args.get("side").map_or(peer_default, |s| s != "self"),
                        };
                        if !spec.crashes.contains(&fs) {
                            spec.crashes.push(fs);
                        }
                    }
                }
            }
        }
        for c in s.children() {
            collect_catch_annots(c.stmts(), m, spec);
        }
    }
}
