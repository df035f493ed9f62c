//! Live mode (`flymc watch`): the cluster runs without the checker choosing. Each step runs an
//! event as it arrives (on a simulated target a seeded random choice among the pending events
//! stands in for arrival order), client requests come from the workload, and faults strike at
//! random at a given rate within the workload's fault budget. flymc holds every message, so the
//! nodes' reported states plus the in-flight set are a consistent cut: the global state it
//! keeps is a snapshot consequence prediction ([`predict`]) can start from, and execution
//! steering ([`steer`]) can hold an event back before it runs.

pub mod predict;
pub mod steer;

use std::time::{Duration, Instant};

use flymc_model::{Event, EventId, EventKind, GlobalState, Property, PropertyKind, System, Target};
use flymc_model::{TargetError, Violation, Workload};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::clocks::Clocks;
use crate::executor::{ExecError, Executor, RunOptions};
use crate::faults::{CrashPoints, Faults};
use crate::plan::Plan;
use crate::run::Run;
use predict::{Bounds, Copier, Prediction, Start};
use steer::{Decision, Filter};

/// How one live run goes.
#[derive(Clone, Debug)]
pub struct LiveConfig {
    /// Seeds arrival order and faults.
    pub seed: u64,
    /// Stop after this many steps (default: the workload's event limit).
    pub steps: Option<usize>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Chance per step that a fault the workload's budget allows strikes.
    pub fault_rate: f64,
    /// Predict from every live state; `None`: run without prediction (and without steering).
    pub predict: Option<Bounds>,
    /// Hold back events prediction finds doomed.
    pub steer: bool,
    /// Asked before every step: stop now (Ctrl-C).
    pub interrupted: Option<fn() -> bool>,
}

/// Why a live run ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LiveEnding {
    /// Nothing left to run but faults.
    Quiescent,
    StepLimit,
    Duration,
    /// A safety property failed, or a liveness property at the end.
    Violation,
    /// A node hung or ended on its own: reported, the run stops there.
    NodeFailed,
    Interrupted,
}

/// A violation a prediction foresaw: the first prediction of each property in a run.
#[derive(Clone, Debug, Serialize)]
pub struct Forecast {
    /// The live step it was predicted at.
    pub step: usize,
    pub property: String,
    pub message: String,
    pub steps_ahead: usize,
    /// The whole path from the initial state: the live history, then the predicted events.
    pub path: Vec<EventId>,
}

/// What the predictions of one run cost and reached.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PredictionStats {
    pub count: u64,
    pub states: u64,
    pub micros: u64,
    pub max_micros: u64,
    pub depth_sum: u64,
    pub max_depth: usize,
    pub pruned_local: u64,
    /// Predictions that found a violation.
    pub with_violation: u64,
}

impl PredictionStats {
    fn add(&mut self, p: &Prediction) {
        self.count += 1;
        self.states += p.states as u64;
        self.micros += p.micros;
        self.max_micros = self.max_micros.max(p.micros);
        self.depth_sum += p.depth as u64;
        self.max_depth = self.max_depth.max(p.depth);
        self.pruned_local += p.pruned_local as u64;
        self.with_violation += u64::from(!p.violations.is_empty());
    }

    pub fn merge(&mut self, o: &PredictionStats) {
        self.count += o.count;
        self.states += o.states;
        self.micros += o.micros;
        self.max_micros = self.max_micros.max(o.max_micros);
        self.depth_sum += o.depth_sum;
        self.max_depth = self.max_depth.max(o.max_depth);
        self.pruned_local += o.pruned_local;
        self.with_violation += o.with_violation;
    }
}

/// One live run.
#[derive(Clone, Debug, Serialize)]
pub struct LiveRun {
    pub seed: u64,
    pub steer: bool,
    pub steps: usize,
    pub ending: LiveEnding,
    pub violation: Option<Violation>,
    /// For a violation that happened: how many steps before it a prediction first foresaw
    /// that property.
    pub predicted_ahead: Option<usize>,
    pub predictions: PredictionStats,
    pub forecasts: Vec<Forecast>,
    pub filters: Vec<Filter>,
    /// Steps where the arriving event was doomed but no filter checked out.
    pub unsteerable: u64,
    /// What a node that failed on its own said.
    pub node_failure: Option<String>,
    #[serde(skip)]
    pub history: Vec<Event>,
    pub millis: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("the live cluster failed at step {step}: {source}")]
    Target { step: usize, source: TargetError },
}

