//! The executor: runs one path on a target.
//!
//! It follows a plan's prefix of event identities, then continues with the plan's tail rule,
//! recording for every step the enabled set, the chosen event, its vector clock and the state it
//! led to, and checking safety properties after every step. A run ends when nothing is enabled,
//! on a violation, or at the workload's event limit; liveness properties are checked on the state
//! it ends in.

use std::collections::HashMap;

use flymc_model::{
    Event, EventId, EventKind, GlobalState, NodeId, PropertyKind, System, Target, TargetError,
    VectorClock, Violation, Workload,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::cache::StateEventCache;
use crate::dependence::{propagate_sleep, Dependence};

/// What to do once the prefix is used up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Tail {
    /// The oldest pending message first, then client requests, then timers; never a crash or
    /// reboot: the order of a network that delivers promptly and clients and timers that wait.
    Fifo,
    /// A uniformly random enabled event, crashes and reboots included, from this seed.
    Random(u64),
    /// Stop when the prefix is used up (replay).
    Stop,
}

/// A path to explore: forced event identities, then the tail rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub prefix: Vec<EventId>,
    pub tail: Tail,
    /// Give up (instead of continuing with the tail) when a prefix event is not enabled.
    pub strict: bool,
    /// The sleep set from step `sleep_at` on: events whose orders from there are explored by
    /// other paths, so the tail does not pick them until an event they depend on runs
    /// (Godefroid's sleep sets). It is carried through the rest of the prefix, which it does not
    /// constrain. Honoured only when the executor is given a dependence judgement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sleep: Vec<EventId>,
    #[serde(default)]
    pub sleep_at: usize,
}

impl Plan {
    pub fn fifo(prefix: Vec<EventId>) -> Self {
        Plan {
            prefix,
            tail: Tail::Fifo,
            strict: false,
            sleep: Vec::new(),
            sleep_at: 0,
        }
    }
}

/// An event as it was enabled in a step, with its causal position.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Enabled {
    pub event: Event,
    /// Vector clock of the event's creation: what happened before it was sent.
    pub vc: VectorClock,
}

/// One step of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Step {
    /// Everything that could have been enabled, in a deterministic order.
    pub enabled: Vec<Enabled>,
    /// Index into `enabled` of the event that was.
    pub chosen: usize,
    /// Vector clock of the step at the node that processed it.
    pub vc: VectorClock,
    /// The state came from the state-event cache rather than from the target.
    pub cached: bool,
}

impl Step {
    pub fn event(&self) -> &Event {
        &self.enabled[self.chosen].event
    }

    /// Does step `self` happen before the creation of `later`?
    pub fn happens_before(&self, later: &Enabled) -> bool {
        let node = self.event().to;
        later.vc.get(node) >= self.vc.get(node)
    }
}

/// Why a run ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ending {
    /// Nothing left to enable.
    Quiescent,
    /// The workload's event limit was reached.
    EventLimit,
    /// A property was violated.
    Violation,
    /// A strict plan named an event that was not enabled at this step.
    Diverged { step: usize, missing: EventId },
    /// Every event the tail could pick was asleep: the rest of this path is explored by others.
    SleepBlocked,
    /// A node did not settle after this step's event: a liveness finding. The step is recorded
    /// but has no resulting state.
    Hang { step: usize },
}

/// The property name under which hangs are reported.
pub const HANG_PROPERTY: &str = "node-settles";

/// One executed path.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Run {
    pub steps: Vec<Step>,
    /// `states[0]` is the initial state; `states[i + 1]` the state after step `i`.
    pub states: Vec<GlobalState>,
    /// Hashes of `states`, computed once.
    pub hashes: Vec<u64>,
    pub ending: Ending,
    pub violation: Option<Violation>,
    /// What was still enabled when the run ended quiescent (only crashes and reboots, which a
    /// FIFO tail never injects; strategies branch on them like on any other step), or when a
    /// `Stop` tail ended it (everything).
    pub final_enabled: Vec<Enabled>,
    /// First step at which a non-strict plan's prefix could not be followed.
    pub diverged_at: Option<usize>,
    /// The system's [`System::crash_loses_sent`], for judging races in this run.
    pub crash_loses_sent: bool,
    /// [`Target::late_reports`] of this run.
    #[serde(default)]
    pub late_reports: u64,
}

