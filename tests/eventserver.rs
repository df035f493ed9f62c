//! The event server, the hook protocol and the Rust hook, on real processes: clusters of the
//! hook crate's demo node (`flymc-demo-node`) driven through `RealTarget` by the executor.
//! Every test has its own server on a free port, its own node ports and run directory, so they
//! run in parallel; nothing here sleeps to synchronise.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;

use flymc::demo::DemoSystem;
use flymc::hookbench::{bench_hooks, HookBenchConfig};
use flymc_core::executor::{Executor, RunOptions};
use flymc_core::explore::Exploration;
use flymc_core::pathfile::PathFile;
use flymc_core::plan::{Plan, Tail};
use flymc_core::replay::{replay, ReplayOutcome};
use flymc_core::run::{Ending, Run, HANG_PROPERTY};
use flymc_model::{EventKind, GlobalState, System, Target, TargetError, Workload};
use flymc_real::cluster::live_processes;
use flymc_real::RealTarget;
use flymc_strategies::{self as strategy, FlymcOptions, StrategyContext};
use serde_json::{json, Value};

fn demo() -> DemoSystem {
    DemoSystem::with_program(support::node_program("flymc-demo-node", "flymc-demo-node"))
}

fn workload(nodes: usize, extra: &str, params: &str) -> Workload {
    let text = format!(
        "version = 1\nsystem = \"hook-demo\"\nnodes = {nodes}\nmax_events = 40\n{extra}\n[params]\n{params}\n"
    );
    Workload::parse(Path::new("demo.toml"), &text).expect("valid test workload")
}

fn target(w: &Workload) -> RealTarget {
    RealTarget::new(demo().config(w).expect("demo config"))
}

/// Two nodes each get `add` and echo it to the other, which acks.
const TWO_ADDS: &str = "ack = true\nclients = [{ to = 0, name = \"add\", value = 1, fanout = true }, { to = 1, name = \"add\", value = 2, fanout = true }]";

fn explore(system: &dyn System, w: &Workload, name: &str, paths: u64) -> (Vec<Run>, u64, bool) {
    let ctx = StrategyContext {
        workload: w,
        symmetry: system.symmetry(w),
        seed: 0,
        bound: 25,
        stateless_dfs: false,
        sets: None,
        flymc: FlymcOptions {
            symmetry: true,
            independence: true,
            parallel_flips: true,
        },
        fault_vars: system.about().fault_vars.clone(),
        disk_state: true,
        pct_depth: 3,
    };
    let mut strat = strategy::build(name, &ctx).unwrap();
    let mut runs = Vec::new();
    let out = Exploration::new(system, w, strat.as_mut())
        .max_paths(Some(paths))
        // Re-run every path and compare every state: the real target must be deterministic.
        .check_determinism(true)
        .on_run(|r| runs.push(r.clone()))
        .run()
        .unwrap_or_else(|e| panic!("exploration failed: {e}"));
    (runs, out.paths, out.violation.is_some())
}

fn sum(s: &GlobalState, node: usize) -> i64 {
    s.var(node, "sum").and_then(Value::as_i64).unwrap()
}

#[test]
fn dfs_explores_a_real_cluster_and_every_path_replays() {
    let sys = demo();
    let w = workload(2, "", TWO_ADDS);
    let (runs, paths, violated) = explore(&sys, &w, "dfs", 4);
    assert_eq!(paths, 4);
    assert!(!violated);
    let orders: std::collections::HashSet<Vec<_>> = runs.iter().map(|r| r.event_ids()).collect();
    assert_eq!(orders.len(), 4, "dfs ran four different orders");
    for r in &runs {
        assert_eq!(r.ending, Ending::Quiescent);
        // add, add, two echoes, two acks.
        assert_eq!(r.steps.len(), 6, "{:?}", r.event_ids());
        let last = r.states.last().unwrap();
        assert_eq!((sum(last, 0), sum(last, 1)), (3, 3));
        assert_eq!(last.var(0, "acks"), Some(&json!(1)));
        assert!(last.network.is_empty());
    }
    // Every path file replays to the same states on fresh processes.
    for (i, r) in runs.iter().enumerate() {
        let file = PathFile::from_run(&w, "dfs", 0, i as u64 + 1, r);
        match replay(&file, &sys, &w).unwrap() {
            ReplayOutcome::Matched => {}
            other => panic!("path {} did not replay: {other:?}", i + 1),
        }
    }
}

#[test]
fn a_violation_on_real_processes_is_found_and_reproduced() {
    let sys = demo();
    let w = workload(2, "", &format!("{TWO_ADDS}\nlimit = 3"));
    let (runs, _, violated) = explore(&sys, &w, "dfs", 20);
    assert!(violated);
    let run = runs.last().unwrap();
    let v = run.violation.as_ref().unwrap();
    assert_eq!(v.property, "sum-below");
    let file = PathFile::from_run(&w, "dfs", 0, runs.len() as u64, run);
    match replay(&file, &sys, &w).unwrap() {
        ReplayOutcome::Reproduced(again) => assert_eq!(again.property, "sum-below"),
        other => panic!("not reproduced: {other:?}"),
    }
}

