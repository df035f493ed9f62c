//! Execution steering (CrystalBall §3.3): when prediction says that every continuation after
//! the event about to run violates a property, hold that event back and run another, but only
//! after a second prediction from the state the other event leads to finds a continuation
//! without a violation that reaches a state where the liveness properties hold. Held events
//! stay pending: the filter is a delay, judged again at the next step, never a loss.

use flymc_model::{Event, EventId, Target, TargetError};
use serde::Serialize;

use super::predict::{self, apply, Bounds, Copier, Prediction, Start};
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
    /// The arrival is doomed but no alternative checked out: it runs, and this is logged.
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
    let doomed = match prediction.choice(e.id).and_then(|c| c.doomed) {
        Some(d) if !e.is_fault() => d,
        _ => return Ok(Decision::Deliver),
    };
    // Only alternatives the first prediction did not find doomed are worth a second look.
    let candidates = order.iter().copied().filter(|&i| {
        let a = &at.enabled[i];
        i != arrival
            && !a.is_fault()
            && prediction
                .choice(a.id)
                .is_some_and(|c| c.doomed.is_none() && c.live)
    });
    for i in candidates.take(3) {
        let alt = &at.enabled[i];
        let Some(check) = check_from(copier, &at, alt, bounds)? else {
            continue;
        };
        if check.doomed.is_some() || !check.live {
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
                steps_ahead: doomed,
                caused_by: prediction.into(),
                instead: alt.describe(),
                checked_by: (&check).into(),
            }),
        });
    }
    Ok(Decision::Unsteerable)
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
