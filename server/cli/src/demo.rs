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
//! timers = ["tick"]     # timers every node arms at startup
//! mode = "counter"      # or "bench" (ping chains)
//! limit = 3             # safety property sum-below: every node's sum stays below it
//! settle_timeout_ms = 10000
//! ```

use std::path::PathBuf;
use std::time::Duration;

use flymc_model::property::safety;
use flymc_model::{Property, Symmetry, System, Target, TargetError, Workload};
use serde_json::{Map, Value};

use flymc_real::cluster::{find_program, NodeCommand};
use flymc_real::{ClientRequest, RealConfig, RealTarget};

/// The demo node's executable name.
pub const PROGRAM: &str = "flymc-demo-node";

const PARAMS: &[&str] = &[
    "clients",
    "ack",
    "persist",
    "timers",
    "mode",
    "limit",
    "settle_timeout_ms",
];

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
        let bad = |m: String| TargetError::Workload(format!("hook-demo: {m}"));
        if let Some(k) = w.params.keys().find(|k| !PARAMS.contains(&k.as_str())) {
            return Err(bad(format!(
                "unknown parameter `{k}`; known: {}",
                PARAMS.join(", ")
            )));
        }
        let program = self.program()?;
        let flag = |k: &str| w.params.get(k).and_then(Value::as_bool).unwrap_or(false);
        let mut args: Vec<String> = Vec::new();
        match w.param_str("mode", "counter") {
            "counter" => {}
            "bench" => args.extend(["--mode".into(), "bench".into()]),
            other => return Err(bad(format!("mode `{other}`: counter or bench"))),
        }
        if flag("ack") {
            args.push("--ack".into());
        }
        if flag("persist") {
            args.push("--persist".into());
        }
        for t in w.param_list("timers") {
            let t = t
                .as_str()
                .ok_or_else(|| bad("timers must be strings".into()))?;
            args.extend(["--timer".into(), t.to_string()]);
        }
        let mut clients = Vec::new();
        for c in w.param_list("clients") {
            let mut fields: Map<String, Value> = c
                .as_object()
                .cloned()
                .ok_or_else(|| bad("clients are tables like { to = 0, name = \"add\" }".into()))?;
            let to = fields
                .remove("to")
                .and_then(|v| v.as_u64())
                .ok_or_else(|| bad("a client request needs `to = <node>`".into()))?;
            let name = fields
                .remove("name")
                .and_then(|v| v.as_str().map(String::from))
                .ok_or_else(|| bad("a client request needs `name`".into()))?;
            clients.push(ClientRequest {
                to: to as usize,
                name,
                fields,
                payload: Value::Null,
            });
        }
        let mut cfg = RealConfig::new("hook-demo", move |_| {
            let mut c = NodeCommand::new(&program);
            c.args = args.clone();
            c
        })
        .clients(clients);
        if let Some(ms) = w.params.get("settle_timeout_ms").and_then(Value::as_u64) {
            cfg = cfg.settle_timeout(Duration::from_millis(ms));
        }
        Ok(cfg)
    }
}

impl System for DemoSystem {
    fn name(&self) -> &'static str {
        "hook-demo"
    }

    fn description(&self) -> &'static str {
        "a counter protocol on real processes through the event server and the Rust hook"
    }

    fn target(&self, w: &Workload) -> Result<Box<dyn Target>, TargetError> {
        Ok(Box::new(RealTarget::new(self.config(w)?)))
    }

    fn properties(&self, w: &Workload) -> Vec<Box<dyn Property>> {
        let Some(limit) = w.params.get("limit").and_then(Value::as_i64) else {
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

    fn message_kinds(&self) -> Option<Vec<&'static str>> {
        Some(vec![
            "add",
            "echo",
            "ack",
            "hang",
            "exit",
            "ping",
            "tick",
            "disk:state",
        ])
    }
}
