//! Properties: what must hold of the states a run goes through.

use serde::{Deserialize, Serialize};

use crate::state::GlobalState;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PropertyKind {
    /// Checked after every step.
    Safety,
    /// "Always eventually p": checked on the state a run ends in.
    Liveness,
}

/// A named predicate over global states.
pub trait Property: Send + Sync {
    fn name(&self) -> &str;
    fn kind(&self) -> PropertyKind;
    /// `Err(reason)` when the state violates the property. Called on every state of one run in
    /// order, on a fresh property per run, so a property may remember what it saw earlier in the
    /// run (for example the leader of each epoch, or the entries once committed).
    fn check(&mut self, state: &GlobalState) -> Result<(), String>;
}

/// A property built from a closure, for integrations that state invariants compactly.
pub struct FnProperty<F> {
    pub name: &'static str,
    pub kind: PropertyKind,
    pub check: F,
}

impl<F> Property for FnProperty<F>
where
    F: FnMut(&GlobalState) -> Result<(), String> + Send + Sync,
{
    fn name(&self) -> &str {
        self.name
    }
    fn kind(&self) -> PropertyKind {
        self.kind
    }
    fn check(&mut self, state: &GlobalState) -> Result<(), String> {
        (self.check)(state)
    }
}

/// Convenience constructor for a boxed safety property.
pub fn safety<F>(name: &'static str, check: F) -> Box<dyn Property>
where
    F: FnMut(&GlobalState) -> Result<(), String> + Send + Sync + 'static,
{
    Box::new(FnProperty {
        name,
        kind: PropertyKind::Safety,
        check,
    })
}

/// Convenience constructor for a boxed liveness property.
pub fn liveness<F>(name: &'static str, check: F) -> Box<dyn Property>
where
    F: FnMut(&GlobalState) -> Result<(), String> + Send + Sync + 'static,
{
    Box::new(FnProperty {
        name,
        kind: PropertyKind::Liveness,
        check,
    })
}

/// A property that failed, and where.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    pub property: String,
    pub kind: PropertyKind,
    pub message: String,
    /// Index of the step after which it was observed (0-based), or the path length for
    /// end-of-run liveness checks.
    pub step: usize,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} violated after step {}: {}",
            self.property, self.step, self.message
        )
    }
}
