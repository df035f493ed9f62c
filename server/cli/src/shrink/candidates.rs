//! Candidate event lists made from a violating run, one kind of simplification each: drop
//! faults, drop client requests, move an event back to where the default order takes it.
//! Each comes with a line saying what it changes.

use flymc_core::run::Run;
use flymc_model::{Event, EventId, EventKind};

use super::shape::default_choice;

/// A list of event ids to re-execute, and what it changes in words.
pub struct Candidate {
    pub ids: Vec<EventId>,
    pub what: String,
}

fn without(run: &Run, drop: &[usize]) -> Vec<EventId> {
    run.events()
        .enumerate()
        .filter(|(i, _)| !drop.contains(i))
        .map(|(_, e)| e.id)
        .collect()
}

fn describe(run: &Run, steps: &[usize]) -> String {
    steps
        .iter()
        .map(|&i| format!("{} (step {i})", short(run.steps[i].event())))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An event's description without its payload, which can run to hundreds of characters.
fn short(e: &Event) -> String {
    let d = e.describe();
    match d.split_once(" {") {
        Some((head, _)) => head.to_string(),
        None => d,
    }
}

/// Crash and reboot steps, paired: each crash with the next reboot of its node, which makes no
/// sense without it. A reboot of a node that started down stands alone.
pub fn fault_groups(run: &Run) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut paired = vec![false; run.steps.len()];
    for (i, step) in run.steps.iter().enumerate() {
        let e = step.event();
        if e.kind != EventKind::Crash {
            continue;
        }
        let mut group = vec![i];
        if let Some(j) = (i + 1..run.steps.len()).find(|&j| {
            let r = run.steps[j].event();
            r.kind == EventKind::Reboot && r.to == e.to && !paired[j]
        }) {
            paired[j] = true;
            group.push(j);
        }
        groups.push(group);
    }
    for (i, step) in run.steps.iter().enumerate() {
        if step.event().kind == EventKind::Reboot && !paired[i] {
            groups.push(vec![i]);
        }
    }
    groups
}

/// All faults at once, then each crash with its reboot, the latest first (a late fault is
/// the likelier to be incidental).
pub fn drop_faults(run: &Run) -> Vec<Candidate> {
    let groups = fault_groups(run);
    let mut out = Vec::new();
    if groups.len() > 1 {
        let all: Vec<usize> = groups.concat();
        out.push(Candidate {
            ids: without(run, &all),
            what: format!("dropped every fault: {}", describe(run, &all)),
        });
    }
    for group in groups.iter().rev() {
        out.push(Candidate {
            ids: without(run, group),
            what: format!("dropped {}", describe(run, group)),
        });
    }
    out
}

/// Each client request left out of the forced events, the latest first. Pending from the
/// start, it then arrives only when the default order takes it: after the violation, or never.
pub fn drop_requests(run: &Run) -> Vec<Candidate> {
    (0..run.steps.len())
        .rev()
        .filter(|&i| run.steps[i].event().kind == EventKind::Client)
        .map(|i| Candidate {
            ids: without(run, &[i]),
            what: format!("dropped request {}", describe(run, &[i])),
        })
        .collect()
}

/// For each step that leaves the default order, the event the default order would have taken
/// there moved to that step (from wherever it comes later, if it does), the earliest first.
pub fn undo_reorderings(run: &Run) -> Vec<Candidate> {
    let ids = run.event_ids();
    let mut out = Vec::new();
    for (i, step) in run.steps.iter().enumerate() {
        if step.event().is_fault() {
            continue;
        }
        let Some(d) = default_choice(step).filter(|&d| d != step.chosen) else {
            continue;
        };
        let wanted = &step.enabled[d].event;
        let mut moved: Vec<EventId> = ids[..i].to_vec();
        moved.push(wanted.id);
        moved.extend(ids[i..].iter().filter(|id| **id != wanted.id));
        out.push(Candidate {
            ids: moved,
            what: format!(
                "reordering undone at step {i}: {} before {}",
                short(wanted),
                short(step.event())
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use flymc_core::run::{Enabled, Step};
    use flymc_model::{Event, VectorClock};

    /// A run of `events`, each the only one enabled at its step. Built from JSON so that the
    /// fields a run gains for others' features take their defaults.
    fn run_of(events: Vec<Event>) -> Run {
        let steps: Vec<Step> = events
            .into_iter()
            .map(|event| Step {
                enabled: vec![Enabled {
                    event,
                    vc: VectorClock::default(),
                }],
                chosen: 0,
                vc: VectorClock::default(),
                cached: false,
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "steps": steps,
            "states": [],
            "hashes": [],
            "ending": "violation",
            "violation": null,
            "final_enabled": [],
            "diverged_at": null,
            "crash_loses_sent": false,
        }))
        .expect("a run")
    }

    #[test]
    fn a_crash_goes_with_the_next_reboot_of_its_node() {
        let run = run_of(vec![
            Event::crash(0, 0),
            Event::crash(1, 0),
            Event::reboot(1, 0),
            Event::reboot(0, 0),
            Event::reboot(2, 0),
        ]);
        assert_eq!(fault_groups(&run), vec![vec![0, 3], vec![1, 2], vec![4]]);
        let dropped: Vec<Vec<EventId>> = drop_faults(&run).into_iter().map(|c| c.ids).collect();
        let id = |i: usize| run.steps[i].event().id;
        assert_eq!(
            dropped,
            vec![
                vec![],
                vec![id(0), id(1), id(2), id(3)],
                vec![id(0), id(3), id(4)],
                vec![id(1), id(2), id(4)],
            ]
        );
    }
}
