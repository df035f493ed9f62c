//! `novelty`: extend the prefixes that reached an abstract state never seen before (the
//! state-novelty feedback of Mallory, CCS'23, and ModelFuzz, OOPSLA'25).
//!
//! The abstract state is coarse on purpose, so that "new" means new in kind: per node, whether
//! it is up, and each variable that survives a crash ([`flymc_model::About::fault_vars`]; all
//! of them when the system names none) replaced by its *rank* among the nodes: which epoch is
//! ahead, which zxid is behind, which are equal, not their values (a list by its length); other
//! values (roles) as they are; then under the system's symmetry. In-flight messages are left out.
//!
//! Every path starts from a prefix in the corpus (at first the empty one) and goes on as a
//! PCTCP run from a fresh seed. A path that reaches new abstract states adds the prefix up to
//! the first of them, so the search keeps branching from its frontier; prefixes are taken in
//! turn, newest first within a round.

use std::collections::{BTreeSet, HashSet};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value};

use super::{Strategy, StrategyContext};
use flymc_core::order::PctParams;
use flymc_core::plan::{Plan, Tail};
use flymc_core::run::Run;
use flymc_core::strategy::StrategyStats;
use flymc_model::{EventId, GlobalState, NodeView, Symmetry};

/// The coarse abstract states of runs, and which were seen.
pub struct Novelty {
    vars: Option<Vec<String>>,
    sym: Symmetry,
    seen: HashSet<u64>,
    /// Also tell a value still at nothing (0, an empty list) from one behind the others.
    initial: bool,
}

impl Novelty {
    pub fn new(vars: Option<Vec<String>>, sym: Symmetry) -> Novelty {
        Novelty {
            vars,
            sym,
            seen: HashSet::new(),
            initial: false,
        }
    }

    /// Tell a node that holds nothing yet (a zxid or epoch of 0, an empty log) from one that
    /// is behind holding something: ranks alone make a node crashed before the first write and
    /// one crashed after it, before the second, the same.
    pub fn marking_initial(mut self) -> Self {
        self.initial = true;
        self
    }

    /// The abstract state of `s`.
    pub fn abstract_state(&self, s: &GlobalState) -> u64 {
        // Every variable some node reports whose name passes `keep`, once each, sorted.
        let reported = |keep: fn(&str) -> bool| -> BTreeSet<String> {
            s.nodes
                .iter()
                .flat_map(|n| n.vars.keys().filter(|k| keep(k)).cloned())
                .collect()
        };
        let names: Vec<String> = match &self.vars {
            // What crash-point writes put on disk survives a crash too (`disk::with_contents`).
            Some(v) => v
                .iter()
                .cloned()
                .chain(reported(|k| k.starts_with("disk:")))
                .collect(),
            None => reported(|_| true).into_iter().collect(),
        };
        let mut nodes: Vec<NodeView> = s
            .nodes
            .iter()
            .map(|n| NodeView {
                alive: n.alive,
                vars: Map::new(),
            })
            .collect();
        for name in &names {
            let values: Vec<Option<&Value>> = s.nodes.iter().map(|n| n.vars.get(name)).collect();
            for (i, v) in values.iter().enumerate() {
                let Some(v) = v else { continue };
                let a = match magnitude(v) {
                    Some(x) => {
                        // Dense rank: how many distinct smaller magnitudes other nodes hold.
                        let mut below: Vec<f64> = values
                            .iter()
                            .filter_map(|o| o.and_then(magnitude))
                            .filter(|&y| y < x)
                            .collect();
                        below.sort_by(f64::total_cmp);
                        below.dedup();
                        if self.initial {
                            Value::from(vec![below.len() as f64, f64::from(x == 0.0)])
                        } else {
                            Value::from(below.len())
                        }
                    }
                    None => (*v).clone(),
                };
                nodes[i].vars.insert(name.clone(), a);
            }
        }
        let coarse = GlobalState::new(nodes, &[]);
        self.sym.abstract_state(&coarse).hash
    }

    /// Learn `run`'s states; the indices of those never seen before (index `i` is the state
    /// before step `i`).
    pub fn learn(&mut self, run: &Run) -> Vec<usize> {
        self.learn_states(&run.states)
    }

    /// [`Novelty::learn`] for states given directly.
    pub fn learn_states(&mut self, states: &[GlobalState]) -> Vec<usize> {
        let mut new = Vec::new();
        for (i, s) in states.iter().enumerate() {
            if self.seen.insert(self.abstract_state(s)) {
                new.push(i);
            }
        }
        new
    }

    /// Abstract states seen so far.
    pub fn covered(&self) -> usize {
        self.seen.len()
    }
}

/// What orders a variable's values across nodes: a number, or a list's length.
fn magnitude(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Array(a) => Some(a.len() as f64),
        _ => None,
    }
}

pub struct NoveltySearch {
    rng: ChaCha8Rng,
    novelty: Novelty,
    /// Prefixes that reached a new abstract state, oldest first.
    corpus: Vec<Vec<EventId>>,
    /// Index into `corpus` of the next prefix to extend, counting down; `None`: start a new
    /// round at the newest.
    next: Option<usize>,
    depth: u32,
    faults: u32,
    k: usize,
}

