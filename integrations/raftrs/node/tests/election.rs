//! A real 3-node raft-rs cluster of `flymc-raftrs-node` processes driven through flymc's real
//! machinery (event server, local processes) in fixed orders: a leader is elected and a write
//! is committed everywhere; a crashed leader is replaced, and the rebooted node comes back with
//! its persisted term and log. Every test has its own event server on a free port and its own
//! run directories, so they run in parallel; nothing sleeps to synchronise.

use std::path::Path;

use flymc_model::{Event, EventKind, GlobalState, Target, Workload};
use flymc_real::cluster::NodeCommand;
use flymc_real::{ClientRequest, RealConfig, RealTarget};
use serde_json::{json, Map, Value};

const PROGRAM: &str = env!("CARGO_BIN_EXE_flymc-raftrs-node");

/// A cluster of three nodes with `params`, a client write of `value` at node `to`, crash and
/// reboot notices on (as a system would configure it).
fn cluster(params: Value, write: (usize, u64)) -> RealTarget {
    let params = params.to_string();
    let mut fields = Map::new();
    fields.insert("value".into(), json!(write.1));
    let cfg = RealConfig::new("raftrs", move |_| {
        NodeCommand::new(PROGRAM)
            .arg("--params")
            .arg(params.clone())
    })
    .clients(vec![ClientRequest {
        to: write.0,
        name: "write".into(),
        fields,
        payload: Value::Null,
    }])
    .notices(true)
    .crash_loses_outbound(true);
    RealTarget::new(cfg)
}

fn workload() -> Workload {
    let text = "version = 1\nsystem = \"raftrs\"\nnodes = 3\nmax_events = 500\n[faults]\ncrashes = 1\nreboots = 1\ncrash_nodes = [0]\n";
    Workload::parse(Path::new("raftrs.toml"), text).expect("valid test workload")
}

/// The fixed order: crash-point writes first, then messages, then client events (writes and
/// notices), then timers; ties in the target's (deterministic) pending order.
fn rank(e: &Event) -> u8 {
    match e.kind {
        EventKind::Timeout if e.name.starts_with("disk:") => 0,
        EventKind::Message => 1,
        EventKind::Client => 2,
        EventKind::Timeout => 3,
        EventKind::Crash | EventKind::Reboot => 4,
    }
}

/// Enable events in the fixed order until nothing is pending (or `skip` says to leave the
/// rest); returns the last state and the names of the events enabled.
fn drive(
    t: &mut RealTarget,
    mut state: GlobalState,
    skip: impl Fn(&Event) -> bool,
) -> (GlobalState, Vec<String>) {
    let mut names = Vec::new();
    for _ in 0..400 {
        let pending = t.pending();
        let Some(e) = pending
            .iter()
            .filter(|e| !skip(e))
            .min_by_key(|e| rank(e))
            .cloned()
        else {
            return (state, names);
        };
        names.push(format!("{}@n{}", e.name, e.to));
        t.enable(e.id).expect("pending event enables");
        state = t.settle().expect("the cluster settles");
    }
    panic!("the run did not end within 400 events: {names:?}");
}

fn var<'a>(s: &'a GlobalState, n: usize, name: &str) -> &'a Value {
    s.var(n, name)
        .unwrap_or_else(|| panic!("n{n} reports no `{name}`: {s:?}"))
}

fn leaders(s: &GlobalState, nodes: &[usize]) -> Vec<usize> {
    nodes
        .iter()
        .copied()
        .filter(|&n| var(s, n, "role") == "leader")
        .collect()
}

fn values(entries: &Value) -> Vec<Value> {
    entries
        .as_array()
        .expect("a list of entries")
        .iter()
        .map(|e| e["value"].clone())
        .collect()
}

#[test]
fn a_leader_is_elected_and_a_write_is_committed_on_every_node() {
    // Only n0's election timer is armed; the write goes to n1, which forwards it.
    let mut t = cluster(json!({ "election_timers": [0], "elections": 2 }), (1, 7));
    let w = workload();
    t.start(&w).expect("the cluster starts");
    let start = t.settle().expect("settled");
    for n in 0..3 {
        assert_eq!(var(&start, n, "term"), &json!(0));
        assert_eq!(var(&start, n, "role"), "follower");
        assert_eq!(var(&start, n, "elect"), &json!(n == 0), "n{n}: {start:?}");
        assert_eq!(var(&start, n, "log"), &json!([]));
        assert!(start.var(n, "beat").is_none(), "no heartbeat variables");
    }
    let (end, names) = drive(&mut t, start, |_| false);
    assert!(names.iter().any(|n| n == "elect@n0"), "{names:?}");
    assert!(names.iter().any(|n| n == "vote@n1"), "{names:?}");
    assert!(names.iter().any(|n| n == "vote-reply@n0"), "{names:?}");
    assert!(names.iter().any(|n| n == "forward@n0"), "{names:?}");
    assert!(names.iter().any(|n| n == "disk:persist@n1"), "{names:?}");
    assert_eq!(leaders(&end, &[0, 1, 2]), vec![0], "{end:?}");
    for n in 0..3 {
        assert_eq!(var(&end, n, "term"), &json!(1), "n{n}");
        assert_eq!(var(&end, n, "leader"), &json!(0), "n{n}");
        assert_eq!(var(&end, n, "voted_for"), &json!(0), "n{n}");
        assert_eq!(
            var(&end, n, "log"),
            &json!([{"term": 1, "value": null}, {"term": 1, "value": 7}]),
            "n{n}"
        );
        assert_eq!(var(&end, n, "commit"), &json!(2), "n{n}: {end:?}");
        assert_eq!(values(var(&end, n, "applied")), vec![Value::Null, json!(7)]);
        assert_eq!(var(&end, n, "queued"), &json!([]));
        assert_eq!(var(&end, n, "elect"), &json!(false));
    }
    assert_eq!(var(&end, 0, "elections_left"), &json!(1));
    t.stop().unwrap();
}

