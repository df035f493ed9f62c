//! Depth-first search over every interleaving: the unreduced baseline.

use flymc_model::EventId;

use super::{Strategy, StrategyStats};
use crate::executor::{Plan, Run};

/// Exhaustive stateless DFS. A run of prefix `p` visits new tree nodes at every step past `p`;
/// each such node's untried alternatives become new prefixes, so every maximal interleaving is
/// run exactly once. The deepest alternatives are explored first.
pub struct Dfs {
    stack: Vec<Vec<EventId>>,
    current_prefix: usize,
    started: bool,
    generated: u64,
}

impl Dfs {
    pub fn new() -> Self {
        Dfs {
            stack: Vec::new(),
            current_prefix: 0,
            started: false,
            generated: 0,
        }
    }
}

impl Strategy for Dfs {
    fn name(&self) -> &'static str {
        "dfs"
    }

    fn next_plan(&mut self) -> Option<Plan> {
        let prefix = if !self.started {
            self.started = true;
            Vec::new()
        } else {
            self.stack.pop()?
        };
        self.current_prefix = prefix.len();
        Some(Plan::fifo(prefix))
    }

    fn observe(&mut self, run: &Run) {
        let ids = run.event_ids();
        let mut push = |i: usize, id| {
            let mut p = ids[..i].to_vec();
            p.push(id);
            self.stack.push(p);
            self.generated += 1;
        };
        // Shallow first onto the stack, so the deepest pops first.
        for (i, step) in run.steps.iter().enumerate().skip(self.current_prefix) {
            for (k, alt) in step.enabled.iter().enumerate().rev() {
                if k != step.chosen {
                    push(i, alt.event.id);
                }
            }
        }
        // The faults a FIFO tail left untaken at the end are choices too.
        if run.steps.len() >= self.current_prefix {
            for alt in run.final_enabled.iter().rev() {
                push(run.steps.len(), alt.event.id);
            }
        }
    }

    fn queue_len(&self) -> usize {
        self.stack.len()
    }

    fn stats(&self) -> StrategyStats {
        StrategyStats {
            generated: self.generated,
            ..Default::default()
        }
    }
}
