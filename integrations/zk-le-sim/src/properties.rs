//! What must hold of an ensemble running leader election.
//!
//! A leader "leads epoch e" once it is established (a quorum freshly acknowledged e, and it
//! wrote e as its currentEpoch); a follower is established in e once its leader's `new_leader`
//! arrived. Before that, a LEADING node has no epoch yet: FLE alone may well make two nodes
//! LEADING at once, and ZAB's epochs are what keep that harmless.

use std::collections::BTreeMap;

use flymc_model::property::{liveness, safety};
use flymc_model::{GlobalState, NodeView, Property};
use serde_json::Value;

pub const ONE_LEADER_PER_EPOCH: &str = "one-leader-per-epoch";
pub const FOLLOWERS_AGREE: &str = "followers-agree";
pub const EVENTUALLY_QUORUM_FOLLOWS_LEADER: &str = "eventually-quorum-follows-leader";

fn str_var<'a>(n: &'a NodeView, k: &str) -> &'a str {
    n.vars.get(k).and_then(Value::as_str).unwrap_or("")
}

fn u64_var(n: &NodeView, k: &str) -> Option<u64> {
    n.vars.get(k).and_then(Value::as_u64)
}

fn established(n: &NodeView) -> bool {
    n.alive && n.vars.get("established").and_then(Value::as_bool) == Some(true)
}

/// Fresh properties for one run of an ensemble of `nodes`.
pub fn properties(nodes: usize) -> Vec<Box<dyn Property>> {
    let quorum = nodes / 2 + 1;
    // Epoch -> the node that led it, over the whole run (crashed leaders included).
    let mut leaders: BTreeMap<u64, usize> = BTreeMap::new();
    vec![
        safety(ONE_LEADER_PER_EPOCH, move |s: &GlobalState| {
            for (i, n) in s.nodes.iter().enumerate() {
                if !established(n) || str_var(n, "state") != "LEADING" {
                    continue;
                }
                let Some(e) = u64_var(n, "current_epoch") else {
                    continue;
                };
                match leaders.get(&e) {
                    Some(&l) if l != i => {
                        return Err(format!("n{i} and n{l} both led epoch {e}"));
                    }
                    Some(_) => {}
                    None => {
                        leaders.insert(e, i);
                    }
                }
            }
            Ok(())
        }),
        safety(FOLLOWERS_AGREE, |s: &GlobalState| {
            // Epoch -> (leader, the node that says so), over established live nodes.
            let mut claims: BTreeMap<u64, (u64, usize)> = BTreeMap::new();
            for (i, n) in s.nodes.iter().enumerate() {
                let st = str_var(n, "state");
                if !established(n) || (st != "LEADING" && st != "FOLLOWING") {
                    continue;
                }
                let (Some(e), Some(l)) = (u64_var(n, "current_epoch"), u64_var(n, "leader")) else {
                    continue;
                };
                match claims.get(&e) {
                    Some(&(l2, j)) if l2 != l => {
                        return Err(format!(
                            "in epoch {e}, n{j} follows n{l2} but n{i} follows n{l}"
                        ));
                    }
                    Some(_) => {}
                    None => {
                        claims.insert(e, (l, i));
                    }
                }
            }
            Ok(())
        }),
        liveness(EVENTUALLY_QUORUM_FOLLOWS_LEADER, move |s: &GlobalState| {
            let alive = s.nodes.iter().filter(|n| n.alive).count();
            if alive < quorum {
                return Ok(());
            }
            let mut best = 0;
            for (l, n) in s.nodes.iter().enumerate() {
                if !n.alive || str_var(n, "state") != "LEADING" {
                    continue;
                }
                let followers = s
                    .nodes
                    .iter()
                    .filter(|f| {
                        f.alive
                            && str_var(f, "state") == "FOLLOWING"
                            && u64_var(f, "leader") == Some(l as u64)
                    })
                    .count();
                best = best.max(followers + 1);
            }
            if best >= quorum {
                return Ok(());
            }
            let roles: Vec<String> = s
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    if !n.alive {
                        return format!("n{i} down");
                    }
                    match (str_var(n, "state"), u64_var(n, "leader")) {
                        ("FOLLOWING", Some(l)) => format!("n{i} FOLLOWING n{l}"),
                        (st, _) => format!(
                            "n{i} {st} (round {}, votes n{})",
                            u64_var(n, "logicalclock").unwrap_or(0),
                            u64_var(n, "proposed_leader").unwrap_or(0)
                        ),
                    }
                })
                .collect();
            Err(format!(
                "{alive} of {} nodes are up but no leader has a quorum of {quorum}: {}",
                s.nodes.len(),
                roles.join(", ")
            ))
        }),
    ]
}