#[test]
fn a_crashed_leader_is_replaced_and_the_rebooted_node_keeps_its_term_and_log() {
    let mut t = cluster(
        json!({ "election_timers": [0], "heartbeats": 1, "writes": [{"to": 0, "value": 5}] }),
        (0, 5),
    );
    let w = workload();
    t.start(&w).expect("the cluster starts");
    let start = t.settle().expect("settled");
    assert_eq!(var(&start, 0, "beat"), &json!(false));
    assert_eq!(var(&start, 0, "heartbeats_left"), &json!(1));
    // n0 leads term 1 and commits 5 everywhere; its heartbeat timer is left alone.
    let (s, _) = drive(&mut t, start, |e| e.name == "heartbeat");
    assert_eq!(leaders(&s, &[0, 1, 2]), vec![0]);
    assert_eq!(
        var(&s, 0, "beat"),
        &json!(true),
        "a leader's heartbeat timer"
    );
    for n in 0..3 {
        assert_eq!(var(&s, n, "commit"), &json!(2), "n{n}: {s:?}");
    }

    // n0 crashes: the others are told, their election timers arm, n1's fires first.
    t.crash(0).expect("crash");
    let s = t.settle().expect("settled");
    let pending = t.pending();
    assert!(pending.iter().any(|e| e.name == "crashed" && e.to == 1));
    let (s, names) = drive(&mut t, s, |e| {
        e.kind == EventKind::Timeout && e.name == "elect" && e.to == 2
    });
    assert!(names.iter().any(|n| n == "elect@n1"), "{names:?}");
    assert_eq!(leaders(&s, &[1, 2]), vec![1], "{s:?}");
    for n in 1..3 {
        assert_eq!(var(&s, n, "term"), &json!(2));
        assert_eq!(var(&s, n, "down"), &json!([0]));
        assert_eq!(var(&s, n, "commit"), &json!(3), "n{n}: {s:?}");
    }

    // n0 reboots on its data directory: term 1, its vote and its log, applied again.
    t.reboot(0).expect("reboot");
    let s = t.settle().expect("settled");
    assert_eq!(var(&s, 0, "term"), &json!(1), "{s:?}");
    assert_eq!(var(&s, 0, "voted_for"), &json!(0));
    assert_eq!(var(&s, 0, "role"), "follower");
    assert_eq!(var(&s, 0, "leader"), &Value::Null);
    assert_eq!(values(var(&s, 0, "log")), vec![Value::Null, json!(5)]);
    assert_eq!(var(&s, 0, "commit"), &json!(2));
    assert_eq!(values(var(&s, 0, "applied")), vec![Value::Null, json!(5)]);
    assert_eq!(
        var(&s, 0, "eligible"),
        &json!(true),
        "a rebooted node may elect"
    );
    assert_eq!(var(&s, 0, "elect"), &json!(true));

    // The leader is told of the reboot and catches n0 up; n0's timer is then disarmed.
    let (end, names) = drive(&mut t, s, |_| false);
    assert!(names.iter().any(|n| n == "rebooted@n1"), "{names:?}");
    assert!(names.iter().any(|n| n == "heartbeat-msg@n0"), "{names:?}");
    assert_eq!(leaders(&end, &[0, 1, 2]), vec![1], "{end:?}");
    let log = var(&end, 1, "log").clone();
    assert_eq!(
        log,
        json!([{"term": 1, "value": null}, {"term": 1, "value": 5}, {"term": 2, "value": null}])
    );
    for n in 0..3 {
        assert_eq!(var(&end, n, "term"), &json!(2), "n{n}");
        assert_eq!(var(&end, n, "leader"), &json!(1), "n{n}");
        assert_eq!(var(&end, n, "log"), &log, "n{n}");
        assert_eq!(var(&end, n, "commit"), &json!(3), "n{n}: {end:?}");
        assert_eq!(var(&end, n, "elect"), &json!(false), "n{n}");
    }
    assert_eq!(var(&end, 1, "down"), &json!([]));
    t.stop().unwrap();
}
