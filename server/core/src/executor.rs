//! The executor: runs one path on a target.
//!
//! It follows a plan's prefix of event identities, then lets the order policy the plan names
//! ([`crate::order`]) pick, recording for every step the enabled set, the chosen event, its
//! vector clock and the state it led to, and checking safety properties after every step. A run
//! ends when nothing is enabled, on a violation, or at the workload's event limit; liveness
//! properties are checked on the state it ends in. This is mechanism only: which event comes
//! next when the prefix names none is the order's choice, and the plan's sleep set a filter
//! over it. It also measures where the path's time goes ([`crate::timing`]).

use std::time::Instant;

use std::sync::Arc;

use flymc_model::{
    EventKind, GlobalState, Property, PropertyKind, System, Target, TargetError, Violation,
    Workload,
};

use crate::cache::CacheView;
use crate::clocks::Clocks;
use crate::dependence::Dependence;
use crate::faults::{CrashPoints, Faults};
use crate::order::{Order, GOOD_SAMARITAN};
use crate::plan::{Plan, Tail};
use crate::run::{
    Enabled, Ending, Run, Step, CANNOT_RESTART_PROPERTY, EXITED_PROPERTY, HANG_PROPERTY,
};
use crate::sleepset::SleepSet;
use crate::snapshots::{Prefix, Snapshots};
use crate::timing::micros;

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("target failed at step {step}: {source}")]
    Target { step: usize, source: TargetError },
}

/// What a run may use besides its plan, all off by default: the explore loop lends its cache,
/// the strategy's dependence, the job's snapshots and a folder for logs; a replay lends none.
#[derive(Default)]
pub struct RunOptions<'o, 'c> {
    /// Take states from, and record them in, this view of the state-event cache.
    pub cache: Option<&'o mut CacheView<'c>>,
    /// Honour the plan's sleep set with this judgement of which events race.
    pub dep: Option<&'o mut dyn Dependence>,
    /// Start from the deepest snapshot of the plan's prefix these and the target keep, and
    /// take new ones where [`Snapshots::wanted`] says.
    pub snapshots: Option<&'o mut Snapshots>,
    /// Keep the nodes' logs in this folder before the cluster stops, if the run violated a
    /// property or `logs` says all.
    pub logs: Option<Logs>,
}

/// Where [`Executor::run`] keeps a run's node logs ([`RunOptions::logs`]).
#[derive(Clone, Debug)]
pub struct Logs {
    pub dir: std::path::PathBuf,
    /// Keep them for every run, not only violating ones.
    pub all: bool,
}

/// Runs paths of one workload on one target.
pub struct Executor<'a> {
    pub system: &'a dyn System,
    pub workload: &'a Workload,
    /// Where crashes are offered; everywhere unless told (a replay follows any path).
    pub crash_points: CrashPoints,
}

impl<'a> Executor<'a> {
    pub fn new(system: &'a dyn System, workload: &'a Workload) -> Self {
        Executor {
            system,
            workload,
            crash_points: CrashPoints::Everywhere,
        }
    }

    /// Offer crashes only at `points`.
    pub fn crash_points(mut self, points: CrashPoints) -> Self {
        self.crash_points = points;
        self
    }

    /// Execute `plan` on `target` (started here, stopped here whatever happens), with what
    /// `opts` lends the run ([`RunOptions`]; `RunOptions::default()` for a plain run).
    pub fn run(
        &self,
        target: &mut dyn Target,
        plan: &Plan,
        opts: RunOptions,
    ) -> Result<Run, ExecError> {
        let RunOptions {
            cache,
            dep,
            snapshots: snaps,
            logs,
        } = opts;
        let began = Instant::now();
        let result = self
            .run_inner(target, plan, cache, dep, snaps)
            .and_then(|mut run| {
                run.late_reports = target.late_reports();
                if let Some(l) = logs.filter(|l| l.all || run.violation.is_some()) {
                    let kept = target
                        .keep_logs(&l.dir)
                        .map_err(|source| ExecError::Target {
                            step: run.steps.len(),
                            source,
                        })?;
                    run.logs = (kept > 0).then_some(l.dir);
                }
                Ok(run)
            });
        let stopping = Instant::now();
        let stopped = target.stop();
        let mut run = result?;
        run.timing.record_stop(stopping.elapsed());
        run.timing.record_total(began.elapsed());
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
        cache: Option<&mut CacheView>,
        dep: Option<&mut dyn Dependence>,
        snaps: Option<&mut Snapshots>,
    ) -> Result<Run, ExecError> {
        // One lifetime for the run's borrows: shorten the trait object's to it.
        let dep = dep.map(|d| d as &mut dyn Dependence);
        let mut r = Running::start(self, target, plan, cache, dep, snaps)?;
        if r.violated(0, PropertyKind::Safety) {
            return Ok(r.run);
        }
        loop {
            match r.step()? {
                Flow::Next => {}
                Flow::End => return Ok(r.finish()),
                Flow::Ended => return Ok(r.run),
            }
        }
    }
}

