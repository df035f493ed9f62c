//! Workload parameters of `raft-sim`, validated with one-line errors.

use flymc_model::{NodeId, TargetError, Workload};
use serde_json::Value;

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

const PARAMS: &str = "variant, initial_leader, updates, election_timers";

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

fn node_id(key: &str, v: &Value) -> Result<NodeId, TargetError> {
    match v.as_u64() {
        Some(i) if (i as usize) < NODES => Ok(i as usize),
        _ => Err(bad(format!(
            "param {key} must name a node 0..{}, got {v}",
            NODES - 1
        ))),
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
        if let Some(k) = w
            .params
            .keys()
            .find(|k| !PARAMS.split(", ").any(|p| p == k.as_str()))
        {
            return Err(bad(format!("unknown param `{k}`; valid: {PARAMS}")));
        }
        let valid_variants = VARIANTS
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ");
        let variant = match w.params.get("variant") {
            None => Variant::Fixed,
            Some(Value::String(s)) => VARIANTS
                .iter()
                .find(|(n, _)| n == s)
                .map(|(_, v)| *v)
                .ok_or_else(|| bad(format!("unknown variant `{s}`; valid: {valid_variants}")))?,
            Some(v) => {
                return Err(bad(format!(
                    "param variant must be a string, got {v}; valid: {valid_variants}"
                )))
            }
        };
        let initial_leader = match w.params.get("initial_leader") {
            None => None,
            Some(v) => Some(node_id("initial_leader", v)?),
        };
        let updates = match w.params.get("updates") {
            None => 0,
            Some(v) => match v.as_u64() {
                Some(k) if k <= MAX_UPDATES => k,
                _ => {
                    return Err(bad(format!(
                        "param updates must be an integer 0..={MAX_UPDATES}, got {v}"
                    )))
                }
            },
        };
        let election_timers = match w.params.get("election_timers") {
            None => Vec::new(),
            Some(Value::Array(items)) => {
                let mut ids = items
                    .iter()
                    .map(|v| node_id("election_timers", v))
                    .collect::<Result<Vec<_>, _>>()?;
                ids.sort_unstable();
                ids.dedup();
                ids
            }
            Some(v) => {
                return Err(bad(format!(
                    "param election_timers must be an array of node ids, got {v}"
                )))
            }
        };
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
