//! A debugging session: the path, where in it the user is, and what re-executing it on the
//! target showed.
//!
//! Being at step N means having executed the path's first N events on a fresh target (a
//! strict plan: an event that is not enabled ends the re-execution). Every state and enabled
//! set a re-execution shows is kept, so going back, or forward over steps seen before, shows
//! them without running the target again; what was never observed is shown from the path
//! file, and says so.

use std::time::Instant;

use anyhow::{anyhow, Result};
use flymc_core::executor::{Executor, RunOptions};
use flymc_core::pathfile::PathFile;
use flymc_core::plan::{Plan, Tail};
use flymc_core::run::{Enabled, Ending, Run};
use flymc_model::{GlobalState, PropertyKind, System, Workload};

use super::filter::{Brief, Filter};
use super::live::Search;

/// What this session observed of one step.
#[derive(Clone, Debug, Default)]
struct Seen {
    state: Option<GlobalState>,
    /// The events enabled at this step (the path's next event among them).
    enabled: Option<Vec<Enabled>>,
}

/// Where a state shown comes from.
pub enum Source<'a> {
    Observed(&'a GlobalState),
    /// From the path file, with why it was not observed.
    Recorded(&'a GlobalState, String),
}

impl Source<'_> {
    pub fn state(&self) -> &GlobalState {
        match self {
            Source::Observed(s) | Source::Recorded(s, _) => s,
        }
    }
}

pub struct Session {
    pub path: PathFile,
    pub system: Box<dyn System>,
    pub workload: Workload,
    /// The current step: how many of the path's events have been executed.
    pub at: usize,
    pub filter: Filter,
    seen: Vec<Seen>,
    /// Why steps past this one were not observed: the last re-execution stopped short.
    stopped: Option<(usize, String)>,
    /// What the nearest-live-run search found from each step it was asked at.
    pub live: std::collections::BTreeMap<usize, Search>,
}

impl Session {
    pub fn new(path: PathFile, system: Box<dyn System>, workload: Workload) -> Session {
        let seen = vec![Seen::default(); path.states.len()];
        Session {
            path,
            system,
            workload,
            at: 0,
            filter: Filter::default(),
            seen,
            stopped: None,
            live: Default::default(),
        }
    }

    /// The last step with a state: the path's length, or one less when its last event ended
    /// the run without one (a hang, a node that exited).
    pub fn last(&self) -> usize {
        self.path.states.len() - 1
    }

    /// Run the path's first `n` events on a fresh target, then `tail`.
    pub fn execute(&self, n: usize, tail: Tail) -> Result<Run> {
        let mut target = self
            .system
            .target(&self.workload)
            .map_err(|e| anyhow!("cannot start {}: {e}", self.system.name()))?;
        let plan = Plan {
            prefix: self.path.event_ids()[..n].to_vec(),
            tail,
            strict: true,
            sleep: Vec::new(),
            sleep_at: 0,
        };
        Executor::new(self.system.as_ref(), &self.workload)
            .run(target.as_mut(), &plan, RunOptions::default())
            .map_err(|e| anyhow!("re-executing on {} failed: {e}", self.system.name()))
    }

    /// How many of the path's events must run to be at step `to`, unless this session has
    /// seen it already.
    pub fn to_run(&self, to: usize) -> Option<usize> {
        let seen = &self.seen[to];
        if seen.state.is_some() && (seen.enabled.is_some() || to == self.last()) {
            return None;
        }
        // At or past the workload's event limit the executor offers nothing more once the
        // prefix is used up, so the enabled set comes from running the path's next event too.
        Some(
            match to >= self.workload.max_events && to < self.path.events.len() {
                true => to + 1,
                false => to,
            },
        )
    }

    /// Go to step `to` (at most the last), re-executing the path up to it unless this session
    /// has seen it. Says how long that took and how it went, if it ran anything.
    pub fn goto(&mut self, to: usize) -> Option<String> {
        self.at = to.min(self.last());
        let n = self.to_run(self.at)?;
        let began = Instant::now();
        let ran = self.execute(n, Tail::Stop);
        let mut note = format!("{:.2} s", began.elapsed().as_secs_f64());
        match ran {
            Ok(run) => {
                if let Some(why) = self.record(&run, n) {
                    note.push_str("; ");
                    note.push_str(&why);
                }
            }
            Err(e) => {
                self.stopped = Some((0, e.to_string()));
                note = format!("failed: {e}; showing the recorded states");
            }
        }
        Some(note)
    }

