//! History built-ins of property conditions ([`crate::Condition::parse_property`]):
//! `ever_unique(V per K [where C])`, `ever_agree(L)` and `kept(L at E in LOG [where C])`.
//!
//! They judge the run so far, not one state: a [`Memory`], owned by the property and fresh per
//! run, remembers what they saw. Each state is first absorbed (every live node's observations
//! join the memory), then judged. Nodes that are down contribute nothing and are not judged; a
//! node for which an argument cannot be evaluated (or reads `null`) contributes nothing to that
//! built-in either.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::ast::Expr;
use crate::Node;

/// A history built-in, as parsed. Its memory slot is in [`Expr::History`].
#[derive(Clone, Debug, PartialEq)]
pub enum History {
    /// `ever_unique(value per key where when)`: over every live node of every state so far, no
    /// key seen with two different non-null values.
    EverUnique {
        value: Expr,
        key: Expr,
        when: Option<Expr>,
    },
    /// `ever_agree(list)`: every list any live node had so far is a prefix of every other one,
    /// or has it as a prefix.
    EverAgree(Expr),
    /// `kept(list at epoch in log where when)`: every list a live node had so far, at its epoch
    /// then, is a prefix of `log` at every live node where `when` holds whose epoch is at least
    /// that one.
    Kept {
        list: Expr,
        epoch: Expr,
        log: Expr,
        when: Option<Expr>,
    },
}

impl History {
    /// The name it is written with.
    pub fn name(&self) -> &'static str {
        match self {
            History::EverUnique { .. } => "ever_unique",
            History::EverAgree(_) => "ever_agree",
            History::Kept { .. } => "kept",
        }
    }

    /// Its arguments, in the order written.
    pub fn args(&self) -> Vec<&Expr> {
        match self {
            History::EverUnique { value, key, when } => {
                let mut v = vec![value, key];
                v.extend(when);
                v
            }
            History::EverAgree(l) => vec![l],
            History::Kept {
                list,
                epoch,
                log,
                when,
            } => {
                let mut v = vec![list, epoch, log];
                v.extend(when);
                v
            }
        }
    }
}