#[test]
fn crashes_and_reboots_are_explored_deterministically() {
    let sys = demo();
    let w = workload(
        2,
        "[faults]\ncrashes = 1\nreboots = 1\ncrash_nodes = [1]",
        "persist = true\nclients = [{ to = 1, name = \"add\", value = 5, fanout = true }]",
    );
    let (runs, _, _) = explore(&sys, &w, "dfs", 8);
    let crashed = runs
        .iter()
        .filter(|r| r.events().any(|e| e.kind == EventKind::Crash))
        .count();
    assert!(crashed > 0, "dfs tried crashes");
}

#[test]
fn crash_drops_inbound_messages_and_reboot_keeps_the_data_directory() {
    let w = workload(
        2,
        "",
        "persist = true\ntimers = [\"tick\"]\nclients = [{ to = 1, name = \"add\", value = 5 }, { to = 0, name = \"add\", value = 1, fanout = true }]",
    );
    let mut t = target(&w);
    t.start(&w).unwrap();
    let p = t.pending();
    let names: Vec<(&str, usize)> = p.iter().map(|e| (e.name.as_str(), e.to)).collect();
    assert_eq!(
        names,
        vec![("add", 0), ("add", 1), ("tick", 0), ("tick", 1)]
    );
    assert!(p[2].kind == EventKind::Timeout && p[2].from.is_none());
    // add at n1, then its crash-point write.
    t.enable(p[1].id).unwrap();
    let s = t.settle().unwrap();
    assert_eq!(sum(&s, 1), 5);
    let write: Vec<_> = t.pending().into_iter().filter(|e| e.to == 1).collect();
    assert_eq!(
        write.len(),
        1,
        "a node parked at a crash point offers only the write: {write:?}"
    );
    assert_eq!(write[0].name, "disk:state");
    t.enable(write[0].id).unwrap();
    t.settle().unwrap();
    // add at n0 echoes to n1; crash n1 before it arrives.
    let add0 = t.pending().into_iter().find(|e| e.name == "add").unwrap();
    t.enable(add0.id).unwrap();
    t.settle().unwrap();
    let w0 = t
        .pending()
        .into_iter()
        .find(|e| e.name == "disk:state")
        .unwrap();
    t.enable(w0.id).unwrap();
    t.settle().unwrap();
    assert!(t.pending().iter().any(|e| e.name == "echo" && e.to == 1));
    let old_pid = t.server().unwrap().pid(1).unwrap();
    t.crash(1).unwrap();
    let s = t.settle().unwrap();
    assert!(!s.nodes[1].alive);
    assert!(
        t.pending().iter().all(|e| e.to != 1),
        "inbound events dropped"
    );
    assert!(matches!(t.crash(1), Err(TargetError::BadNode(..))));
    t.reboot(1).unwrap();
    let s = t.settle().unwrap();
    assert!(s.nodes[1].alive);
    assert_eq!(s.var(1, "boots"), Some(&json!(1)));
    assert_eq!(sum(&s, 1), 5, "persisted across the crash");
    assert_ne!(t.server().unwrap().pid(1).unwrap(), old_pid);
    // The rebooted node armed its timer again, as a child of the reboot.
    let tick = t
        .pending()
        .into_iter()
        .find(|e| e.name == "tick" && e.to == 1)
        .unwrap();
    assert_eq!(tick.parent, Some(flymc_model::EventId::reboot(1, 0)));
    let pids: Vec<u32> = t.pids().iter().map(|p| p.1).collect();
    t.stop().unwrap();
    let live = live_processes();
    assert!(
        pids.iter().all(|p| !live.contains(p)),
        "stop leaves nothing running"
    );
}

#[test]
fn event_ids_are_the_same_in_every_run() {
    let w = workload(3, "", "timers = [\"tick\"]\nack = true\nclients = [{ to = 2, name = \"add\", value = 1, fanout = true }]");
    let mut t = target(&w);
    let mut seen = Vec::new();
    for _ in 0..2 {
        t.start(&w).unwrap();
        let mut ids = Vec::new();
        // Always enable the last pending event: a different order than FIFO.
        loop {
            let p = t.pending();
            let Some(e) = p.last() else { break };
            ids.push((e.id, e.describe()));
            t.enable(e.id).unwrap();
            t.settle().unwrap();
        }
        t.stop().unwrap();
        seen.push(ids);
    }
    assert_eq!(seen[0].len(), 3 + 1 + 2 + 2);
    assert_eq!(seen[0], seen[1]);
}

