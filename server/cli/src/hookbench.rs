//! `flymc bench hooks`: what the event server and the Rust hook cost per event.
//!
//! A chain of `ping` messages runs through demo nodes in bench mode (no work per event): each
//! enabled ping makes its node send the next one to the next node. Every step is the full
//! checker round trip: enable (an order to the node's long poll), the hook delivers, the node
//! intercepts its send (a report to the server), reports done with its state, and `settle`
//! sees quiescence. Without flymc the message would go straight to the next node, so the round
//! trip is the latency flymc adds per intercepted event.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use flymc_model::{Target, TargetError, Workload};
use serde::Serialize;
use serde_json::Value;

use crate::demo::DemoSystem;

#[derive(Clone, Debug)]
pub struct HookBenchConfig {
    /// Events to run through the server.
    pub events: u64,
    /// Demo nodes the ping chain goes round.
    pub nodes: usize,
    /// The demo node program (default: `flymc-demo-node` next to the executable).
    pub program: Option<PathBuf>,
}

impl Default for HookBenchConfig {
    fn default() -> Self {
        HookBenchConfig {
            events: 2000,
            nodes: 2,
            program: None,
        }
    }
}

/// What `flymc bench hooks` measured.
#[derive(Clone, Debug, Serialize)]
pub struct HookBench {
    pub events: u64,
    pub nodes: usize,
    /// Starting the cluster: processes up, registered and ready.
    pub startup_ms: f64,
    /// Wall-clock time of the event loop.
    pub seconds: f64,
    pub events_per_sec: f64,
    /// enable -> settled, per event: the latency flymc adds to a message.
    pub round_trip_median_us: f64,
    pub round_trip_p99_us: f64,
    /// How long the node's intercepted send took inside the hook (reporting it to the server).
    pub intercept_median_us: f64,
}

impl HookBench {
    /// A small table for the terminal.
    pub fn table(&self) -> String {
        format!(
            "hook bench: {} events through {} no-op demo nodes\n\
             {:<42} {:>10.1}\n{:<42} {:>10.0}\n{:<42} {:>10.1}\n{:<42} {:>10.1}\n{:<42} {:>10.1}\n{:<42} {:>10.1}\n",
            self.events,
            self.nodes,
            "cluster startup (ms)",
            self.startup_ms,
            "events per second",
            self.events_per_sec,
            "added latency per event, median (us)",
            self.round_trip_median_us,
            "added latency per event, p99 (us)",
            self.round_trip_p99_us,
            "intercept report in the hook, median (us)",
            self.intercept_median_us,
            "total (s)",
            self.seconds,
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HookBenchError {
    #[error("hook bench: {0}")]
    Target(#[from] TargetError),
    #[error("hook bench: expected one pending ping at step {step}, found {found}")]
    Chain { step: u64, found: usize },
}

fn median(v: &mut [f64]) -> f64 {
    percentile(v, 0.5)
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn workload(cfg: &HookBenchConfig) -> Workload {
    let text = format!(
        "version = 1\nsystem = \"hook-demo\"\nnodes = {}\nmax_events = {}\n[params]\nmode = \"bench\"\nclients = [{{ to = 0, name = \"ping\", left = {} }}]\n",
        cfg.nodes.max(1),
        cfg.events,
        cfg.events.saturating_sub(1)
    );
    Workload::parse(Path::new("hook-bench.toml"), &text).expect("the bench workload is valid")
}

/// Run the bench.
pub fn bench_hooks(cfg: &HookBenchConfig) -> Result<HookBench, HookBenchError> {
    let system = match &cfg.program {
        Some(p) => DemoSystem::with_program(p),
        None => DemoSystem::new(),
    };
    let w = workload(cfg);
    let mut target = flymc_real::RealTarget::new(system.config(&w)?);
    let t0 = Instant::now();
    target.start(&w)?;
    let startup = t0.elapsed();
    let result = run_chain(&mut target, cfg);
    let stopped = target.stop();
    let (seconds, mut rt, mut intercept) = result?;
    stopped?;
    let events = rt.len() as u64;
    Ok(HookBench {
        events,
        nodes: cfg.nodes.max(1),
        startup_ms: startup.as_secs_f64() * 1e3,
        seconds,
        events_per_sec: events as f64 / seconds.max(1e-9),
        round_trip_median_us: median(&mut rt),
        round_trip_p99_us: percentile(&mut rt, 0.99),
        intercept_median_us: median(&mut intercept),
    })
}

type Samples = (f64, Vec<f64>, Vec<f64>);

fn run_chain(target: &mut dyn Target, cfg: &HookBenchConfig) -> Result<Samples, HookBenchError> {
    let mut rt = Vec::with_capacity(cfg.events as usize);
    let mut intercept = Vec::with_capacity(cfg.events as usize);
    let start = Instant::now();
    for step in 0..cfg.events {
        let pending = target.pending();
        let [ping] = pending.as_slice() else {
            return Err(HookBenchError::Chain {
                step,
                found: pending.len(),
            });
        };
        let t = Instant::now();
        target.enable(ping.id)?;
        let state = target.settle()?;
        rt.push(t.elapsed().as_secs_f64() * 1e6);
        if step + 1 < cfg.events {
            let us = state.var(ping.to, "send_us").and_then(Value::as_f64);
            intercept.extend(us);
        }
    }
    let seconds = start.elapsed().max(Duration::from_nanos(1)).as_secs_f64();
    Ok((seconds, rt, intercept))
}