/// What a step leaves the run to do.
enum Flow {
    Next,
    /// The run ends here; liveness is still to be judged.
    End,
    /// The run ended and is judged (a violation, a hang, a strict plan's divergence).
    Ended,
}

/// One run in progress: the plan's cursor and the books the executor keeps.
struct Running<'r, 'c> {
    workload: &'r Workload,
    target: &'r mut dyn Target,
    plan: &'r Plan,
    cache: Option<&'r mut CacheView<'c>>,
    props: Vec<Box<dyn Property>>,
    order: Box<dyn Order>,
    sleep: SleepSet<'r>,
    clocks: Clocks,
    faults: Faults,
    /// The next prefix entry to follow.
    cursor: usize,
    /// The step count the run ends at.
    limit: usize,
    run: Run,
    snaps: Option<&'r mut Snapshots>,
    /// The snapshot the target was restored at: its first `depth()` steps are taken from what
    /// the run that took it saw, not from the target.
    restored: Option<Arc<Prefix>>,
    /// The step being timed: when its event was applied, whether it is a fault, whether the
    /// plan's prefix named it. It ends when the cluster has settled, which under a cache hit is
    /// only known at the next step's `pending`.
    timing: Option<(Instant, bool, bool)>,
}

impl<'r, 'c> Running<'r, 'c> {
    /// Start the target and record its initial state.
    fn start(
        exec: &'r Executor<'r>,
        target: &'r mut dyn Target,
        plan: &'r Plan,
        cache: Option<&'r mut CacheView<'c>>,
        dep: Option<&'r mut dyn Dependence>,
        mut snaps: Option<&'r mut Snapshots>,
    ) -> Result<Self, ExecError> {
        let w = exec.workload;
        let err = |source| ExecError::Target { step: 0, source };
        let began = Instant::now();
        let restored = match snaps.as_deref_mut() {
            Some(s) => restore(target, w, plan, s),
            None => None,
        };
        let state = match &restored {
            Some(p) => p.states[0].clone(),
            None => {
                target.start(w).map_err(err)?;
                target.settle().map_err(err)?
            }
        };
        let props = flymc_model::exceptions::run_properties(exec.system, w);
        let mut timing = crate::timing::PathTiming::default();
        let took = began.elapsed();
        if restored.is_some() {
            timing.record_restore(took);
        } else {
            timing.record_start(took);
        }
        if let Some(s) = snaps.as_deref_mut() {
            match restored {
                Some(_) => s.costs.restored(micros(took)),
                None => s.costs.started(micros(took)),
            }
        }
        Ok(Running {
            workload: w,
            target,
            plan,
            cache,
            props,
            order: plan.tail.order(),
            sleep: SleepSet::new(plan, dep),
            clocks: Clocks::new(w.nodes),
            faults: Faults::new(w, exec.crash_points),
            cursor: 0,
            limit: plan.tail.limit(plan.prefix.len()).unwrap_or(w.max_events),
            run: Run {
                hashes: vec![state.hash()],
                states: vec![state],
                steps: Vec::new(),
                ending: Ending::Quiescent,
                violation: None,
                final_enabled: Vec::new(),
                diverged_at: None,
                crash_loses_sent: exec.system.has(flymc_model::Feature::CrashLosesSent),
                late_reports: 0,
                logs: None,
                timing,
                critical: None,
            },
            snaps,
            restored,
            timing: None,
        })
    }

    /// The restored snapshot, while step `step` is within it.
    fn replaying(&self, step: usize) -> Option<&Prefix> {
        self.restored.as_deref().filter(|p| step < p.depth())
    }

