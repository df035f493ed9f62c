//! A plan's sleep set as the executor honours it: a filter over what the order may pick.
//!
//! The strategies work the set out (Godefroid's sleep sets, `flymc-strategies`' `sleep.rs`);
//! here it takes hold at the plan's `sleep_at` and is carried along the run, events waking as
//! events they depend on run.

use flymc_model::{Event, EventId, GlobalState};

use crate::dependence::{propagate_sleep, Dependence};
use crate::plan::Plan;
use crate::run::Enabled;

pub(crate) struct SleepSet<'r> {
    dep: Option<&'r mut dyn Dependence>,
    /// The plan's set and the step it holds from; empty when it is not honoured.
    planned: &'r [EventId],
    from: usize,
    /// The set in force: ids, resolved against each step's enabled events.
    current: Option<Vec<EventId>>,
}

impl<'r> SleepSet<'r> {
    /// `plan`'s sleep set, honoured only with a dependence judgement to wake events by.
    pub fn new(plan: &'r Plan, dep: Option<&'r mut dyn Dependence>) -> Self {
        let honoured = dep.is_some() && plan.tail.sleeps();
        SleepSet {
            dep,
            planned: if honoured { &plan.sleep } else { &[] },
            from: plan.sleep_at,
            current: None,
        }
    }

    /// Before step `step`, once the prefix has had its say: the set takes hold at its step, and
    /// lapses once the prefix could not be followed, which leads elsewhere than the set was
    /// worked out for.
    pub fn before_step(&mut self, step: usize, diverged: bool) {
        if !self.planned.is_empty() && step == self.from && !diverged {
            self.current = Some(self.planned.to_vec());
        }
        if diverged {
            self.current = None;
        }
    }

    pub fn asleep(&self, e: &Enabled) -> bool {
        self.current
            .as_ref()
            .is_some_and(|z| z.contains(&e.event.id))
    }

    /// After `chosen` ran from `state`: what commutes with it sleeps on, the rest wakes.
    pub fn after_step(
        &mut self,
        state: &GlobalState,
        enabled: &[Enabled],
        chosen: &Event,
        crash_loses_sent: bool,
    ) {
        let (Some(z), Some(dep)) = (self.current.as_mut(), self.dep.as_deref_mut()) else {
            return;
        };
        if z.is_empty() {
            return;
        }
        let events: Vec<Event> = enabled
            .iter()
            .filter(|e| z.contains(&e.event.id))
            .map(|e| e.event.clone())
            .collect();
        *z = propagate_sleep(dep, state, &events, chosen, crash_loses_sent)
            .into_iter()
            .map(|e| e.id)
            .collect();
    }
}
