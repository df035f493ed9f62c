//! The shrinking procedure: simplifications in a fixed order, repeated until none helps.
//!
//! Each round: drop faults (crash with reboot), truncate the forced events at the shortest
//! point whose default-order continuation still violates (binary search), drop client
//! requests, ddmin over the forced events, and move events back to where the default order
//! takes them. A change is kept only if its run violates the same property and is simpler
//! ([`Shape::simpler_than`]); every candidate is a list of event ids run as described in
//! [`super::trial`]. Deterministic: the same path and target give the same candidates in the
//! same order.

use anyhow::Result;
use flymc_core::run::Run;
use flymc_model::EventId;

use super::candidates::{self, Candidate};
use super::ddmin::ddmin;
use super::shape::Shape;
use super::trial::{Best, Trials};

/// One kept simplification.
pub struct Change {
    pub what: String,
    pub before: Shape,
    pub after: Shape,
    /// The re-execution that found it (1-based).
    pub run: usize,
}

pub struct Shrinker<'t, 'a> {
    trials: &'t mut Trials<'a>,
    pub best: Best,
    pub changes: Vec<Change>,
    /// Every best run in the order they were found, the original first.
    pub history: Vec<Run>,
    log: &'t dyn Fn(&str),
}

impl<'t, 'a> Shrinker<'t, 'a> {
    pub fn new(trials: &'t mut Trials<'a>, original: Run, log: &'t dyn Fn(&str)) -> Self {
        Shrinker {
            trials,
            history: vec![original.clone()],
            best: Best::new(original),
            changes: Vec::new(),
            log,
        }
    }

    /// Shrink until a round changes nothing, the budget is spent or flymc is interrupted.
    pub fn shrink(&mut self) -> Result<()> {
        loop {
            let start = self.best.shape;
            self.each(candidates::drop_faults)?;
            self.truncate()?;
            self.each(candidates::drop_requests)?;
            self.ddmin()?;
            self.each(candidates::undo_reorderings)?;
            if self.best.shape == start || self.trials.halted() {
                return Ok(());
            }
        }
    }

    fn adopt(&mut self, what: String, found: Best) {
        let change = Change {
            what,
            before: self.best.shape,
            after: found.shape,
            run: self.trials.runs,
        };
        (self.log)(&format!(
            "shrink: run {}: {}: {} -> {} events",
            change.run, change.what, change.before.events, change.after.events
        ));
        self.changes.push(change);
        self.history.push(found.run.clone());
        self.best = found;
    }

    /// Try `make`'s candidates from the best run in order; after a kept one, make them anew
    /// from the new best run.
    fn each(&mut self, make: fn(&Run) -> Vec<Candidate>) -> Result<()> {
        'fresh: loop {
            for c in make(&self.best.run) {
                if self.trials.halted() {
                    return Ok(());
                }
                if let Some(found) = self.trials.attempt(&c.ids, &self.best)? {
                    self.adopt(c.what, found);
                    continue 'fresh;
                }
            }
            return Ok(());
        }
    }

    /// The shortest forced prefix of the best run whose default-order continuation still
    /// violates, by binary search (a prefix of a run is always enabled, so the first `k` steps
    /// repeat exactly). Violating is not monotone in `k`, so this finds a short one, not
    /// necessarily the shortest; of the prefixes that worked, the simplest run is kept.
    fn truncate(&mut self) -> Result<()> {
        let ids = self.best.run.event_ids();
        let (mut lo, mut hi) = (0, ids.len());
        let mut kept: Option<(usize, Best)> = None;
        while lo < hi && !self.trials.halted() {
            let mid = (lo + hi) / 2;
            match self.trials.attempt(&ids[..mid], &self.best)? {
                Some(found) => {
                    hi = mid;
                    if kept
                        .as_ref()
                        .is_none_or(|(_, k)| found.shape.simpler_than(&k.shape))
                    {
                        kept = Some((mid, found));
                    }
                }
                None => lo = mid + 1,
            }
        }
        if let Some((k, found)) = kept {
            let what = format!(
                "forced the first {k} of {} events, the default order after",
                ids.len()
            );
            self.adopt(what, found);
        }
        Ok(())
    }

    /// ddmin over the best run's events, as forced events with the default order after them.
    fn ddmin(&mut self) -> Result<()> {
        let ids = self.best.run.event_ids();
        let mut test = |c: &[EventId]| -> Result<Option<Vec<EventId>>> {
            if self.trials.halted() {
                return Ok(None);
            }
            let Some(found) = self.trials.attempt(c, &self.best)? else {
                return Ok(None);
            };
            let what = format!(
                "ddmin: forced {} of the {} events",
                c.len(),
                self.best.shape.events
            );
            let next = found.run.event_ids();
            self.adopt(what, found);
            Ok(Some(next))
        };
        ddmin(ids, &mut test)?;
        Ok(())
    }
}