    /// Take a snapshot here if one is wanted and the target can. A target that cannot take
    /// this one says so and the run goes on; an error means the cluster is lost.
    fn checkpoint(&mut self) -> Result<(), ExecError> {
        let step = self.run.steps.len();
        if self.replaying(step).is_some() {
            return Ok(());
        }
        let Some(snaps) = self.snaps.as_deref_mut() else {
            return Ok(());
        };
        let ids = self.run.event_ids();
        let Some(key) = snaps.to_take(self.plan, &ids) else {
            return Ok(());
        };
        let began = std::time::Instant::now();
        let taken = self.target.checkpoint(key);
        let took = began.elapsed();
        self.run.timing.record_checkpoint(took);
        snaps.costs.checkpointed(micros(took));
        // A step still being timed (its settling is only known at the next `pending`) does
        // not pay for the snapshot as well.
        if let Some((step_began, _, _)) = self.timing.as_mut() {
            *step_began += took;
        }
        match taken {
            Ok(true) => snaps.insert(
                key,
                Prefix {
                    ids,
                    steps: self.run.steps.clone(),
                    states: self.run.states.clone(),
                    hashes: self.run.hashes.clone(),
                },
            ),
            Ok(false) => snaps.stats.declined += 1,
            Err(source) => return Err(ExecError::Target { step, source }),
        }
        Ok(())
    }

    fn step(&mut self) -> Result<Flow, ExecError> {
        let step = self.run.steps.len();
        // A cached step's state was not waited for: a node may have hung or exited since.
        if step > 0 && self.replaying(step).is_none() {
            match self.target.settled() {
                Ok(()) => {}
                Err(e @ (TargetError::Hang { .. } | TargetError::Exited { .. })) => {
                    let last = self.run.steps.last().map(|s| s.event().clone());
                    self.node_failed(step - 1, e, last.as_ref(), false);
                    return Ok(Flow::Ended);
                }
                Err(source) => return Err(ExecError::Target { step, source }),
            }
        }
        self.checkpoint()?;
        if step >= self.limit && !self.past_limit(step) {
            self.run.ending = Ending::EventLimit;
            return Ok(Flow::End);
        }
        let enabled = self.enabled();
        if enabled.is_empty() {
            self.run.ending = Ending::Quiescent;
            return Ok(Flow::End);
        }
        let from_prefix = match self.follow_prefix(&enabled, step) {
            Ok(i) => i,
            Err(diverged) => {
                self.run.ending = diverged;
                return Ok(Flow::Ended);
            }
        };
        self.sleep.before_step(step, self.run.diverged_at.is_some());
        let sleep = &self.sleep;
        let picked = from_prefix.or_else(|| self.order.pick(&enabled, &|e| sleep.asleep(e)));
        let Some(chosen) = picked else {
            self.end_unpicked(enabled);
            return Ok(Flow::End);
        };
        self.order.observe(&enabled, chosen, step);
        let state = self.run.states.last().expect("initial state");
        let event = &enabled[chosen].event;
        self.sleep
            .after_step(state, &enabled, event, self.run.crash_loses_sent);
        self.execute(enabled, chosen, step)
    }

    /// At the event limit: may the run go on? A prefix longer than the limit is followed to its
    /// end (it may hold a fair continuation); after that the order may name a continuation,
    /// taken when a liveness property fails here.
    fn past_limit(&mut self, step: usize) -> bool {
        let prefix = self.plan.prefix.len();
        if self.cursor < prefix && step < prefix {
            self.limit = prefix;
            return true;
        }
        let Some(next) = self.order.continuation() else {
            return false;
        };
        let last = self.run.states.last().expect("initial state");
        if check(&mut self.props, last, step, PropertyKind::Liveness).is_none() {
            return false;
        }
        self.order = next;
        self.limit = step + self.workload.max_events;
        true
    }

    /// What is pending, with its creation clocks, and the faults the budgets allow.
    fn enabled(&mut self) -> Vec<Enabled> {
        let step = self.run.steps.len();
        let pending = match self.replaying(step) {
            Some(p) => p.pending(step),
            None => self.target.pending(),
        };
        self.step_timed();
        let mut enabled = self.clocks.enabled(pending);
        let state = self.run.states.last().expect("initial state");
        self.faults
            .add_candidates(&mut enabled, &self.clocks, state);
        enabled
    }

    /// The prefix's event for this step, if it names one. A non-strict plan skips prefix events
    /// that never became enabled (an earlier flip can change what a later message is) and goes
    /// on; a strict one ends the run.
    fn follow_prefix(&mut self, enabled: &[Enabled], step: usize) -> Result<Option<usize>, Ending> {
        while let Some(id) = self.plan.prefix.get(self.cursor) {
            if let Some(i) = enabled.iter().position(|e| e.event.id == *id) {
                self.cursor += 1;
                return Ok(Some(i));
            }
            if self.plan.strict {
                return Err(Ending::Diverged { step, missing: *id });
            }
            self.run.diverged_at.get_or_insert(step);
            self.cursor += 1;
        }
        Ok(None)
    }