impl Run {
    pub fn events(&self) -> impl Iterator<Item = &Event> {
        self.steps.iter().map(Step::event)
    }

    pub fn event_ids(&self) -> Vec<EventId> {
        self.events().map(|e| e.id).collect()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("target failed at step {step}: {source}")]
    Target { step: usize, source: TargetError },
}

/// Runs paths of one workload on one target.
pub struct Executor<'a> {
    pub system: &'a dyn System,
    pub workload: &'a Workload,
}

struct Faults {
    crashes_left: u32,
    reboots_left: u32,
    crashed: Vec<bool>,
    crash_count: Vec<u32>,
    reboot_count: Vec<u32>,
}

impl<'a> Executor<'a> {
    pub fn new(system: &'a dyn System, workload: &'a Workload) -> Self {
        Executor { system, workload }
    }

    /// Execute `plan` on `target` (started here, stopped here whatever happens).
    pub fn run(
        &self,
        target: &mut dyn Target,
        plan: &Plan,
        cache: Option<&mut StateEventCache>,
    ) -> Result<Run, ExecError> {
        self.run_with(target, plan, cache, None)
    }

    /// [`Executor::run`], honouring the plan's sleep set with `dep`'s judgement.
    pub fn run_with(
        &self,
        target: &mut dyn Target,
        plan: &Plan,
        mut cache: Option<&mut StateEventCache>,
        dep: Option<&mut dyn Dependence>,
    ) -> Result<Run, ExecError> {
        let result = self
            .run_inner(target, plan, &mut cache, dep)
            .map(|mut run| {
                run.late_reports = target.late_reports();
                run
            });
        let stopped = target.stop();
        let run = result?;
        stopped.map_err(|source| ExecError::Target {
            step: run.steps.len(),
            source,
        })?;
        Ok(run)
    }

