//! Schedules driven through the `Target` trait: the happy path, ZOOKEEPER-1419's livelock and
//! the fixed predicate under the same schedule, crashes and reboots, determinism, bad params.

use crate::common;

use common::*;
use flymc_model::{EventKind, GlobalState, System, Workload};
use flymc_zk_le_sim::properties::{
    EVENTUALLY_QUORUM_FOLLOWS_LEADER, FOLLOWERS_AGREE, ONE_LEADER_PER_EPOCH,
};
use flymc_zk_le_sim::ZkLeSimSystem;
use serde_json::json;

/// (state, leader, established, current_epoch) of every node.
fn roles(r: &Run) -> Vec<(String, serde_json::Value, bool, u64)> {
    (0..r.workload.nodes)
        .map(|i| {
            (
                r.var(i, "state").as_str().unwrap().to_string(),
                r.var(i, "leader"),
                r.var(i, "established").as_bool().unwrap(),
                r.var(i, "current_epoch").as_u64().unwrap(),
            )
        })
        .collect()
}

fn led(leader: u64, epoch: u64) -> (String, serde_json::Value, bool, u64) {
    ("LEADING".into(), json!(leader), true, epoch)
}

fn follows(leader: u64, epoch: u64) -> (String, serde_json::Value, bool, u64) {
    ("FOLLOWING".into(), json!(leader), true, epoch)
}

/// Drive FIFO until nothing is pending; panics on a violation.
fn settle_fifo(r: &mut Run) {
    while !r.pending().is_empty() {
        if let Some(end) = r.step(Step::Event(0)) {
            panic!("{end:?}\n{}", r.trace.join("\n"));
        }
    }
}

#[test]
fn le_under_fifo_elects_the_highest_id_and_establishes_epoch_1() {
    let mut r = Run::new(workload("le"));
    let end = r.drive(fifo);
    assert_eq!(end, End::Quiescent, "{}", r.trace.join("\n"));
    assert_eq!(
        roles(&r),
        vec![follows(2, 1), follows(2, 1), led(2, 1)],
        "{}",
        r.trace.join("\n")
    );
    assert_eq!(r.trace.len(), 32, "{}", r.trace.join("\n"));
}

#[test]
fn zk_1419_under_fifo_still_elects() {
    // FIFO delivers the finalize timers while the votes agree: the bug needs a schedule.
    let mut r = Run::new(workload("zk-1419"));
    let end = r.drive(fifo);
    assert_eq!(end, End::Quiescent, "{}", r.trace.join("\n"));
    assert_eq!(roles(&r)[1], led(1, 3));
}

/// The hand schedule for ZOOKEEPER-1419: FIFO, except that a finalize timer fires only when
/// nothing else is pending (finalizeWait is long next to network delays). With the pre-fix
/// predicate n1's vote (epoch 2) and n2's (id 2) beat each other, so delivering either to a node
/// holding the other changes its proposal and sends more notifications: messages never run out,
/// no finalize timer fires, nobody decides. From event 41 on, the state (TCP sequence numbers
/// aside) repeats every 12 events, so the schedule can go on forever.
#[test]
fn zk_1419_livelocks_when_finalize_waits_for_the_network() {
    let mut r = Run::new(workload("zk-1419"));
    let end = r.drive(finalize_last);
    match &end {
        End::Violation { property, message } => {
            assert_eq!(property, EVENTUALLY_QUORUM_FOLLOWS_LEADER, "{message}");
            assert!(message.contains("3 of 3 nodes are up"), "{message}");
        }
        other => panic!("expected the liveness violation, got {other:?}"),
    }
    assert_eq!(r.trace.len(), r.workload.max_events);
    assert_eq!(
        Some(EVENTUALLY_QUORUM_FOLLOWS_LEADER),
        r.workload.expect.as_deref()
    );
    for s in &r.states {
        for n in &s.nodes {
            assert_eq!(n.vars["state"], "LOOKING");
        }
    }
    // A cycle: the same state comes back, so this schedule never ends.
    let mut seen = std::collections::HashMap::new();
    let cycle = r
        .states
        .iter()
        .enumerate()
        .find_map(|(i, s)| seen.insert(without_seq(s), i).map(|j| (j, i)));
    assert_eq!(cycle, Some((41, 53)), "{}", r.trace.join("\n"));
}

