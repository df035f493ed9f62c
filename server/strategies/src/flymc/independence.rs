//! Event independence from a sets file (FlyMC §3.2, §4.2).
//!
//! Two events to one node are independent at state S when neither's update set meets the
//! other's read or update set, neither's send set meets the other's update set, and they do not
//! write the same disk file; or when both only increment the same counters. Events to different
//! nodes are independent (MoDist's rule) unless one is a crash or reboot whose peers' update set
//! meets what the other event touches, or one updates a variable all nodes share (the file's
//! `shared`, such as a ballot clock) that the other reads or updates. A message and a crash of
//! its receiver are independent only when the message changes nothing (the crash would drop
//! it). Where the file has no applicable entry, events are dependent.

use std::collections::BTreeSet;
use std::sync::Arc;

use flymc_model::sets::{Entry, SetsFile};
use flymc_model::{Event, EventKind, GlobalState};
use serde_json::Map;

use crate::dpor::Dependence;

/// Cheap to clone: every run under way judges with its own (`--jobs`).
#[derive(Clone)]
pub struct SetsDependence {
    pub sets: Arc<SetsFile>,
}

fn meets(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    a.intersection(b).next().is_some()
}

fn entry<'s>(sets: &'s SetsFile, state: &GlobalState, e: &Event) -> Option<&'s Entry> {
    let node = &state.nodes.get(e.to)?.vars;
    sets.message(&e.name, node, &e.fields)
}

/// Are `a` and `b` independent in `state`?
pub fn independent(sets: &SetsFile, state: &GlobalState, a: &Event, b: &Event) -> bool {
    let empty = Map::new();
    let vars = |e: &Event| state.nodes.get(e.to).map_or(&empty, |n| &n.vars);
    match (a.is_fault(), b.is_fault()) {
        (false, false) => {
            if a.to != b.to && sets.shared.is_empty() {
                return true;
            }
            let (Some(x), Some(y)) = (entry(sets, state, a), entry(sets, state, b)) else {
                return false;
            };
            if a.to != b.to {
                let shared = |u: &BTreeSet<String>, other: &Entry| {
                    u.iter().any(|v| {
                        sets.shared.contains(v)
                            && (other.read.contains(v) || other.update.contains(v))
                    })
                };
                return !shared(&x.update, y) && !shared(&y.update, x);
            }
            let disjoint = !meets(&x.update, &y.read)
                && !meets(&x.update, &y.update)
                && !meets(&y.update, &x.read)
                && !meets(&x.send, &y.update)
                && !meets(&y.send, &x.update)
                && !meets(&x.disk, &y.disk);
            let counters = !x.update.is_empty()
                && x.update == x.increments
                && y.update == y.increments
                && x.update == y.update
                && !meets(&x.disk, &y.disk);
            disjoint || counters
        }
        (true, false) | (false, true) => {
            let (f, m) = if a.is_fault() { (a, b) } else { (b, a) };
            let Some(fe) = sets.fault(f.kind == EventKind::Reboot, vars(f)) else {
                return false;
            };
            let Some(me) = entry(sets, state, m) else {
                return false;
            };
            if f.to == m.to {
                // The crash drops the message, so only a message that changes nothing commutes.
                f.kind == EventKind::Crash && me.changes_nothing()
            } else {
                !meets(&fe.peer_update, &me.read)
                    && !meets(&fe.peer_update, &me.update)
                    && !meets(&fe.peer_update, &me.send)
            }
        }
        (true, true) => {
            if a.to == b.to {
                return false;
            }
            let fa = sets.fault(a.kind == EventKind::Reboot, vars(a));
            let fb = sets.fault(b.kind == EventKind::Reboot, vars(b));
            matches!((fa, fb), (Some(x), Some(y)) if x.peer_update.is_empty() && y.peer_update.is_empty())
        }
    }
}

impl Dependence for SetsDependence {
    fn dependent_at(&mut self, state: &GlobalState, a: &Event, b: &Event) -> bool {
        !independent(&self.sets, state, a, b)
    }
}