    fn run_inner(
        &self,
        target: &mut dyn Target,
        plan: &Plan,
        cache: &mut Option<&mut StateEventCache>,
        mut dep: Option<&mut dyn Dependence>,
    ) -> Result<Run, ExecError> {
        let w = self.workload;
        let n = w.nodes;
        let err = |step: usize| move |source| ExecError::Target { step, source };
        target.start(w).map_err(err(0))?;
        let mut props = self.system.properties(w);
        let mut faults = Faults {
            crashes_left: w.crashes,
            reboots_left: w.reboots,
            crashed: vec![false; n],
            crash_count: vec![0; n],
            reboot_count: vec![0; n],
        };
        let mut rng = match plan.tail {
            Tail::Random(seed) => Some(ChaCha8Rng::seed_from_u64(seed)),
            _ => None,
        };
        // Causal bookkeeping: per-node clocks, the clock of each executed step, and the creation
        // clock of each event seen pending.
        let mut node_clock: Vec<VectorClock> = vec![VectorClock::new(n); n];
        let mut step_vc: HashMap<EventId, VectorClock> = HashMap::new();
        let mut created: HashMap<EventId, VectorClock> = HashMap::new();

        let state = target.settle().map_err(err(0))?;
        let mut run = Run {
            hashes: vec![state.hash()],
            states: vec![state],
            steps: Vec::new(),
            ending: Ending::Quiescent,
            violation: None,
            final_enabled: Vec::new(),
            diverged_at: None,
            crash_loses_sent: self.system.crash_loses_sent(),
            late_reports: 0,
        };
        if let Some(v) = check(&mut props, &run.states[0], 0, PropertyKind::Safety) {
            run.violation = Some(v);
            run.ending = Ending::Violation;
            return Ok(run);
        }

        let mut cursor = 0;
        // The sleep set, from step `plan.sleep_at` on; ids, resolved against each step's enabled
        // events.
        let mut sleep: Option<Vec<EventId>> = None;
        let use_sleep = dep.is_some() && plan.tail == Tail::Fifo && !plan.sleep.is_empty();
        // A run that reaches the event limit is not a dead state: before liveness is judged it
        // gets a fair continuation (the default order, no faults, timers by deadline) of up to
        // the limit again (MaceMC). A random walk needs it to leave its random choices behind; a
        // default-order tail needs it too, as it fires the first timer listed, and a timer that
        // re-arms itself there starves the others'. A path that holds such a continuation
        // replays past the limit.
        let continues = matches!(plan.tail, Tail::Random(_) | Tail::Fifo);
        let mut limit = w.max_events;
        let mut fair = false;
        // When each node's timer of each name last fired, for the fair continuation's choice.
        let mut last_fired: HashMap<(NodeId, String), usize> = HashMap::new();
        // Virtual time for the fair continuation: when each pending timer was armed, on a clock
        // that only fired timers advance (to their deadline); messages take no time.
        let mut armed: HashMap<EventId, u64> = HashMap::new();
        let mut now: u64 = 0;
        loop {
            let step_no = run.steps.len();
            if step_no >= limit {
                if cursor < plan.prefix.len() && step_no < plan.prefix.len() {
                    limit = plan.prefix.len();
                } else if continues && !fair && {
                    let last = run.states.last().expect("initial state");
                    check(&mut props, last, step_no, PropertyKind::Liveness).is_some()
                } {
                    fair = true;
                    limit = step_no + w.max_events;
                } else {
                    run.ending = Ending::EventLimit;
                    break;
                }
            }
            let mut enabled: Vec<Enabled> = target
                .pending()
                .into_iter()
                .map(|event| {
                    let vc = created
                        .entry(event.id)
                        .or_insert_with(|| match event.parent {
                            Some(p) => step_vc
                                .get(&p)
                                .cloned()
                                .unwrap_or_else(|| VectorClock::new(n)),
                            None => VectorClock::new(n),
                        })
                        .clone();
                    Enabled { event, vc }
                })
                .collect();
            self.add_faults(&mut enabled, &faults, &step_vc, n);
            if continues {
                for e in enabled.iter().filter(|e| e.event.delay_ms.is_some()) {
                    armed.entry(e.event.id).or_insert(now);
                }
            }
            if enabled.is_empty() {
                run.ending = Ending::Quiescent;
                break;
            }

            // Follow the prefix with a cursor. A non-strict plan skips prefix events that never
            // became enabled (an earlier flip can change what a later message is) and goes on.
            let mut chosen = None;
            while let Some(id) = plan.prefix.get(cursor) {
                if let Some(i) = enabled.iter().position(|e| e.event.id == *id) {
                    cursor += 1;
                    chosen = Some(i);
                    break;
                }
                if plan.strict {
                    run.ending = Ending::Diverged {
                        step: step_no,
                        missing: *id,
                    };
                    return Ok(run);
                }
                run.diverged_at.get_or_insert(step_no);
                cursor += 1;
            }
            if use_sleep && step_no == plan.sleep_at && run.diverged_at.is_none() {
                sleep = Some(plan.sleep.clone());
            }
            if run.diverged_at.is_some() {
                // A prefix that could not be followed leads elsewhere than the sleep set was
                // computed for.
                sleep = None;
            }
            let tail_sleep = if chosen.is_none() {
                sleep.as_ref()
            } else {
                None
            };
            let asleep = |e: &Enabled| tail_sleep.is_some_and(|z| z.contains(&e.event.id));
            let chosen = match chosen {
                Some(i) => i,
                None => match plan.tail {
                    Tail::Stop => {
                        // What could come next, for whoever stepped through the prefix.
                        run.final_enabled = enabled;
                        break;
                    }
                    Tail::Random(_) if !fair => {
                        rng.as_mut().expect("seeded").gen_range(0..enabled.len())
                    }
                    _ => match default_pick(
                        &enabled,
                        &asleep,
                        fair.then_some(&|e: &Enabled| TimerRank {
                            deadline: e
                                .event
                                .delay_ms
                                .map(|d| armed.get(&e.event.id).copied().unwrap_or(now) + d),
                            last_fired: last_fired
                                .get(&(e.event.to, e.event.name.clone()))
                                .map_or(0, |s| s + 1),
                        }),
                    ) {
                        Some(i) => i,
                        None => {
                            let (sleeping, awake): (Vec<Enabled>, Vec<Enabled>) =
                                enabled.into_iter().partition(|e| asleep(e));
                            run.ending = if sleeping.iter().any(|e| !e.event.is_fault()) {
                                Ending::SleepBlocked
                            } else {
                                Ending::Quiescent
                            };
                            run.final_enabled = awake;
                            break;
                        }
                    },
                },
            };

            let event = enabled[chosen].event.clone();
            if let (Some(z), Some(dep)) = (sleep.as_mut(), dep.as_deref_mut()) {
                if !z.is_empty() {
                    let events: Vec<Event> = enabled
                        .iter()
                        .filter(|e| z.contains(&e.event.id))
                        .map(|e| e.event.clone())
                        .collect();
                    let state = run.states.last().expect("initial state");
                    *z = propagate_sleep(dep, state, &events, &event, run.crash_loses_sent)
                        .into_iter()
                        .map(|e| e.id)
                        .collect();
                }
            }
            let node: NodeId = event.to;
            // For the fair continuation.
            if event.kind == EventKind::Timeout && continues {
                last_fired.insert((node, event.name.clone()), step_no);
                if let (Some(d), Some(at)) = (event.delay_ms, armed.get(&event.id)) {
                    now = now.max(at + d);
                }
            }
            node_clock[node].join(&enabled[chosen].vc);
            node_clock[node].tick(node);
            let vc = node_clock[node].clone();
            step_vc.insert(event.id, vc.clone());

            let before = *run.hashes.last().expect("initial state");
            let cached_state = cache
                .as_deref_mut()
                .and_then(|c| c.lookup(before, event.id));
            let done = match event.kind {
                EventKind::Crash => target.crash(node).map(|_| {
                    faults.crashes_left -= 1;
                    faults.crashed[node] = true;
                    faults.crash_count[node] += 1;
                }),
                EventKind::Reboot => target.reboot(node).map(|_| {
                    faults.reboots_left -= 1;
                    faults.crashed[node] = false;
                    faults.reboot_count[node] += 1;
                }),
                _ => target.enable(event.id),
            };
            // With a cached S' the executor need not wait for the target to settle; a simulated
            // target settles instantly, so we still read it and only count the hit.
            let settled = done.and_then(|_| match cached_state {
                Some((state, hash)) => Ok((state, Some(hash))),
                None => target.settle().map(|s| (s, None)),
            });
            let (state, was_cached) = match settled {
                Ok(s) => s,
                Err(TargetError::Hang { node, millis }) => {
                    run.steps.push(Step {
                        enabled,
                        chosen,
                        vc,
                        cached: false,
                    });
                    run.ending = Ending::Hang { step: step_no };
                    run.violation = Some(Violation {
                        property: HANG_PROPERTY.into(),
                        kind: PropertyKind::Liveness,
                        message: format!(
                            "n{node} did not settle within {millis} ms after {}",
                            event.describe()
                        ),
                        step: step_no,
                    });
                    return Ok(run);
                }
                Err(source) => {
                    return Err(ExecError::Target {
                        step: step_no,
                        source,
                    })
                }
            };
            let hash = was_cached.unwrap_or_else(|| state.hash());
            if let Some(c) = cache.as_deref_mut() {
                if was_cached.is_none() {
                    c.insert(before, event.id, &state, hash);
                }
            }
            run.steps.push(Step {
                enabled,
                chosen,
                vc,
                cached: was_cached.is_some(),
            });
            run.states.push(state);
            run.hashes.push(hash);
            if let Some(v) = check(
                &mut props,
                run.states.last().unwrap(),
                step_no,
                PropertyKind::Safety,
            ) {
                run.violation = Some(v);
                run.ending = Ending::Violation;
                return Ok(run);
            }
        }
        // A sleep-blocked run did not end: its end state says nothing about liveness.
        let last = run.steps.len().saturating_sub(1);
        if run.ending == Ending::SleepBlocked {
            return Ok(run);
        }
        if let Some(v) = check(
            &mut props,
            run.states.last().unwrap(),
            last,
            PropertyKind::Liveness,
        ) {
            run.violation = Some(v);
            run.ending = Ending::Violation;
        }
        Ok(run)
    }

