//! Sleep sets (Godefroid) for the DPOR-family strategies.
//!
//! DPOR adds a backtrack point for every race, and without sleep sets the branch it starts
//! re-runs, in another order, interleavings that an earlier branch of the same tree node already
//! covered. A branch `c` from node `S` therefore carries the events already explored from `S`
//! (and those asleep at `S`) that commute with `c`: they sleep until an event they depend on
//! runs. The executor's tail passes sleeping events over; a path whose every remaining event
//! sleeps ends there (`SleepBlocked`), and no backtrack point is added for a sleeping event.
//!
//! Explored means handed out, not merely queued: two queued branches must not put each other
//! to sleep, or the orders starting with either would be lost. Handed out need not mean
//! observed: with `--jobs` several branches are under way at once, and each one's sleep set is
//! kept until its run is observed.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use flymc_model::{Event, EventId, GlobalState};

use crate::dpor::enabled_event;
use flymc_core::dependence::{propagate_sleep, Dependence};
use flymc_core::plan::Plan;
use flymc_core::run::Run;

/// Where a queued branch leaves the tree: run `event` from the node hashed `node`.
#[derive(Clone)]
pub struct Origin {
    /// Hash of the tree node the branch leaves from, and its depth (the step it replaces).
    pub node: u64,
    pub depth: usize,
    /// The state at that node, to judge what commutes with `event`.
    pub state: Rc<GlobalState>,
    pub event: Event,
}

/// The new branches `(depth, first event, prefix)` of `run` (with prefix hashes `hashes`), each
/// with its origin; the state at each depth is copied once, however many branches leave there.
pub fn origins(
    run: &Run,
    hashes: &[u64],
    new: Vec<(usize, EventId, Vec<EventId>)>,
) -> Vec<(Vec<EventId>, Origin)> {
    let mut states: HashMap<usize, Rc<GlobalState>> = HashMap::new();
    new.into_iter()
        .filter_map(|(i, c, prefix)| {
            let event = enabled_event(run, i, c)?.clone();
            let state = states
                .entry(i)
                .or_insert_with(|| Rc::new(run.states[i].clone()))
                .clone();
            let origin = Origin {
                node: hashes[i],
                depth: i,
                state,
                event,
            };
            Some((prefix, origin))
        })
        .collect()
}

/// A plan handed out, with its sleep set as events (`None`: a plan without one).
struct Handed {
    plan: Plan,
    set: Option<Vec<Event>>,
}

#[derive(Default)]
pub struct SleepSets {
    /// Sleep set of each tree node when it was first reached (absent: empty).
    at: HashMap<u64, Vec<Event>>,
    /// Events explored from each tree node.
    explored: HashMap<u64, Vec<Event>>,
    /// The plans handed out and not yet observed, oldest first.
    handed: VecDeque<Handed>,
    /// The system's `crash_loses_sent`, from the runs observed (branches come from runs).
    crash_loses_sent: bool,
}

impl SleepSets {
    pub fn new() -> Self {
        SleepSets::default()
    }

    /// `plan`, the branch leaving at `b`, with its sleep set, holding from the step after the
    /// branch's first event; from now on `b.event` counts as explored at its node.
    pub fn hand_out(&mut self, dep: &mut dyn Dependence, b: &Origin, plan: Plan) -> Plan {
        let asleep = self.at.get(&b.node).into_iter().flatten();
        let explored = self.explored.entry(b.node).or_default();
        let mut z: Vec<Event> = Vec::new();
        for e in asleep.chain(explored.iter()) {
            if e.id != b.event.id
                && !z.iter().any(|x| x.id == e.id)
                && !dep.dependent_on(&b.state, e, &b.event, self.crash_loses_sent)
            {
                z.push(e.clone());
            }
        }
        if !explored.iter().any(|e| e.id == b.event.id) {
            explored.push(b.event.clone());
        }
        let plan = Plan {
            sleep: z.iter().map(|e| e.id).collect(),
            sleep_at: b.depth + 1,
            ..plan
        };
        self.handed.push_back(Handed {
            plan: plan.clone(),
            set: Some(z),
        });
        plan
    }

    /// `plan` without a sleep set (the first path, a random walk, a parallel flip).
    pub fn hand_out_plain(&mut self, plan: Plan) -> Plan {
        self.handed.push_back(Handed {
            plan: plan.clone(),
            set: None,
        });
        plan
    }

    /// The sleep set before every step of `run`, the run of `plan` (index `k`: the node before
    /// step `k`, up to the end), as the executor applied it; records them and the explored
    /// events. `hashes` are the run's prefix hashes.
    pub fn observe(
        &mut self,
        dep: &mut dyn Dependence,
        plan: &Plan,
        run: &Run,
        hashes: &[u64],
    ) -> Vec<Vec<EventId>> {
        // Runs come in the order their plans were handed out, so `plan` is the oldest one
        // here, unless someone between the strategy and the loop dropped older plans (a
        // filtering wrapper): those will never be observed.
        let handed = match self.handed.iter().position(|h| h.plan == *plan) {
            Some(i) => self.handed.drain(..=i).next_back().and_then(|h| h.set),
            None => None,
        };
        self.crash_loses_sent = run.crash_loses_sent;
        let (current, start) = match handed {
            Some(z) if run.diverged_at.is_none() => (z, Some(plan.sleep_at)),
            _ => (Vec::new(), None),
        };
        let mut out: Vec<Vec<Event>> = Vec::with_capacity(run.states.len());
        for k in 0..run.states.len() {
            let z: Vec<Event> = match start {
                Some(s) if k == s => current.clone(),
                Some(s) if k > s => {
                    let prev = &out[k - 1];
                    let step = &run.steps[k - 1];
                    let live: Vec<Event> = prev
                        .iter()
                        .filter(|z| step.enabled.iter().any(|e| e.event.id == z.id))
                        .cloned()
                        .collect();
                    propagate_sleep(
                        dep,
                        &run.states[k - 1],
                        &live,
                        step.event(),
                        run.crash_loses_sent,
                    )
                }
                _ => self.at.get(&hashes[k]).cloned().unwrap_or_default(),
            };
            if !z.is_empty() {
                self.at.entry(hashes[k]).or_insert_with(|| z.clone());
            }
            out.push(z);
        }
        for (k, step) in run.steps.iter().enumerate() {
            let explored = self.explored.entry(hashes[k]).or_default();
            if !explored.iter().any(|e| e.id == step.event().id) {
                explored.push(step.event().clone());
            }
        }
        out.into_iter()
            .map(|z| z.into_iter().map(|e| e.id).collect())
            .collect()
    }
}
