//! Consequence prediction (CrystalBall, Figure 8): a breadth-first search from the live state
//! that delivers pending messages and client requests in every order, but runs a node's local
//! actions (timers, crashes, reboots) only from local states of that node not yet seen in this
//! search, to a depth, state and time bound, checking the safety properties on every state.
//!
//! Skipping local actions from seen local states is what lets the search go deep fast: a timer
//! that fires at a node in the same local state does the same thing whatever the rest of the
//! system looks like, so most of those interleavings add nothing but width.
//!
//! Besides the violations it finds, it says for every event that could run next whether every
//! explored continuation after it violates a property ([`Choice::doomed`]): execution steering
//! ([`super::steer`]) holds such an event back when another one is not doomed.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use flymc_model::{
    Event, EventId, EventKind, GlobalState, Property, PropertyKind, System, Target, TargetError,
    Workload,
};
use serde::Serialize;

use crate::clocks::Clocks;
use crate::faults::Faults;

/// How far one prediction looks.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Bounds {
    /// Events after the live state.
    pub depth: usize,
    /// States explored.
    pub states: usize,
    /// Wall-clock time.
    #[serde(serialize_with = "millis")]
    pub time: Duration,
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            depth: 12,
            states: 3000,
            time: Duration::from_secs(2),
        }
    }
}

/// A violation the search reached: the events after the live state that lead to it.
#[derive(Clone, Debug, Serialize)]
pub struct Predicted {
    pub property: String,
    pub message: String,
    /// The events from the live state on; its length is how many steps ahead it is.
    pub path: Vec<Event>,
}

/// What the search says about one event that could run next.
#[derive(Clone, Debug, Serialize)]
pub struct Choice {
    pub id: EventId,
    /// Within the bounds, every continuation after it (faults aside: the environment may not
    /// strike) violates a property, the farthest this many steps ahead (counting it).
    pub doomed: Option<usize>,
    /// The nearest violation after it, in steps (counting it).
    pub nearest: Option<usize>,
    /// No explored continuation after it ends in a state where a liveness property fails.
    pub live: bool,
}

/// One prediction from one live state.
#[derive(Clone, Debug, Serialize)]
pub struct Prediction {
    pub states: usize,
    /// The deepest state reached, in events after the live state.
    pub depth: usize,
    pub micros: u64,
    /// Local actions skipped because their node's local state was already explored.
    pub pruned_local: usize,
    /// The nearest violation of each property, nearest first.
    pub violations: Vec<Predicted>,
    pub choices: Vec<Choice>,
    /// Every explored continuation from the live state violates a property, the farthest
    /// this many steps ahead.
    pub doomed: Option<usize>,
    /// No explored continuation ends in a state where a liveness property fails.
    pub live: bool,
}

impl Prediction {
    pub fn choice(&self, id: EventId) -> Option<&Choice> {
        self.choices.iter().find(|c| c.id == id)
    }
}

/// Copies of the live cluster for the search: in memory when the target can fork itself,
/// otherwise a second target that re-executes the path from the initial state.
pub struct Copier<'a> {
    pub system: &'a dyn System,
    pub workload: &'a Workload,
}

impl Copier<'_> {
    /// `from` as it is after `path()` (every event since the initial state).
    pub fn copy(
        &self,
        from: &dyn Target,
        path: impl FnOnce() -> Vec<Event>,
    ) -> Result<Box<dyn Target>, TargetError> {
        if let Some(t) = from.fork() {
            return Ok(t);
        }
        let mut t = self.system.target(self.workload)?;
        t.start(self.workload)?;
        t.settle()?;
        for e in &path() {
            apply(t.as_mut(), e)?;
            t.settle()?;
        }
        Ok(t)
    }
}

/// Deliver, crash or reboot.
pub(crate) fn apply(t: &mut dyn Target, e: &Event) -> Result<(), TargetError> {
    match e.kind {
        EventKind::Crash => t.crash(e.to),
        EventKind::Reboot => t.reboot(e.to),
        _ => t.enable(e.id),
    }
}

/// A local action: CrystalBall runs these only from fresh local states.
fn local(e: &Event) -> bool {
    matches!(
        e.kind,
        EventKind::Timeout | EventKind::Crash | EventKind::Reboot
    )
}

struct Node {
    parent: Option<usize>,
    event: Option<Event>,
    state: GlobalState,
    depth: usize,
    violated: bool,
    /// Children by the events leading there (faults flagged).
    children: Vec<(usize, bool)>,
    /// Every controllable event from here was tried (none cut by a bound or the local rule).
    complete: bool,
}

