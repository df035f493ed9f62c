//! PCTCP: probabilistic concurrency testing for message-passing systems (Ozkan, Majumdar,
//! Niksic, Befrouei, Weissenbacher, OOPSLA'18), with crashes and reboots at random steps.
//!
//! Events are partitioned into *chains* of causally ordered events: an event extends the chain
//! whose last event is its parent (the event whose processing produced it), if that chain has
//! not been extended by a sibling already; otherwise (a second child, a client request) it
//! starts a new chain, and so does every timer (a timer that re-arms itself would be an endless
//! chain, which PCT's priorities would never leave). Every new chain gets a random priority above `depth`.
//! The enabled event of the highest-priority chain runs. At `depth - 1` change points, steps
//! drawn at random from `1..=k` (k: the events the run is expected to take after its plan's
//! prefix; steps count from there), the chain about to
//! run is demoted to priority `depth - i` (the i-th change point) and the choice is made again.
//! A run then hits any given bug of depth `d` (an ordering of `d` events that must happen in
//! that order) with probability at least `1 / (c * k^(d-1))`, c the number of chains.
//!
//! Crashes and reboots are not in chains: each fault of the workload's budget gets its own
//! random step in `1..=k`, at which a random enabled crash or reboot runs if there is one (the
//! executor offers them only within the budget and where the workload's condition holds), so
//! that faults spread over the whole run rather than cluster where a walk happens to offer them.
//!
//! Timers are made fair much as CHESS makes a yielding thread fair: a timer does not fire a third
//! time at its node while an event that was pending at the first of the two firings before
//! still waits (twice lets a candidate campaign again before its votes arrive). PCT assumes
//! terminating programs; a poll timer that re-arms on every firing (ZooKeeper's election poll)
//! is not one, and fired at will it kept real ZooKeeper's elections from ever finishing. The
//! summary's probabilistic bound is PCTCP's over the schedules this leaves: a bug that needs a
//! timer to fire a third time ahead of an event pending since its first firing is not covered.

use std::collections::HashMap;

use flymc_model::{Event, EventId, EventKind};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::Order;
use crate::run::Enabled;

/// What one PCTCP run is drawn from: a plain value, so plans stay comparable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PctParams {
    pub seed: u64,
    /// The bug depth d the run is built for (`depth - 1` priority change points).
    pub depth: u32,
    /// Events a run is expected to take: change points and fault steps are drawn from `1..=k`.
    pub k: u32,
    /// Crash and reboot steps to draw (the workload's fault budget).
    pub faults: u32,
}

/// The chain of each event, assigned in the order events are first seen.
#[derive(Debug, Default)]
pub struct Chains {
    of: HashMap<EventId, usize>,
    /// Per chain, its last event.
    last: Vec<EventId>,
}

impl Chains {
    /// The chain of `e`, assigning one if `e` is new. Crashes and reboots have none.
    pub fn assign(&mut self, e: &Event) -> Option<usize> {
        if matches!(e.kind, EventKind::Crash | EventKind::Reboot) {
            return None;
        }
        if let Some(&c) = self.of.get(&e.id) {
            return Some(c);
        }
        // A timer starts a chain of its own. A timer that re-arms itself (a poll loop) would
        // otherwise make an endless chain, and PCT, which assumes terminating programs, would
        // run it forever at the top priority and starve every other chain. Crash-point writes
        // (`disk:*`) are steps of the handler that made them and stay in its chain.
        let timer = e.is_timer();
        let extends = (!timer)
            .then_some(e.parent)
            .flatten()
            .and_then(|p| self.of.get(&p).copied())
            .filter(|&c| Some(&self.last[c]) == e.parent.as_ref());
        let c = match extends {
            Some(c) => {
                self.last[c] = e.id;
                c
            }
            None => {
                self.last.push(e.id);
                self.last.len() - 1
            }
        };
        self.of.insert(e.id, c);
        Some(c)
    }

    pub fn len(&self) -> usize {
        self.last.len()
    }

    pub fn is_empty(&self) -> bool {
        self.last.is_empty()
    }
}

/// The lower bound PCTCP gives on hitting a bug of depth `depth` in one run, for `chains`
/// chains and `k` events: `1 / (chains * k^(depth-1))`.
pub fn per_run_bound(chains: usize, k: usize, depth: u32) -> f64 {
    let c = chains.max(1) as f64;
    let k = k.max(1) as f64;
    1.0 / (c * k.powi(depth.saturating_sub(1) as i32))
}