/// A state with the connections' sequence numbers left out.
fn without_seq(s: &GlobalState) -> String {
    let mut s = s.clone();
    s.env = serde_json::Value::Null;
    for p in s.network.iter_mut() {
        let mut f: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&p.fields).unwrap();
        f.remove("seq");
        p.fields = serde_json::Value::Object(f).to_string();
    }
    s.network.sort();
    s.canonical()
}

#[test]
fn fixed_predicate_under_the_same_schedule_elects_n1() {
    let mut r = Run::new(workload_with_variant("zk-1419", "fixed"));
    let end = r.drive(finalize_last);
    assert_eq!(end, End::Quiescent, "{}", r.trace.join("\n"));
    // n1 has the highest currentEpoch (2); its epoch becomes max(acceptedEpoch) + 1 = 3.
    assert_eq!(roles(&r), vec![follows(1, 3), led(1, 3), follows(1, 3)]);
}

#[test]
fn two_votes_beat_each_other_only_before_the_fix() {
    use flymc_zk_le_sim::Variant;
    // (leader, zxid, epoch): n1 with the higher epoch, n2 with the higher id, same zxid.
    let a = (1, 5, 2);
    let b = (2, 5, 1);
    assert!(Variant::Zk1419.beats(a, b) && Variant::Zk1419.beats(b, a));
    assert!(Variant::Fixed.beats(a, b) && !Variant::Fixed.beats(b, a));
}

/// Elect, crash the leader, re-elect among the two left, reboot it (it rejoins as a follower),
/// crash a follower (the leader keeps its quorum), then crash the leader again with the other
/// follower gone (no quorum alive: nobody leads).
#[test]
fn le_3crash_leader_crash_reboot_and_quorum_loss() {
    let mut r = Run::new(workload("le-3crash"));
    settle_fifo(&mut r);
    assert_eq!(roles(&r), vec![follows(2, 1), follows(2, 1), led(2, 1)]);

    r.step(Step::Crash(2));
    settle_fifo(&mut r);
    let after = roles(&r);
    assert_eq!(&after[..2], &[follows(1, 2), led(1, 2)]);

    r.step(Step::Reboot(2));
    settle_fifo(&mut r);
    // n2 has the highest id but an older epoch (1 < 2): it joins n1's ensemble.
    assert_eq!(roles(&r), vec![follows(1, 2), led(1, 2), follows(1, 2)]);
    let trace = r.trace.join("\n");
    assert!(
        trace.contains("timeout peer_up @n1 {\"peer\":2}"),
        "{trace}"
    );

    r.step(Step::Crash(0));
    settle_fifo(&mut r);
    assert_eq!(&roles(&r)[1..], &[led(1, 2), follows(1, 2)]);

    r.step(Step::Crash(1));
    settle_fifo(&mut r);
    assert_eq!(r.var(2, "state"), "LOOKING");
    assert!(
        r.finish(End::Quiescent) == End::Quiescent,
        "no quorum alive: vacuous"
    );
}

#[test]
fn the_same_schedule_gives_the_same_states_and_event_ids() {
    for seed in [3, 17, 4242] {
        let mut a = Run::new(workload("le-3crash"));
        let mut b = Run::new(workload("le-3crash"));
        let ea = a.drive(random_policy(seed, 80));
        let eb = b.drive(random_policy(seed, 80));
        assert_eq!(ea, eb);
        assert_eq!(a.ids, b.ids);
        assert_eq!(a.states, b.states);
        assert!(
            a.trace.iter().any(|t| t.starts_with("crash")),
            "seed {seed} crashes"
        );
    }
}

