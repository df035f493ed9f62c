//! The nearest live run, for `diff` on a liveness violation (MaceMC's Mdb diffs a dead run
//! against a live one).
//!
//! From the current step's state, re-execute the path's prefix and go on in another order:
//! the default order ([`Tail::Fifo`]: messages oldest first, then clients, then timers) and a
//! few random walks ([`Tail::Random`]), each with the fair continuation those tails have at
//! the event limit. The run whose state satisfies the violated property soonest after the
//! current step is the nearest live run; its first such state is what the current one is
//! diffed against. A step from which no walk reaches the property is likely dead: the
//! critical transition lies before it.
//!
//! Path files do not hold the critical transition yet. Once they
//! do, the search should start from the critical transition's state when asked at a later
//! step, which is MaceMC's definition of the nearest live path.

use std::time::{Duration, Instant};

use flymc_core::plan::Tail;
use flymc_model::{GlobalState, PropertyKind};

use super::session::Session;

/// How many random walks to try after the default order, at most.
const WALKS: u64 = 8;
/// Walks after the first two stop being started once this much time went into the search
/// (on real nodes a walk takes seconds or minutes; on a simulated target microseconds).
const BUDGET: Duration = Duration::from_secs(20);

/// A run from step `from` that reaches the property.
#[derive(Clone, Debug)]
pub struct Live {
    pub from: usize,
    pub tail: Tail,
    /// The run's events from step `from` to its first live state.
    pub events: Vec<String>,
    /// That state.
    pub state: GlobalState,
    /// What the search tried.
    pub tried: String,
}

/// What the search found from one step.
#[derive(Clone, Debug)]
pub enum Search {
    Found(Live),
    /// No walk reached the property; what was tried.
    Dead(String),
    /// The violation is not a liveness property the debugger can check on a state.
    NotApplicable(String),
}

/// Search the nearest live run from `session`'s current step.
pub fn search(session: &Session) -> Search {
    let Some(v) = session.path.violation.as_ref() else {
        return Search::NotApplicable("the path has no violation".into());
    };
    if v.kind != PropertyKind::Liveness {
        return Search::NotApplicable(format!("`{}` is a safety property", v.property));
    }
    let system = session.system.as_ref();
    let known = flymc_model::exceptions::run_properties(system, &session.workload)
        .iter()
        .any(|p| p.name() == v.property && p.kind() == PropertyKind::Liveness);
    if !known {
        return Search::NotApplicable(format!(
            "`{}` is not a property of a state flymc can check (the executor reports it)",
            v.property
        ));
    }
    let from = session.at;
    let began = Instant::now();
    let mut best: Option<Live> = None;
    let mut tried = Vec::new();
    let mut failures = Vec::new();
    let tails = std::iter::once(Tail::Fifo).chain((1..=WALKS).map(Tail::Random));
    for (i, tail) in tails.enumerate() {
        if i >= 2 && began.elapsed() > BUDGET {
            break;
        }
        tried.push(tail_name(tail));
        let run = match session.execute(from, tail) {
            Ok(run) => run,
            Err(e) => {
                failures.push(e.to_string());
                continue;
            }
        };
        let Some(j) = first_live(session, &v.property, &run.states, from) else {
            continue;
        };
        if best.as_ref().is_none_or(|b| j - from < b.events.len()) {
            best = Some(Live {
                from,
                tail,
                events: run
                    .events()
                    .skip(from)
                    .take(j - from)
                    .map(|e| e.describe())
                    .collect(),
                state: run.states[j].clone(),
                tried: String::new(),
            });
        }
    }
    let tried = format!(
        "tried {} in {:.2} s{}",
        tried.join(", "),
        began.elapsed().as_secs_f64(),
        failures.first().map_or(String::new(), |f| format!(
            "; {} failed: {f}",
            failures.len()
        ))
    );
    match best {
        Some(mut live) => {
            live.tried = tried;
            Search::Found(live)
        }
        None => Search::Dead(tried),
    }
}

/// The first state at or after step `from` where `property` holds, judging every state of the
/// run in order on a fresh property (a property may remember earlier states).
fn first_live(
    session: &Session,
    property: &str,
    states: &[GlobalState],
    from: usize,
) -> Option<usize> {
    let mut props =
        flymc_model::exceptions::run_properties(session.system.as_ref(), &session.workload);
    let p = props
        .iter_mut()
        .find(|p| p.name() == property && p.kind() == PropertyKind::Liveness)?;
    states
        .iter()
        .enumerate()
        .map(|(k, s)| (k, p.check(s).is_ok()))
        .find(|&(k, live)| live && k >= from)
        .map(|(k, _)| k)
}

pub fn tail_name(t: Tail) -> String {
    match t {
        Tail::Fifo => "the default order".into(),
        Tail::Random(seed) => format!("random walk {seed}"),
        // The search tries only the two above.
        _ => "another order".into(),
    }
}