#[derive(Debug)]
pub struct PctOrder {
    rng: ChaCha8Rng,
    depth: u32,
    /// Steps (1-based) at which the chain about to run is demoted, ascending.
    change_points: Vec<usize>,
    /// Steps (1-based) at which a crash or reboot runs if one is enabled.
    fault_steps: Vec<usize>,
    chains: Chains,
    priority: Vec<u64>,
    /// Steps taken since this order's first pick: change points and fault steps count from
    /// the end of the plan's prefix.
    steps: usize,
    started: bool,
    /// Per timer (node, name): the events that were pending at its last [`REFIRES`] firings.
    /// It does not fire again while one pending at the first of them still waits (CHESS's
    /// fairness for a thread that yields: it goes after those that were ready when it yielded).
    owed: HashMap<(usize, String), std::collections::VecDeque<Vec<EventId>>>,
}

/// How often a timer may fire while an event pending at the first of those firings waits: twice
/// lets a node time out again before its first timeout's messages arrive (a candidate that
/// campaigns twice, which Raft's bugs need), more is a flood.
const REFIRES: usize = 2;

impl PctOrder {
    pub fn new(p: PctParams) -> PctOrder {
        let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
        let k = p.k.max(1) as usize;
        let mut change_points: Vec<usize> =
            (1..p.depth.max(1)).map(|_| rng.gen_range(1..=k)).collect();
        change_points.sort_unstable();
        let mut fault_steps: Vec<usize> = (0..p.faults).map(|_| rng.gen_range(1..=k)).collect();
        fault_steps.sort_unstable();
        PctOrder {
            rng,
            depth: p.depth.max(1),
            change_points,
            fault_steps,
            chains: Chains::default(),
            priority: Vec::new(),
            steps: 0,
            started: false,
            owed: HashMap::new(),
        }
    }

    fn chain(&mut self, e: &Event) -> Option<usize> {
        let c = self.chains.assign(e)?;
        while self.priority.len() <= c {
            // Above every demoted priority (1..depth).
            let p = u64::from(self.depth) + u64::from(self.rng.gen::<u32>());
            self.priority.push(p);
        }
        Some(c)
    }

    /// Whether timer `e` has fired [`REFIRES`] times since an event that still waits was
    /// pending: then it owes that event its turn.
    fn owes(&self, e: &Event, enabled: &[Enabled]) -> bool {
        self.owed.get(&(e.to, e.name.clone())).is_some_and(|fired| {
            fired.len() == REFIRES && enabled.iter().any(|x| fired[0].contains(&x.event.id))
        })
    }

    /// The enabled event of the highest-priority chain (ties: the first listed); a timer that
    /// owes its turn only if nothing else is enabled.
    fn best(&mut self, enabled: &[Enabled]) -> Option<(usize, usize)> {
        let waiting: Vec<bool> = enabled
            .iter()
            .map(|e| e.event.is_timer() && self.owes(&e.event, enabled))
            .collect();
        let others = enabled
            .iter()
            .zip(&waiting)
            .any(|(e, w)| !w && !e.event.is_fault());
        let mut best: Option<(u64, usize, usize)> = None;
        for (i, e) in enabled.iter().enumerate() {
            if others && waiting[i] {
                continue;
            }
            let Some(c) = self.chain(&e.event) else {
                continue;
            };
            let p = self.priority[c];
            if best.is_none_or(|(bp, _, _)| p > bp) {
                best = Some((p, i, c));
            }
        }
        best.map(|(_, i, c)| (i, c))
    }
}

impl Order for PctOrder {
    fn pick(&mut self, enabled: &[Enabled], _asleep: &dyn Fn(&Enabled) -> bool) -> Option<usize> {
        self.started = true;
        let step = self.steps + 1;
        let faults: Vec<usize> = (0..enabled.len())
            .filter(|&i| matches!(enabled[i].event.kind, EventKind::Crash | EventKind::Reboot))
            .collect();
        if !faults.is_empty() && self.fault_steps.first().is_some_and(|&s| s <= step) {
            self.fault_steps.remove(0);
            return Some(faults[self.rng.gen_range(0..faults.len())]);
        }
        let (mut i, mut c) = self.best(enabled)?;
        // Change points at or before this step (several may fall on one step, or on steps
        // before the first pick after a prefix): each demotes the chain about to run.
        while self.change_points.first().is_some_and(|&s| s <= step) {
            self.change_points.remove(0);
            let nth = self.depth as usize - 1 - self.change_points.len();
            self.priority[c] = u64::from(self.depth) - nth as u64;
            (i, c) = self.best(enabled)?;
        }
        Some(i)
    }

