//! The dynamic partial-order reduction engine shared by the DPOR-family strategies.
//!
//! After each run, every step `j` is checked against the last earlier step `i` it races with:
//! dependent (by the strategy's [`Dependence`]) and not causally ordered. Such a race means the
//! order of `i` and `j` may matter, so the state before `i` gets a backtrack point: `j`'s event if
//! it was already enabled there, else an enabled event that leads to it (Flanagan and Godefroid,
//! POPL'05). A tree of prefixes keeps each backtrack point from being scheduled twice.

use std::collections::{HashMap, HashSet};

use flymc_model::{stable_hash, Event, EventId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::sleep::{origins, Origin, SleepSets};
use super::{Strategy, StrategyStats};
pub use flymc_core::dependence::Dependence;
use flymc_core::plan::{Plan, Tail};
use flymc_core::run::{Ending, Run};

/// The event with id `id` enabled before step `i` (or at the end of the run).
pub fn enabled_event(run: &Run, i: usize, id: EventId) -> Option<&Event> {
    let list = run.steps.get(i).map_or(&run.final_enabled, |s| &s.enabled);
    list.iter().find(|e| e.event.id == id).map(|e| &e.event)
}

/// Knobs that turn plain DPOR into the bounded and random hybrids of FlyMC's Table 2.
#[derive(Clone, Copy, Debug, Default)]
pub struct DporOptions {
    /// Only add backtrack points at steps below this depth (MoDist's bounded DPOR).
    pub bound: Option<usize>,
    /// Every this many paths, run a random walk instead (MoDist's random + DPOR); its run is
    /// analysed like any other.
    pub random_every: Option<u64>,
    pub seed: u64,
}

#[derive(Default)]
struct TreeNode {
    /// Events already run or queued from this prefix.
    scheduled: HashSet<EventId>,
}

pub struct Dpor<D> {
    name: &'static str,
    dep: D,
    opts: DporOptions,
    tree: HashMap<u64, TreeNode>,
    stack: Vec<(Vec<EventId>, Origin)>,
    sleep: SleepSets,
    started: bool,
    handed_out: u64,
    rng: ChaCha8Rng,
    generated: u64,
    pruned: u64,
}

/// Hash of a prefix extended by one event.
pub fn extend(prefix_hash: u64, e: EventId) -> u64 {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&prefix_hash.to_le_bytes());
    bytes[8..].copy_from_slice(&e.0.to_le_bytes());
    stable_hash(&bytes)
}

/// Hashes of every prefix of `ids`, the empty one first.
pub fn prefix_hashes(ids: &[EventId]) -> Vec<u64> {
    let mut h = Vec::with_capacity(ids.len() + 1);
    h.push(0u64);
    for id in ids {
        let next = extend(*h.last().unwrap(), *id);
        h.push(next);
    }
    h
}

/// The backtrack candidates for a race between steps `i < j`: `j`'s event if it was enabled at
/// `i`; otherwise the first event enabled at `i` that runs before `j` and happens before it;
/// otherwise everything enabled at `i`.
pub fn race_candidates(run: &Run, i: usize, j: usize) -> Vec<EventId> {
    let target = &run.steps[j].enabled[run.steps[j].chosen];
    let at_i = &run.steps[i].enabled;
    if at_i.iter().any(|e| e.event.id == target.event.id) {
        return vec![target.event.id];
    }
    for l in i..j {
        let step = &run.steps[l];
        if step.happens_before(target) && at_i.iter().any(|e| e.event.id == step.event().id) {
            return vec![step.event().id];
        }
    }
    at_i.iter().map(|e| e.event.id).collect()
}

/// Which of steps `..=j` come after step `i` (causally, or by a dependence at one node), the
/// race between `i` and `j` itself left out: what must stay behind `i` when `j` overtakes it.
pub fn comes_after(dep: &mut dyn Dependence, run: &Run, i: usize, j: usize) -> Vec<bool> {
    let mut after = vec![false; j + 1];
    after[i] = true;
    for k in i + 1..=j {
        let ek = &run.steps[k].enabled[run.steps[k].chosen];
        after[k] = (i..k).any(|d| {
            if !after[d] || (d == i && k == j) {
                return false;
            }
            // Events at different nodes are dependent too where the judgement says so (a
            // crash noticed by peers, a shared clock).
            run.steps[d].happens_before(ek) || dep.dependent(run, d, k)
        });
    }
    after
}