/// Where the search starts: the live state, a target in it, its fault budget.
pub(crate) struct Start<'a> {
    pub target: &'a dyn Target,
    pub history: &'a [Event],
    pub state: &'a GlobalState,
    pub faults: &'a Faults,
}

/// Run one consequence prediction from `start`.
pub(crate) fn predict(
    copier: &Copier,
    start: Start,
    bounds: Bounds,
) -> Result<Prediction, TargetError> {
    let began = Instant::now();
    let mut search = Search {
        copier,
        history: start.history,
        nodes: vec![Node {
            parent: None,
            event: None,
            state: start.state.clone(),
            depth: 0,
            violated: false,
            children: Vec::new(),
            complete: false,
        }],
        seen: HashMap::from([(start.state.hash(), 0)]),
        local_explored: HashSet::new(),
        pruned_local: 0,
        violations: Vec::new(),
    };
    let root = copier.copy(start.target, || start.history.to_vec())?;
    let mut frontier = VecDeque::from([(0, root, start.faults.clone())]);
    while let Some((v, target, faults)) = frontier.pop_front() {
        let over = search.nodes[v].depth >= bounds.depth
            || search.nodes.len() >= bounds.states
            || began.elapsed() >= bounds.time;
        if over {
            break;
        }
        for child in search.expand(v, target, &faults)? {
            frontier.push_back(child);
        }
    }
    Ok(search.finish(began))
}

struct Search<'a> {
    copier: &'a Copier<'a>,
    history: &'a [Event],
    nodes: Vec<Node>,
    seen: HashMap<u64, usize>,
    local_explored: HashSet<u64>,
    pruned_local: usize,
    violations: Vec<Predicted>,
}

type Frontier = (usize, Box<dyn Target>, Faults);

