//! Live, transient and dead end states, and the critical transition (MaceMC, NSDI'07, §3-§4).
//!
//! A liveness property is "always eventually p". A bounded run that ends where `p` fails has
//! not shown a bug: from there `p` may still come. So its end state is classified by random
//! walks: *live* if `p` holds (the executor reports nothing), *transient* if some walk from it
//! reaches a state where `p` holds, *dead* if none of `walks` walks of `depth` events does.
//! Only dead states are liveness violations.
//!
//! A walk is a re-execution of the run's events (strictly, as a replay would) followed by
//! `depth` uniformly random events of the system: never a crash or reboot (the environment's
//! choices; crashing a quorum would make most properties hold vacuously), and no fair
//! continuation. On a real target every walk costs a re-execution of the whole prefix, which
//! is why the default number of walks is small.
//!
//! For a dead run, the *critical transition* (MaceMC Algorithm 3) is the step after which the
//! run is dead: a binary search over the run's prefixes for the last state from which walks
//! still reach `p`, and the event that leaves it.

use flymc_model::{exceptions, EventId, GlobalState, Property, PropertyKind, Target};
use serde::{Deserialize, Serialize};

use crate::executor::{ExecError, Executor, RunOptions};
use crate::order::GOOD_SAMARITAN;
use crate::plan::{Plan, Tail};
use crate::run::{Ending, Run, HANG_PROPERTY};

/// How end states are classified (`flymc run --walks W --walk-depth D`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walks {
    /// Walks from a state before it is called dead.
    pub walks: u32,
    /// Events per walk; `None`: the workload's event limit.
    pub depth: Option<usize>,
    /// Where the walks' seeds come from.
    pub seed: u64,
}

impl Walks {
    /// Five walks of the workload's event limit each: on a simulated target they cost
    /// microseconds; on a real one each re-executes the path, so the default stays small.
    pub const DEFAULT_WALKS: u32 = 5;
}

impl Default for Walks {
    fn default() -> Self {
        Walks {
            walks: Walks::DEFAULT_WALKS,
            depth: None,
            seed: 0,
        }
    }
}

/// The step after which a run is dead.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Critical {
    /// 0-based step index: the event that leaves the last state from which `p` is reachable.
    pub step: usize,
    pub id: EventId,
    /// The event, as people read it.
    pub event: String,
}

impl std::fmt::Display for Critical {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "step {}, {}", self.step, self.event)
    }
}

/// What became of one run whose end state failed a liveness property.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A walk reached `p`: not reported.
    Transient,
    Dead,
}

/// Counts for the run summary.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LivenessStats {
    /// End states that failed a liveness property and were classified.
    pub judged: u64,
    pub transient: u64,
    pub dead: u64,
    /// Walks run: classifying end states and searching for critical transitions.
    pub walks: u64,
    /// Walks per state and events per walk, as configured (depth 0: the event limit).
    pub walks_per_state: u32,
    pub walk_depth: usize,
}

impl LivenessStats {
    pub fn add(&mut self, verdict: Verdict, walks: u64) {
        self.judged += 1;
        self.walks += walks;
        match verdict {
            Verdict::Transient => self.transient += 1,
            Verdict::Dead => self.dead += 1,
        }
    }
}

/// Does `run`'s violation ask for classification: a liveness property judged on its end
/// state (not a hang, not an unfair scheduler's finding)?
pub fn needs_judging(run: &Run) -> bool {
    run.violation.as_ref().is_some_and(|v| {
        v.kind == PropertyKind::Liveness
            && v.property != HANG_PROPERTY
            && v.property != GOOD_SAMARITAN
            && run.ending.stateless_step().is_none()
            && run.critical.is_none()
    })
}

/// Classify `run`'s end state; a transient one loses its violation, a dead one gets its
/// critical transition. Returns the verdict and the walks it took.
pub fn judge(
    exec: &Executor,
    target: &mut dyn Target,
    run: &mut Run,
    cfg: &Walks,
) -> Result<(Verdict, u64), ExecError> {
    let property = run
        .violation
        .as_ref()
        .map(|v| v.property.clone())
        .unwrap_or_default();
    let mut search = Search {
        exec,
        target,
        property,
        ids: run.event_ids(),
        depth: cfg.depth.unwrap_or(exec.workload.max_events),
        walks: cfg.walks,
        seed: cfg.seed,
        spent: 0,
    };
    let n = run.steps.len();
    // A run that ended with nothing but faults enabled is dead without a walk.
    let stuck =
        run.ending == Ending::Quiescent && run.final_enabled.iter().all(|e| e.event.is_fault());
    if !stuck && search.reaches(n, &run.states)? {
        run.violation = None;
        return Ok((Verdict::Transient, search.spent));
    }
    run.critical = search.critical(&run.states)?.map(|step| Critical {
        step,
        id: run.steps[step].event().id,
        event: run.steps[step].event().describe(),
    });
    Ok((Verdict::Dead, search.spent))
}

struct Search<'e, 't> {
    exec: &'e Executor<'e>,
    target: &'t mut dyn Target,
    property: String,
    ids: Vec<EventId>,
    depth: usize,
    walks: u32,
    seed: u64,
    spent: u64,
}

impl Search<'_, '_> {
    /// The property under judgement, fresh.
    fn property(&self) -> Option<Box<dyn Property>> {
        exceptions::run_properties(self.exec.system, self.exec.workload)
            .into_iter()
            .find(|p| p.name() == self.property)
    }

    /// Does `p` hold at one of `states`?
    fn holds_in(&self, states: &[GlobalState]) -> bool {
        let Some(mut p) = self.property() else {
            return true;
        };
        states.iter().any(|s| p.check(s).is_ok())
    }

    /// Is the state after the first `k` steps live or transient: does `p` hold there, or does
    /// one of the walks from it reach `p`?
    fn reaches(&mut self, k: usize, states: &[GlobalState]) -> Result<bool, ExecError> {
        if self.holds_in(&states[k..=k]) {
            return Ok(true);
        }
        for i in 0..self.walks {
            let seed = self
                .seed
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(((k as u64) << 16) | i as u64);
            let plan = Plan {
                prefix: self.ids[..k].to_vec(),
                tail: Tail::Walk {
                    seed,
                    depth: self.depth,
                },
                strict: true,
                sleep: Vec::new(),
                sleep_at: 0,
            };
            self.spent += 1;
            let walk = self.exec.run(self.target, &plan, RunOptions::default())?;
            if walk.states.len() > k && self.holds_in(&walk.states[k..]) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// MaceMC Algorithm 3: the last prefix length `k` whose state still reaches `p` (the end
    /// state, `states.len() - 1`, does not), by binary search; the critical transition is
    /// step `k`. `None` when the initial state is dead too.
    fn critical(&mut self, states: &[GlobalState]) -> Result<Option<usize>, ExecError> {
        let (mut live, mut dead) = (0, states.len() - 1);
        while dead - live > 1 {
            let mid = live + (dead - live) / 2;
            if self.reaches(mid, states)? {
                live = mid;
            } else {
                dead = mid;
            }
        }
        if dead == 0 || (live == 0 && !self.reaches(0, states)?) {
            return Ok(None);
        }
        Ok(Some(live))
    }
}
