//! A tiny system for unit tests whose path counts can be worked out by hand.
//!
//! Each client request `[to, forward]` increments a counter at node `to`; with `forward >= 0`
//! it also sends a `fwd` message to node `forward`, which increments that node's counter.
//! Property `counter-below` fails when any counter reaches the workload's `limit` param.

use std::path::Path;

use flymc_model::property::safety;
use flymc_model::sim::{Outbox, Protocol, SimTarget};
use flymc_model::{NodeId, Property, Symmetry, System, Target, TargetError, Workload};
use serde::{Deserialize, Serialize};

pub struct Tiny;

/// `requests = [[to, forward], ...]`; `limit` (default: none) for `counter-below`. Other keys
/// are let through: tests of other crates add tables of their own (`[params.x]`).
#[derive(Deserialize)]
#[serde(default)]
struct TinyParams {
    requests: Vec<(NodeId, i64)>,
    limit: u64,
}

impl Default for TinyParams {
    fn default() -> TinyParams {
        TinyParams {
            requests: Vec::new(),
            limit: u64::MAX,
        }
    }
}

#[derive(Clone, Serialize)]
pub struct Node {
    count: u64,
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Msg {
    Req { forward: i64 },
    Fwd,
}

impl Protocol for Tiny {
    type Node = Node;
    type Msg = Msg;
    type Env = ();

    fn init(
        &self,
        w: &Workload,
        _: &mut (),
        out: &mut Outbox<Msg>,
    ) -> Result<Vec<Node>, TargetError> {
        for (to, forward) in w.params::<TinyParams>()?.requests {
            out.client(to, Msg::Req { forward });
        }
        Ok(vec![Node { count: 0 }; w.nodes])
    }

    fn handle(
        &self,
        _id: NodeId,
        node: &mut Node,
        _: &mut (),
        _from: Option<NodeId>,
        msg: Msg,
        out: &mut Outbox<Msg>,
    ) {
        node.count += 1;
        if let Msg::Req { forward } = msg {
            if forward >= 0 {
                out.send(forward as usize, Msg::Fwd);
            }
        }
    }

    fn crash(&self, _id: NodeId, node: &mut Node, _: &mut (), _out: &mut Outbox<Msg>) {
        node.count = 0;
    }

    fn reboot(&self, _id: NodeId, _node: &mut Node, _: &mut (), _out: &mut Outbox<Msg>) {}
}

pub struct TinySystem;

impl System for TinySystem {
    fn about(&self) -> &flymc_model::About {
        static ABOUT: std::sync::LazyLock<flymc_model::About> =
            std::sync::LazyLock::new(|| flymc_model::About::new("tiny", "test fixture"));
        &ABOUT
    }
    fn target(&self, _w: &Workload) -> Result<Box<dyn Target>, TargetError> {
        Ok(Box::new(SimTarget::new(Tiny)))
    }
    fn properties(&self, w: &Workload) -> Vec<Box<dyn Property>> {
        let limit = w.params::<TinyParams>().map_or(u64::MAX, |p| p.limit);
        vec![safety("counter-below", move |s| {
            for (i, n) in s.nodes.iter().enumerate() {
                if n.vars["count"].as_u64().unwrap_or(0) >= limit {
                    return Err(format!("n{i} counted {limit}"));
                }
            }
            Ok(())
        })]
    }
    fn symmetry(&self, _w: &Workload) -> Symmetry {
        Symmetry::none()
    }
}

/// A workload for [`TinySystem`]: `requests` like `[[0, -1], [1, 0]]`.
pub fn workload(nodes: usize, requests: &str, extra: &str) -> Workload {
    let text = format!(
        "version = 1\nsystem = \"tiny\"\nnodes = {nodes}\nmax_events = 50\n{extra}\n[params]\nrequests = {requests}\n"
    );
    Workload::parse(Path::new("tiny.toml"), &text).expect("valid test workload")
}
