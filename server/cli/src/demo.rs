//! `hook-demo`: the hook crate's demo node (`flymc-demo-node`, a counter protocol) as a real
//! system, for the event-server tests and `flymc bench hooks`.
//!
//! Workload parameters (all optional):
//!
//! ```toml
//! [params]
//! clients = [{ to = 0, name = "add", value = 1, fanout = true }]   # other keys become fields
//! ack = true            # echo is answered with ack
//! persist = true        # sum survives crashes, written behind a crash point
//! checked = true        # and a copy behind a second one; a node whose two files disagree
//!                       # refuses to start (a crash between the writes: cannot-restart)
//! timers = ["tick"]     # timers every node arms at startup
//! mode = "counter"      # or "bench" (ping chains)
//! limit = 3             # safety property sum-below: every node's sum stays below it
//! settle_timeout_ms = 10000
//! ```

use std::path::PathBuf;
use std::time::Duration;

use flymc_model::property::safety;
use flymc_model::{NodeId, Property, Symmetry, System, Target, TargetError, Workload};
use serde::Deserialize;
use serde_json::{Map, Value};

use flymc_real::cluster::{find_program, NodeCommand};
use flymc_real::{ClientRequest, RealConfig, RealTarget};

/// The demo node's executable name.
pub const PROGRAM: &str = "flymc-demo-node";

/// The workload parameters (see the module docs).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct DemoParams {
    clients: Vec<DemoClient>,
    ack: bool,
    persist: bool,
    checked: bool,
    timers: Vec<String>,
    mode: String,
    limit: Option<i64>,
    settle_timeout_ms: Option<u64>,
}

impl Default for DemoParams {
    fn default() -> DemoParams {
        DemoParams {
            clients: Vec::new(),
            ack: false,
            persist: false,
            checked: false,
            timers: Vec::new(),
            mode: "counter".into(),
            limit: None,
            settle_timeout_ms: None,
        }
    }
}

/// A client request: the demo node reads any other keys as the request's fields.
#[derive(Debug, Deserialize)]
struct DemoClient {
    to: NodeId,
    name: String,
    #[serde(flatten)]
    fields: Map<String, Value>,
}

#[derive(Clone, Debug, Default)]
pub struct DemoSystem {
    program: Option<PathBuf>,
}

impl DemoSystem {
    /// The demo node is looked up next to the running executable.
    pub fn new() -> DemoSystem {
        DemoSystem::default()
    }

    pub fn with_program(program: impl Into<PathBuf>) -> DemoSystem {
        DemoSystem {
            program: Some(program.into()),
        }
    }

    fn program(&self) -> Result<PathBuf, TargetError> {
        match &self.program {
            Some(p) => Ok(p.clone()),
            None => find_program(PROGRAM).map_err(|e| TargetError::Other(e.to_string())),
        }
    }

    /// The [`RealConfig`] for `w`.
    pub fn config(&self, w: &Workload) -> Result<RealConfig, TargetError> {
        let p: DemoParams = w.params()?;
        let program = self.program()?;
        let mut args: Vec<String> = Vec::new();
        match p.mode.as_str() {
            "counter" => {}
            "bench" => args.extend(["--mode".into(), "bench".into()]),
            other => {
                return Err(TargetError::Workload(format!(
                    "hook-demo: mode `{other}`: counter or bench"
                )))
            }
        }
        if p.ack {
            args.push("--ack".into());
        }
        if p.persist {
            args.push("--persist".into());
        }
        if p.checked {
            args.push("--checked".into());
        }
        for t in p.timers {
            args.extend(["--timer".into(), t]);
        }
        let clients = p
            .clients
            .into_iter()
            .map(|c| ClientRequest {
                to: c.to,
                name: c.name,
                fields: c.fields,
                payload: Value::Null,
            })
            .collect();
        let mut cfg = RealConfig::new("hook-demo", move |_| {
            let mut c = NodeCommand::new(&program);
            c.args = args.clone();
            c
        })
        .clients(clients);
        if let Some(ms) = p.settle_timeout_ms {
            cfg = cfg.settle_timeout(Duration::from_millis(ms));
        }
        Ok(cfg)
    }
}

impl System for DemoSystem {
    fn about(&self) -> &flymc_model::About {
        static ABOUT: std::sync::LazyLock<flymc_model::About> = std::sync::LazyLock::new(|| {
            flymc_model::About::new(
                "hook-demo",
                "a counter protocol on real processes through the event server and the Rust hook",
            )
            .message_kinds(&[
                "add",
                "echo",
                "ack",
                "hang",
                "exit",
                "fail",
                "ping",
                "tick",
                "disk:state",
                "disk:check",
            ])
        });
        &ABOUT
    }

    fn target(&self, w: &Workload) -> Result<Box<dyn Target>, TargetError> {
        Ok(Box::new(RealTarget::new(self.config(w)?)))
    }

    fn properties(&self, w: &Workload) -> Vec<Box<dyn Property>> {
        // target() reports bad parameters; without them there is no limit to check.
        let Some(limit) = w.params::<DemoParams>().ok().and_then(|p| p.limit) else {
            return Vec::new();
        };
        vec![safety("sum-below", move |s| {
            for (i, n) in s.nodes.iter().enumerate() {
                let sum = n.vars.get("sum").and_then(Value::as_i64).unwrap_or(0);
                if sum >= limit {
                    return Err(format!("n{i} has sum {sum}, limit {limit}"));
                }
            }
            Ok(())
        })]
    }

    fn symmetry(&self, _w: &Workload) -> Symmetry {
        Symmetry::none()
    }
}
