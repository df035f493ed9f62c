//! Execution steering (CrystalBall §3.3): when prediction says that the event about to run
//! leads to a violation, hold that event back and run another, but only after a second
//! prediction from the state the other event leads to finds no violation there (or, when every
//! continuation after the held event violates, finds that state at least not doomed), and no
//! continuation there that ends in a state where a liveness property fails. Held events
//! stay pending: the filter is a delay, judged again at the next step, never a loss.

use flymc_model::{Event, EventId, Target, TargetError};
use serde::Serialize;

use super::predict::{self, apply, Bounds, Choice, Copier, Prediction, Start};
use crate::faults::Faults;

/// A prediction as a filter's log cites it.
#[derive(Clone, Debug, Serialize)]
pub struct Cited {
    pub states: usize,
    pub depth: usize,
    pub micros: u64,
}

impl From<&Prediction> for Cited {
    fn from(p: &Prediction) -> Self {
        Cited {
            states: p.states,
            depth: p.depth,
            micros: p.micros,
        }
    }
}

/// One filter: the event held back, the prediction that caused it, and the one that checked it.
#[derive(Clone, Debug, Serialize)]
pub struct Filter {
    /// The live step it was installed at.
    pub step: usize,
    pub held: String,
    pub id: EventId,
    /// What the filter does with it (flymc holds events: a delay, as a slow link's).
    pub action: &'static str,
    /// The violation the held event leads to, and how far ahead (at most).
    pub property: String,
    pub steps_ahead: usize,
    pub caused_by: Cited,
    /// What ran instead, and the prediction from there that found it safe and live.
    pub instead: String,
    pub checked_by: Cited,
}

/// What steering decides for one live step.
pub(crate) enum Decision {
    /// Run the arrival.
    Deliver,
    /// Run `enabled[instead]` and log the filter.
    Hold { instead: usize, filter: Box<Filter> },
    /// Every continuation after the arrival violates, but no alternative checked out: it
    /// runs, and this is counted.
    Unsteerable,
}

/// The live cluster at one step, as steering sees it.
pub(crate) struct At<'a> {
    pub step: usize,
    pub target: &'a dyn Target,
    pub history: &'a [Event],
    pub faults: &'a Faults,
    /// What could run now, faults included.
    pub enabled: &'a [Event],
}

/// Decide about `enabled[arrival]`, given the prediction from this state. `order` lists the
/// other events in the order they would arrive (seeded random); the first that checks out is
/// run instead.
pub(crate) fn decide(
    copier: &Copier,
    at: At,
    arrival: usize,
    prediction: &Prediction,
    order: &[usize],
    bounds: Bounds,
) -> Result<Decision, TargetError> {
    let e = &at.enabled[arrival];
    let Some(c) = prediction.choice(e.id).filter(|_| !e.is_fault()) else {
        return Ok(Decision::Deliver);
    };
    let Some(ahead) = c.doomed.or(c.nearest) else {
        return Ok(Decision::Deliver);
    };
    // First choice: an event after which no violation was predicted at all (CrystalBall's
    // check: the filtered run predicts none); when every continuation after the arrival
    // violates, one that is at least not doomed.
    let tiers: [&dyn Fn(&Choice) -> bool; 2] = [&|a| a.nearest.is_none(), &|a| a.doomed.is_none()];
    for (tier, fits) in tiers.iter().enumerate() {
        if tier == 1 && c.doomed.is_none() {
            break;
        }
        let candidates = order.iter().copied().filter(|&i| {
            let a = &at.enabled[i];
            i != arrival
                && !a.is_fault()
                && prediction.choice(a.id).is_some_and(|a| a.live && fits(a))
        });
        for i in candidates.take(3) {
            let alt = &at.enabled[i];
            let Some(check) = check_from(copier, &at, alt, bounds)? else {
                continue;
            };
            let safe = match tier {
                0 => check.violations.is_empty(),
                _ => check.doomed.is_none(),
            };
            if !safe || !check.live {
                continue;
            }
            let property = prediction
                .violations
                .first()
                .map_or_else(String::new, |v| v.property.clone());
            return Ok(Decision::Hold {
                instead: i,
                filter: Box::new(Filter {
                    step: at.step,
                    held: e.describe(),
                    id: e.id,
                    action: "hold",
                    property,
                    steps_ahead: ahead,
                    caused_by: prediction.into(),
                    instead: alt.describe(),
                    checked_by: (&check).into(),
                }),
            });
        }
    }
    Ok(match c.doomed {
        Some(_) => Decision::Unsteerable,
        None => Decision::Deliver,
    })
}

/// A prediction from the state `alt` leads to; `None` if a node hangs or exits on the way.
fn check_from(
    copier: &Copier,
    at: &At,
    alt: &Event,
    bounds: Bounds,
) -> Result<Option<Prediction>, TargetError> {
    let mut history = at.history.to_vec();
    history.push(alt.clone());
    let mut t = copier.copy(at.target, || at.history.to_vec())?;
    let settled = apply(t.as_mut(), alt).and_then(|_| t.settle());
    let state = match settled {
        Ok(s) => s,
        Err(TargetError::Hang { .. } | TargetError::Exited { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut faults = at.faults.clone();
    faults.stepped(alt);
    let start = Start {
        target: t.as_ref(),
        history: &history,
        state: &state,
        faults: &faults,
    };
    let p = predict::predict(copier, start, bounds);
    let _ = t.stop();
    p.map(Some)
}