    fn observe(&mut self, enabled: &[Enabled], chosen: usize, _step: usize) {
        // Chains follow every event seen, the prefix's too.
        for e in enabled {
            self.chain(&e.event);
        }
        if let Some(e) = enabled
            .get(chosen)
            .map(|e| &e.event)
            .filter(|e| e.is_timer())
        {
            let pending = enabled
                .iter()
                .filter(|x| x.event.id != e.id && !x.event.is_fault())
                .map(|x| x.event.id)
                .collect();
            let fired = self.owed.entry((e.to, e.name.clone())).or_default();
            if fired.len() == REFIRES {
                fired.pop_front();
            }
            fired.push_back(pending);
        }
        if self.started {
            self.steps += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flymc_model::VectorClock;

    fn ev(id: u64, parent: Option<u64>, kind: EventKind) -> Enabled {
        Enabled {
            event: Event {
                id: EventId(id),
                kind,
                name: "m".into(),
                from: None,
                to: 0,
                fields: Default::default(),
                parent: parent.map(EventId),
                delay_ms: None,
            },
            vc: VectorClock::default(),
        }
    }

    #[test]
    fn a_child_extends_its_parent_s_chain_and_a_second_child_starts_one() {
        let mut c = Chains::default();
        let m = EventKind::Message;
        assert_eq!(c.assign(&ev(1, None, m).event), Some(0));
        assert_eq!(c.assign(&ev(2, Some(1), m).event), Some(0));
        assert_eq!(c.assign(&ev(3, Some(1), m).event), Some(1));
        assert_eq!(c.assign(&ev(4, Some(2), m).event), Some(0));
        assert_eq!(c.assign(&ev(5, None, EventKind::Client).event), Some(2));
        assert_eq!(c.assign(&ev(6, None, EventKind::Crash).event), None);
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn the_same_seed_picks_the_same_events_and_faults_come_at_their_steps() {
        let enabled = vec![
            ev(1, None, EventKind::Message),
            ev(2, None, EventKind::Message),
            ev(3, None, EventKind::Crash),
        ];
        let p = PctParams {
            seed: 7,
            depth: 3,
            k: 4,
            faults: 1,
        };
        let picks = |p: PctParams| {
            let mut o = PctOrder::new(p);
            (0..4)
                .map(|s| {
                    let i = o.pick(&enabled, &|_| false).unwrap();
                    o.observe(&enabled, i, s);
                    i
                })
                .collect::<Vec<_>>()
        };
        let a = picks(p);
        assert_eq!(a, picks(p));
        assert_eq!(a.iter().filter(|&&i| i == 2).count(), 1, "{a:?}");
        let differ = (0..20).any(|seed| picks(PctParams { seed, ..p }) != a);
        assert!(differ, "seeds change the schedule");
    }

    #[test]
    fn a_timer_that_re_arms_itself_does_not_starve_a_message() {
        // n0's poll timer re-arms on every firing; a message waits at n1. With the timer in
        // its parent's chain, every seed that ranks that chain first (about half) never
        // delivers the message; with a chain per firing, only a message ranked near the bottom
        // waits out 40 firings.
        let mut starved = 0;
        for seed in 0..40 {
            let mut o = PctOrder::new(PctParams {
                seed,
                depth: 1,
                k: 100,
                faults: 0,
            });
            let mut timer = {
                let mut t = ev(1, None, EventKind::Timeout);
                t.event.name = "poll".into();
                t
            };
            let message = ev(1000, None, EventKind::Message);
            let delivered = (0..40).any(|step| {
                let enabled = vec![timer.clone(), message.clone()];
                let i = o.pick(&enabled, &|_| false).unwrap();
                o.observe(&enabled, i, step);
                let next = timer.event.id.0 + 1;
                let parent = timer.event.id.0;
                timer.event.id = EventId(next);
                timer.event.parent = Some(EventId(parent));
                i == 1
            });
            starved += usize::from(!delivered);
        }
        assert!(starved <= 4, "{starved} of 40 seeds starved the message");
    }

    #[test]
    fn a_timer_fires_again_only_after_what_was_pending_when_it_fired() {
        // ZooKeeper's election poll re-arms on every firing and each firing sends
        // notifications: fired at will, it floods the nodes until the event limit. Whatever
        // the priorities, the message pending at the first firing goes before the third.
        for seed in 0..40 {
            let mut o = PctOrder::new(PctParams {
                seed,
                depth: 3,
                k: 100,
                faults: 0,
            });
            let mut timer = ev(1, None, EventKind::Timeout);
            timer.event.name = "poll".into();
            let message = ev(1000, None, EventKind::Message);
            let mut fired = 0;
            for step in 0..4 {
                let enabled = vec![timer.clone(), message.clone()];
                let i = o.pick(&enabled, &|_| false).unwrap();
                o.observe(&enabled, i, step);
                if i == 1 {
                    break;
                }
                fired += 1;
                timer.event.parent = Some(timer.event.id);
                timer.event.id = EventId(timer.event.id.0 + 1);
            }
            assert!(
                fired <= REFIRES,
                "seed {seed}: the timer fired {fired} times first"
            );
        }
    }

    #[test]
    fn the_bound_is_one_over_chains_times_k_to_the_depth_less_one() {
        assert_eq!(per_run_bound(4, 10, 3), 1.0 / 400.0);
        assert_eq!(per_run_bound(4, 10, 1), 1.0 / 4.0);
    }
}