    /// Keep what `run` (of the path's first `n` events) showed; why it stopped short, if it did.
    fn record(&mut self, run: &Run, n: usize) -> Option<String> {
        for (k, s) in run.states.iter().enumerate().take(self.seen.len()) {
            self.seen[k].state = Some(s.clone());
        }
        for (k, step) in run.steps.iter().enumerate().take(self.seen.len()) {
            self.seen[k].enabled = Some(step.enabled.clone());
        }
        // A `Stop` tail ends the run with what was enabled when the prefix ran out, before
        // the executor judges liveness on that state (a property that does not hold mid-run
        // makes the ending a violation). At the event limit nothing was offered.
        let judged = match (&run.ending, &run.violation) {
            (Ending::Quiescent, _) => true,
            (Ending::Violation, Some(v)) => v.kind == PropertyKind::Liveness,
            _ => false,
        };
        let ran_out = run.steps.len() == n && run.states.len() == n + 1;
        if ran_out && judged && n < self.workload.max_events {
            if let Some(seen) = self.seen.get_mut(n) {
                seen.enabled = Some(run.final_enabled.clone());
            }
        }
        let reached = run.states.len() - 1;
        let why = match (&run.ending, &run.violation) {
            (Ending::Diverged { step, .. }, _) => Some(format!(
                "it diverged at step {step}: the path's event {step} ({}) was not enabled",
                self.path.events[*step].description
            )),
            (Ending::Hang { step } | Ending::Exited { step }, Some(v)) if *step + 1 < n => Some(
                format!("the run ended after event {step} without a state: {v}"),
            ),
            (_, Some(v)) if reached < n.min(self.last()) => {
                Some(format!("it stopped at step {reached}: {v}"))
            }
            _ if reached < n.min(self.last()) => Some(format!("it stopped at step {reached}")),
            _ => None,
        };
        let differs = (0..run.states.len().min(self.path.states.len()))
            .find(|&k| run.states[k] != self.path.states[k].state);
        self.stopped = why.clone().map(|w| (reached, w));
        match (why, differs) {
            (Some(w), _) => Some(w),
            (None, Some(k)) => Some(format!(
                "the state observed at step {k} differs from the recorded one"
            )),
            (None, None) => None,
        }
    }

    /// The state at step `k`: observed in this session if it was, else the recorded one.
    pub fn state(&self, k: usize) -> Source<'_> {
        if let Some(s) = &self.seen[k].state {
            return Source::Observed(s);
        }
        let why = match &self.stopped {
            Some((reached, why)) if *reached < k => why.clone(),
            _ => "not re-executed this far in this session".into(),
        };
        Source::Recorded(&self.path.states[k].state, why)
    }

    /// The events enabled at step `k`, if this session observed them.
    pub fn enabled(&self, k: usize) -> Option<&[Enabled]> {
        self.seen.get(k)?.enabled.as_deref()
    }

    /// The kind and node of the path's event `k`: as executed if it was, else as described.
    pub fn brief(&self, k: usize) -> Option<Brief> {
        let id = self.path.events.get(k)?.id;
        let executed = self
            .enabled(k)
            .and_then(|en| en.iter().find(|e| e.event.id == id));
        match executed {
            Some(e) => Some(Brief::of(&e.event)),
            None => Brief::parse(&self.path.events[k].description),
        }
    }

    pub fn passes(&self, k: usize) -> bool {
        self.filter.passes(self.brief(k))
    }

    /// The step `count` events forward that the filter lets through (fewer if the path ends
    /// sooner): just after the event, so its effect shows. `None` if there is none.
    pub fn forward(&self, count: usize) -> Option<usize> {
        (self.at..self.last())
            .filter(|&k| self.passes(k))
            .take(count)
            .last()
            .map(|k| k + 1)
    }

    /// The step `count` events backward that the filter lets through, or the initial state.
    pub fn backward(&self, count: usize) -> Option<usize> {
        (0..self.at.saturating_sub(1))
            .rev()
            .filter(|&k| self.passes(k))
            .map(|k| k + 1)
            .chain(std::iter::once(0))
            .take(count)
            .last()
            .filter(|_| self.at > 0)
    }
}