/// Random schedules with up to 3 crashes and 3 reboots: the fixed predicate never breaks a
/// property and every run ends with nothing pending, well within max_events.
#[test]
fn random_schedules_with_faults_reach_quiescence_without_violations() {
    let w = workload("le-3crash");
    let mut longest = 0;
    for seed in 0..400 {
        for per_mille in [20, 200] {
            let mut r = Run::new(w.clone());
            let end = r.drive(random_policy(seed, per_mille));
            assert_eq!(end, End::Quiescent, "seed {seed}:\n{}", r.trace.join("\n"));
            longest = longest.max(r.trace.len());
        }
    }
    assert!(longest * 3 < w.max_events, "longest run {longest}");
}

/// The same over many more schedules: `cargo test -p flymc-zk-le-sim -- --ignored`.
#[test]
#[ignore = "slow: 60 000 random schedules"]
fn many_random_schedules_with_faults() {
    let w = workload("le-3crash");
    for seed in 0..20_000 {
        for per_mille in [10, 60, 300] {
            let mut r = Run::new(w.clone());
            let end = r.drive(random_policy(seed, per_mille));
            assert_eq!(
                end,
                End::Quiescent,
                "seed {seed}/{per_mille}:\n{}",
                r.trace.join("\n")
            );
        }
    }
}

fn error_of(text_params: &str, nodes: usize) -> String {
    let text = format!(
        "version = 1\nsystem = \"zk-le-sim\"\nnodes = {nodes}\nmax_events = 10\n[params]\n{text_params}\n"
    );
    let w = Workload::parse(std::path::Path::new("bad.toml"), &text).unwrap();
    match ZkLeSimSystem.target(&w) {
        Ok(_) => panic!("accepted {text_params:?} with {nodes} nodes"),
        Err(e) => {
            let s = e.to_string();
            assert!(!s.contains('\n'), "one line: {s}");
            s
        }
    }
}

#[test]
fn bad_params_give_one_line_errors_naming_the_valid_choices() {
    let e = error_of("variant = \"zk-1419\"", 3);
    assert!(
        e.contains("unknown variant `zk-1419`; valid: fixed, zookeeper-1419"),
        "{e}"
    );
    let e = error_of("variant = 3", 3);
    assert!(
        e.contains("bad.toml:6:11: params.variant must be a string, got integer `3`"),
        "{e}"
    );
    let e = error_of("varient = \"fixed\"", 3);
    assert!(
        e.contains(
            "bad.toml:6:1: unknown parameter `varient` in [params]; valid: variant, epochs, zxids"
        ),
        "{e}"
    );
    let e = error_of("epochs = [1, 2]", 3);
    assert!(
        e.contains("`epochs` must be a list of 3 non-negative integers"),
        "{e}"
    );
    let e = error_of("zxids = [1, -2, 3]", 3);
    assert!(
        e.contains(
            "bad.toml:6:13: params.zxids[1] must be a non-negative integer, got integer `-2`"
        ),
        "{e}"
    );
    let e = error_of("", 1);
    assert!(
        e.contains("simulates 3-node ensembles only, the workload has 1 nodes"),
        "{e}"
    );
    let e = error_of("", 12);
    assert!(e.contains("the workload has 12 nodes"), "{e}");
    // And the shipped workloads are all accepted.
    for name in ["le", "le-3crash", "zk-1419"] {
        assert!(ZkLeSimSystem.target(&workload(name)).is_ok(), "{name}");
        assert_eq!(workload(name).system, ZkLeSimSystem.name());
    }
}

fn state_of(nodes: &[serde_json::Value]) -> GlobalState {
    GlobalState::new(
        nodes
            .iter()
            .map(|v| flymc_model::NodeView {
                alive: true,
                vars: v.as_object().unwrap().clone(),
            })
            .collect(),
        &[],
    )
}