/// Run `workload` live once, on a fresh target of `system`; the target is stopped however the
/// run ends.
pub fn watch(
    system: &dyn System,
    workload: &Workload,
    cfg: &LiveConfig,
) -> Result<LiveRun, LiveError> {
    let err = |step| move |source| LiveError::Target { step, source };
    let mut target = system.target(workload).map_err(err(0))?;
    let began = Instant::now();
    let result = Live::start(system, workload, cfg, target.as_mut()).and_then(|mut l| {
        l.go()?;
        Ok(l.finish(began))
    });
    let stopped = target.stop();
    let run = result?;
    stopped.map_err(err(run.steps))?;
    Ok(run)
}

/// Re-execute `ids` from the initial state on a fresh target, as `flymc replay` would: the
/// run a path file is written from.
pub fn replay_ids(
    system: &dyn System,
    workload: &Workload,
    ids: Vec<EventId>,
) -> Result<Run, ExecError> {
    let mut t = system
        .target(workload)
        .map_err(|source| ExecError::Target { step: 0, source })?;
    Executor::new(system, workload).run(t.as_mut(), &Plan::replay(ids), RunOptions::default())
}

struct Live<'a> {
    workload: &'a Workload,
    cfg: &'a LiveConfig,
    copier: Copier<'a>,
    target: &'a mut dyn Target,
    props: Vec<Box<dyn Property>>,
    clocks: Clocks,
    faults: Faults,
    rng: ChaCha8Rng,
    /// Steering's own choices, so that arrivals are the same with and without it.
    steer_rng: ChaCha8Rng,
    state: GlobalState,
    history: Vec<Event>,
    began: Instant,
    run: LiveRun,
}