#[test]
fn a_cancelled_timer_is_no_longer_pending() {
    let w = workload(
        2,
        "",
        "timers = [\"tick\"]\nclients = [{ to = 0, name = \"rearm\" }]",
    );
    let mut t = target(&w);
    t.start(&w).unwrap();
    let p = t.pending();
    let names: Vec<(&str, usize)> = p.iter().map(|e| (e.name.as_str(), e.to)).collect();
    assert_eq!(names, vec![("rearm", 0), ("tick", 0), ("tick", 1)]);
    t.enable(p[0].id).unwrap();
    t.settle().unwrap();
    let after = t.pending();
    assert_eq!(after.len(), 2);
    assert!(
        !after.iter().any(|e| e.id == p[1].id),
        "the old timer is withdrawn"
    );
    let new = after.iter().find(|e| e.to == 0).unwrap();
    assert_eq!((new.name.as_str(), new.parent), ("tick", Some(p[0].id)));
    t.enable(new.id).unwrap();
    let s = t.settle().unwrap();
    assert_eq!(s.var(0, "ticks"), Some(&json!(1)));
    t.stop().unwrap();
}

#[test]
fn enables_to_one_node_are_processed_in_order_without_waiting_between_them() {
    let clients: Vec<String> = (1..=6)
        .map(|v| format!("{{ to = 0, name = \"add\", value = {v} }}"))
        .collect();
    let w = workload(2, "", &format!("clients = [{}]", clients.join(", ")));
    let mut t = target(&w);
    t.start(&w).unwrap();
    // Enable all six back to back (as after state-event cache hits), in reverse order.
    let mut p = t.pending();
    p.reverse();
    for e in &p {
        t.enable(e.id).unwrap();
    }
    let s = t.settle().unwrap();
    let trace: Vec<String> = (1..=6).rev().map(|v| format!("add:{v}")).collect();
    assert_eq!(s.var(0, "trace"), Some(&json!(trace)));
    // On the wire each order names the one enabled before it at that node.
    let server = t.server().unwrap();
    let (code, reply) = http(
        server.addr(),
        "POST",
        "/v1/poll",
        Some(&server.token()),
        &json!({"node": 0, "incarnation": 0, "after": 0, "wait_ms": 0}).to_string(),
    );
    assert_eq!(code, 200, "{reply}");
    let orders = reply["orders"].as_array().unwrap();
    assert_eq!(orders.len(), 6);
    assert_eq!(orders[0]["previous"], Value::Null);
    for pair in orders.windows(2) {
        assert_eq!(pair[1]["previous"], pair[0]["event"]["id"]);
    }
    assert_eq!(orders[0]["event"]["id"], json!(p[0].id.to_string()));
    t.stop().unwrap();
}

