//! Random orders (fixed seeds) of a 3-node raft-rs cluster with a crash and a reboot, every
//! node's election timer armed and a leader heartbeat: every node settles after every step,
//! nothing a handler caught is reported, no term has two leaders, and committed prefixes agree.

use std::collections::BTreeMap;
use std::path::Path;

use flymc_model::{EventKind, GlobalState, Target, Workload};
use flymc_real::cluster::NodeCommand;
use flymc_real::{ClientRequest, RealConfig, RealTarget};
use serde_json::{json, Map, Value};

const PROGRAM: &str = env!("CARGO_BIN_EXE_flymc-raftrs-node");

fn cluster() -> RealTarget {
    let params = json!({ "elections": 2, "heartbeats": 2 }).to_string();
    let write = |to: usize, v: u64| {
        let mut fields = Map::new();
        fields.insert("value".into(), json!(v));
        ClientRequest {
            to,
            name: "write".into(),
            fields,
            payload: Value::Null,
        }
    };
    let cfg = RealConfig::new("raftrs", move |_| {
        NodeCommand::new(PROGRAM)
            .arg("--params")
            .arg(params.clone())
    })
    .clients(vec![write(0, 1), write(2, 2)])
    .notices(true)
    .crash_loses_outbound(true);
    RealTarget::new(cfg)
}

/// A small deterministic generator (no dependency for it).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

fn check(s: &GlobalState, leaders: &mut BTreeMap<u64, usize>) {
    let mut committed: Vec<Vec<Value>> = Vec::new();
    for (n, view) in s.nodes.iter().enumerate() {
        if !view.alive {
            continue;
        }
        assert!(view.vars.get("exceptions").is_none(), "n{n}: {view:?}");
        if view.vars["role"] == "leader" {
            let term = view.vars["term"].as_u64().unwrap();
            let was = *leaders.entry(term).or_insert(n);
            assert_eq!(was, n, "two leaders of term {term}");
        }
        let commit = view.vars["commit"].as_u64().unwrap() as usize;
        let log = view.vars["log"].as_array().unwrap();
        assert!(commit <= log.len(), "n{n}: commit beyond its log");
        committed.push(log[..commit].to_vec());
    }
    for a in &committed {
        for b in &committed {
            let k = a.len().min(b.len());
            assert_eq!(a[..k], b[..k], "committed prefixes differ");
        }
    }
}

#[test]
fn random_orders_with_a_crash_and_a_reboot_stay_safe() {
    let text = "version = 1\nsystem = \"raftrs\"\nnodes = 3\nmax_events = 200\n";
    let w = Workload::parse(Path::new("raftrs.toml"), text).unwrap();
    let mut t = cluster();
    for seed in 1..=12u64 {
        let mut rng = Lcg(seed);
        t.start(&w).expect("the cluster starts");
        let mut s = t.settle().unwrap();
        let mut leaders = BTreeMap::new();
        let crash_at = 3 + rng.below(25);
        let reboot_after = 1 + rng.below(15);
        let victim = rng.below(3);
        // Before the crash: None; while down: Some(step it crashed); rebooted: done.
        let mut down_since: Option<usize> = None;
        let mut rebooted = false;
        for step in 0..200 {
            let pending: Vec<_> = t
                .pending()
                .into_iter()
                .filter(|e| !matches!(e.kind, EventKind::Crash | EventKind::Reboot))
                .collect();
            match down_since {
                None if step == crash_at || pending.is_empty() => {
                    t.crash(victim).unwrap();
                    down_since = Some(step);
                }
                Some(since)
                    if !rebooted && (step == since + reboot_after || pending.is_empty()) =>
                {
                    t.reboot(victim).unwrap();
                    rebooted = true;
                }
                _ if pending.is_empty() => break,
                _ => t.enable(pending[rng.below(pending.len())].id).unwrap(),
            }
            s = t
                .settle()
                .unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
            check(&s, &mut leaders);
        }
        assert!(rebooted, "seed {seed}: n{victim} crashed and rebooted");
        assert!(t.pending().is_empty(), "seed {seed}: the run is finite");
        eprintln!(
            "seed {seed}: leaders {leaders:?}, n0 {:?}",
            s.nodes[0].vars.get("log")
        );
    }
    t.stop().unwrap();
}