impl Search<'_> {
    /// Every successor of node `v` the local rule allows; the new ones to explore further.
    fn expand(
        &mut self,
        v: usize,
        target: Box<dyn Target>,
        faults: &Faults,
    ) -> Result<Vec<Frontier>, TargetError> {
        let nodes = self.nodes[v].state.nodes.len();
        let mut enabled = Clocks::new(nodes).enabled(target.pending());
        faults.add_candidates(&mut enabled, &Clocks::new(nodes), &self.nodes[v].state);
        // CrystalBall's localExplored: a node's local actions from each of its local states once.
        let fresh: Vec<bool> = (0..nodes)
            .map(|n| {
                let view = serde_json::to_string(&self.nodes[v].state.nodes[n]).unwrap_or_default();
                let key = flymc_model::stable_hash(format!("{n}:{view}").as_bytes());
                self.local_explored.insert(key)
            })
            .collect();
        let mut complete = true;
        let mut out = Vec::new();
        for e in enabled.into_iter().map(|e| e.event) {
            if local(&e) && !fresh.get(e.to).copied().unwrap_or(false) {
                self.pruned_local += 1;
                complete &= e.is_fault();
                continue;
            }
            let fault = e.is_fault();
            let mut t = self
                .copier
                .copy(target.as_ref(), || self.path_to(v, Some(&e)))?;
            let mut f = faults.clone();
            match apply(t.as_mut(), &e) {
                Ok(()) => {}
                // A node that hangs or exits in a copy: a branch the search cannot follow.
                Err(TargetError::Hang { .. } | TargetError::Exited { .. }) => continue,
                Err(err) => return Err(err),
            }
            match e.kind {
                EventKind::Crash => f.crashed(e.to),
                EventKind::Reboot => f.rebooted(e.to),
                _ => {}
            }
            f.stepped(&e);
            let state = match t.settle() {
                Ok(s) => s,
                Err(TargetError::Hang { .. } | TargetError::Exited { .. }) => continue,
                Err(err) => return Err(err),
            };
            let hash = state.hash();
            if let Some(&seen) = self.seen.get(&hash) {
                self.nodes[v].children.push((seen, fault));
                continue;
            }
            let child = self.nodes.len();
            self.nodes.push(Node {
                parent: Some(v),
                event: Some(e),
                depth: self.nodes[v].depth + 1,
                state,
                violated: false,
                children: Vec::new(),
                complete: false,
            });
            self.seen.insert(hash, child);
            self.nodes[v].children.push((child, fault));
            if self.check(child) {
                continue;
            }
            out.push((child, t, f));
        }
        self.nodes[v].complete = complete;
        Ok(out)
    }

    /// The events from the live state to node `v`, then `last`; with the history before them
    /// when copies are re-executed rather than forked.
    fn path_to(&self, v: usize, last: Option<&Event>) -> Vec<Event> {
        let mut rev: Vec<Event> = last.into_iter().cloned().collect();
        let mut at = Some(v);
        while let Some(i) = at {
            rev.extend(self.nodes[i].event.clone());
            at = self.nodes[i].parent;
        }
        let mut path = self.history.to_vec();
        path.extend(rev.into_iter().rev());
        path
    }

    /// Check the safety properties along the chain from the live state to node `v`, on fresh
    /// properties: what a property remembers starts at the live state (a path file's replay
    /// from the initial state confirms it with the whole history).
    fn check(&mut self, v: usize) -> bool {
        let mut chain = Vec::new();
        let mut at = Some(v);
        while let Some(i) = at {
            chain.push(i);
            at = self.nodes[i].parent;
        }
        let mut props = safety(self.copier);
        for &i in chain.iter().rev() {
            for p in props.iter_mut() {
                if let Err(message) = p.check(&self.nodes[i].state) {
                    if i != v {
                        // Seen before this node: already recorded there.
                        return true;
                    }
                    self.nodes[v].violated = true;
                    if !self.violations.iter().any(|x| x.property == p.name()) {
                        let start = self.history.len();
                        self.violations.push(Predicted {
                            property: p.name().to_string(),
                            message,
                            path: self.path_to(v, None)[start..].to_vec(),
                        });
                    }
                    return true;
                }
            }
        }
        false
    }

    fn finish(self, began: Instant) -> Prediction {
        let n = self.nodes.len();
        // Nearest violation below each node, and doom: every controllable child doomed.
        let mut nearest: Vec<Option<usize>> =
            self.nodes.iter().map(|x| x.violated.then_some(0)).collect();
        let mut doomed = nearest.clone();
        for _ in 0..n {
            let mut changed = false;
            for v in (0..n).rev() {
                let x = &self.nodes[v];
                if x.violated {
                    continue;
                }
                let near = x
                    .children
                    .iter()
                    .filter_map(|&(c, _)| nearest[c].map(|d| d + 1))
                    .min();
                if near.is_some() && near < nearest[v].or(Some(usize::MAX)) {
                    nearest[v] = near;
                    changed = true;
                }
                let moves: Vec<usize> = x
                    .children
                    .iter()
                    .filter(|&&(_, fault)| !fault)
                    .map(|&(c, _)| c)
                    .collect();
                if doomed[v].is_none() && x.complete && !moves.is_empty() {
                    let all: Option<Vec<usize>> = moves.iter().map(|&c| doomed[c]).collect();
                    if let Some(ds) = all {
                        doomed[v] = ds.iter().max().map(|d| d + 1);
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let live = self.live_below();
        let root = &self.nodes[0];
        let choices = root
            .children
            .iter()
            .filter_map(|&(c, _)| {
                let id = self.nodes[c].event.as_ref()?.id;
                Some(Choice {
                    id,
                    doomed: doomed[c].map(|d| d + 1),
                    nearest: nearest[c].map(|d| d + 1),
                    live: live[c],
                })
            })
            .collect();
        let mut violations = self.violations;
        violations.sort_by_key(|p| p.path.len());
        Prediction {
            doomed: doomed[0],
            live: live[0],
            states: n,
            depth: self.nodes.iter().map(|x| x.depth).max().unwrap_or(0),
            micros: began.elapsed().as_micros() as u64,
            pruned_local: self.pruned_local,
            violations,
            choices,
        }
    }

    /// Per node: no explored continuation ends (nothing left to run, no violation on the way)
    /// in a state where a liveness property fails; an end the bounds cut off says nothing.
    fn live_below(&self) -> Vec<bool> {
        let mut props = liveness(self.copier);
        let n = self.nodes.len();
        let mut stuck: Vec<bool> = self
            .nodes
            .iter()
            .map(|x| {
                let end = x.complete && x.children.is_empty() && !x.violated;
                end && !props.iter_mut().all(|p| p.check(&x.state).is_ok())
            })
            .collect();
        for _ in 0..n {
            let mut changed = false;
            for v in (0..n).rev() {
                if !stuck[v] && self.nodes[v].children.iter().any(|&(c, _)| stuck[c]) {
                    stuck[v] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        stuck.into_iter().map(|s| !s).collect()
    }
}

fn of_kind(copier: &Copier, kind: PropertyKind) -> Vec<Box<dyn Property>> {
    flymc_model::exceptions::run_properties(copier.system, copier.workload)
        .into_iter()
        .filter(|p| p.kind() == kind)
        .collect()
}

fn safety(copier: &Copier) -> Vec<Box<dyn Property>> {
    of_kind(copier, PropertyKind::Safety)
}

fn liveness(copier: &Copier) -> Vec<Box<dyn Property>> {
    of_kind(copier, PropertyKind::Liveness)
}
