//! What must hold of a real ZooKeeper ensemble (the properties of zk-le-sim, on the variables
//! the Java hook reports through `FlymcZk.state`).
//!
//! A leader "leads epoch e" once it is established: LEADING past discovery, which means a
//! quorum acknowledged e and it wrote e as its currentEpoch. A follower is established once it
//! is FOLLOWING in broadcast. FLE alone may well make two nodes LEADING at once; ZAB's epochs
//! are what keep that harmless, so only established roles are compared.

use std::collections::BTreeMap;

use flymc_model::property::{liveness, safety};
use flymc_model::{GlobalState, NodeView, Property};
use serde_json::Value;

pub const ONE_LEADER_PER_EPOCH: &str = "one-leader-per-epoch";
pub const FOLLOWERS_AGREE: &str = "followers-agree";
pub const ACKED_IN_LATER_LEADERS: &str = "acked-zxid-in-later-leaders";
pub const NO_UNCAUGHT_EXCEPTION: &str = "no-uncaught-exception";
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

fn zxids(n: &NodeView, k: &str) -> Vec<u64> {
    n.vars
        .get(k)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default()
}

/// Fresh properties for one run of an ensemble of `nodes`.
pub fn properties(nodes: usize) -> Vec<Box<dyn Property>> {
    let quorum = nodes / 2 + 1;
    // Epoch -> the node that led it, over the whole run (crashed leaders included).
    let mut leaders: BTreeMap<u64, usize> = BTreeMap::new();
    // Zxids acknowledged to a client so far, and the leaders established after each.
    let mut acked: Vec<u64> = Vec::new();
    vec![
        safety(ONE_LEADER_PER_EPOCH, move |s: &GlobalState| {
            for (i, n) in s.nodes.iter().enumerate() {
                if !established(n) || str_var(n, "state") != "LEADING" {
                    continue;
                }
                let Some(e) = u64_var(n, "currentEpoch") else {
                    continue;
                };
                match leaders.get(&e) {
                    Some(&l) if l != i => return Err(format!("n{i} and n{l} both led epoch {e}")),
                    Some(_) => {}
                    None => {
                        leaders.insert(e, i);
                    }
                }
            }
            Ok(())
        }),
        safety(FOLLOWERS_AGREE, |s: &GlobalState| {
            let mut claims: BTreeMap<u64, (u64, usize)> = BTreeMap::new();
            for (i, n) in s.nodes.iter().enumerate() {
                let st = str_var(n, "state");
                if !established(n) || (st != "LEADING" && st != "FOLLOWING") {
                    continue;
                }
                let (Some(e), Some(l)) = (u64_var(n, "currentEpoch"), u64_var(n, "leader")) else {
                    continue;
                };
                match claims.get(&e) {
                    Some(&(l2, j)) if l2 != l => {
                        return Err(format!(
                            "in epoch {e}, n{j} follows n{l2} but n{i} follows n{l}"
                        ))
                    }
                    Some(_) => {}
                    None => {
                        claims.insert(e, (l, i));
                    }
                }
            }
            Ok(())
        }),
        safety(ACKED_IN_LATER_LEADERS, move |s: &GlobalState| {
            for n in &s.nodes {
                for z in zxids(n, "acked") {
                    if !acked.contains(&z) {
                        acked.push(z);
                    }
                }
            }
            for (i, n) in s.nodes.iter().enumerate() {
                if !established(n) || str_var(n, "state") != "LEADING" {
                    continue;
                }
                let log = zxids(n, "log");
                if let Some(z) = acked.iter().find(|z| !log.contains(z)) {
                    return Err(format!(
                        "zxid {z:#x} was acknowledged to a client, but n{i} leads epoch {} without it in its log",
                        u64_var(n, "currentEpoch").unwrap_or(0)
                    ));
                }
            }
            Ok(())
        }),
        safety(NO_UNCAUGHT_EXCEPTION, |s: &GlobalState| {
            for (i, n) in s.nodes.iter().enumerate() {
                if let Some(first) = n
                    .vars
                    .get("uncaught")
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                {
                    return Err(format!(
                        "n{i}: an exception escaped a quorum thread: {first}"
                    ));
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
                if !established(n) || str_var(n, "state") != "LEADING" {
                    continue;
                }
                let followers = s
                    .nodes
                    .iter()
                    .filter(|f| {
                        established(f)
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
                    format!(
                        "n{i} {}/{} (round {}, votes sid {})",
                        str_var(n, "state"),
                        str_var(n, "zabState"),
                        u64_var(n, "logicalclock").unwrap_or(0),
                        u64_var(n, "proposedLeader").unwrap_or(0)
                    )
                })
                .collect();
            Err(format!(
                "{alive} of {} nodes are up but no established leader has a quorum of {quorum}: {}",
                s.nodes.len(),
                roles.join(", ")
            ))
        }),
    ]
}