    /// Crash and reboot candidates allowed by the workload's budgets.
    fn add_faults(
        &self,
        enabled: &mut Vec<Enabled>,
        f: &Faults,
        step_vc: &HashMap<EventId, VectorClock>,
        n: usize,
    ) {
        for node in 0..n {
            if f.crashed[node] {
                if f.reboots_left > 0 {
                    // A reboot comes causally after the crash it undoes.
                    let crash = EventId::crash(node, f.crash_count[node] - 1);
                    let vc = step_vc
                        .get(&crash)
                        .cloned()
                        .unwrap_or_else(|| VectorClock::new(n));
                    enabled.push(Enabled {
                        event: Event::reboot(node, f.reboot_count[node]),
                        vc,
                    });
                }
            } else if f.crashes_left > 0 && self.workload.crash_nodes.contains(&node) {
                // A crash can strike at any moment: no causal past. The nth crash of a node
                // comes after its previous reboot.
                let vc = match f.reboot_count[node] {
                    0 => VectorClock::new(n),
                    k => step_vc
                        .get(&EventId::reboot(node, k - 1))
                        .cloned()
                        .unwrap_or_else(|| VectorClock::new(n)),
                };
                enabled.push(Enabled {
                    event: Event::crash(node, f.crash_count[node]),
                    vc,
                });
            }
        }
    }
}