    /// The order picked nothing: the run is quiescent, or blocked by its sleep set when a
    /// sleeping event other than a fault is left.
    fn end_unpicked(&mut self, enabled: Vec<Enabled>) {
        let (sleeping, awake): (Vec<Enabled>, Vec<Enabled>) =
            enabled.into_iter().partition(|e| self.sleep.asleep(e));
        self.run.ending = if sleeping.iter().any(|e| !e.event.is_fault()) {
            Ending::SleepBlocked
        } else {
            Ending::Quiescent
        };
        // What could come next, for whoever steps through the path.
        self.run.final_enabled = awake;
    }

    /// Run `enabled[chosen]` on the target (or take its state from the cache) and record it.
    fn execute(
        &mut self,
        enabled: Vec<Enabled>,
        chosen: usize,
        step: usize,
    ) -> Result<Flow, ExecError> {
        let event = enabled[chosen].event.clone();
        let vc = self.clocks.step(&enabled[chosen]);
        // The prefix cursor has moved past this step's event if the prefix named it.
        let prefix = self.cursor > 0 && self.plan.prefix.get(self.cursor - 1) == Some(&event.id);
        // A step taken from a restored snapshot costs nothing to time.
        if self.replaying(step).is_none() {
            self.timing = Some((Instant::now(), event.is_fault(), prefix));
        }
        let before = *self.run.hashes.last().expect("initial state");
        let cached = self
            .cache
            .as_deref_mut()
            .and_then(|c| c.lookup(before, event.id));
        let hit = cached.is_some();
        // With a cached S' the executor need not wait for the target to settle; a simulated
        // target settles instantly, so we still read it and only count the hit.
        let settled = match self.replaying(step) {
            // What the snapshot's run saw, cache hit or not, as a re-execution would.
            Some(p) => {
                let i = step + 1;
                let hit = p.steps[step].cached.then_some(p.hashes[i]);
                let state = p.states[i].clone();
                self.faults_of(&event);
                Ok((state, hit))
            }
            None => self.apply(&event).and_then(|_| match cached {
                Some((state, hash)) => Ok((state, Some(hash))),
                None => self.target.settle().map(|s| (s, None)),
            }),
        };
        // A cache hit waits for the cluster at the next step's `pending`; a failed step's
        // time is no settle time.
        if !hit && settled.is_ok() {
            self.step_timed();
        }
        let (state, was_cached) = match settled {
            Ok(s) => s,
            Err(e @ (TargetError::Hang { .. } | TargetError::Exited { .. })) => {
                self.run.steps.push(Step {
                    enabled,
                    chosen,
                    vc,
                    cached: false,
                });
                self.node_failed(step, e, Some(&event), true);
                return Ok(Flow::Ended);
            }
            Err(source) => return Err(ExecError::Target { step, source }),
        };
        let hash = was_cached.unwrap_or_else(|| state.hash());
        if let (Some(c), None) = (self.cache.as_deref_mut(), was_cached) {
            c.insert(before, event.id, &state, hash);
        }
        self.run.steps.push(Step {
            enabled,
            chosen,
            vc,
            cached: was_cached.is_some(),
        });
        self.run.states.push(state);
        self.run.hashes.push(hash);
        self.faults.stepped(&event);
        if let [.., before, after] = self.run.states.as_slice() {
            self.order.settled(&event, before, after);
        }
        Ok(if self.violated(step, PropertyKind::Safety) {
            Flow::Ended
        } else {
            Flow::Next
        })
    }

    /// A replayed crash or reboot spends the fault budget as the executed one did.
    fn faults_of(&mut self, event: &flymc_model::Event) {
        match event.kind {
            EventKind::Crash => self.faults.crashed(event.to),
            EventKind::Reboot => self.faults.rebooted(event.to),
            _ => {}
        }
    }

    /// Deliver, crash or reboot, spending the fault budget only when the target did.
    fn apply(&mut self, event: &flymc_model::Event) -> Result<(), TargetError> {
        let node = event.to;
        match event.kind {
            EventKind::Crash => self.target.crash(node).map(|_| self.faults.crashed(node)),
            EventKind::Reboot => self.target.reboot(node).map(|_| self.faults.rebooted(node)),
            _ => self.target.enable(event.id),
        }
    }