/// The paths that reverse the race between steps `i < j`, as (first new event at `i`, prefix).
/// Where possible, the prefix is the run up to `i`, then the events between `i` and `j` that do
/// not come after `i` (causally or by a dependence), then `j`'s event: Abdulla et al.'s wakeup
/// sequence (POPL'14), which reverses the race in one path instead of inching `j`'s event
/// forward one backtrack at a time. Otherwise, [`race_candidates`] one event each.
pub fn reversals(
    dep: &mut dyn Dependence,
    run: &Run,
    ids: &[EventId],
    i: usize,
    j: usize,
) -> Vec<(EventId, Vec<EventId>)> {
    // A crash or reboot has no cause among the events between `i` and `j`: it moves straight
    // to before `i`. (A wakeup sequence would start with some other event, and be lost where
    // that event is already scheduled.)
    let moved = run.steps[j].event();
    if moved.is_fault() && enabled_event(run, i, moved.id).is_some() {
        let mut prefix = ids[..i].to_vec();
        prefix.push(moved.id);
        return vec![(moved.id, prefix)];
    }
    let after = comes_after(dep, run, i, j);
    if !after[j] {
        let mut prefix = ids[..i].to_vec();
        prefix.extend((i + 1..j).filter(|&k| !after[k]).map(|k| ids[k]));
        prefix.push(ids[j]);
        return vec![(prefix[i], prefix)];
    }
    race_candidates(run, i, j)
        .into_iter()
        .map(|c| {
            let mut p = ids[..i].to_vec();
            p.push(c);
            (c, p)
        })
        .collect()
}

/// The events step `j` disabled: enabled before it, not chosen, and gone after it without
/// running (a timer the step cancelled, a message a crash dropped). Disabling is a dependence no
/// later step can show, since the disabled event never runs, so each of them must be tried
/// before `j` directly. Faults are left out: one crash using up the budget for another is the
/// fault budget, not an order. The last step counts only when the run ended quiescent, when
/// what stayed enabled after it is known.
pub fn disabled_by(run: &Run, j: usize) -> Vec<EventId> {
    let step = &run.steps[j];
    let after: HashSet<EventId> = match run.steps.get(j + 1) {
        Some(next) => next.enabled.iter().map(|e| e.event.id).collect(),
        None if run.ending == Ending::Quiescent => {
            run.final_enabled.iter().map(|e| e.event.id).collect()
        }
        None => return Vec::new(),
    };
    step.enabled
        .iter()
        .enumerate()
        .filter(|&(k, e)| k != step.chosen && !e.event.is_fault() && !after.contains(&e.event.id))
        .map(|(_, e)| e.event.id)
        .collect()
}

/// Every step `i < j` racing with `j` (not causally before it, and dependent), in order.
pub fn races<'a, D: Dependence + ?Sized>(
    dep: &'a mut D,
    run: &'a Run,
    j: usize,
) -> impl DoubleEndedIterator<Item = usize> + 'a {
    let target = &run.steps[j].enabled[run.steps[j].chosen];
    (0..j).filter(move |&i| !run.steps[i].happens_before(target) && dep.dependent(run, i, j))
}

/// The last step `i < j` racing with `j`, if any.
pub fn last_race<D: Dependence + ?Sized>(dep: &mut D, run: &Run, j: usize) -> Option<usize> {
    races(dep, run, j).next_back()
}

impl<D: Dependence> Dpor<D> {
    pub fn new(name: &'static str, dep: D, opts: DporOptions) -> Self {
        Dpor {
            name,
            dep,
            opts,
            tree: HashMap::new(),
            stack: Vec::new(),
            sleep: SleepSets::new(),
            started: false,
            handed_out: 0,
            rng: ChaCha8Rng::seed_from_u64(opts.seed),
            generated: 0,
            pruned: 0,
        }
    }
}