/// How the fair continuation ranks a pending timer.
struct TimerRank {
    /// Virtual time it is due, when its node said how long it waits.
    deadline: Option<u64>,
    /// 0 if it never fired at its node, else 1 + the step it last did.
    last_fired: usize,
}

/// The default order: the first pending message; a client request only when no message is in
/// flight, a crash-point disk write or timer only when neither is (external inputs arrive, and
/// timeouts fire, when the system is quiet); never a crash or reboot, which stay choices for the
/// strategies. Sleeping events are passed over.
///
/// With `timer_rank` (the fair continuation), timers are judged as a real clock would. A real
/// target lists pending events by node, and a timer that re-arms whenever its node gets a
/// message (ZooKeeper's election poll) would otherwise fire at the first node forever while
/// the others' never do: liveness judged on a schedule no real clock produces. So if the first
/// timer's duration is known, the timer with the earliest deadline among those whose duration
/// is known fires (ties: the one that fired least recently at its node); otherwise the first
/// timer's kind goes, at the node where it fired least recently. (Rotating among all timers
/// instead lets long timers, a leader's wait for its followers, fire as often as short ones,
/// which no real clock does either.)
fn default_pick(
    enabled: &[Enabled],
    asleep: &dyn Fn(&Enabled) -> bool,
    timer_rank: Option<&dyn Fn(&Enabled) -> TimerRank>,
) -> Option<usize> {
    // A crash-point disk write (`disk:<name>`, timer-like in the model) is a write in progress:
    // it completes before timers fire, as on a disk that is not stalled.
    let disk =
        |e: &Enabled| e.event.kind == EventKind::Timeout && e.event.name.starts_with("disk:");
    [EventKind::Message, EventKind::Client]
        .iter()
        .find_map(|k| {
            enabled
                .iter()
                .position(|e| e.event.kind == *k && !asleep(e))
        })
        .or_else(|| enabled.iter().position(|e| disk(e) && !asleep(e)))
        .or_else(|| {
            let first = enabled
                .iter()
                .position(|e| e.event.kind == EventKind::Timeout && !asleep(e))?;
            let Some(rank) = timer_rank else {
                return Some(first);
            };
            let timers = (0..enabled.len()).filter(|&i| {
                let e = &enabled[i];
                e.event.kind == EventKind::Timeout && !asleep(e)
            });
            if rank(&enabled[first]).deadline.is_some() {
                return timers
                    .filter_map(|i| {
                        let r = rank(&enabled[i]);
                        r.deadline.map(|d| (d, r.last_fired, i))
                    })
                    .min()
                    .map(|(_, _, i)| i);
            }
            // The same timer at another node, if it fired less recently.
            let name = &enabled[first].event.name;
            timers
                .filter(|&i| enabled[i].event.name == *name)
                .min_by_key(|&i| (rank(&enabled[i]).last_fired, i))
        })
}