    /// A node hung or ended on its own after step `step`: a finding. `stateless`: the step is
    /// recorded without a resulting state (the failure showed while it settled); otherwise it
    /// showed only when the next step began (the step's state came from the cache).
    fn node_failed(
        &mut self,
        step: usize,
        e: TargetError,
        event: Option<&flymc_model::Event>,
        stateless: bool,
    ) {
        let after = event.map_or(String::new(), |e| format!(" after {}", e.describe()));
        let (property, kind, message) = match e {
            TargetError::Hang { node, millis } => (
                HANG_PROPERTY,
                PropertyKind::Liveness,
                format!("n{node} did not settle within {millis} ms{after}"),
            ),
            TargetError::Exited {
                node,
                status,
                restarting,
                log_tail,
            } => {
                let (property, how) = match restarting {
                    true => (
                        CANNOT_RESTART_PROPERTY,
                        "rebooted, exited before it was ready",
                    ),
                    false => (EXITED_PROPERTY, "exited on its own"),
                };
                let log = log_tail
                    .last()
                    .map_or(String::new(), |l| format!("; its log ends: {l}"));
                (
                    property,
                    PropertyKind::Safety,
                    format!("n{node} {how} ({status}){after}{log}"),
                )
            }
            other => unreachable!("not a node failure: {other}"),
        };
        self.run.ending = match stateless {
            true if kind == PropertyKind::Liveness => Ending::Hang { step },
            true => Ending::Exited { step },
            false => Ending::Violation,
        };
        self.run.violation = Some(Violation {
            property: property.into(),
            kind,
            message,
            step,
        });
    }

    /// Check the last state against the `kind` properties, recording the first violation.
    fn violated(&mut self, step: usize, kind: PropertyKind) -> bool {
        let last = self.run.states.last().expect("initial state");
        let Some(v) = check(&mut self.props, last, step, kind) else {
            return false;
        };
        self.run.violation = Some(v);
        self.run.ending = Ending::Violation;
        true
    }

    /// The step being timed has settled.
    fn step_timed(&mut self) {
        if let Some((began, fault, prefix)) = self.timing.take() {
            let took = began.elapsed();
            self.run.timing.record_step(took, fault, prefix);
            if let Some(s) = self.snaps.as_deref_mut() {
                s.costs.stepped(micros(took));
            }
        }
    }

    /// Judge liveness on the state the run ended in; a sleep-blocked run did not end, so its
    /// end state says nothing about liveness. At its limit the order may first say it kept
    /// scheduling a node that never yielded: then the run was not fair (CHESS), and that is
    /// the finding, not the liveness property.
    fn finish(mut self) -> Run {
        let last = self.run.steps.len().saturating_sub(1);
        if self.run.ending == Ending::EventLimit {
            if let Some(message) = self.order.unfair() {
                self.run.violation = Some(Violation {
                    property: GOOD_SAMARITAN.into(),
                    kind: PropertyKind::Liveness,
                    message,
                    step: last,
                });
                self.run.ending = Ending::Violation;
                return self.run;
            }
        }
        if self.run.ending != Ending::SleepBlocked && self.violated(last, PropertyKind::Liveness) {
            if let (Tail::Fair(p), Some(v)) = (self.plan.tail, self.run.violation.as_mut()) {
                if self.run.steps.len() >= p.bound {
                    v.message = format!(
                        "livelock: a fair run of {} events (its bound) ends failing it: {}",
                        self.run.steps.len(),
                        v.message
                    );
                }
            }
        }
        self.run
    }
}

/// Restore `target` at the deepest snapshot of `plan`'s prefix, if there is one; a snapshot the
/// target lost or cannot restore is forgotten, and the run starts from the beginning.
fn restore(
    target: &mut dyn Target,
    w: &Workload,
    plan: &Plan,
    snaps: &mut Snapshots,
) -> Option<Arc<Prefix>> {
    let (key, prefix) = snaps.to_restore(&plan.prefix)?;
    match target.restore(w, key) {
        Ok(true) => {
            snaps.stats.restored += 1;
            snaps.stats.steps_skipped += prefix.depth() as u64;
            return Some(prefix);
        }
        Ok(false) => snaps.stats.fallbacks += 1,
        Err(e @ TargetError::RestoreDiffers(_)) => {
            tracing::warn!("{e}; re-executing its prefix");
            snaps.stats.differed += 1;
        }
        Err(e) => {
            tracing::warn!("cannot restore a snapshot, re-executing its prefix: {e}");
            snaps.stats.fallbacks += 1;
        }
    }
    snaps.forget(key);
    None
}

fn check(
    props: &mut [Box<dyn Property>],
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
    use crate::order::{default_pick, TimerRank};
    use crate::plan::Plan;
    use flymc_model::{
        Event, EventId, EventKind, NodeId, NodeView, Property, Symmetry, TargetError, VectorClock,
    };
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
        fn about(&self) -> &flymc_model::About {
            static ABOUT: std::sync::LazyLock<flymc_model::About> =
                std::sync::LazyLock::new(|| flymc_model::About::new("polling", "test fixture"));
            &ABOUT
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
                .run(&mut t, &Plan::fifo(Vec::new()), RunOptions::default())
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
