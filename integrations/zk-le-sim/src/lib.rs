//! `zk-le-sim`: ZooKeeper 3.8.0's FastLeaderElection, simulated in memory and deterministically,
//! followed by a simplified ZAB discovery phase that establishes the leader's epoch.
//!
//! It is a benchmark fixture for flymc's exploration strategies and the model of the real
//! ZooKeeper integration. See [`protocol`] for the rules, [`properties`] for what is checked.
//!
//! Workloads have 3 nodes (see [`protocol`] for why). Parameters (`[params]`):
//! - `variant`: `"fixed"` (3.8.0, default) or `"zookeeper-1419"` (the pre-fix
//!   `totalOrderPredicate`, under which two votes can each beat the other: ZOOKEEPER-1419);
//! - `epochs`: each node's initial currentEpoch (= acceptedEpoch), default all 0;
//! - `zxids`: each node's last logged zxid, default all 0.

pub mod properties;
pub mod protocol;

use std::sync::LazyLock;

use flymc_model::sim::SimTarget;
use flymc_model::{About, Property, Symmetry, System, Target, TargetError, Workload};
use serde::Deserialize;

pub use protocol::{Msg, Node, ServerState, Variant, ZkLe};

pub const SYSTEM_NAME: &str = "zk-le-sim";
/// The ensemble size the model keeps live: see [`protocol`] on the stand-ins for timeouts.
pub const NODES: usize = 3;

/// The `zk-le-sim` system.
pub struct ZkLeSimSystem;

impl ZkLeSimSystem {
    /// The protocol a workload asks for, or a one-line reason it cannot be run.
    pub fn protocol(workload: &Workload) -> Result<ZkLe, TargetError> {
        let bad = |m: String| Err(TargetError::Workload(m));
        let n = workload.nodes;
        if n != NODES {
            return bad(format!(
                "{SYSTEM_NAME} simulates {NODES}-node ensembles only, the workload has {n} nodes"
            ));
        }
        let p: Params = workload.params()?;
        let variant = match p.variant {
            None => Variant::Fixed,
            Some(s) => match Variant::parse(&s) {
                Some(v) => v,
                None => {
                    return bad(format!(
                        "unknown variant `{s}`; valid: {}",
                        Variant::NAMES.join(", ")
                    ))
                }
            },
        };
        let list = |key: &str, v: Option<Vec<u64>>| -> Result<Vec<u64>, TargetError> {
            match v {
                None => Ok(vec![0; n]),
                Some(v) if v.len() == n => Ok(v),
                Some(v) => Err(TargetError::Workload(format!(
                    "parameter `{key}` must be a list of {n} non-negative integers (one per node), got {v:?}"
                ))),
            }
        };
        Ok(ZkLe {
            variant,
            nodes: n,
            epochs: list("epochs", p.epochs)?,
            zxids: list("zxids", p.zxids)?,
        })
    }
}

/// The workload parameters as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Params {
    /// `None`: fixed.
    variant: Option<String>,
    /// Each node's epoch and last zxid on disk at the start (`None`: all 0).
    epochs: Option<Vec<u64>>,
    zxids: Option<Vec<u64>>,
}

impl System for ZkLeSimSystem {
    fn about(&self) -> &About {
        static ABOUT: LazyLock<About> = LazyLock::new(|| {
            About::new(
                SYSTEM_NAME,
                "ZooKeeper 3.8.0 FastLeaderElection + ZAB epoch establishment, simulated (ZOOKEEPER-1419 variant)",
            )
            .sets(include_str!("../sets.json"))
            .message_kinds(&MESSAGE_KINDS)
            // ZooKeeper's election properties, shared with the real system, and their view here.
            .sources(&[
                "integrations/zookeeper/properties/src/lib.rs",
                "integrations/zk-le-sim/src/properties.rs",
            ])
        });
        &ABOUT
    }

    fn target(&self, workload: &Workload) -> Result<Box<dyn Target>, TargetError> {
        Ok(Box::new(SimTarget::new(Self::protocol(workload)?)))
    }

    fn properties(&self, workload: &Workload) -> Vec<Box<dyn Property>> {
        properties::properties(workload.nodes)
    }

    /// No symmetric roles. `totalOrderPredicate` breaks ties by server id, so which node wins an
    /// election depends on the ids themselves: renaming n0 and n2 in a state where both vote for
    /// themselves leads to a different leader, not to a renamed run. Workloads also give nodes
    /// different initial epochs and zxids.
    fn symmetry(&self, _workload: &Workload) -> Symmetry {
        Symmetry::none()
    }
}

