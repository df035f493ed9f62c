//! Stopping when the prefix is used up: replays and determinism checks run exactly their path.

use super::Order;
use crate::run::Enabled;

/// Picks nothing, so a run ends where its prefix does, with everything still enabled recorded
/// for whoever steps through it.
#[derive(Debug, Default)]
pub struct Stop;

impl Order for Stop {
    fn pick(&mut self, _enabled: &[Enabled], _asleep: &dyn Fn(&Enabled) -> bool) -> Option<usize> {
        None
    }
}