impl fmt::Display for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            History::EverUnique { value, key, when } => {
                write!(f, "ever_unique({value} per {key}")?;
                if let Some(c) = when {
                    write!(f, " where {c}")?;
                }
                f.write_str(")")
            }
            History::EverAgree(l) => write!(f, "ever_agree({l})"),
            History::Kept {
                list,
                epoch,
                log,
                when,
            } => {
                write!(f, "kept({list} at {epoch} in {log}")?;
                if let Some(c) = when {
                    write!(f, " where {c}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// What a property's history built-ins remember of one run: one slot per built-in (numbered
/// at parse). `Default` is a fresh run's.
#[derive(Clone, Debug, Default)]
pub struct Memory {
    /// How many states have been absorbed.
    states: usize,
    slots: Vec<Slot>,
}

/// Who contributed something, and in which absorbed state (0-based).
#[derive(Clone, Debug)]
struct Seen {
    node: usize,
    state: usize,
}

#[derive(Clone, Debug, Default)]
enum Slot {
    #[default]
    Fresh,
    Unique {
        /// Canonical JSON of the key: its value and who had it first.
        seen: BTreeMap<String, (Value, Seen)>,
        /// The first conflict, kept: the run so far has it for good.
        conflict: Option<String>,
    },
    Agree {
        /// All lists seen so far agree, so they are prefixes of the longest.
        longest: Option<(Vec<Value>, Seen)>,
        conflict: Option<String>,
    },
    Kept {
        /// No entry is a prefix of another's list with an epoch no greater than its own (that
        /// one implies it).
        kept: Vec<(Vec<Value>, i64, Seen)>,
    },
}

impl Memory {
    /// How many states it has absorbed.
    pub fn states(&self) -> usize {
        self.states
    }

    /// Absorb one state: every history built-in in `expr` remembers what the live nodes show.
    pub(crate) fn absorb<N: Node>(&mut self, expr: &Expr, nodes: &[N]) {
        let state = self.states;
        self.states += 1;
        let mut todo = vec![expr];
        while let Some(e) = todo.pop() {
            if let Expr::History(slot, h) = e {
                if self.slots.len() <= *slot {
                    self.slots.resize_with(*slot + 1, Slot::default);
                }
                absorb(h, &mut self.slots[*slot], nodes, state);
            }
            todo.extend(e.children());
        }
    }

    /// Does history built-in `h` (in slot `slot`) hold now, in the state last absorbed?
    /// `Err` says why not.
    pub(crate) fn judge<N: Node>(
        &self,
        slot: usize,
        h: &History,
        nodes: &[N],
    ) -> Result<(), String> {
        match (h, self.slots.get(slot)) {
            (History::Kept { .. }, Some(Slot::Kept { kept })) => judge_kept(h, kept, nodes),
            (_, Some(Slot::Unique { conflict, .. } | Slot::Agree { conflict, .. })) => {
                conflict.clone().map_or(Ok(()), Err)
            }
            _ => Ok(()),
        }
    }
}

/// The live nodes where `when` holds (all live nodes without it).
fn each<'a, N: Node>(nodes: &'a [N], when: Option<&'a Expr>) -> impl Iterator<Item = usize> + 'a {
    (0..nodes.len()).filter(move |&i| {
        nodes[i].alive()
            && match when {
                None => true,
                Some(c) => matches!(c.eval_node(nodes, i), Ok(Value::Bool(true))),
            }
    })
}

fn value_of<N: Node>(e: &Expr, nodes: &[N], i: usize) -> Option<Value> {
    e.eval_node(nodes, i).ok().filter(|v| !v.is_null())
}

fn list_of<N: Node>(e: &Expr, nodes: &[N], i: usize) -> Option<Vec<Value>> {
    match e.eval_node(nodes, i) {
        Ok(Value::Array(a)) => Some(a),
        Ok(Value::Null) => Some(Vec::new()),
        _ => None,
    }
}

fn absorb<N: Node>(h: &History, slot: &mut Slot, nodes: &[N], state: usize) {
    if matches!(slot, Slot::Fresh) {
        *slot = match h {
            History::EverUnique { .. } => Slot::Unique {
                seen: BTreeMap::new(),
                conflict: None,
            },
            History::EverAgree(_) => Slot::Agree {
                longest: None,
                conflict: None,
            },
            History::Kept { .. } => Slot::Kept { kept: Vec::new() },
        };
    }
    match (h, slot) {
        (
            History::EverUnique {
                value,
                key,
                when: c,
            },
            Slot::Unique { seen, conflict },
        ) => {
            if conflict.is_some() {
                return;
            }
            for i in each(nodes, c.as_ref()) {
                let (Some(x), Some(k)) = (value_of(value, nodes, i), value_of(key, nodes, i))
                else {
                    continue;
                };
                match seen.get(&k.to_string()) {
                    None => {
                        seen.insert(k.to_string(), (x, Seen { node: i, state }));
                    }
                    Some((y, _)) if *y == x => {}
                    Some((y, first)) => {
                        *conflict = Some(format!(
                            "n{i} has {value} = {} where {key} = {}, but n{} had {}{}",
                            show(&x),
                            show(&k),
                            first.node,
                            show(y),
                            when_seen(first, state),
                        ));
                        return;
                    }
                }
            }
        }
        (History::EverAgree(l), Slot::Agree { longest, conflict }) => {
            if conflict.is_some() {
                return;
            }
            for i in each(nodes, None) {
                let Some(list) = list_of(l, nodes, i) else {
                    continue;
                };
                match longest {
                    None => *longest = Some((list, Seen { node: i, state })),
                    Some((m, first)) => match differ(&list, m) {
                        None if list.len() > m.len() => {
                            *longest = Some((list, Seen { node: i, state }))
                        }
                        None => {}
                        Some(at) => {
                            *conflict = Some(format!(
                                "n{i}'s {l} {} disagrees with {} that n{} had{}: at index {at}, {} against {}",
                                show_list(&list),
                                show_list(m),
                                first.node,
                                when_seen(first, state),
                                show(&list[at]),
                                show(&m[at]),
                            ));
                            return;
                        }
                    },
                }
            }
        }
        (History::Kept { list, epoch, .. }, Slot::Kept { kept }) => {
            for i in each(nodes, None) {
                let (Some(l), Some(e)) = (
                    list_of(list, nodes, i),
                    epoch.eval_node(nodes, i).ok().and_then(|v| v.as_i64()),
                ) else {
                    continue;
                };
                if l.is_empty() {
                    continue;
                }
                // Implied by a remembered list it begins, remembered at an epoch no greater.
                if kept
                    .iter()
                    .any(|(k, ke, _)| *ke <= e && k.len() >= l.len() && differ(&l, k).is_none())
                {
                    continue;
                }
                kept.retain(|(k, ke, _)| {
                    !(e <= *ke && k.len() <= l.len() && differ(k, &l).is_none())
                });
                kept.push((l, e, Seen { node: i, state }));
            }
        }
        _ => {}
    }
}

fn judge_kept<N: Node>(
    h: &History,
    kept: &[(Vec<Value>, i64, Seen)],
    nodes: &[N],
) -> Result<(), String> {
    let History::Kept {
        list,
        epoch,
        log,
        when,
    } = h
    else {
        return Ok(());
    };
    for i in each(nodes, when.as_ref()) {
        let (Some(e), Some(have)) = (
            epoch.eval_node(nodes, i).ok().and_then(|v| v.as_i64()),
            list_of(log, nodes, i),
        ) else {
            continue;
        };
        for (k, ke, first) in kept {
            if *ke > e {
                continue;
            }
            if k.len() <= have.len() && differ(k, &have).is_none() {
                continue;
            }
            let how = match differ(k, &have) {
                Some(at) => format!(
                    "at index {at} its {log} has {} where that had {}",
                    show(&have[at]),
                    show(&k[at])
                ),
                None => format!("its {log} has only {} entries", have.len()),
            };
            let role = when
                .as_ref()
                .map_or(String::new(), |c| format!("{}, ", bare(c)));
            return Err(format!(
                "n{i} ({role}{epoch} = {e}) lacks {} that n{} had as {list} at {epoch} = {ke}: {how}",
                show_list(k),
                first.node,
            ));
        }
    }
    Ok(())
}

/// An expression as written at the top level: without the parentheses Display puts around a
/// binary operation.
fn bare(e: &Expr) -> String {
    let s = e.to_string();
    match e {
        Expr::Bin(..) => s[1..s.len() - 1].to_string(),
        _ => s,
    }
}

/// Where two lists first differ on their common prefix; `None` if one is a prefix of the other.
fn differ(a: &[Value], b: &[Value]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y)
}

fn when_seen(first: &Seen, now: usize) -> &'static str {
    if first.state == now {
        " in the same state"
    } else {
        " earlier in the run"
    }
}

/// A value for a message, cut short when long.
fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 120 {
        let cut: String = s.chars().take(117).collect();
        format!("{cut}...")
    } else {
        s
    }
}

fn show_list(l: &[Value]) -> String {
    show(&Value::Array(l.to_vec()))
}
