//! Parallel flips (FlyMC §3.3, §4.2): from an explored path, flip one racing pair at every node
//! at once, but only when no event of one flip happens before an event of another (otherwise a
//! flip could keep a later flip's events from ever existing).
//!
//! A flip of steps `i < j` at one node moves `j`'s event before `i`'s, together with the events
//! between them that do not come after `i` (the race reversal of [`reversals`]), so a message
//! can overtake one that was sent long before it, not only its neighbour.

use std::collections::BTreeMap;

use flymc_model::{EventId, NodeId};

use crate::dpor::{comes_after, last_race, Dependence};
use flymc_core::run::Run;

/// One flip: move the event of step `j` to before step `i` (both at the same node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flip {
    pub i: usize,
    pub j: usize,
}

/// Every node's racing pair that reaches back furthest (the largest change to what the node
/// sees; measured on the Cassandra bugs, as fast or faster than the paper's example of the
/// latest pair), then the combined path if at least two nodes flip and
/// the flips are causally unrelated. Returns the new prefix and the flips in it.
pub fn parallel_flip(dep: &mut dyn Dependence, run: &Run) -> Option<(Vec<EventId>, Vec<Flip>)> {
    let mut per_node: BTreeMap<NodeId, Flip> = BTreeMap::new();
    for j in 1..run.steps.len() {
        let node = run.steps[j].event().to;
        let Some(i) = last_race(dep, run, j) else {
            continue;
        };
        if run.steps[i].event().to != node || comes_after(dep, run, i, j)[j] {
            continue;
        }
        let f = Flip { i, j };
        if per_node.get(&node).is_none_or(|old| i < old.i) {
            per_node.insert(node, f);
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
                    x != y
                        && run.steps[x].happens_before(&run.steps[y].enabled[run.steps[y].chosen])
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
    // Apply the reversals one after another to the whole sequence of steps.
    let mut order: Vec<usize> = (0..run.steps.len()).collect();
    for f in &kept {
        let later = comes_after(dep, run, f.i, f.j);
        let pos = |s: usize, order: &[usize]| order.iter().position(|&x| x == s).expect("step");
        let (pi, pj) = (pos(f.i, &order), pos(f.j, &order));
        if pj < pi {
            continue; // an earlier reversal already moved it
        }
        let window: Vec<usize> = order[pi..=pj].to_vec();
        let (mut moved, mut stay): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
        for s in window {
            if s == f.j || (s > f.i && s < f.j && !later[s]) {
                moved.push(s);
            } else {
                stay.push(s);
            }
        }
        moved.extend(stay);
        order.splice(pi..=pj, moved);
    }
    let ids = run.event_ids();
    // Up to the last moved event; the default order takes it from there.
    let end = kept
        .iter()
        .map(|f| order.iter().position(|&x| x == f.i).expect("step"))
        .max()
        .expect("two flips");
    let prefix = order[..=end].iter().map(|&s| ids[s]).collect();
    Some((prefix, kept))
}
