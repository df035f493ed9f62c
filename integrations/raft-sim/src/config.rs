//! Workload parameters of `raft-sim`, validated with one-line errors.

use flymc_model::{NodeId, TargetError, Workload};
use serde::Deserialize;

use crate::protocol::NODES;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Followers check the log match before committing and applying.
    Fixed,
    /// async-raft 0.6.1: a follower commits and applies before the match check.
    BugApplyBeforeMatch,
}

pub const VARIANTS: &[(&str, Variant)] = &[
    ("fixed", Variant::Fixed),
    ("bug-apply-before-match", Variant::BugApplyBeforeMatch),
];

/// Most client updates a workload may ask for (values are 1..=updates).
pub const MAX_UPDATES: u64 = 9;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub variant: Variant,
    /// The node that leads term 1 at the start (all nodes in term 1, having voted for it).
    /// `None`: every node starts as a follower in term 0.
    pub initial_leader: Option<NodeId>,
    /// Client updates (values 1..=updates) sent to the initial leader at the start.
    pub updates: u64,
    /// Nodes whose election timer is armed at the start.
    pub election_timers: Vec<NodeId>,
}

fn bad(msg: String) -> TargetError {
    TargetError::Workload(msg)
}

/// The workload parameters as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Params {
    /// `None`: fixed.
    variant: Option<String>,
    initial_leader: Option<NodeId>,
    updates: u64,
    election_timers: Vec<NodeId>,
}

fn node_id(key: &str, n: NodeId) -> Result<NodeId, TargetError> {
    if n < NODES {
        Ok(n)
    } else {
        Err(bad(format!(
            "param {key} must name a node 0..{}, got {n}",
            NODES - 1
        )))
    }
}

impl Config {
    pub fn parse(w: &Workload) -> Result<Config, TargetError> {
        if w.nodes != NODES {
            return Err(bad(format!(
                "raft-sim simulates exactly {NODES} nodes; set nodes = {NODES} (got {})",
                w.nodes
            )));
        }
        let p: Params = w.params()?;
        let valid_variants = VARIANTS
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ");
        let variant = match p.variant {
            None => Variant::Fixed,
            Some(s) => VARIANTS
                .iter()
                .find(|(n, _)| *n == s)
                .map(|(_, v)| *v)
                .ok_or_else(|| bad(format!("unknown variant `{s}`; valid: {valid_variants}")))?,
        };
        let initial_leader = p
            .initial_leader
            .map(|n| node_id("initial_leader", n))
            .transpose()?;
        let updates = p.updates;
        if updates > MAX_UPDATES {
            return Err(bad(format!(
                "param updates must be an integer 0..={MAX_UPDATES}, got {updates}"
            )));
        }
        let mut election_timers = p
            .election_timers
            .into_iter()
            .map(|n| node_id("election_timers", n))
            .collect::<Result<Vec<_>, _>>()?;
        election_timers.sort_unstable();
        election_timers.dedup();
        if updates > 0 && initial_leader.is_none() {
            return Err(bad(
                "param updates needs initial_leader (client updates go to the initial leader)"
                    .into(),
            ));
        }
        if initial_leader.is_none() && election_timers.is_empty() {
            return Err(bad(
                "no initial_leader and no election_timers: nobody would ever lead; set one".into(),
            ));
        }
        Ok(Config {
            variant,
            initial_leader,
            updates,
            election_timers,
        })
    }
}