/// One HTTP/1.1 request by hand, as a hook in any language would send it.
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(t) = token {
        req.push_str(&format!("X-FlyMC-Token: {t}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let code = out[9..12].parse().unwrap();
    let body = out.split_once("\r\n\r\n").map_or("", |b| b.1);
    (code, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// method, path, token, body, expected status, expected error code.
type Case<'a> = (&'a str, &'a str, Option<&'a str>, String, u16, &'a str);

#[test]
fn bad_requests_get_a_4xx_with_a_reason_and_the_run_goes_on() {
    let w = workload(2, "", TWO_ADDS);
    let mut t = target(&w);
    t.start(&w).unwrap();
    let server = t.server().unwrap();
    let (addr, token) = (server.addr(), server.token());
    let tok = Some(token.as_str());
    let events = json!({"node": 0, "incarnation": 0, "events": []}).to_string();
    let cases: Vec<Case> = vec![
        ("POST", "/v1/events", None, events.clone(), 401, "bad-token"),
        ("POST", "/v1/events", Some("0123"), events.clone(), 401, "bad-token"),
        ("POST", "/v0/register", tok, json!({"protocol": 0, "node": 0, "incarnation": 0}).to_string(), 426, "protocol-version"),
        ("POST", "/v1/register", tok, json!({"protocol": 0, "node": 0, "incarnation": 0}).to_string(), 426, "protocol-version"),
        ("POST", "/v1/events", tok, "{\"node\": 0, \"incarn".into(), 400, "malformed"),
        ("POST", "/v1/events", tok, json!({"node": 0, "incarnation": 0, "events": [{"seq": 0}]}).to_string(), 400, "malformed"),
        ("POST", "/v1/events", tok, json!({"node": 9, "incarnation": 0, "events": []}).to_string(), 404, "unknown-node"),
        ("POST", "/v1/events", tok, json!({"node": 0, "incarnation": 0, "events": [{"seq": 0, "kind": "message", "name": "x", "to": 7}]}).to_string(), 404, "unknown-node"),
        ("POST", "/v1/events", tok, json!({"node": 0, "incarnation": 0, "events": [{"parent": "00000000000000ff", "seq": 0, "kind": "message", "name": "x", "to": 1}]}).to_string(), 404, "unknown-event"),
        ("POST", "/v1/done", tok, json!({"node": 0, "incarnation": 0, "event": "00000000000000ff", "state": {}}).to_string(), 404, "unknown-event"),
        ("POST", "/v1/done", tok, json!({"node": 0, "incarnation": 3, "event": null, "state": {}}).to_string(), 409, "stale"),
        ("POST", "/v1/teleport", tok, "{}".into(), 404, "unknown-endpoint"),
        ("GET", "/v1/poll", tok, String::new(), 405, "method"),
    ];
    for (method, path, token, body, status, code) in &cases {
        let (got, reply) = http(addr, method, path, *token, body);
        assert_eq!(got, *status, "{method} {path} {body}: {reply}");
        assert_eq!(reply["error"], json!(code), "{reply}");
        assert!(
            reply["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "{reply}"
        );
    }
    let stats = server.stats();
    assert_eq!(stats.rejected.values().sum::<u64>(), cases.len() as u64);
    // The run goes on: the nodes still settle every event.
    let sys = demo();
    let exec = Executor::new(&sys, &w);
    let run = exec
        .run(&mut t, &Plan::fifo(Vec::new()), RunOptions::default())
        .unwrap();
    assert_eq!(run.steps.len(), 6);
    assert_eq!(sum(run.states.last().unwrap(), 1), 3);
}

#[test]
fn a_node_that_does_not_settle_is_a_hang_and_the_target_recovers() {
    let w = workload(
        2,
        "",
        "settle_timeout_ms = 300\nclients = [{ to = 1, name = \"hang\" }, { to = 0, name = \"add\", value = 1 }]",
    );
    let sys = demo();
    let mut t = target(&w);
    let exec = Executor::new(&sys, &w);
    // A hang is a liveness finding with its path, not an error that ends the exploration.
    let run = exec
        .run(&mut t, &Plan::fifo(Vec::new()), RunOptions::default())
        .expect("a hang is a finding");
    assert_eq!(
        run.ending,
        Ending::Hang { step: 1 },
        "hang at the second step (FIFO: add first)"
    );
    let v = run.violation.as_ref().expect("the hang is reported");
    assert_eq!(v.property, HANG_PROPERTY);
    assert!(
        v.message.contains("n1 did not settle within 300 ms"),
        "{}",
        v.message
    );
    assert!(t.pids().is_empty(), "the executor stopped the cluster");
    // The same target runs the next path.
    let plan = Plan {
        prefix: Vec::new(),
        tail: Tail::Stop,
        strict: true,
        sleep: Vec::new(),
        sleep_at: 0,
    };
    let run = exec.run(&mut t, &plan, RunOptions::default()).unwrap();
    assert_eq!(run.states.len(), 1);
}

#[test]
fn a_node_that_exits_is_reported_as_exited() {
    let w = workload(2, "", "clients = [{ to = 1, name = \"exit\", code = 7 }]");
    let mut t = target(&w);
    t.start(&w).unwrap();
    let p = t.pending();
    t.enable(p[0].id).unwrap();
    let e = t.settle().unwrap_err();
    assert!(
        matches!(
            &e,
            TargetError::Exited {
                node: 1,
                restarting: false,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("node n1 exited on its own (exit status 7)"),
        "{e}"
    );
    t.stop().unwrap();
}

#[test]
fn a_missing_node_program_is_one_clear_error() {
    let w = workload(1, "", "");
    let cfg = DemoSystem::with_program("/nonexistent/flymc-demo-node")
        .config(&w)
        .unwrap();
    let mut t = RealTarget::new(cfg);
    let e = t.start(&w).unwrap_err().to_string();
    assert!(
        e.contains("cannot start node n0's program /nonexistent/flymc-demo-node"),
        "{e}"
    );
    t.stop().unwrap();
}

#[test]
fn unknown_workload_parameters_are_refused() {
    let w = workload(1, "", "colour = \"blue\"");
    let e = demo().config(&w).err().unwrap().to_string();
    assert!(e.contains("unknown parameter `colour`"), "{e}");
}

#[test]
fn hook_bench_measures_events_through_the_server() {
    let b = bench_hooks(&HookBenchConfig {
        events: 60,
        nodes: 2,
        program: Some(support::node_program("flymc-demo-node", "flymc-demo-node").into()),
    })
    .unwrap();
    assert_eq!(b.events, 60);
    assert!(b.events_per_sec > 0.0 && b.round_trip_median_us > 0.0);
    assert!(b.intercept_median_us > 0.0);
    assert!(b.table().contains("events per second"));
}
