//! `portfolio`: several strategies take turns by path number (shuttle's PortfolioRunner and
//! Coyote's default portfolio, run in turns instead of in parallel so that a run is
//! deterministic). It claims exhaustion only when its systematic member has explored
//! everything; its randomized members never run out.
//!
//! Each member plans from its own paths, and a member that can learn from any run (novelty:
//! [`Strategy::observe_other`]) also sees the others': the new abstract states the systematic
//! search and pct reach become prefixes novelty extends (on the simulated bugs this lowered
//! the portfolio's mean paths on every one; docs/BENCHMARKS.md).
//!
//! Whose turn it is depends only on the path number ([`member_for`]):
//! - path 1 is the systematic member's, its default order (bugs that need no reordering,
//!   such as ZOOKEEPER-1419's livelock, fall on it);
//! - up to path [`PROBE`] the randomized members take turns: they hit shallow bugs in a few
//!   paths, where a systematic search spends hundreds on reorderings near the end of the run;
//! - after that the systematic member takes every other path and the randomized ones share
//!   the rest, so a deep bug only the systematic search reaches costs about twice its paths.
//!
//! How this compares with plain turns on the simulated bugs is measured in docs/BENCHMARKS.md
//! ("The portfolio as the default", "Before: plain turns").

use std::collections::VecDeque;

use flymc_core::dependence::Dependence;
use flymc_core::plan::Plan;
use flymc_core::run::Run;
use flymc_core::strategy::{Note, Strategy, StrategyStats};

pub struct Portfolio {
    /// The systematic member first: its exhaustion is the portfolio's.
    members: Vec<Box<dyn Strategy>>,
    /// Which member handed out each plan not yet observed, oldest first.
    issued: VecDeque<usize>,
    outstanding: Vec<usize>,
    /// Members that said they have nothing more with nothing outstanding.
    done: Vec<bool>,
    /// Paths each member handed out.
    paths: Vec<u64>,
}

impl Portfolio {
    /// `members[0]` is systematic; the others may never run out.
    pub fn new(members: Vec<Box<dyn Strategy>>) -> Portfolio {
        let n = members.len();
        Portfolio {
            members,
            issued: VecDeque::new(),
            outstanding: vec![0; n],
            done: vec![false; n],
            paths: vec![0; n],
        }
    }

    /// The paths each member ran so far, by name.
    pub fn shares(&self) -> Vec<(&'static str, u64)> {
        self.members
            .iter()
            .zip(&self.paths)
            .map(|(m, &n)| (m.name(), n))
            .collect()
    }
}

/// Paths in which only the randomized members take turns (after the systematic member's first).
pub const PROBE: u64 = 48;

/// Whose turn path `path` (1-based) is among `n` members, `0` the systematic one. A member that
/// has no plan to give passes its turn to the next.
pub fn member_for(path: u64, n: usize) -> usize {
    let others = (n as u64).saturating_sub(1);
    if path <= 1 || others == 0 {
        return 0;
    }
    if path <= PROBE {
        return 1 + ((path - 2) % others) as usize;
    }
    // After the probe: systematic, other, systematic, other, ...
    let k = path - PROBE - 1;
    if k.is_multiple_of(2) {
        0
    } else {
        1 + ((k / 2) % others) as usize
    }
}

impl Strategy for Portfolio {
    fn name(&self) -> &'static str {
        crate::StrategyKind::Portfolio.name()
    }

    fn next_plan(&mut self) -> Option<Plan> {
        if self.done[0] {
            return None;
        }
        let n = self.members.len();
        let path = self.paths.iter().sum::<u64>() + 1;
        let first = member_for(path, n);
        for k in 0..n {
            let m = (first + k) % n;
            if self.done[m] {
                continue;
            }
            match self.members[m].next_plan() {
                Some(plan) => {
                    self.issued.push_back(m);
                    self.outstanding[m] += 1;
                    self.paths[m] += 1;
                    return Some(plan);
                }
                None if self.outstanding[m] == 0 => {
                    self.done[m] = true;
                    if m == 0 {
                        return None;
                    }
                }
                // Waiting for its outstanding runs: its turn passes.
                None => {}
            }
        }
        None
    }

    fn observe(&mut self, plan: &Plan, run: &Run) {
        let Some(m) = self.issued.pop_front() else {
            return;
        };
        self.outstanding[m] -= 1;
        for (j, member) in self.members.iter_mut().enumerate() {
            if j == m {
                member.observe(plan, run);
            } else {
                member.observe_other(plan, run);
            }
        }
    }

    fn queue_len(&self) -> usize {
        self.members.iter().map(|m| m.queue_len()).sum()
    }

    fn dependence(&self) -> Option<Box<dyn Dependence + Send>> {
        // Only the systematic member's plans carry sleep sets; the others' tails ignore them.
        self.members[0].dependence()
    }

    fn stats(&self) -> StrategyStats {
        let mut s = StrategyStats::default();
        for m in &self.members {
            let t = m.stats();
            s.generated += t.generated;
            s.pruned.extend(t.pruned);
            s.deprioritized += t.deprioritized;
            s.abstract_states = s.abstract_states.max(t.abstract_states);
            // A member's own statistics, once per kind (no two members keep the same).
            for n in t.notes {
                if !s.notes.iter().any(|m| m.key == n.key) {
                    s.notes.push(n);
                }
            }
        }
        let shares: Vec<(String, u64)> = self
            .shares()
            .into_iter()
            .map(|(m, n)| (m.to_string(), n))
            .collect();
        let text: Vec<String> = shares.iter().map(|(m, n)| format!("{m} {n}")).collect();
        // Its own line first, then its members' (a pct member's guarantee).
        s.notes.insert(
            0,
            Note::line(
                "portfolio",
                serde_json::to_value(&shares).unwrap_or_default(),
                format!("portfolio: paths by member: {}", text.join(", ")),
            ),
        );
        s
    }

    fn exhaustion(&self) -> &'static str {
        "its systematic member explored the whole search space"
    }
}
