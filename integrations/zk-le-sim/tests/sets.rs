//! The hand-written sets file against what the handlers really do, over random schedules: every
//! variable an event changes is in its entry's update set, every persistent write is in its disk
//! set, and an entry that says it emits nothing creates no event.

use crate::common;

use common::*;
use flymc_model::sets::{Known, SetsFile};
use flymc_model::{EventKind, System};
use flymc_zk_le_sim::{ZkLeSimSystem, MESSAGE_KINDS};

#[test]
fn handlers_stay_within_their_declared_sets() {
    let w = workload("le-3crash");
    let first = Run::new(w.clone());
    let known = Known {
        node_vars: Some(first.state().nodes[0].vars.keys().cloned().collect()),
        message_kinds: Some(MESSAGE_KINDS.iter().map(|k| k.to_string()).collect()),
    };
    let sets = SetsFile::parse(
        "sets.json",
        ZkLeSimSystem.about().sets.as_deref().unwrap(),
        &known,
    )
    .unwrap();
    let disk_of = |var: &str| match var {
        "current_epoch" => Some("currentEpoch"),
        "accepted_epoch" => Some("acceptedEpoch"),
        _ => None,
    };
    let mut checked = 0;
    for seed in 0..300 {
        let mut r = Run::new(w.clone());
        let mut policy = random_policy(seed, 60);
        loop {
            if r.trace.len() >= w.max_events {
                break;
            }
            let pending = r.pending();
            let Some(step) = policy(&r, &pending) else {
                break;
            };
            let before = r.state().clone();
            let Step::Event(i) = step else {
                assert!(r.step(step).is_none());
                continue;
            };
            let e = pending[i].clone();
            let node = &before.nodes[e.to].vars;
            let entry = sets
                .message(&e.name, node, &e.fields)
                .unwrap_or_else(|| panic!("no entry for {}", e.describe()));
            let ids_before: Vec<_> = pending.iter().map(|p| p.id).collect();
            assert!(r.step(step).is_none(), "{}", r.trace.join("\n"));
            let after = &r.state().nodes[e.to].vars;
            for (k, v) in after {
                if node.get(k) != Some(v) {
                    assert!(
                        entry.update.contains(k),
                        "{} changed `{k}` ({} -> {v}) outside its update set {:?} (guard {})",
                        e.describe(),
                        node[k],
                        entry.update,
                        entry.guard
                    );
                    if let Some(file) = disk_of(k) {
                        assert!(entry.disk.contains(file), "{} writes {file}", e.describe());
                    }
                }
            }
            if !entry.emits {
                let created = r
                    .pending()
                    .into_iter()
                    .filter(|p| !ids_before.contains(&p.id));
                for c in created {
                    assert!(
                        c.kind == EventKind::Crash || c.kind == EventKind::Reboot,
                        "{} emitted {} though its entry says it emits nothing",
                        e.describe(),
                        c.describe()
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(checked > 5_000, "{checked} events checked");
}