/// Every event name: timers (`start`, `finalize`, `peer_down`, `peer_up`) and messages.
pub const MESSAGE_KINDS: [&str; 10] = [
    "start",
    "notification",
    "finalize",
    "peer_down",
    "peer_up",
    "follower_info",
    "leader_info",
    "ack_epoch",
    "new_leader",
    "disconnect",
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value};
    use std::collections::BTreeSet;

    fn sets() -> Value {
        serde_json::from_str(ZkLeSimSystem.about().sets.as_deref().unwrap())
            .expect("sets.json parses")
    }

    /// One message of every kind, as (kind, field names).
    fn kinds() -> Vec<(String, BTreeSet<String>)> {
        let all = [
            Msg::Start,
            Msg::Notification {
                seq: 0,
                sid: 0,
                leader: 0,
                zxid: 0,
                election_epoch: 0,
                peer_epoch: 0,
                state: ServerState::Looking,
            },
            Msg::Finalize,
            Msg::PeerDown { peer: 0 },
            Msg::PeerUp { peer: 0 },
            Msg::FollowerInfo {
                seq: 0,
                accepted_epoch: 0,
            },
            Msg::LeaderInfo { seq: 0, epoch: 0 },
            Msg::AckEpoch {
                seq: 0,
                epoch: 0,
                fresh: true,
            },
            Msg::NewLeader { seq: 0, epoch: 0 },
            Msg::Disconnect { seq: 0 },
        ];
        all.iter()
            .map(|m| {
                let mut v = serde_json::to_value(m).unwrap();
                let o = v.as_object_mut().unwrap();
                let kind = o.remove("kind").unwrap().as_str().unwrap().to_string();
                (kind, o.keys().cloned().collect())
            })
            .collect()
    }

    fn names(v: &Value) -> BTreeSet<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect()
    }

    /// `(prefix, name)` of every `n.x` / `m.x` in a guard.
    fn refs(guard: &str) -> Vec<(char, String)> {
        let b = guard.as_bytes();
        let mut out = Vec::new();
        for i in 0..b.len().saturating_sub(2) {
            let starts = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
            if starts && (b[i] == b'n' || b[i] == b'm') && b[i + 1] == b'.' {
                let name: String = guard[i + 2..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                out.push((b[i] as char, name));
            }
        }
        out
    }

    #[test]
    fn sets_file_matches_the_protocol() {
        let s = sets();
        assert_eq!(s["format"], "flymc-sets");
        assert_eq!(s["version"], 1);
        assert_eq!(s["system"], SYSTEM_NAME);
        let node_vars = names(&s["node_vars"]);
        let node = serde_json::to_value(protocol::Node::new(0, 0, 0)).unwrap();
        let state_vars: BTreeSet<String> = node.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            node_vars, state_vars,
            "node_vars are exactly the node's state variables"
        );

        let msgs: &Map<String, Value> = s["messages"].as_object().unwrap();
        let kinds = kinds();
        let listed: BTreeSet<&String> = msgs.keys().collect();
        let have: BTreeSet<&String> = kinds.iter().map(|(k, _)| k).collect();
        assert_eq!(listed, have, "every message kind, and only those");
        let declared: BTreeSet<String> = MESSAGE_KINDS.iter().map(|k| k.to_string()).collect();
        assert_eq!(
            have,
            declared.iter().collect(),
            "message_kinds() lists them all"
        );
        for (kind, fields) in &kinds {
            let m = &msgs[kind];
            assert_eq!(&names(&m["fields"]), fields, "fields of {kind}");
            let entries = m["entries"].as_array().unwrap();
            assert_eq!(
                entries.last().unwrap()["guard"],
                "true",
                "{kind} ends with a catch-all"
            );
            for e in entries {
                for key in ["read", "update", "send", "increments"] {
                    for v in names(&e[key]) {
                        assert!(node_vars.contains(&v), "{kind}: {key} names unknown `{v}`");
                    }
                }
                assert!(names(&e["increments"]).is_subset(&names(&e["update"])));
                for (p, name) in refs(e["guard"].as_str().unwrap()) {
                    let known = if p == 'n' {
                        node_vars.contains(&name)
                    } else {
                        fields.contains(&name)
                    };
                    assert!(known, "{kind}: guard names unknown {p}.{name}");
                }
            }
        }
        for key in ["crash", "reboot"] {
            for e in s[key].as_array().unwrap() {
                for k in ["update", "peer_update"] {
                    assert!(names(&e[k]).is_subset(&node_vars), "{key}.{k}");
                }
            }
        }
    }

    /// The checker's own reader accepts it, against the variables and kinds the system has.
    #[test]
    fn sets_file_parses_with_the_model_reader() {
        use flymc_model::sets::{Known, SetsFile};
        let node = serde_json::to_value(protocol::Node::new(0, 0, 0)).unwrap();
        let known = Known {
            node_vars: Some(node.as_object().unwrap().keys().cloned().collect()),
            message_kinds: Some(MESSAGE_KINDS.iter().map(|k| k.to_string()).collect()),
        };
        let sets = SetsFile::parse(
            "sets.json",
            ZkLeSimSystem.about().sets.as_deref().unwrap(),
            &known,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        // A vote from a higher round moves a LOOKING node to it; a reply to a FOLLOWING node is
        // discarded.
        let looking = node.as_object().unwrap().clone();
        let mut following = looking.clone();
        following.insert("state".into(), "FOLLOWING".into());
        let vote = |state: &str, epoch: u64| {
            serde_json::json!({"seq": 1, "sid": 1, "leader": 1, "zxid": 0,
                "election_epoch": epoch, "peer_epoch": 0, "state": state})
            .as_object()
            .unwrap()
            .clone()
        };
        let e = sets
            .message("notification", &looking, &vote("LOOKING", 5))
            .unwrap();
        assert!(e.update.contains("logicalclock"));
        let e = sets
            .message("notification", &following, &vote("LEADING", 1))
            .unwrap();
        assert!(e.changes_nothing());
    }

    #[test]
    fn the_predicates_differ_only_where_zookeeper_1419_says() {
        // Same epoch: both order by zxid, then id.
        for v in [Variant::Fixed, Variant::Zk1419] {
            assert!(v.beats((0, 6, 1), (2, 5, 1)));
            assert!(v.beats((2, 5, 1), (1, 5, 1)));
            assert!(!v.beats((1, 5, 1), (1, 5, 1)));
            assert!(v.beats((0, 0, 2), (2, 9, 1)));
        }
        // Lower epoch, same zxid, higher id: only the pre-fix predicate lets it win.
        assert!(Variant::Zk1419.beats((2, 5, 1), (1, 5, 2)));
        assert!(!Variant::Fixed.beats((2, 5, 1), (1, 5, 2)));
    }
}
