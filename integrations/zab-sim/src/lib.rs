//! `zab-sim`: a twin of ZooKeeper 3.8.0's quorum protocol, in memory and deterministic, at
//! the grain where crash-recovery bugs live.
//!
//! It models election (coarse, see [`election`]), discovery ([`discovery`]),
//! synchronisation ([`sync`]) and broadcast ([`broadcast`]), and every durable write a node
//! makes is its own event, under the name of the real integration's crash point
//! (`disk:acceptedEpoch`, `disk:currentEpoch`, `disk:snapshot`, `disk:txnlog`): a crash can
//! fall between any two, and loses what was not flushed ([`disk`]). A reboot reads the disk as
//! 3.8.0's startup does. Events carry the real integration's names ([`msg`]), and the node
//! state the names `FlymcZk.state` reports, so the properties are ZooKeeper's own over
//! [`view::TwinView`]. docs/TWINS.md lists every rule with the Java method it models.
//!
//! Parameters (`[params]`):
//! - `variant`: `"3.8.0"` (default: NEWLEADER writes currentEpoch before the transactions
//!   reach the log, ZOOKEEPER-4643) or `"fixed"` (logged and flushed first, as in
//!   apache/zookeeper PR 2028 / 3.8.5);
//! - `epochs`: each node's currentEpoch (= acceptedEpoch) on disk at the start, default 0;
//! - `clients`: client writes, `[{ to = 2, name = "write" }]`, as for real ZooKeeper.

pub mod broadcast;
pub mod discovery;
pub mod disk;
pub mod election;
pub mod msg;
pub mod net;
pub mod protocol;
pub mod state;
pub mod sync;
pub mod view;

#[cfg(test)]
mod tests;

use std::sync::LazyLock;

use flymc_model::sim::SimTarget;
use flymc_model::{
    About, Feature, NodeId, Property, Symmetry, System, Target, TargetError, Workload,
};
use serde::Deserialize;

pub use protocol::{Variant, ZabSim};

pub const SYSTEM_NAME: &str = "zab-sim";

/// The `zab-sim` system.
pub struct ZabSimSystem;

/// The workload parameters as written.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Params {
    variant: Option<String>,
    epochs: Option<Vec<u64>>,
    clients: Vec<Client>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Client {
    to: NodeId,
    name: String,
}

impl ZabSimSystem {
    /// The protocol a workload asks for, or a one-line reason it cannot be run.
    pub fn protocol(workload: &Workload) -> Result<ZabSim, TargetError> {
        let bad = |m: String| Err(TargetError::Workload(format!("{SYSTEM_NAME}: {m}")));
        let n = workload.nodes;
        if !(1..=9).contains(&n) {
            return bad(format!("{n} nodes: ensembles here have 1 to 9"));
        }
        let p: Params = workload.params()?;
        let variant = match p.variant.as_deref() {
            None => Variant::V380,
            Some(s) => match Variant::parse(s) {
                Some(v) => v,
                None => {
                    return bad(format!(
                        "unknown variant `{s}`; valid: {}",
                        Variant::NAMES.join(", ")
                    ))
                }
            },
        };
        let epochs = match p.epochs {
            None => vec![0; n],
            Some(e) if e.len() == n => e,
            Some(e) => {
                return bad(format!(
                    "parameter `epochs` must be a list of {n} non-negative integers (one per node), got {e:?}"
                ))
            }
        };
        if let Some(c) = p.clients.iter().find(|c| c.to >= n || c.name != "write") {
            return bad(format!(
                "a client request is {{ to = <node 0..{}>, name = \"write\" }}, got {{ to = {}, name = {:?} }}",
                n - 1,
                c.to,
                c.name
            ));
        }
        Ok(ZabSim {
            nodes: n,
            variant,
            epochs,
            clients: p.clients.iter().map(|c| c.to).collect(),
        })
    }
}

impl System for ZabSimSystem {
    fn about(&self) -> &About {
        static ABOUT: LazyLock<About> = LazyLock::new(|| {
            About::new(
                SYSTEM_NAME,
                "ZooKeeper 3.8.0's ZAB (election, discovery, sync, broadcast, every disk write a step), simulated; the twin of `zookeeper`",
            )
            // Like the real integration: crash points are the `disk:*` writes.
            .feature(Feature::ReportsWrites)
            // What survives a crash and the roles, as the real integration's `survive_crash`.
            .fault_vars(&[
                "state",
                "zabState",
                "leader",
                "currentEpoch",
                "acceptedEpoch",
                "log",
                "disk",
                "acked",
            ])
            .message_kinds(&msg::KINDS)
            .sources(&[
                "integrations/zookeeper/properties/src/lib.rs",
                "integrations/zab-sim/src/view.rs",
            ])
        });
        &ABOUT
    }

    fn target(&self, workload: &Workload) -> Result<Box<dyn Target>, TargetError> {
        Ok(Box::new(SimTarget::new(Self::protocol(workload)?)))
    }

    fn properties(&self, workload: &Workload) -> Vec<Box<dyn Property>> {
        view::properties(workload.nodes)
    }

    /// None: FLE breaks ties by server id, and workloads send clients to given nodes.
    fn symmetry(&self, _workload: &Workload) -> Symmetry {
        Symmetry::none()
    }
}