/// Prefixes kept at most; beyond it, new ones replace the oldest after the empty prefix.
const MAX_CORPUS: usize = 4096;

impl NoveltySearch {
    pub fn new(ctx: &StrategyContext) -> NoveltySearch {
        NoveltySearch {
            rng: ChaCha8Rng::seed_from_u64(ctx.seed ^ 0x6e6f_7665_6c74_7900),
            novelty: Novelty::new(ctx.fault_vars.clone(), ctx.symmetry.clone()),
            corpus: vec![Vec::new()],
            next: None,
            depth: ctx.pct_depth.max(1),
            faults: ctx.workload.crashes + ctx.workload.reboots,
            k: ctx.workload.max_events.max(1),
        }
    }
}

impl Strategy for NoveltySearch {
    fn name(&self) -> &'static str {
        crate::StrategyKind::Novelty.name()
    }

    /// Never exhausts: every path is a fresh draw from some prefix.
    fn next_plan(&mut self) -> Option<Plan> {
        let at = self.next.unwrap_or(self.corpus.len() - 1);
        let prefix = self.corpus[at].clone();
        self.next = at.checked_sub(1);
        // The tail's steps count from the prefix's end.
        let k = self.k.saturating_sub(prefix.len()).max(1);
        Some(Plan {
            prefix,
            tail: Tail::Pct(PctParams {
                seed: self.rng.gen(),
                depth: self.depth,
                k: k.min(u32::MAX as usize) as u32,
                faults: self.faults,
            }),
            strict: false,
            sleep: Vec::new(),
            sleep_at: 0,
        })
    }

    fn observe(&mut self, _plan: &Plan, run: &Run) {
        self.k = self.k.max(run.steps.len());
        let new = self.novelty.learn(run);
        if let Some(&first) = new.iter().find(|&&i| i > 0) {
            let prefix: Vec<EventId> = run.event_ids()[..first].to_vec();
            if self.corpus.len() < MAX_CORPUS {
                self.corpus.push(prefix);
            } else {
                let slot = 1 + self.rng.gen_range(0..MAX_CORPUS - 1);
                self.corpus[slot] = prefix;
            }
        }
    }

    /// A prefix is worth extending whoever's run reached it: in a portfolio, the systematic
    /// member's and pct's new abstract states join the corpus too.
    fn observe_other(&mut self, plan: &Plan, run: &Run) {
        self.observe(plan, run)
    }

    fn queue_len(&self) -> usize {
        self.corpus.len()
    }

    fn stats(&self) -> StrategyStats {
        StrategyStats {
            abstract_states: self.novelty.covered() as u64,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state(nodes: &[(bool, Value)]) -> GlobalState {
        let nodes = nodes
            .iter()
            .map(|(alive, vars)| NodeView {
                alive: *alive,
                vars: vars.as_object().unwrap().clone(),
            })
            .collect();
        GlobalState::new(nodes, &[])
    }

    #[test]
    fn only_ranks_roles_and_up_or_down_matter_under_symmetry() {
        let n = Novelty::new(Some(vec!["epoch".into(), "role".into()]), Symmetry::all(3));
        let a = state(&[
            (true, json!({"epoch": 3, "role": "LEADING", "x": 1})),
            (true, json!({"epoch": 1, "role": "FOLLOWING"})),
            (true, json!({"epoch": 1, "role": "FOLLOWING"})),
        ]);
        // Other values, the same ranks; a variable that does not survive a crash; nodes renamed.
        let b = state(&[
            (true, json!({"epoch": 7, "role": "FOLLOWING"})),
            (true, json!({"epoch": 9, "role": "LEADING", "x": 5})),
            (true, json!({"epoch": 7, "role": "FOLLOWING"})),
        ]);
        assert_eq!(n.abstract_state(&a), n.abstract_state(&b));
        // A follower ahead of the others, or a node down, is new.
        let c = state(&[
            (true, json!({"epoch": 3, "role": "LEADING"})),
            (true, json!({"epoch": 2, "role": "FOLLOWING"})),
            (true, json!({"epoch": 1, "role": "FOLLOWING"})),
        ]);
        let d = state(&[
            (true, json!({"epoch": 3, "role": "LEADING"})),
            (false, json!({"epoch": 1, "role": "FOLLOWING"})),
            (true, json!({"epoch": 1, "role": "FOLLOWING"})),
        ]);
        let all = [&a, &c, &d].map(|s| n.abstract_state(s));
        assert!(all[0] != all[1] && all[0] != all[2] && all[1] != all[2]);
    }

    #[test]
    fn marking_initial_tells_a_node_with_nothing_from_one_behind() {
        let none = state(&[
            (false, json!({"txnlog": 0})),
            (true, json!({"txnlog": 2})),
            (true, json!({"txnlog": 2})),
        ]);
        let one = state(&[
            (false, json!({"txnlog": 1})),
            (true, json!({"txnlog": 2})),
            (true, json!({"txnlog": 2})),
        ]);
        let ranks = Novelty::new(Some(vec!["txnlog".into()]), Symmetry::none());
        assert_eq!(ranks.abstract_state(&none), ranks.abstract_state(&one));
        let marked = ranks.marking_initial();
        assert_ne!(marked.abstract_state(&none), marked.abstract_state(&one));
    }
}