impl<D: Dependence> Dpor<D> {
    /// Queue `c` from the prefix hashed `h` (step `i`) unless already scheduled, asleep there,
    /// or redundant.
    fn consider(
        &mut self,
        run: &Run,
        (i, h): (usize, u64),
        c: EventId,
        prefix: Vec<EventId>,
        asleep: &[EventId],
        new: &mut Vec<(usize, EventId, Vec<EventId>)>,
    ) {
        let node = self.tree.entry(h).or_default();
        if node.scheduled.contains(&c) || asleep.contains(&c) {
            return;
        }
        let redundant = enabled_event(run, i, c)
            .is_some_and(|e| self.dep.redundant(run, i, e, &node.scheduled));
        node.scheduled.insert(c);
        if redundant {
            self.pruned += 1;
        } else {
            new.push((i, c, prefix));
        }
    }
}

impl<D: Dependence + Clone + Send + 'static> Strategy for Dpor<D> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn next_plan(&mut self) -> Option<Plan> {
        if !self.started {
            self.started = true;
            self.handed_out += 1;
            return Some(self.sleep.hand_out_plain(Plan::fifo(Vec::new())));
        }
        if self.stack.is_empty() {
            return None;
        }
        self.handed_out += 1;
        if let Some(k) = self.opts.random_every {
            if self.handed_out.is_multiple_of(k) {
                return Some(self.sleep.hand_out_plain(Plan {
                    prefix: Vec::new(),
                    tail: Tail::Random(self.rng.gen()),
                    strict: false,
                    sleep: Vec::new(),
                    sleep_at: 0,
                }));
            }
        }
        let (prefix, origin) = self.stack.pop()?;
        Some(
            self.sleep
                .hand_out(&mut self.dep, &origin, Plan::fifo(prefix)),
        )
    }

    fn observe(&mut self, plan: &Plan, run: &Run) {
        let ids = run.event_ids();
        let hashes = prefix_hashes(&ids);
        let asleep = self.sleep.observe(&mut self.dep, plan, run, &hashes);
        for (i, id) in ids.iter().enumerate() {
            self.tree
                .entry(hashes[i])
                .or_default()
                .scheduled
                .insert(*id);
        }
        let mut new: Vec<(usize, EventId, Vec<EventId>)> = Vec::new();
        for j in 1..run.steps.len() {
            let Some(i) = last_race(&mut self.dep, run, j) else {
                continue;
            };
            if self.opts.bound.is_some_and(|b| i >= b) {
                continue;
            }
            for (c, prefix) in reversals(&mut self.dep, run, &ids, i, j) {
                self.consider(run, (i, hashes[i]), c, prefix, &asleep[i], &mut new);
            }
        }
        for j in 0..run.steps.len() {
            if self.opts.bound.is_some_and(|b| j >= b) {
                break;
            }
            for c in disabled_by(run, j) {
                let mut prefix = ids[..j].to_vec();
                prefix.push(c);
                self.consider(run, (j, hashes[j]), c, prefix, &asleep[j], &mut new);
            }
        }
        // Faults left untaken at the end: run them there, and races move them earlier. A run
        // that ended in a hang or a node's exit has no state after its last step to branch from.
        let end = run.steps.len();
        if self.opts.bound.is_none_or(|b| end < b) && end < run.states.len() {
            for f in &run.final_enabled {
                let mut prefix = ids.clone();
                prefix.push(f.event.id);
                self.consider(
                    run,
                    (end, hashes[end]),
                    f.event.id,
                    prefix,
                    &asleep[end],
                    &mut new,
                );
            }
        }
        // Shallow first, so the deepest backtrack point is explored next.
        new.sort_by_key(|(i, _, _)| *i);
        for branch in origins(run, &hashes, new) {
            self.stack.push(branch);
            self.generated += 1;
        }
    }

    fn queue_len(&self) -> usize {
        self.stack.len()
    }

    fn dependence(&self) -> Option<Box<dyn Dependence + Send>> {
        Some(Box::new(self.dep.clone()))
    }

    fn stats(&self) -> StrategyStats {
        let pruned = if self.pruned > 0 {
            vec![(self.dep.redundancy_name().to_string(), self.pruned)]
        } else {
            Vec::new()
        };
        StrategyStats {
            generated: self.generated,
            pruned,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use flymc_model::{EventKind, GlobalState, VectorClock};
    use serde_json::Map;

    use super::*;
    use crate::mdpor::SameNode;
    use flymc_core::run::{Enabled, Step};

    fn event(id: u64, kind: EventKind, to: usize) -> Enabled {
        Enabled {
            event: Event {
                id: EventId(id),
                kind,
                name: "e".into(),
                from: None,
                to,
                fields: Map::new(),
                parent: None,
                delay_ms: None,
            },
            vc: VectorClock::new(2),
        }
    }

    /// Step 0 delivers message 1 to n0, which cancels n0's timer 2; step 1 delivers message 3.
    /// A crash of n0 stays enabled throughout.
    fn cancelling_run(ending: Ending) -> Run {
        let m = event(1, EventKind::Message, 0);
        let t = event(2, EventKind::Timeout, 0);
        let m2 = event(3, EventKind::Message, 1);
        let c = Enabled {
            event: Event::crash(0, 0),
            vc: VectorClock::new(2),
        };
        let step = |enabled: Vec<Enabled>, node: usize| {
            let mut vc = VectorClock::new(2);
            vc.tick(node);
            Step {
                enabled,
                chosen: 0,
                vc,
                cached: false,
            }
        };
        let state = GlobalState::new(Vec::new(), &[]);
        Run {
            steps: vec![step(vec![m, t, c.clone()], 0), step(vec![m2, c.clone()], 1)],
            hashes: vec![state.hash(); 3],
            states: vec![state; 3],
            ending,
            violation: None,
            final_enabled: vec![c],
            diverged_at: None,
            crash_loses_sent: false,
            late_reports: 0,
            timing: Default::default(),
            logs: None,
            critical: None,
        }
    }

    #[test]
    fn a_cancelled_timer_is_disabled_by_the_step_that_cancelled_it() {
        let run = cancelling_run(Ending::Quiescent);
        assert_eq!(disabled_by(&run, 0), vec![EventId(2)]);
        // The crash stays enabled, and message 3 ran: nothing disabled.
        assert!(disabled_by(&run, 1).is_empty());
        // After a run cut short, what the last step disabled is unknown.
        let run = cancelling_run(Ending::EventLimit);
        assert_eq!(disabled_by(&run, 0), vec![EventId(2)]);
        assert!(disabled_by(&run, 1).is_empty());
    }

    #[test]
    fn dpor_tries_a_cancelled_timer_before_the_step_that_cancelled_it() {
        let run = cancelling_run(Ending::Quiescent);
        let mut dpor = Dpor::new("mdpor", SameNode, DporOptions::default());
        let first = dpor.next_plan().unwrap();
        assert_eq!(first.prefix, Vec::<EventId>::new());
        dpor.observe(&first, &run);
        let mut firsts = Vec::new();
        while let Some(plan) = dpor.next_plan() {
            firsts.push(plan.prefix.clone());
        }
        assert!(
            firsts.contains(&vec![EventId(2)]),
            "the timer runs first on some path: {firsts:?}"
        );
    }

    #[test]
    fn a_crash_racing_with_an_earlier_step_moves_straight_before_it() {
        // n0 takes message 1, n1 message 3, then n0 crashes: the crash races with message 1.
        let mut run = cancelling_run(Ending::Quiescent);
        let crash = run.final_enabled[0].clone();
        run.steps.push(Step {
            enabled: vec![crash.clone()],
            chosen: 0,
            vc: VectorClock(vec![2, 0]),
            cached: false,
        });
        run.states.push(run.states[0].clone());
        run.hashes.push(run.hashes[0]);
        run.final_enabled.clear();
        let ids = run.event_ids();
        assert_eq!(last_race(&mut SameNode, &run, 2), Some(0));
        // Not behind message 3 (a wakeup sequence starting with an unrelated event).
        assert_eq!(
            reversals(&mut SameNode, &run, &ids, 0, 2),
            vec![(crash.event.id, vec![crash.event.id])]
        );
    }
}
