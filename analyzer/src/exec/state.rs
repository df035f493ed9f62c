//! A walk state (one group of paths) and how states merge at statement boundaries.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

use super::{Src, Val, MAX_GROUPS, MAX_STATES};
use crate::spec::Spec;
use crate::sym::Atom;

/// Where each variable entered each set (`("update", "log")` -> `FileLog.java:7
/// (FileLog.persist)`): the first statement on a path that put it there; merged paths keep
/// all of theirs. Not part of a path's identity (`Sets`'s equality ignores it).
pub type Origins = BTreeMap<(&'static str, String), BTreeSet<String>>;

#[derive(Clone, Debug, Default)]
pub struct Sets {
    pub read: BTreeSet<String>,
    pub update: BTreeSet<String>,
    pub send: BTreeSet<String>,
    pub disk: BTreeSet<String>,
    /// Variables updated other than by incrementing.
    pub non_incr: BTreeSet<String>,
    pub msg_fields: BTreeSet<String>,
    /// Does the path send a message at all?
    pub sends: bool,
    /// Node variables the path's branch conditions read: whether it sends, and what (a
    /// constant a branch chose), depends on them (`sent_under_control`).
    pub control: BTreeSet<String>,
    pub origins: Origins,
}

impl PartialEq for Sets {
    fn eq(&self, o: &Sets) -> bool {
        self.read == o.read
            && self.update == o.update
            && self.send == o.send
            && self.disk == o.disk
            && self.non_incr == o.non_incr
            && self.msg_fields == o.msg_fields
            && self.sends == o.sends
            && self.control == o.control
    }
}

impl Sets {
    /// The set named `set` (`read`, `update`, `send`, `disk`).
    pub fn named(&mut self, set: &str) -> &mut BTreeSet<String> {
        match set {
            "read" => &mut self.read,
            "update" => &mut self.update,
            "send" => &mut self.send,
            _ => &mut self.disk,
        }
    }

    pub fn union(&mut self, o: &Sets) {
        for (k, v) in &o.origins {
            match self.origins.get_mut(k) {
                Some(x) => x.extend(v.iter().cloned()),
                None => {
                    self.origins.insert(k.clone(), v.clone());
                }
            }
        }
        self.read.extend(o.read.iter().cloned());
        self.update.extend(o.update.iter().cloned());
        self.send.extend(o.send.iter().cloned());
        self.disk.extend(o.disk.iter().cloned());
        self.non_incr.extend(o.non_incr.iter().cloned());
        self.msg_fields.extend(o.msg_fields.iter().cloned());
        self.sends |= o.sends;
        self.control.extend(o.control.iter().cloned());
    }

    /// Control-dependent sends: a path that sends counts every node variable its branches
    /// read as sent. (An over-approximation: a branch after the send counts too. The
    /// variables are read anyway, so independence is unchanged; the send set says what a
    /// message may depend on.)
    pub fn sent_under_control(&mut self) {
        if self.sends {
            for v in &self.control {
                if self.send.insert(v.clone()) {
                    self.origins.entry(("send", v.clone())).or_default().insert(
                        "a branch on it decides what this path sends (control dependence)".into(),
                    );
                }
            }
        }
    }

    /// The branch on `v` decides what comes after it on this path.
    pub(super) fn branched_on(&mut self, v: &Val) {
        for t in v.all_taint() {
            if let Src::N(x) = t {
                self.control.insert(x);
            }
        }
    }
    /// Count every variable for the further reported variables it stands for
    /// (`Spec::also`): a field holding several of them is read, updated and sent as a whole.
    pub fn widen(&mut self, spec: &Spec) {
        if spec.also.is_empty() {
            return;
        }
        let origins = &mut self.origins;
        let mut widen = |name: &'static str, set: &mut BTreeSet<String>| {
            let extra: Vec<(String, String)> = set
                .iter()
                .flat_map(|v| {
                    spec.with_also(v)
                        .skip(1)
                        .map(move |x| (x.to_string(), v.clone()))
                })
                .collect();
            for (x, v) in extra {
                if set.insert(x.clone()) && !name.is_empty() {
                    origins
                        .entry((name, x))
                        .or_default()
                        .insert(format!("held in the same field as `{v}` (`also`)"));
                }
            }
        };
        widen("read", &mut self.read);
        widen("update", &mut self.update);
        widen("send", &mut self.send);
        widen("", &mut self.non_incr);
        // A holder of parts is only its parts.
        for set in [
            &mut self.read,
            &mut self.update,
            &mut self.send,
            &mut self.non_incr,
        ] {
            set.retain(|v| !spec.is_holder(v));
        }
    }

    pub fn increments(&self) -> BTreeSet<String> {
        self.update.difference(&self.non_incr).cloned().collect()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    Normal,
    Return,
    Break(Option<String>),
    Continue(Option<String>),
    Throw,
    /// The handler region ended (the next message is received).
    Done,
}

#[derive(Clone, Debug)]
pub(super) struct Frame {
    pub(super) locals: BTreeMap<String, Val>,
    pub(super) this: Val,
    pub(super) class: String,
    pub(super) method: String,
}

#[derive(Clone, Debug)]
pub struct St {
    pub atoms: Vec<Atom>,
    pub sets: Sets,
    pub(super) node: BTreeMap<String, Val>,
    pub(super) frames: Vec<Frame>,
    pub status: Status,
    pub val: Option<Val>,
    /// Commands pushed on a `[[queue]]`, run after the handler returns.
    pub(super) queued: Vec<Val>,
}

impl St {
    pub(super) fn frame(&mut self) -> &mut Frame {
        self.frames.last_mut().expect("a frame")
    }
    pub(super) fn key(&self, with_values: bool) -> u64 {
        let mut h = DefaultHasher::new();
        self.atoms.hash(&mut h);
        self.status.hash(&mut h);
        if with_values {
            for (k, v) in &self.node {
                k.hash(&mut h);
                v.shape(&mut h);
            }
            for f in &self.frames {
                for (k, v) in &f.locals {
                    k.hash(&mut h);
                    v.shape(&mut h);
                }
                f.this.shape(&mut h);
            }
            if let Some(v) = &self.val {
                v.shape(&mut h);
            }
        }
        h.finish()
    }
    pub(super) fn absorb(&mut self, o: &St) {
        self.sets.union(&o.sets);
        // Either path's commands may run: all of them do (more effects, never fewer).
        for c in &o.queued {
            if !self.queued.contains(c) {
                self.queued.push(c.clone());
            }
        }
        let keys: BTreeSet<String> = self.node.keys().chain(o.node.keys()).cloned().collect();
        for k in keys {
            let v = match (self.node.get(&k), o.node.get(&k)) {
                (Some(a), Some(b)) => a.join(b),
                (Some(a), None) | (None, Some(a)) => {
                    let mut x = a.clone();
                    x.sym = None;
                    x
                }
                (None, None) => continue,
            };
            self.node.insert(k, v);
        }
        for (fa, fb) in self.frames.iter_mut().zip(&o.frames) {
            let keys: BTreeSet<String> =
                fa.locals.keys().chain(fb.locals.keys()).cloned().collect();
            for k in keys {
                let v = match (fa.locals.get(&k), fb.locals.get(&k)) {
                    (Some(a), Some(b)) => a.join(b),
                    (Some(a), None) | (None, Some(a)) => a.clone(),
                    (None, None) => continue,
                };
                fa.locals.insert(k, v);
            }
            fa.this = fa.this.join(&fb.this);
        }
        self.val = match (&self.val, &o.val) {
            (Some(a), Some(b)) => Some(a.join(b)),
            (Some(a), None) | (None, Some(a)) => Some(a.clone()),
            (None, None) => None,
        };
    }
}

/// Merge states that agree; when there are still too many, merge harder.
pub(super) fn normalize(states: Vec<St>) -> Vec<St> {
    if states.len() <= 1 {
        return states;
    }
    let mut out = group(states, |s| s.key(true));
    if out.len() > MAX_STATES {
        out = group(out, |s| s.key(false));
    }
    if out.len() > MAX_GROUPS {
        // Keep the atoms all merged states share.
        let mut by_status: Vec<St> = Vec::new();
        for s in out {
            match by_status.iter_mut().find(|x| x.status == s.status) {
                Some(x) => {
                    x.atoms.retain(|a| s.atoms.contains(a));
                    x.absorb(&s);
                }
                None => by_status.push(s),
            }
        }
        out = by_status;
    }
    out
}

pub(super) fn group(states: Vec<St>, key: impl Fn(&St) -> u64) -> Vec<St> {
    let mut index: HashMap<u64, usize> = HashMap::new();
    let mut out: Vec<St> = Vec::new();
    for s in states {
        let k = key(&s);
        match index.get(&k) {
            Some(&i) => out[i].absorb(&s),
            None => {
                index.insert(k, out.len());
                out.push(s);
            }
        }
    }
    out
}

pub(super) fn merge_pairs(pairs: Vec<(St, Val)>) -> Vec<(St, Val)> {
    if pairs.len() <= 4 {
        return pairs;
    }
    let mut out: Vec<(St, Val)> = Vec::new();
    let mut index: HashMap<u64, usize> = HashMap::new();
    for (s, v) in pairs {
        let mut h = DefaultHasher::new();
        s.key(pairs_values_matter()).hash(&mut h);
        v.shape(&mut h);
        let k = h.finish();
        match index.get(&k) {
            Some(&i) => {
                out[i].0.absorb(&s);
                out[i].1 = out[i].1.join(&v);
            }
            None => {
                index.insert(k, out.len());
                out.push((s, v));
            }
        }
    }
    if out.len() > MAX_GROUPS {
        let states = normalize(out.iter().map(|(s, _)| s.clone()).collect());
        let v = out
            .iter()
            .skip(1)
            .fold(out[0].1.clone(), |a, (_, b)| a.join(b));
        return states.into_iter().map(|s| (s, v.clone())).collect();
    }
    out
}

pub(super) fn pairs_values_matter() -> bool {
    true
}

pub(super) fn split(states: Vec<St>) -> (Vec<St>, Vec<St>) {
    states.into_iter().partition(|s| s.status == Status::Normal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sym::{SOp, Sym};

    fn state(atoms: Vec<Atom>, update: &str) -> St {
        St {
            atoms,
            sets: Sets {
                update: [update.to_string()].into(),
                ..Sets::default()
            },
            node: BTreeMap::new(),
            frames: vec![],
            status: Status::Normal,
            val: None,
            queued: vec![],
        }
    }

    #[test]
    fn states_with_the_same_conditions_merge_and_keep_all_effects() {
        let newer = Atom::new(
            Sym::bin(Sym::M("term".into()), SOp::Gt, Sym::N("term".into())),
            true,
        );
        let merged = normalize(vec![
            state(vec![newer.clone()], "term"),
            state(vec![newer.clone()], "votes"),
            state(vec![], "log"),
        ]);
        assert_eq!(merged.len(), 2);
        assert_eq!(
            merged[0].sets.update,
            ["term".to_string(), "votes".to_string()].into()
        );
        assert_eq!(merged[1].sets.update, ["log".to_string()].into());
    }

    #[test]
    fn increments_are_updates_never_made_otherwise() {
        let s = Sets {
            update: ["hits".to_string(), "term".to_string()].into(),
            non_incr: ["term".to_string()].into(),
            ..Sets::default()
        };
        assert_eq!(s.increments(), ["hits".to_string()].into());
        let (live, done) = split(vec![
            state(vec![], "a"),
            St {
                status: Status::Return,
                ..state(vec![], "b")
            },
        ]);
        assert_eq!((live.len(), done.len()), (1, 1));
    }
}