fn check(
    props: &mut [Box<dyn flymc_model::Property>],
    state: &GlobalState,
    step: usize,
    kind: PropertyKind,
) -> Option<Violation> {
    for p in props.iter_mut().filter(|p| p.kind() == kind) {
        if let Err(message) = p.check(state) {
            return Some(Violation {
                property: p.name().to_string(),
                kind,
                message,
                step,
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use flymc_model::{NodeView, Property, Symmetry, TargetError};
    use serde_json::{json, Map};

    fn timer(id: u64, name: &str, to: NodeId, delay_ms: Option<u64>) -> Enabled {
        Enabled {
            event: Event {
                id: EventId(id),
                kind: EventKind::Timeout,
                name: name.into(),
                from: None,
                to,
                fields: Map::new(),
                parent: None,
                delay_ms,
            },
            vc: VectorClock::new(3),
        }
    }

    #[test]
    fn a_fair_continuation_fires_the_earliest_deadline_not_the_first_listed_timer() {
        let awake = |_: &Enabled| false;
        // n0's election poll, listed first, has backed off to 800 ms; the finalize waits at n1
        // and n2 are 200 ms and were armed before it.
        let enabled = [
            timer(1, "fle-poll", 0, Some(800)),
            timer(2, "finalize", 1, Some(200)),
            timer(3, "finalize", 2, Some(200)),
        ];
        let rank = |e: &Enabled| TimerRank {
            deadline: e
                .event
                .delay_ms
                .map(|d| if e.event.to == 0 { 100 } else { 0 } + d),
            last_fired: if e.event.to == 1 { 5 } else { 0 },
        };
        // Equal deadlines: n2's never fired, n1's did.
        assert_eq!(default_pick(&enabled, &awake, Some(&rank)), Some(2));
        // Outside a fair continuation the listing order decides.
        assert_eq!(default_pick(&enabled, &awake, None), Some(0));
        // A first timer of unknown duration keeps the kind rule: that kind, at the node where
        // it fired least recently.
        let enabled = [
            timer(1, "tick", 0, None),
            timer(2, "finalize", 1, Some(200)),
            timer(3, "tick", 2, None),
        ];
        let rank = |e: &Enabled| TimerRank {
            deadline: e.event.delay_ms,
            last_fired: if e.event.to == 0 { 7 } else { 0 },
        };
        assert_eq!(default_pick(&enabled, &awake, Some(&rank)), Some(2));
    }

    /// n0's election poll re-arms itself whenever it fires, and is listed first; n1 is done
    /// once its finalize wait fires. Durations are reported when `delays`.
    struct Polling {
        delays: bool,
        polls: u32,
        n1_done: bool,
        finalize_pending: bool,
    }

    impl Polling {
        fn timer(&self, id: u64, name: &str, to: NodeId, ms: u64) -> Event {
            let mut e = timer(id, name, to, Some(ms)).event;
            e.delay_ms = e.delay_ms.filter(|_| self.delays);
            e
        }
    }

    impl Target for Polling {
        fn start(&mut self, _: &Workload) -> Result<(), TargetError> {
            (self.polls, self.n1_done, self.finalize_pending) = (0, false, true);
            Ok(())
        }
        fn pending(&self) -> Vec<Event> {
            let mut p = vec![self.timer(100 + self.polls as u64, "poll", 0, 400)];
            if self.finalize_pending {
                p.push(self.timer(1, "finalize", 1, 200));
            }
            p
        }
        fn enable(&mut self, id: EventId) -> Result<(), TargetError> {
            if id == EventId(1) {
                (self.n1_done, self.finalize_pending) = (true, false);
            } else {
                self.polls += 1;
            }
            Ok(())
        }
        fn settle(&mut self) -> Result<GlobalState, TargetError> {
            let view = |vars: serde_json::Value| NodeView {
                alive: true,
                vars: vars.as_object().cloned().unwrap_or_default(),
            };
            let nodes = vec![
                view(json!({"polls": self.polls})),
                view(json!({"done": self.n1_done})),
            ];
            Ok(GlobalState::new(nodes, &self.pending()))
        }
        fn crash(&mut self, n: NodeId) -> Result<(), TargetError> {
            Err(TargetError::BadNode(n, "no faults here".into()))
        }
        fn reboot(&mut self, n: NodeId) -> Result<(), TargetError> {
            Err(TargetError::BadNode(n, "no faults here".into()))
        }
        fn stop(&mut self) -> Result<(), TargetError> {
            Ok(())
        }
    }

    struct PollingSystem;

    impl System for PollingSystem {
        fn name(&self) -> &'static str {
            "polling"
        }
        fn description(&self) -> &'static str {
            "test fixture"
        }
        fn target(&self, _: &Workload) -> Result<Box<dyn Target>, TargetError> {
            unreachable!("the test builds its target")
        }
        fn properties(&self, _: &Workload) -> Vec<Box<dyn Property>> {
            vec![flymc_model::property::liveness("n1-done", |s| {
                match s.nodes[1].vars["done"].as_bool() {
                    Some(true) => Ok(()),
                    _ => Err("n1 never finalized".into()),
                }
            })]
        }
        fn symmetry(&self, _: &Workload) -> Symmetry {
            Symmetry::none()
        }
    }

    #[test]
    fn a_default_order_run_at_its_event_limit_gets_a_fair_continuation_before_liveness() {
        let w = Workload::parse(
            std::path::Path::new("polling.toml"),
            "version = 1\nsystem = \"polling\"\nnodes = 2\nmax_events = 10\n",
        )
        .unwrap();
        let run = |delays| {
            let mut t = Polling {
                delays,
                polls: 0,
                n1_done: false,
                finalize_pending: true,
            };
            Executor::new(&PollingSystem, &w)
                .run(&mut t, &Plan::fifo(Vec::new()), None)
                .unwrap()
        };
        // The default order fires the first timer listed, n0's poll, every time. At the limit
        // the continuation fires by deadline: n1's 200 ms wait, armed at 0, before the next
        // poll (re-armed at a later virtual time, 400 ms).
        let fair = run(true);
        assert_eq!(fair.violation, None);
        assert!(fair.steps.len() > 10, "continued past the limit");
        assert_eq!(fair.ending, Ending::EventLimit);
        // Without durations flymc cannot tell the poll is the slower timer.
        let blind = run(false);
        assert_eq!(
            blind.violation.map(|v| v.property).as_deref(),
            Some("n1-done")
        );
    }
}
