//! Fairness, once: CHESS's fair scheduler (Musuvathi and Qadeer, "Fair stateless model
//! checking", PLDI'08, Algorithm 1) for message-passing nodes.
//!
//! *Threads are nodes.* A node is enabled when an event to it (a message, a timer, a client
//! request, a crash-point write) is pending; crashes and reboots belong to no thread and the
//! scheduler never picks them (they stay the strategies' choices). Scheduling a node runs one
//! of its pending events.
//!
//! *A node yields* when the event it handles makes no progress: its reported state afterwards
//! is one it already held earlier in the run (the state before the event included: a poll
//! timer that finds nothing new, a vote it ignores). A return to an earlier state is the back
//! edge of a loop, the place CHESS's programs yield: ZooKeeper-1419's nodes change their votes
//! on every notification, but only ever among a handful of states.
//!
//! Per node `t` the scheduler keeps, for `t`'s current window (from its last yield): `S(t)`
//! the nodes scheduled, `E(t)` those continuously enabled, `D(t)` those `t` disabled; and one
//! priority relation `P`. When `t` yields, `t` gets a lower priority than every node in
//! `(E(t) ∪ D(t)) \ S(t)` (enabled all window long, or disabled by `t`, yet never scheduled);
//! scheduling `u` drops every edge into `u`. A node with a higher-priority node enabled is not
//! scheduled. Every infinite run it produces on which every node that is scheduled infinitely
//! often also yields infinitely often (good samaritans) is fair (CHESS Theorem 1).
//!
//! Within the nodes `P` allows, [`FairOrder`] chooses either at random (the `fair` strategy's
//! demonic choice) or as the default order would, timers by virtual deadline (the continuation
//! of other strategies' runs at their event limit).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::{Hash, Hasher};

use flymc_model::{Event, EventId, EventKind, GlobalState, NodeId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{default_pick, Order, TimerRank};
use crate::run::Enabled;

/// The property name a good-samaritan violation is reported under.
pub const GOOD_SAMARITAN: &str = "good-samaritan";

/// What one fair run is drawn from: a plain value, so plans stay comparable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FairParams {
    pub seed: u64,
    /// Choose among the schedulable nodes and their events at random; otherwise as the
    /// default order does.
    pub random: bool,
    /// The run's depth bound: it ends after this many events.
    pub bound: usize,
    /// Report a node scheduled this many times since its last yield (or the run's start)
    /// when the run reaches its bound; 0: not judged.
    pub samaritan: usize,
}

/// A set of nodes (node ids below 64; larger ones share the last bit, which only makes the
/// scheduler more permissive).
type Nodes = u64;

fn bit(n: NodeId) -> Nodes {
    1 << n.min(63)
}

/// The thread an event belongs to: its node, unless it is a fault.
fn thread(e: &Enabled) -> Option<NodeId> {
    (!e.event.is_fault()).then_some(e.event.to)
}

fn threads(enabled: &[Enabled]) -> Nodes {
    enabled.iter().filter_map(thread).fold(0, |s, n| s | bit(n))
}

/// Algorithm 1's books: the priority relation and every node's window.
#[derive(Debug, Default)]
struct Windows {
    /// `(t, u)`: `t` runs only while `u` is not enabled.
    p: HashSet<(NodeId, NodeId)>,
    /// Per node; a node not listed is in its first window: `E = {}`, `D = S = all`, so its
    /// first yield adds no edge.
    e: HashMap<NodeId, Nodes>,
    d: HashMap<NodeId, Nodes>,
    s: HashMap<NodeId, Nodes>,
    /// The step taken and not yet accounted: its node, the nodes enabled before it, whether
    /// it yielded (known once the target settled).
    taken: Option<(NodeId, Nodes, bool)>,
    /// The step whose enabled set was last accounted.
    at: Option<usize>,
    /// Per node: hashes of the states it was seen in, and schedulings since its last yield.
    seen: HashMap<NodeId, HashSet<u64>>,
    since_yield: HashMap<NodeId, usize>,
}