impl<'a> Live<'a> {
    fn start(
        system: &'a dyn System,
        workload: &'a Workload,
        cfg: &'a LiveConfig,
        target: &'a mut dyn Target,
    ) -> Result<Self, LiveError> {
        let err = |source| LiveError::Target { step: 0, source };
        target.start(workload).map_err(err)?;
        let state = target.settle().map_err(err)?;
        let mut live = Live {
            workload,
            cfg,
            copier: Copier { system, workload },
            target,
            props: flymc_model::exceptions::run_properties(system, workload),
            clocks: Clocks::new(workload.nodes),
            faults: Faults::new(workload, CrashPoints::Everywhere),
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            steer_rng: ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x57ee_57ee_57ee_57ee),
            state,
            history: Vec::new(),
            began: Instant::now(),
            run: LiveRun {
                seed: cfg.seed,
                steer: cfg.steer,
                steps: 0,
                ending: LiveEnding::Quiescent,
                violation: None,
                predicted_ahead: None,
                predictions: PredictionStats::default(),
                forecasts: Vec::new(),
                filters: Vec::new(),
                unsteerable: 0,
                node_failure: None,
                history: Vec::new(),
                millis: 0,
            },
        };
        live.check(PropertyKind::Safety);
        Ok(live)
    }

    /// Step until something ends the run.
    fn go(&mut self) -> Result<(), LiveError> {
        let limit = self.cfg.steps.unwrap_or(self.workload.max_events);
        while self.run.violation.is_none() && self.run.node_failure.is_none() {
            let step = self.history.len();
            let ending = if self.cfg.interrupted.is_some_and(|f| f()) {
                Some(LiveEnding::Interrupted)
            } else if step >= limit {
                Some(LiveEnding::StepLimit)
            } else if self.cfg.duration.is_some_and(|d| self.began.elapsed() >= d) {
                Some(LiveEnding::Duration)
            } else {
                None
            };
            if let Some(e) = ending {
                self.run.ending = e;
                return Ok(());
            }
            if !self.step(step)? {
                self.run.ending = LiveEnding::Quiescent;
                return Ok(());
            }
        }
        Ok(())
    }

    /// One live step; `false` when nothing is left to run.
    fn step(&mut self, step: usize) -> Result<bool, LiveError> {
        let err = |source| LiveError::Target { step, source };
        let pending = self.target.pending();
        let mut enabled = self.clocks.enabled(pending);
        self.faults
            .add_candidates(&mut enabled, &self.clocks, &self.state);
        let events: Vec<Event> = enabled.iter().map(|e| e.event.clone()).collect();
        let Some(arrival) = self.arrival(&events) else {
            return Ok(false);
        };
        let mut chosen = arrival;
        if let Some(bounds) = self.cfg.predict {
            let p = predict::predict(
                &self.copier,
                Start {
                    target: &*self.target,
                    history: &self.history,
                    state: &self.state,
                    faults: &self.faults,
                },
                bounds,
            )
            .map_err(err)?;
            self.run.predictions.add(&p);
            self.forecast(step, &p);
            if self.cfg.steer {
                chosen = self.steer(step, &events, arrival, &p, bounds)?;
            }
        }
        self.run_event(step, &enabled[chosen])?;
        Ok(true)
    }

    /// The event that arrives next: a fault at the configured rate when the budget allows
    /// one, else a pending event uniformly at random; a crashed node with nothing else
    /// pending is rebooted (an operator restarts it).
    fn arrival(&mut self, events: &[Event]) -> Option<usize> {
        let (faults, others): (Vec<usize>, Vec<usize>) =
            (0..events.len()).partition(|&i| events[i].is_fault());
        let strike = !faults.is_empty() && self.rng.gen_bool(self.cfg.fault_rate.clamp(0.0, 1.0));
        if strike || others.is_empty() {
            let pool: Vec<usize> = match strike {
                true => faults,
                false => faults
                    .into_iter()
                    .filter(|&i| events[i].kind == EventKind::Reboot)
                    .collect(),
            };
            if let Some(&i) = pool.choose(&mut self.rng) {
                return Some(i);
            }
        }
        others.choose(&mut self.rng).copied()
    }

    /// Record the first prediction of each property in this run.
    fn forecast(&mut self, step: usize, p: &Prediction) {
        for v in &p.violations {
            if self.run.forecasts.iter().any(|f| f.property == v.property) {
                continue;
            }
            let path = self.history.iter().chain(&v.path).map(|e| e.id).collect();
            self.run.forecasts.push(Forecast {
                step,
                property: v.property.clone(),
                message: v.message.clone(),
                steps_ahead: v.path.len(),
                path,
            });
        }
    }

    fn steer(
        &mut self,
        step: usize,
        events: &[Event],
        arrival: usize,
        p: &Prediction,
        bounds: Bounds,
    ) -> Result<usize, LiveError> {
        let mut order: Vec<usize> = (0..events.len()).collect();
        order.shuffle(&mut self.steer_rng);
        let at = steer::At {
            step,
            target: &*self.target,
            history: &self.history,
            faults: &self.faults,
            enabled: events,
        };
        let decision = steer::decide(&self.copier, at, arrival, p, &order, bounds)
            .map_err(|source| LiveError::Target { step, source })?;
        Ok(match decision {
            Decision::Deliver => arrival,
            Decision::Unsteerable => {
                self.run.unsteerable += 1;
                arrival
            }
            Decision::Hold { instead, filter } => {
                tracing::info!(
                    "step {step}: holding {} ({} in {} steps), running {} instead",
                    filter.held,
                    filter.property,
                    filter.steps_ahead,
                    filter.instead
                );
                self.run.filters.push(*filter);
                instead
            }
        })
    }

    /// Run the chosen event on the live cluster and check the state it leads to.
    fn run_event(&mut self, step: usize, chosen: &crate::run::Enabled) -> Result<(), LiveError> {
        let e = &chosen.event;
        self.clocks.step(chosen);
        let applied = predict::apply(self.target, e).and_then(|_| self.target.settle());
        self.history.push(e.clone());
        match e.kind {
            EventKind::Crash => self.faults.crashed(e.to),
            EventKind::Reboot => self.faults.rebooted(e.to),
            _ => {}
        }
        self.faults.stepped(e);
        match applied {
            Ok(state) => self.state = state,
            Err(f @ (TargetError::Hang { .. } | TargetError::Exited { .. })) => {
                self.run.ending = LiveEnding::NodeFailed;
                self.run.node_failure = Some(format!("after {}: {f}", e.describe()));
                return Ok(());
            }
            Err(source) => return Err(LiveError::Target { step, source }),
        }
        self.check(PropertyKind::Safety);
        Ok(())
    }

    fn check(&mut self, kind: PropertyKind) {
        let step = self.history.len().saturating_sub(1);
        for p in self.props.iter_mut().filter(|p| p.kind() == kind) {
            if let Err(message) = p.check(&self.state) {
                self.run.violation = Some(Violation {
                    property: p.name().to_string(),
                    kind,
                    message,
                    step,
                });
                self.run.ending = LiveEnding::Violation;
                return;
            }
        }
    }

    fn finish(mut self, began: Instant) -> LiveRun {
        if matches!(
            self.run.ending,
            LiveEnding::Quiescent | LiveEnding::StepLimit | LiveEnding::Duration
        ) {
            self.check(PropertyKind::Liveness);
        }
        if let Some(v) = &self.run.violation {
            self.run.predicted_ahead = self
                .run
                .forecasts
                .iter()
                .find(|f| f.property == v.property && f.step <= v.step)
                .map(|f| v.step + 1 - f.step);
        }
        self.run.steps = self.history.len();
        self.run.history = self.history;
        self.run.millis = began.elapsed().as_millis() as u64;
        self.run
    }
}

#[cfg(test)]
mod tests;
