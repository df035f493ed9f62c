//! `portfolio`: several strategies take turns by path number, each learning only from its own
//! paths (shuttle's PortfolioRunner and Coyote's default portfolio, run in turns instead of in
//! parallel so that a run is deterministic). On any bug it needs at most as many paths as its
//! best member times the number of members. It claims exhaustion only when its systematic
//! member has explored everything; its randomized members never run out.

use std::collections::VecDeque;

use flymc_core::dependence::Dependence;
use flymc_core::plan::Plan;
use flymc_core::run::Run;
use flymc_core::strategy::{Strategy, StrategyStats};

pub struct Portfolio {
    /// The systematic member first: its exhaustion is the portfolio's.
    members: Vec<Box<dyn Strategy>>,
    /// The member whose turn it is.
    turn: usize,
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
            turn: 0,
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

impl Strategy for Portfolio {
    fn name(&self) -> &'static str {
        "portfolio"
    }

    fn next_plan(&mut self) -> Option<Plan> {
        if self.done[0] {
            return None;
        }
        let n = self.members.len();
        for k in 0..n {
            let m = (self.turn + k) % n;
            if self.done[m] {
                continue;
            }
            match self.members[m].next_plan() {
                Some(plan) => {
                    self.turn = (m + 1) % n;
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
        self.members[m].observe(plan, run);
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
            s.fault_states += t.fault_states;
            s.abstract_states = s.abstract_states.max(t.abstract_states);
            s.pct = s.pct.or(t.pct);
        }
        s.shares = self
            .shares()
            .into_iter()
            .map(|(m, n)| (m.to_string(), n))
            .collect();
        s
    }

    fn exhaustion(&self) -> &'static str {
        "its systematic member explored the whole search space"
    }
}