fn check(
    props: &mut [Box<dyn flymc_model::Property>],
    name: &str,
    s: &GlobalState,
) -> Result<(), String> {
    props
        .iter_mut()
        .find(|p| p.name() == name)
        .unwrap()
        .check(s)
}

#[test]
fn properties_fire_on_the_states_they_forbid() {
    let w = workload("le");
    let mut props = ZkLeSimSystem.properties(&w);
    let names: Vec<&str> = props.iter().map(|p| p.name()).collect();
    assert_eq!(
        names,
        [
            ONE_LEADER_PER_EPOCH,
            FOLLOWERS_AGREE,
            EVENTUALLY_QUORUM_FOLLOWS_LEADER
        ]
    );
    let n = |state: &str, leader: Option<u64>, est: bool, epoch: u64| {
        json!({"state": state, "leader": leader, "established": est, "current_epoch": epoch,
               "logicalclock": 1, "proposed_leader": 0})
    };
    // n0 led epoch 1; later n1 leads epoch 1 too: remembered across states.
    let s1 = state_of(&[
        n("LEADING", Some(0), true, 1),
        n("FOLLOWING", Some(0), true, 1),
        n("LOOKING", None, false, 0),
    ]);
    assert!(check(&mut props, ONE_LEADER_PER_EPOCH, &s1).is_ok());
    assert!(check(&mut props, FOLLOWERS_AGREE, &s1).is_ok());
    assert!(check(&mut props, EVENTUALLY_QUORUM_FOLLOWS_LEADER, &s1).is_ok());
    let s2 = state_of(&[
        n("LOOKING", None, false, 1),
        n("LEADING", Some(1), true, 1),
        n("LOOKING", None, false, 0),
    ]);
    let e = check(&mut props, ONE_LEADER_PER_EPOCH, &s2).unwrap_err();
    assert!(e.contains("n1 and n0 both led epoch 1"), "{e}");
    // A follower of epoch 2 disagreeing with the leader of epoch 2.
    let s3 = state_of(&[
        n("LEADING", Some(0), true, 2),
        n("FOLLOWING", Some(2), true, 2),
        n("LOOKING", None, false, 0),
    ]);
    let e = check(&mut props, FOLLOWERS_AGREE, &s3).unwrap_err();
    assert!(e.contains("in epoch 2"), "{e}");
    // Unestablished nodes are not held to it; the liveness check counts LEADING + FOLLOWING.
    let s4 = state_of(&[
        n("LEADING", Some(0), false, 2),
        n("FOLLOWING", Some(2), false, 2),
        n("LOOKING", None, false, 0),
    ]);
    assert!(check(&mut props, FOLLOWERS_AGREE, &s4).is_ok());
    let e = check(&mut props, EVENTUALLY_QUORUM_FOLLOWS_LEADER, &s4).unwrap_err();
    assert!(e.contains("no leader has a quorum of 2"), "{e}");
    assert!(e.contains("n1 FOLLOWING n2"), "{e}");
}

#[test]
fn no_symmetry_and_events_have_senders() {
    let w = workload("le");
    assert_eq!(ZkLeSimSystem.symmetry(&w), flymc_model::Symmetry::none());
    let r = Run::new(w);
    let p = r.pending();
    assert_eq!(p.len(), 3);
    assert!(p
        .iter()
        .all(|e| e.kind == EventKind::Timeout && e.name == "start"));
}

#[test]
fn every_shipped_workload_has_valid_parameters() {
    // workloads/zk-le-sim/le.toml → workloads/
    let folder = workload_path("le").parent().unwrap().join("..");
    let shipped = flymc_core::workloads::all(&folder, "zk-le-sim").unwrap();
    assert!(shipped.len() >= 3);
    for w in shipped {
        ZkLeSimSystem::protocol(&w).unwrap_or_else(|e| panic!("{}: {e}", w.name));
    }
}
