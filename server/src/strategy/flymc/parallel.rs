//! Parallel flips (FlyMC §3.3, §4.2): from an explored path, flip one racing pair at every node
//! at once, but only when no event of one flip happens before an event of another (otherwise a
//! flip could keep a later flip's events from ever existing).

use std::collections::BTreeMap;

use flymc_model::{EventId, NodeId};

use crate::executor::Run;
use crate::strategy::dpor::Dependence;

/// One flip: move the event of step `j` to just before step `i` (both at the same node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flip {
    pub i: usize,
    pub j: usize,
}

/// For every node, its latest racing pair whose later event was already enabled at the earlier
/// step (a direct flip); then the combined path if at least two nodes flip and the flips are
/// causally unrelated. Returns the new prefix and the flips in it.
pub fn parallel_flip<D: Dependence + ?Sized>(
    dep: &mut D,
    run: &Run,
) -> Option<(Vec<EventId>, Vec<Flip>)> {
    let mut per_node: BTreeMap<NodeId, Flip> = BTreeMap::new();
    for j in (1..run.steps.len()).rev() {
        let node = run.steps[j].event().to;
        if per_node.contains_key(&node) {
            continue;
        }
        let target = &run.steps[j].enabled[run.steps[j].chosen];
        let found = (0..j).rev().find(|&i| {
            run.steps[i].event().to == node
                && !run.steps[i].happens_before(target)
                && run.steps[i]
                    .enabled
                    .iter()
                    .any(|e| e.event.id == target.event.id)
                && dep.dependent(run, i, j)
        });
        if let Some(i) = found {
            per_node.insert(node, Flip { i, j });
        }
    }
    let mut flips: Vec<Flip> = per_node.into_values().collect();
    if flips.len() < 2 {
        return None;
    }
    // Keep flips causally unrelated to the flips already kept (earliest first).
    flips.sort_by_key(|f| f.i);
    let mut kept: Vec<Flip> = Vec::new();
    for f in flips {
        let related = kept.iter().any(|k| {
            [k.i, k.j].iter().any(|&a| {
                [f.i, f.j].iter().any(|&b| {
                    let (x, y) = (a.min(b), a.max(b));
                    run.steps[x].happens_before(&run.steps[y].enabled[run.steps[y].chosen])
                })
            })
        });
        if !related {
            kept.push(f);
        }
    }
    if kept.len() < 2 {
        return None;
    }
    let ids = run.event_ids();
    let last = kept.iter().map(|f| f.i).max().expect("two flips");
    let mut prefix = Vec::with_capacity(last + 2);
    for (p, id) in ids.iter().enumerate().take(last + 1) {
        if kept.iter().any(|f| f.j == p) {
            continue; // moved earlier
        }
        if let Some(f) = kept.iter().find(|f| f.i == p) {
            prefix.push(ids[f.j]);
        }
        prefix.push(*id);
    }
    Some((prefix, kept))
}
