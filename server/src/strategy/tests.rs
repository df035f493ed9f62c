//! Hand-counted path numbers on the tiny system.

use super::*;
use crate::explore::{explore, ExploreConfig};
use crate::testkit::{workload, TinySystem};

fn count(strategy: &str, w: &flymc_model::Workload) -> (u64, bool, Option<String>) {
    let ctx = StrategyContext { workload: w, symmetry: Symmetry::none(), seed: 1, bound: 25 };
    let mut s = build(strategy, &ctx).unwrap();
    let cfg = ExploreConfig { max_paths: Some(1000), check_determinism: true, ..Default::default() };
    let out = explore(&TinySystem, w, s.as_mut(), &cfg, &mut |_| {}).unwrap();
    let v = out.violation.map(|(_, r)| r.violation.unwrap().property);
    (out.paths, out.exhausted, v)
}

#[test]
fn dfs_runs_every_interleaving_once() {
    // Three concurrent requests: 3! orders.
    let w = workload(2, "[[0, -1], [1, -1], [1, -1]]", "");
    assert_eq!(count("dfs", &w), (6, true, None));
}

#[test]
fn dfs_branches_on_crashes_including_after_the_last_message() {
    // a, b to n0 with one crash of n0 allowed: [a b], [a b crash], [a crash], [b a],
    // [b a crash], [b crash], [crash] = 7.
    let w = workload(1, "[[0, -1], [0, -1]]", "[faults]\ncrashes = 1");
    assert_eq!(count("dfs", &w), (7, true, None));
}

#[test]
fn mdpor_only_reorders_events_at_the_same_node() {
    // The request at n0 is independent of both at n1; the two at n1 race: 2 paths.
    let w = workload(2, "[[0, -1], [1, -1], [1, -1]]", "");
    assert_eq!(count("mdpor", &w), (2, true, None));
    // c0 forwards to n1 where it races with c1: orders (c0 c1 fwd) and (c0 fwd c1).
    let w = workload(2, "[[0, 1], [1, -1]]", "");
    assert_eq!(count("mdpor", &w), (2, true, None));
    assert_eq!(count("dfs", &w), (3, true, None));
}

#[test]
fn bounded_dpor_does_not_reorder_beyond_its_bound() {
    let w = workload(2, "[[0, -1], [1, -1], [1, -1]]", "");
    let ctx = StrategyContext { workload: &w, symmetry: Symmetry::none(), seed: 1, bound: 0 };
    let mut s = build("bdpor", &ctx).unwrap();
    let out = explore(&TinySystem, &w, s.as_mut(), &ExploreConfig::default(), &mut |_| {}).unwrap();
    assert_eq!((out.paths, out.exhausted), (1, true));
}

#[test]
fn violations_are_found_and_stop_the_search() {
    // n1 reaches 2 on every path, so the first path violates.
    let w = workload(2, "[[0, 1], [1, -1]]", "[params.x]\n");
    let mut w = w;
    w.params.insert("limit".into(), 2.into());
    for s in NAMES {
        let (paths, _, v) = count(s, &w);
        assert_eq!((paths, v.as_deref()), (1, Some("counter-below")), "{s}");
    }
}

#[test]
fn random_walks_are_seeded() {
    let w = workload(3, "[[0, 1], [1, 2], [2, 0]]", "[faults]\ncrashes = 1");
    let ctx = StrategyContext { workload: &w, symmetry: Symmetry::none(), seed: 7, bound: 25 };
    let walk = |ctx: &StrategyContext| {
        let mut s = build("random", ctx).unwrap();
        (0..5).map(|_| s.next_plan().unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(walk(&ctx), walk(&ctx));
}
