//! Depth-first search: the unreduced baseline.
//!
//! By default it is the textbook DFS over the state graph: a global state (node states, the
//! messages in flight, the fault budgets spent) is expanded once, by the first path that reaches
//! it, so the search ends on any finite state space and every reachable state is visited. With
//! `stateless` it is the paper's naive DFS over the tree of interleavings, which re-expands a
//! state every time a different order leads back to it (FlyMC calls it "extremely unscalable";
//! it is kept for that comparison).

use std::collections::{HashMap, HashSet};

use flymc_model::{stable_hash, Event, EventId, EventKind};

use super::{Strategy, StrategyStats};
use flymc_core::plan::Plan;
use flymc_core::run::Run;

/// A state as DFS tells states apart: its hash and the fault budgets already spent, since two
/// runs in the same state with different budgets left can go on differently.
type Key = (u64, u32, u32);

struct Branch {
    prefix: Vec<EventId>,
    /// The state the branch's last event is taken from, that event's content, and the
    /// budgets spent after it.
    from: Key,
    content: u64,
    spent: (u32, u32),
}

pub struct Dfs {
    stateless: bool,
    stack: Vec<Branch>,
    started: bool,
    generated: u64,
    /// States already expanded (stateful mode).
    expanded: HashSet<Key>,
    /// Known transitions (state, event content) -> state hash, to skip a branch that leads
    /// into an expanded state without running it. By content, not identity: two requests
    /// alike in everything but their place in the run take a state to the same successor.
    succ: HashMap<(Key, u64), u64>,
    pruned: u64,
}

impl Dfs {
    pub fn new(stateless: bool) -> Self {
        Dfs {
            stateless,
            stack: Vec::new(),
            started: false,
            generated: 0,
            expanded: HashSet::new(),
            succ: HashMap::new(),
            pruned: 0,
        }
    }

    /// Would this branch only revisit an expanded state?
    fn leads_nowhere_new(&self, b: &Branch) -> bool {
        match self.succ.get(&(b.from, b.content)) {
            Some(h) => self.expanded.contains(&(*h, b.spent.0, b.spent.1)),
            None => false,
        }
    }
}

/// Crashes and reboots taken by the first `n` steps.
pub(super) fn spent_after(run: &Run, n: usize) -> Vec<(u32, u32)> {
    let mut out = Vec::with_capacity(n + 1);
    let (mut c, mut r) = (0, 0);
    out.push((c, r));
    for step in &run.steps[..n] {
        match step.event().kind {
            EventKind::Crash => c += 1,
            EventKind::Reboot => r += 1,
            _ => {}
        }
        out.push((c, r));
    }
    out
}

fn content(e: &Event) -> u64 {
    stable_hash(e.describe().as_bytes())
}

fn bump(spent: (u32, u32), kind: EventKind) -> (u32, u32) {
    match kind {
        EventKind::Crash => (spent.0 + 1, spent.1),
        EventKind::Reboot => (spent.0, spent.1 + 1),
        _ => spent,
    }
}

impl Strategy for Dfs {
    fn name(&self) -> &'static str {
        crate::StrategyKind::Dfs.name()
    }

    fn next_plan(&mut self) -> Option<Plan> {
        let prefix = if !self.started {
            self.started = true;
            Vec::new()
        } else {
            loop {
                let b = self.stack.pop()?;
                if !self.stateless && self.leads_nowhere_new(&b) {
                    self.pruned += 1;
                    continue;
                }
                break b.prefix;
            }
        };
        Some(Plan::fifo(prefix))
    }

    fn observe(&mut self, plan: &Plan, run: &Run) {
        let ids = run.event_ids();
        let n = run.steps.len();
        let spent = spent_after(run, n);
        let key = |i: usize| (run.hashes[i], spent[i].0, spent[i].1);
        // A run that ended in a hang has no state after its last step.
        let Some(settled) = run.hashes.len().checked_sub(1) else {
            return;
        };
        if !self.stateless {
            for (i, step) in run.steps.iter().enumerate().take(settled) {
                self.succ
                    .insert((key(i), content(step.event())), run.hashes[i + 1]);
            }
        }
        // Branches at step `i` (or, at `i == n`, the faults a FIFO tail left untaken at the end:
        // they are choices too), shallow first onto the stack so the deepest pops first.
        let mut branches = Vec::new();
        for i in plan.prefix.len().min(n)..=settled.min(n) {
            if !self.stateless && !self.expanded.insert(key(i)) {
                // Everything from here on was or will be explored from the first visit.
                break;
            }
            let alts: Vec<_> = if i < n {
                let step = &run.steps[i];
                step.enabled
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| *k != step.chosen)
                    .map(|(_, alt)| &alt.event)
                    .collect()
            } else {
                run.final_enabled.iter().map(|alt| &alt.event).collect()
            };
            for e in alts.into_iter().rev() {
                let mut prefix = ids[..i].to_vec();
                prefix.push(e.id);
                branches.push(Branch {
                    prefix,
                    from: key(i),
                    content: content(e),
                    spent: bump(spent[i], e.kind),
                });
            }
        }
        self.generated += branches.len() as u64;
        self.stack.extend(branches);
    }

    fn queue_len(&self) -> usize {
        self.stack.len()
    }

    fn stats(&self) -> StrategyStats {
        StrategyStats {
            generated: self.generated,
            pruned: if self.stateless {
                Vec::new()
            } else {
                vec![("visited state".into(), self.pruned)]
            },
            ..Default::default()
        }
    }
}
