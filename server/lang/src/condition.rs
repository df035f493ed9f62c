//! Conditions over a whole global state (a workload's `[faults] when`, a property's `always` or
//! `eventually`): their text, what they read, and their verdict on a state.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ast::{Expr, Scope};
use crate::eval::judge;
use crate::history::Memory;
use crate::parse::{parse_as, Mode, ParseError};
use crate::Node;

/// A condition over a global state's nodes, such as a workload's `[faults] when`: the guard
/// language with `nK.var` and `any(...)`/`all(...)` instead of a receiving node and a message.
/// Serialised as its text.
#[derive(Clone, Debug)]
pub struct Condition {
    text: String,
    pub(crate) expr: Expr,
}

impl Condition {
    /// A condition over one state, such as `[faults] when`: history built-ins are refused.
    pub fn parse(src: &str) -> Result<Condition, ParseError> {
        Ok(Condition {
            text: src.to_string(),
            expr: parse_as(src, Mode::Condition)?,
        })
    }

    /// A property's condition (`[[property]] always = '...'`): as [`Condition::parse`], and the
    /// history built-ins `ever_unique`, `ever_agree` and `kept` too, outside any(...), all(...),
    /// count(...) and unique(...). Judge it with [`Condition::check`] and a [`Memory`] per run.
    pub fn parse_property(src: &str) -> Result<Condition, ParseError> {
        Ok(Condition {
            text: src.to_string(),
            expr: parse_as(src, Mode::Property)?,
        })
    }

    /// Whether it has history built-ins (so judging it needs the run's [`Memory`]).
    pub fn has_history(&self) -> bool {
        let mut todo = vec![&self.expr];
        while let Some(e) = todo.pop() {
            if matches!(e, Expr::History(..)) {
                return true;
            }
            todo.extend(e.children());
        }
        false
    }

    /// Every variable it reads: the first name after `n.` or `nK.` (`n.log.x` gives `log`),
    /// without the reserved `alive` and `id`; sorted, each once.
    pub fn vars(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut todo = vec![&self.expr];
        while let Some(e) = todo.pop() {
            if let Expr::Var {
                scope: Scope::Node | Scope::At(_),
                path,
            } = e
            {
                if let Some(v) = path.first().filter(|v| *v != "alive" && *v != "id") {
                    out.push(v.clone());
                }
            }
            todo.extend(e.children());
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The text it was parsed from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Every node it names by number (`n2.` gives 2), ascending.
    pub fn nodes(&self) -> Vec<usize> {
        let mut out = Vec::new();
        let mut todo = vec![&self.expr];
        while let Some(e) = todo.pop() {
            if let Expr::Var {
                scope: Scope::At(k),
                ..
            } = e
            {
                out.push(*k);
            }
            todo.extend(e.children());
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Does it hold in the state of `nodes`? Evaluation errors count as "does not hold".
    /// History built-ins (in a property's condition) see only this state: a property uses
    /// [`Condition::check`].
    pub fn holds<N: Node>(&self, nodes: &[N]) -> bool {
        let mut memory = Memory::default();
        memory.absorb(&self.expr, nodes);
        judge(&self.expr, nodes, &memory).0
    }

    /// A property's check of the next state of a run: `memory` (fresh per run) first absorbs
    /// what the live ones of `nodes` (the next state) show, then the condition is judged. `Err` is the violation's
    /// message, ``` `CONDITION` does not hold```, followed by `: REASON` when a history built-in
    /// failed (which node, and what it lacks or contradicts).
    pub fn check<N: Node>(&self, nodes: &[N], memory: &mut Memory) -> Result<(), String> {
        memory.absorb(&self.expr, nodes);
        match judge(&self.expr, nodes, memory) {
            (true, _) => Ok(()),
            (false, None) => Err(format!("`{}` does not hold", self.text)),
            (false, Some(why)) => Err(format!("`{}` does not hold: {why}", self.text)),
        }
    }
}

/// Two conditions are the same when their text is.
impl PartialEq for Condition {
    fn eq(&self, other: &Condition) -> bool {
        self.text == other.text
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Condition {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Condition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Condition, D::Error> {
        let text = String::deserialize(d)?;
        Condition::parse(&text).map_err(|e| serde::de::Error::custom(format!("`{text}`: {e}")))
    }
}