impl Windows {
    /// Account the step taken, now that the nodes enabled after it (`next`) are known
    /// (Algorithm 1, lines 13-29).
    fn advance(&mut self, next: Nodes) {
        let Some((t, before, yielded)) = self.taken.take() else {
            return;
        };
        self.p.retain(|&(_, u)| u != t);
        for e in self.e.values_mut() {
            *e &= next;
        }
        if let Some(d) = self.d.get_mut(&t) {
            *d |= before & !next;
        }
        for s in self.s.values_mut() {
            *s |= bit(t);
        }
        let since = self.since_yield.entry(t).or_default();
        if !yielded {
            *since += 1;
            return;
        }
        *since = 0;
        let first = !self.s.contains_key(&t);
        if !first {
            let h = (self.e[&t] | self.d[&t]) & !self.s[&t];
            for u in 0..64 {
                if h & (1 << u) != 0 && u != t {
                    self.p.insert((t, u));
                }
            }
        }
        self.e.insert(t, next);
        self.d.insert(t, 0);
        self.s.insert(t, 0);
    }

    /// The nodes `P` lets run among those `enabled` (Algorithm 1, line 7).
    fn schedulable(&self, enabled: Nodes) -> Nodes {
        let blocked = self
            .p
            .iter()
            .filter(|&&(_, u)| enabled & bit(u) != 0)
            .fold(0, |s, &(t, _)| s | bit(t));
        match enabled & !blocked {
            // P stays acyclic (CHESS Theorem 3); never stop a run on a broken invariant.
            0 => enabled,
            t => t,
        }
    }

    /// Did `node` yield going from `before` to `after`: is it back in a state it held?
    fn judge(&mut self, node: NodeId, before: &GlobalState, after: &GlobalState) -> bool {
        let hash = |s: &GlobalState| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            serde_json::to_string(&s.nodes.get(node))
                .unwrap_or_default()
                .hash(&mut h);
            h.finish()
        };
        let seen = self.seen.entry(node).or_default();
        seen.insert(hash(before));
        !seen.insert(hash(after))
    }
}

/// Virtual time for ranking timers: when each pending timer was armed, on a clock that only
/// fired timers advance (to their deadline); messages take no time. Kept from a run's first
/// step, not from the limit on, as timers armed earlier are due earlier.
#[derive(Debug, Default)]
struct TimerClock {
    /// When each node's timer of each name last fired.
    last_fired: HashMap<(NodeId, String), usize>,
    armed: HashMap<EventId, u64>,
    now: u64,
}

impl TimerClock {
    fn observe(&mut self, enabled: &[Enabled], chosen: usize, step: usize) {
        for e in enabled.iter().filter(|e| e.event.delay_ms.is_some()) {
            self.armed.entry(e.event.id).or_insert(self.now);
        }
        let event = &enabled[chosen].event;
        if event.kind == EventKind::Timeout {
            self.last_fired.insert((event.to, event.name.clone()), step);
            if let (Some(d), Some(at)) = (event.delay_ms, self.armed.get(&event.id)) {
                self.now = self.now.max(at + d);
            }
        }
    }

    fn rank(&self, e: &Enabled) -> TimerRank {
        TimerRank {
            deadline: e
                .event
                .delay_ms
                .map(|d| self.armed.get(&e.event.id).copied().unwrap_or(self.now) + d),
            last_fired: self
                .last_fired
                .get(&(e.event.to, e.event.name.clone()))
                .map_or(0, |s| s + 1),
        }
    }
}

/// CHESS's fair scheduler as an order: Algorithm 1 over nodes, choosing among what it allows
/// at random or as the default order does.
#[derive(Debug)]
pub struct FairOrder {
    windows: Windows,
    clock: TimerClock,
    rng: Option<ChaCha8Rng>,
    samaritan: usize,
    /// Steps observed: the next one to pick.
    steps: usize,
}

impl FairOrder {
    pub fn new(p: FairParams) -> Self {
        FairOrder {
            windows: Windows::default(),
            clock: TimerClock::default(),
            rng: p.random.then(|| ChaCha8Rng::seed_from_u64(p.seed)),
            samaritan: p.samaritan,
            steps: 0,
        }
    }

