//! What each node has on disk at every state of a run, as far as its crash points tell.
//!
//! Reported node variables are what a node holds in memory; two states can agree on all of them
//! and still differ on disk (a snapshot written or not yet, a transaction log flushed or not, an
//! epoch file updated), and a crash strikes differently in each. Every crash-point write is a
//! step of the run (`disk:<name>`, with fields saying what it writes), so the run itself says
//! what is on disk: per node, for each kind of write, the fields of the last one done (or how
//! many were done, for writes without fields). It survives crashes, like the disk.

use std::collections::BTreeMap;

use flymc_core::run::Run;
use flymc_model::{stable_hash, Event, GlobalState};
use serde_json::{json, Value};

/// Each node's disk as `run`'s crash-point writes leave it: per kind of write, the value
/// `write` makes of the last one and the write. `at` sees the disks before the first step and
/// after every step, with the node that step wrote to. `None` when the run has no crash-point
/// write at all (then disks say nothing).
fn fold<'r, V>(
    run: &'r Run,
    write: impl Fn(Option<&V>, &Event) -> V,
    mut at: impl FnMut(&[BTreeMap<&'r str, V>], Option<usize>),
) -> Option<()> {
    if !run.events().any(|e| e.is_write()) {
        return None;
    }
    let nodes = run.states.first().map_or(0, |s| s.nodes.len());
    let mut disks: Vec<BTreeMap<&str, V>> = (0..nodes).map(|_| BTreeMap::new()).collect();
    at(&disks, None);
    for e in run.events() {
        let mut wrote = None;
        if let (Some(name), Some(disk)) = (e.written(), disks.get_mut(e.to)) {
            let v = write(disk.get(name), e);
            disk.insert(name, v);
            wrote = Some(e.to);
        }
        at(&disks, wrote);
    }
    Some(())
}

/// Per state of `run` (index `i`: before step `i`), each node's disk digest: the fields of
/// each kind's last write, or how many were done for writes without fields.
pub(crate) fn digests(run: &Run) -> Option<Vec<Vec<u64>>> {
    let digest = |d: &BTreeMap<&str, Value>| stable_hash(json!(d).to_string().as_bytes());
    // Every disk starts empty; a write changes only its node's digest.
    let nodes = run.states.first().map_or(0, |s| s.nodes.len());
    let mut now = vec![digest(&BTreeMap::new()); nodes];
    let mut out = Vec::with_capacity(run.steps.len() + 1);
    fold(
        run,
        |last, e| match e.fields.is_empty() {
            false => Value::Object(e.fields.clone()),
            true => json!(last.and_then(Value::as_u64).unwrap_or(0) + 1),
        },
        |disks, wrote| {
            if let Some(n) = wrote {
                now[n] = digest(&disks[n]);
            }
            out.push(now.clone());
        },
    )?;
    Some(out)
}

/// `run`'s states from index `from` on, with what each node's crash-point writes put on disk
/// as variables `disk:<name>`: the number a write's fields hold (an epoch, a zxid), or how many
/// such writes were done; absent until the first. For ranking disks against each other. (The
/// states before `from` are not copied: a strategy has judged them in the runs that led here.)
pub(crate) fn with_contents(run: &Run, from: usize) -> Option<Vec<GlobalState>> {
    let mut states = run.states.iter().enumerate();
    let mut out = Vec::with_capacity(run.states.len().saturating_sub(from));
    fold(
        run,
        |last: Option<&i64>, e| {
            let number = e.fields.values().find_map(Value::as_i64);
            number.unwrap_or(last.copied().unwrap_or(0) + 1)
        },
        |disks, _| {
            // A run that ended on a hang has a last step without a state.
            let Some((i, s)) = states.next() else { return };
            if i < from {
                return;
            }
            let mut s = s.clone();
            for (n, d) in s.nodes.iter_mut().zip(disks) {
                n.vars
                    .extend(d.iter().map(|(k, v)| (format!("disk:{k}"), json!(v))));
            }
            out.push(s);
        },
    )?;
    Some(out)
}

/// `s` with each node's disk digest as the variable `disk`, for judging states by both.
pub(crate) fn with_disks(s: &GlobalState, disks: &[u64]) -> GlobalState {
    let mut s = s.clone();
    for (n, d) in s.nodes.iter_mut().zip(disks) {
        n.vars.insert("disk".into(), json!(format!("{d:016x}")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use flymc_core::run::{Enabled, Ending, Step};
    use flymc_model::{Event, EventId, EventKind, NodeView, VectorClock};

    fn write(id: u64, name: &str, to: usize, fields: Value) -> Step {
        let event = Event {
            id: EventId(id),
            kind: EventKind::Timeout,
            name: format!("disk:{name}"),
            from: None,
            to,
            fields: fields.as_object().cloned().unwrap_or_default(),
            parent: None,
            delay_ms: None,
        };
        Step {
            enabled: vec![Enabled {
                event,
                vc: VectorClock::default(),
            }],
            chosen: 0,
            vc: VectorClock::default(),
            cached: false,
        }
    }

    /// A run of `steps` over two nodes whose reported variables never change.
    fn run(steps: Vec<Step>) -> Run {
        let s = GlobalState::new(
            vec![
                NodeView {
                    alive: true,
                    vars: Default::default(),
                };
                2
            ],
            &[],
        );
        Run {
            states: vec![s.clone(); steps.len() + 1],
            hashes: vec![s.hash(); steps.len() + 1],
            steps,
            ending: Ending::Quiescent,
            violation: None,
            final_enabled: Vec::new(),
            diverged_at: None,
            crash_loses_sent: false,
            late_reports: 0,
            timing: Default::default(),
            logs: None,
            critical: None,
        }
    }

    #[test]
    fn states_equal_in_every_variable_differ_by_what_was_written() {
        let r = run(vec![
            write(1, "epoch", 0, json!({"value": 1})),
            write(2, "txnlog", 0, json!({})),
            write(3, "txnlog", 0, json!({})),
        ]);
        let d = digests(&r).expect("the run writes");
        // Each write changes its node's disk and no other's.
        assert!(d
            .windows(2)
            .all(|w| w[0][0] != w[1][0] && w[0][1] == w[1][1]));
        // A run without crash-point writes says nothing about disks.
        assert_eq!(digests(&run(Vec::new())), None);
    }

    #[test]
    fn what_is_on_disk_is_the_last_value_written_not_how_it_got_there() {
        let twice = run(vec![
            write(1, "epoch", 0, json!({"value": 1})),
            write(2, "epoch", 0, json!({"value": 2})),
        ]);
        let once = run(vec![write(3, "epoch", 0, json!({"value": 2}))]);
        let (a, b) = (digests(&twice).unwrap(), digests(&once).unwrap());
        assert_eq!(a.last(), b.last());
        assert_ne!(a[1], b[1], "epoch 1 on disk is not epoch 2");
        let s = with_disks(&twice.states[0], &a[1]);
        assert_ne!(s.hash(), with_disks(&twice.states[0], &b[1]).hash());
    }

    #[test]
    fn disk_contents_are_variables_a_node_has_from_its_first_write_on() {
        let r = run(vec![
            write(1, "txnlog", 0, json!({"zxid": 7})),
            write(2, "snapshot", 1, json!({})),
            write(3, "snapshot", 1, json!({})),
        ]);
        let s = with_contents(&r, 0).expect("the run writes");
        let var = |i: usize, n: usize, k: &str| s[i].nodes[n].vars.get(k).cloned();
        assert_eq!(var(0, 0, "disk:txnlog"), None);
        assert_eq!(var(1, 0, "disk:txnlog"), Some(json!(7)));
        assert_eq!(var(1, 1, "disk:snapshot"), None);
        // Writes without a number are counted.
        assert_eq!(var(3, 1, "disk:snapshot"), Some(json!(2)));
        assert_eq!(var(3, 0, "disk:txnlog"), Some(json!(7)));
        assert_eq!(with_contents(&run(Vec::new()), 0), None);
    }
}