    /// The deterministic fair order other strategies' runs continue with.
    fn continuation() -> Self {
        FairOrder::new(FairParams {
            seed: 0,
            random: false,
            bound: 0,
            samaritan: 0,
        })
    }

    /// Account the step before `step`, whose enabled set is `enabled`.
    fn account(&mut self, enabled: &[Enabled], step: usize) -> Nodes {
        let es = threads(enabled);
        if self.windows.at != Some(step) {
            self.windows.advance(es);
            self.windows.at = Some(step);
        }
        es
    }
}

impl Order for FairOrder {
    fn pick(&mut self, enabled: &[Enabled], asleep: &dyn Fn(&Enabled) -> bool) -> Option<usize> {
        let es = self.account(enabled, self.steps);
        let t = self.windows.schedulable(es);
        let allowed = |e: &Enabled| thread(e).is_some_and(|n| t & bit(n) != 0) && !asleep(e);
        match self.rng.as_mut() {
            Some(rng) => {
                let nodes: BTreeSet<NodeId> = enabled
                    .iter()
                    .filter(|e| allowed(e))
                    .filter_map(thread)
                    .collect();
                let node = *nodes.iter().nth(rng.gen_range(0..nodes.len().max(1)))?;
                let events: Vec<usize> = (0..enabled.len())
                    .filter(|&i| allowed(&enabled[i]) && enabled[i].event.to == node)
                    .collect();
                Some(events[rng.gen_range(0..events.len())])
            }
            None => {
                let clock = &self.clock;
                default_pick(
                    enabled,
                    &|e| !allowed(e),
                    Some(&|e: &Enabled| clock.rank(e)),
                )
            }
        }
    }

    fn observe(&mut self, enabled: &[Enabled], chosen: usize, step: usize) {
        let es = self.account(enabled, step);
        self.clock.observe(enabled, chosen, step);
        self.windows.taken = thread(&enabled[chosen]).map(|n| (n, es, false));
        self.steps = step + 1;
    }

    fn settled(&mut self, event: &Event, before: &GlobalState, after: &GlobalState) {
        if event.is_fault() {
            return;
        }
        let yielded = self.windows.judge(event.to, before, after);
        if let Some(taken) = self.windows.taken.as_mut() {
            taken.2 = yielded;
        }
    }

    fn unfair(&self) -> Option<String> {
        if self.samaritan == 0 {
            return None;
        }
        let (node, n) = self
            .windows
            .since_yield
            .iter()
            .max_by_key(|&(node, n)| (*n, std::cmp::Reverse(*node)))?;
        (*n >= self.samaritan).then(|| {
            format!(
                "n{node} was scheduled {n} times in a row of its own steps without yielding (every event it handled took it to a state it had not been in)"
            )
        })
    }
}

/// `first` until the event limit, then the fair scheduler, which has watched the run from its
/// first step (its windows and timer clock are those of the whole run).
#[derive(Debug)]
pub struct FairAfter<O> {
    first: O,
    fair: FairOrder,
}

impl<O: Order> FairAfter<O> {
    pub fn new(first: O) -> Self {
        FairAfter {
            first,
            fair: FairOrder::continuation(),
        }
    }
}

impl<O: Order> Order for FairAfter<O> {
    fn pick(&mut self, enabled: &[Enabled], asleep: &dyn Fn(&Enabled) -> bool) -> Option<usize> {
        self.first.pick(enabled, asleep)
    }

    fn observe(&mut self, enabled: &[Enabled], chosen: usize, step: usize) {
        self.fair.observe(enabled, chosen, step);
        self.first.observe(enabled, chosen, step);
    }

    fn settled(&mut self, event: &Event, before: &GlobalState, after: &GlobalState) {
        self.fair.settled(event, before, after);
        self.first.settled(event, before, after);
    }

    fn continuation(&mut self) -> Option<Box<dyn Order>> {
        let fair = std::mem::replace(&mut self.fair, FairOrder::continuation());
        Some(Box::new(fair))
    }
}
