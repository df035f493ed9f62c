//! Hand-counted path numbers on the tiny system.

use super::*;
use flymc_core::explore::Exploration;
use flymc_core::run::Run;
use flymc_core::testkit::{workload, TinySystem};

fn count(strategy: &str, w: &flymc_model::Workload) -> (u64, bool, Option<String>) {
    // "dfs" is the stateful DFS; "tree" the stateless one.
    let (strategy, stateless_dfs) = match strategy {
        "tree" => ("dfs", true),
        s => (s, false),
    };
    let ctx = StrategyContext {
        workload: w,
        symmetry: Symmetry::none(),
        seed: 1,
        bound: 25,
        stateless_dfs,
        sets: None,
        flymc: FlymcOptions::default(),
        fault_vars: None,
        disk_state: true,
        pct_depth: 3,
    };
    let mut s = build(strategy, &ctx).unwrap();
    let out = Exploration::new(&TinySystem, w, s.as_mut())
        .max_paths(Some(1000))
        .check_determinism(true)
        .run()
        .unwrap();
    let v = out.violation.map(|(_, r)| r.violation.unwrap().property);
    (out.paths, out.exhausted, v)
}

#[test]
fn stateless_dfs_runs_every_interleaving_once() {
    // Three concurrent requests: 3! orders.
    let w = workload(2, "[[0, -1], [1, -1], [1, -1]]", "");
    assert_eq!(count("tree", &w), (6, true, None));
}

#[test]
fn stateless_dfs_branches_on_crashes_including_after_the_last_message() {
    // a, b to n0 with one crash of n0 allowed: [a b], [a b crash], [a crash], [b a],
    // [b a crash], [b crash], [crash] = 7.
    let w = workload(1, "[[0, -1], [0, -1]]", "[faults]\ncrashes = 1");
    assert_eq!(count("tree", &w), (7, true, None));
}

#[test]
fn dfs_expands_each_state_once() {
    // a to n0; b and c to n1 are the same request. A state is the counters plus what is in
    // flight. Run [a b c] expands {}, {a}, {ab}. Branch [a c] is known to lead where [a b]
    // led (c is b's twin): pruned without a run. [b a c] expands {b}, then meets {ab};
    // [b c a] expands {bb}; [c] leads from {} to {b}, expanded: pruned. 3 runs, not 6.
    let w = workload(2, "[[0, -1], [1, -1], [1, -1]]", "");
    assert_eq!(count("dfs", &w), (3, true, None));
    // With a crash budget the spent budget tells states apart that counters alone would not.
    let w = workload(1, "[[0, -1], [0, -1]]", "[faults]\ncrashes = 1");
    let (paths, exhausted, _) = count("dfs", &w);
    assert!(exhausted);
    assert!(
        paths < 7,
        "state caching must save runs over the 7 interleavings"
    );
}

#[test]
fn mdpor_only_reorders_events_at_the_same_node() {
    // The request at n0 is independent of both at n1; the two at n1 race: 2 paths.
    let w = workload(2, "[[0, -1], [1, -1], [1, -1]]", "");
    assert_eq!(count("mdpor", &w), (2, true, None));
    // c0 forwards to n1 where it races with c1: orders (c0 c1 fwd) and (c0 fwd c1).
    let w = workload(2, "[[0, 1], [1, -1]]", "");
    assert_eq!(count("mdpor", &w), (2, true, None));
    assert_eq!(count("tree", &w), (3, true, None));
}

#[test]
fn bounded_dpor_does_not_reorder_beyond_its_bound() {
    let w = workload(2, "[[0, -1], [1, -1], [1, -1]]", "");
    let ctx = StrategyContext {
        workload: &w,
        symmetry: Symmetry::none(),
        seed: 1,
        bound: 0,
        stateless_dfs: false,
        sets: None,
        flymc: FlymcOptions::default(),
        fault_vars: None,
        disk_state: true,
        pct_depth: 3,
    };
    let mut s = build("bdpor", &ctx).unwrap();
    let out = Exploration::new(&TinySystem, &w, s.as_mut()).run().unwrap();
    assert_eq!((out.paths, out.exhausted), (1, true));
}

#[test]
fn violations_are_found_and_stop_the_search() {
    // n1 reaches 2 on every path, so the first path violates.
    let w = workload(2, "[[0, 1], [1, -1]]", "[params.x]\n");
    let mut w = w;
    w.params.insert("limit".into(), 2.into());
    for s in StrategyKind::all()
        .filter(|k| !k.requires_sets())
        .map(StrategyKind::name)
    {
        let (paths, _, v) = count(s, &w);
        assert_eq!((paths, v.as_deref()), (1, Some("counter-below")), "{s}");
    }
}

#[test]
fn random_walks_are_seeded() {
    let w = workload(3, "[[0, 1], [1, 2], [2, 0]]", "[faults]\ncrashes = 1");
    let ctx = StrategyContext {
        workload: &w,
        symmetry: Symmetry::none(),
        seed: 7,
        bound: 25,
        stateless_dfs: false,
        sets: None,
        flymc: FlymcOptions::default(),
        fault_vars: None,
        disk_state: true,
        pct_depth: 3,
    };
    let walk = |ctx: &StrategyContext| {
        let mut s = build("random", ctx).unwrap();
        (0..5).map(|_| s.next_plan().unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(walk(&ctx), walk(&ctx));
}

const TINY_SETS: &str = r#"{
  "format": "flymc-sets", "version": 1, "system": "tiny",
  "node_vars": ["count"],
  "messages": {
    "req": {"fields": ["forward"], "entries": [{"read": [], "update": ["count"], "increments": ["count"]}]},
    "fwd": {"entries": [{"update": ["count"], "increments": ["count"]}]}
  },
  "crash": [{"update": ["count"]}]
}"#;

fn with_sets(
    strategy: &str,
    w: &flymc_model::Workload,
    sets: &str,
    flymc: FlymcOptions,
) -> flymc_core::explore::Outcome {
    let known = flymc_model::sets::Known::default();
    let sets = flymc_model::sets::SetsFile::parse("tiny.json", sets, &known).unwrap();
    let ctx = StrategyContext {
        workload: w,
        symmetry: Symmetry::all(w.nodes),
        seed: 1,
        bound: 25,
        stateless_dfs: false,
        sets: Some(sets),
        flymc,
        fault_vars: None,
        disk_state: true,
        pct_depth: 3,
    };
    let mut s = build(strategy, &ctx).unwrap();
    Exploration::new(&TinySystem, w, s.as_mut())
        .max_paths(Some(1000))
        .check_determinism(true)
        .run()
        .unwrap()
}

#[test]
fn increments_commute_for_flymc_and_samc() {
    let w = workload(2, "[[0, -1], [1, -1], [1, -1]]", "");
    let all = FlymcOptions::default();
    assert_eq!(with_sets("flymc", &w, TINY_SETS, all).paths, 1);
    assert_eq!(with_sets("samc", &w, TINY_SETS, all).paths, 1);
    // Without independence (and without symmetry, which would see the identical requests at n1
    // as mirrored transitions) the two requests at n1 race.
    let no_indep = FlymcOptions {
        independence: false,
        symmetry: false,
        ..all
    };
    assert_eq!(with_sets("flymc", &w, TINY_SETS, no_indep).paths, 2);
}

#[test]
fn parallel_flips_reorder_at_every_node_at_once() {
    // Two conflicting requests at each of two nodes.
    let sets = TINY_SETS.replace("\"increments\": [\"count\"]", "\"increments\": []");
    let w = workload(2, "[[0, -1], [0, -1], [1, -1], [1, -1]]", "");
    let opts = FlymcOptions {
        symmetry: false,
        parallel_flips: true,
        ..FlymcOptions::default()
    };
    let out = with_sets("flymc", &w, &sets, opts);
    assert!(out.exhausted);
    assert!(out.stats.deprioritized > 0);
    // Without parallel flips it is plain DPOR over the two races: 4 orders.
    let single = with_sets(
        "flymc",
        &w,
        &sets,
        FlymcOptions {
            parallel_flips: false,
            ..opts
        },
    );
    assert_eq!((single.paths, single.exhausted), (4, true));
    assert_eq!(out.unique_states, single.unique_states);
}

#[test]
fn symmetry_prunes_mirrored_transitions() {
    // One conflicting request at each of three symmetric nodes... and a mirror: requests at n0
    // and n1 make states that are renamings of each other.
    let sets = TINY_SETS.replace("\"increments\": [\"count\"]", "\"increments\": []");
    let w = workload(2, "[[0, -1], [0, -1], [1, -1], [1, -1]]", "");
    let base = FlymcOptions {
        parallel_flips: false,
        ..FlymcOptions::default()
    };
    let sym = with_sets("flymc", &w, &sets, base);
    let nosym = with_sets(
        "flymc",
        &w,
        &sets,
        FlymcOptions {
            symmetry: false,
            ..base
        },
    );
    assert!(sym.paths < nosym.paths, "{} vs {}", sym.paths, nosym.paths);
    assert!(sym
        .stats
        .pruned
        .iter()
        .any(|(k, n)| k == "symmetry" && *n > 0));
}

fn faults_runs(w: &flymc_model::Workload) -> (flymc_core::explore::Outcome, Vec<Vec<String>>) {
    let ctx = StrategyContext {
        workload: w,
        symmetry: Symmetry::none(),
        seed: 1,
        bound: 25,
        stateless_dfs: false,
        sets: None,
        flymc: FlymcOptions::default(),
        fault_vars: None,
        disk_state: true,
        pct_depth: 3,
    };
    let mut s = build("faults", &ctx).unwrap();
    let mut runs = Vec::new();
    let out = Exploration::new(&TinySystem, w, s.as_mut())
        .max_paths(Some(1000))
        .check_determinism(true)
        .on_run(|r| runs.push(r.events().map(|e| e.describe()).collect()))
        .run()
        .unwrap();
    (out, runs)
}

#[test]
fn faults_tries_each_fault_once_per_fault_state() {
    // Two requests at n0, one crash and one reboot. The default run offers a crash before,
    // between and after the requests: 3 paths. Each leaves n0 down at count 0 with one crash
    // spent, so the reboot is tried from that fault state once, not three times: 5 paths.
    let w = workload(
        1,
        "[[0, -1], [0, -1]]",
        "[faults]\ncrashes = 1\nreboots = 1",
    );
    let (out, runs) = faults_runs(&w);
    assert_eq!((out.paths, out.exhausted), (5, true), "{runs:#?}");
    assert!(
        out.stats.pruned.iter().any(|(_, n)| *n == 2),
        "{:?}",
        out.stats
    );
    // New abstract states first, the most faults first; then breadth-first. Alone, n0's count
    // ranks 0 whatever it is; only whether it is still 0 tells moments apart, and n0 up or
    // down. New: the start (count 0), after one request (count not 0), and n0 down. So the
    // crash at the start runs, then the reboot it opens (n0 down is new, and two faults deep),
    // then the crash after one request, and last the crash after two requests (not new).
    let faults = |r: &Vec<String>| {
        r.iter()
            .filter(|d| d.starts_with("crash") || d.starts_with("reboot"))
            .count()
    };
    let counts: Vec<usize> = runs.iter().map(faults).collect();
    assert_eq!(counts, [0, 1, 2, 1, 1], "{runs:#?}");
}

#[test]
fn faults_keeps_the_default_order_of_everything_but_faults() {
    // c0 forwards to n1, where it races with c1: the default order is c0, fwd, c1, and
    // reordering strategies also try c1 before fwd. `faults` only places the crash.
    let w = workload(2, "[[0, 1], [1, -1]]", "[faults]\ncrashes = 1");
    let (out, runs) = faults_runs(&w);
    assert!(out.exhausted);
    let default: Vec<&String> = runs[0].iter().collect();
    for r in &runs {
        let mut rest = default.iter();
        for e in r.iter().filter(|d| !d.starts_with("crash")) {
            assert!(
                rest.any(|d| *d == e),
                "{e} out of the default order in {r:?}"
            );
        }
    }
    // A crash of n0 or n1 before, between and after the three events, minus the placements
    // that meet a fault state already tried: fewer runs than stateful DFS, which also reorders.
    assert!(out.paths < count("dfs", &w).0, "{}", out.paths);
}

#[test]
fn a_run_that_ended_in_a_hang_is_learnt_from_up_to_the_step_that_hung() {
    use flymc_core::executor::{Executor, RunOptions};
    use flymc_core::plan::Plan;
    use flymc_core::run::Ending;
    use flymc_model::System;
    // Three concurrent requests; pretend the cluster hung after the second.
    let w = workload(2, "[[0, -1], [1, -1], [1, -1]]", "");
    let mut target = TinySystem.target(&w).unwrap();
    let mut run = Executor::new(&TinySystem, &w)
        .run(
            target.as_mut(),
            &Plan::fifo(Vec::new()),
            RunOptions::default(),
        )
        .unwrap();
    run.steps.truncate(2);
    run.states.truncate(2);
    run.hashes.truncate(2);
    run.ending = Ending::Hang { step: 1 };
    for stateless_dfs in [false, true] {
        let ctx = StrategyContext {
            workload: &w,
            symmetry: Symmetry::none(),
            seed: 1,
            bound: 25,
            stateless_dfs,
            sets: None,
            flymc: FlymcOptions::default(),
            fault_vars: None,
            disk_state: true,
            pct_depth: 3,
        };
        let mut dfs = build("dfs", &ctx).unwrap();
        let first = dfs.next_plan().unwrap();
        dfs.observe(&first, &run);
        // The hung step's alternative (the other request at n1) is still a branch.
        let hung = run.steps[1].event().id;
        let mut alternatives = Vec::new();
        while let Some(p) = dfs.next_plan() {
            if p.prefix.len() == 2 {
                alternatives.push(p.prefix[1]);
            }
        }
        assert!(!alternatives.is_empty() && !alternatives.contains(&hung));
    }
}

/// [`TinySystem`] whose cluster stops settling (or whose node 0 ends on its own) at one step
/// of every run: the run records that step without a resulting state, so it has fewer states
/// than steps (issue 22: `faults` indexed past them and lost the finding).
struct FailsAt {
    /// The settle (counted from the run's start, whose initial state is the first) that fails.
    at: usize,
    exited: bool,
}

struct FailsAtTarget {
    inner: Box<dyn flymc_model::Target>,
    at: usize,
    exited: bool,
    settles: usize,
}

impl flymc_model::Target for FailsAtTarget {
    fn start(&mut self, w: &flymc_model::Workload) -> Result<(), flymc_model::TargetError> {
        self.settles = 0;
        self.inner.start(w)
    }
    fn pending(&self) -> Vec<flymc_model::Event> {
        self.inner.pending()
    }
    fn enable(&mut self, id: flymc_model::EventId) -> Result<(), flymc_model::TargetError> {
        self.inner.enable(id)
    }
    fn settle(&mut self) -> Result<flymc_model::GlobalState, flymc_model::TargetError> {
        self.settles += 1;
        if self.settles == self.at {
            return Err(self.failure());
        }
        self.inner.settle()
    }
    fn crash(&mut self, node: flymc_model::NodeId) -> Result<(), flymc_model::TargetError> {
        // A crash or reboot at the failing step fails itself (a real node that refuses to
        // restart is reported by the reboot).
        match self.settles + 1 == self.at {
            true => Err(self.failure()),
            false => self.inner.crash(node),
        }
    }
    fn reboot(&mut self, node: flymc_model::NodeId) -> Result<(), flymc_model::TargetError> {
        match self.settles + 1 == self.at {
            true => Err(self.failure()),
            false => self.inner.reboot(node),
        }
    }
    fn stop(&mut self) -> Result<(), flymc_model::TargetError> {
        self.inner.stop()
    }
}

impl FailsAtTarget {
    fn failure(&self) -> flymc_model::TargetError {
        match self.exited {
            false => flymc_model::TargetError::Hang { node: 0, millis: 1 },
            true => flymc_model::TargetError::Exited {
                node: 0,
                status: "exit status 1".into(),
                restarting: false,
                log_tail: Vec::new(),
            },
        }
    }
}

impl flymc_model::System for FailsAt {
    fn about(&self) -> &flymc_model::About {
        static ABOUT: std::sync::LazyLock<flymc_model::About> =
            std::sync::LazyLock::new(|| flymc_model::About::new("tiny", "test fixture"));
        &ABOUT
    }
    fn target(
        &self,
        w: &flymc_model::Workload,
    ) -> Result<Box<dyn flymc_model::Target>, flymc_model::TargetError> {
        Ok(Box::new(FailsAtTarget {
            inner: TinySystem.target(w)?,
            at: self.at,
            exited: self.exited,
            settles: 0,
        }))
    }
    fn properties(&self, w: &flymc_model::Workload) -> Vec<Box<dyn flymc_model::Property>> {
        TinySystem.properties(w)
    }
    fn symmetry(&self, w: &flymc_model::Workload) -> Symmetry {
        TinySystem.symmetry(w)
    }
}

#[test]
fn every_strategy_takes_runs_that_ended_in_a_hang_or_a_node_exit() {
    use flymc_core::run::Ending;
    use flymc_model::System;
    let known = flymc_model::sets::Known::default();
    let sets = flymc_model::sets::SetsFile::parse("tiny.json", TINY_SETS, &known).unwrap();
    // Races at both nodes, a forward, and faults to place: every strategy has branches to take
    // from the steps before the one that hung.
    let w = workload(
        2,
        "[[0, 1], [1, -1], [1, 0]]",
        "[faults]\ncrashes = 1\nreboots = 1",
    );
    for exited in [false, true] {
        // The first settle is the initial state's: 2 hangs on the first step, 4 on the third.
        for at in [2, 3, 4, 6] {
            let system = FailsAt { at, exited };
            // The run as every strategy gets it: one step more than states.
            let mut target = system.target(&w).unwrap();
            let run = flymc_core::executor::Executor::new(&system, &w)
                .run(
                    target.as_mut(),
                    &flymc_core::plan::Plan::fifo(Vec::new()),
                    flymc_core::executor::RunOptions::default(),
                )
                .unwrap();
            assert_eq!(run.steps.len(), at - 1, "exited {exited}, at {at}");
            assert_eq!(
                run.states.len(),
                run.steps.len(),
                "exited {exited}, at {at}"
            );
            assert!(matches!(
                run.ending,
                Ending::Hang { .. } | Ending::Exited { .. }
            ));
            for name in StrategyKind::names() {
                for stateless_dfs in [false, true] {
                    let ctx = StrategyContext {
                        workload: &w,
                        symmetry: Symmetry::all(w.nodes),
                        seed: 3,
                        bound: 25,
                        stateless_dfs,
                        sets: Some(sets.clone()),
                        flymc: FlymcOptions::default(),
                        fault_vars: None,
                        disk_state: true,
                        pct_depth: 3,
                    };
                    let what =
                        format!("{name} (stateless {stateless_dfs}, exited {exited}, at {at})");
                    // Fed the hung run directly ...
                    let mut s = build(name, &ctx).unwrap();
                    let first = s.next_plan().unwrap();
                    s.observe(&first, &run);
                    let _ = s.queue_len();
                    let _ = s.stats();
                    // ... and in an exploration that goes on past every such finding: each
                    // path hangs at the same depth, on whatever prefix the strategy asked for.
                    let mut s = build(name, &ctx).unwrap();
                    let mut findings = 0;
                    let out = Exploration::new(&system, &w, s.as_mut())
                        .max_paths(Some(60))
                        .keep_going(true)
                        .on_run(|r| findings += u64::from(r.violation.is_some()))
                        .run()
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert!(out.violation.is_some(), "{what}: the hang is a finding");
                    assert_eq!(findings, out.other_violations + 1, "{what}");
                }
            }
        }
    }
}

/// The context the randomized strategies' tests build them with: `TinySystem`, depth 2.
fn tiny_ctx(w: &flymc_model::Workload, seed: u64) -> StrategyContext<'_> {
    StrategyContext {
        seed,
        pct_depth: 2,
        ..StrategyContext::for_system(&TinySystem, w)
    }
}

/// Every run `strategy` explores on `w` (at most `paths`), and its final stats.
fn runs_of(
    strategy: &str,
    w: &flymc_model::Workload,
    seed: u64,
    paths: u64,
) -> (Vec<Run>, StrategyStats) {
    let ctx = tiny_ctx(w, seed);
    let mut s = build(strategy, &ctx).unwrap();
    let mut runs = Vec::new();
    let out = Exploration::new(&TinySystem, w, s.as_mut())
        .max_paths(Some(paths))
        .check_determinism(true)
        .on_run(|r| runs.push(r.clone()))
        .run()
        .unwrap();
    (runs, out.stats)
}

#[test]
fn pct_is_seeded_spreads_its_faults_over_the_run_and_states_its_bound() {
    let w = workload(
        3,
        "[[0, 1], [1, 2], [2, 0], [0, 2], [1, 0]]",
        "[faults]\ncrashes = 1\nreboots = 1",
    );
    let ids = |runs: &[Run]| runs.iter().map(|r| r.event_ids()).collect::<Vec<_>>();
    let (a, stats) = runs_of("pct", &w, 7, 40);
    assert_eq!(a.len(), 40);
    assert_eq!(
        ids(&a),
        ids(&runs_of("pct", &w, 7, 40).0),
        "same seed, same paths"
    );
    assert_ne!(ids(&a), ids(&runs_of("pct", &w, 8, 40).0), "seeds differ");
    // Where the crash fell, as a fraction of its run: spread, not only at the end.
    let at: Vec<(usize, usize)> = a
        .iter()
        .filter_map(|r| {
            let step = r
                .steps
                .iter()
                .position(|s| s.event().kind == flymc_model::EventKind::Crash)?;
            Some((step, r.steps.len()))
        })
        .collect();
    assert!(at.len() >= 20, "a crash in {} of 40 paths", at.len());
    let steps: std::collections::BTreeSet<usize> = at.iter().map(|&(s, _)| s).collect();
    assert!(steps.len() >= 4, "crash steps {steps:?}");
    assert!(at.iter().any(|&(s, n)| 2 * s < n), "an early crash: {at:?}");
    let note = stats.notes.iter().find(|n| n.key == "pct");
    let b = &note.expect("pct states its bound").value;
    let longest = a.iter().map(|r| r.steps.len()).max().unwrap();
    assert_eq!(
        (b["depth"].as_u64(), b["events"].as_u64()),
        (Some(2), Some(longest as u64))
    );
    let (chains, events) = (b["chains"].as_u64().unwrap(), b["events"].as_u64().unwrap());
    assert!(chains >= 5, "five client requests start five chains: {b:?}");
    assert_eq!(b["per_run"].as_f64(), Some(1.0 / (chains * events) as f64));
}

#[test]
fn a_portfolio_takes_turns_and_exhausts_when_its_systematic_member_does() {
    // Without increments the requests conflict: flymc explores several orders.
    let sets = TINY_SETS.replace("\"increments\": [\"count\"]", "\"increments\": []");
    let w = workload(2, "[[0, 1], [1, 0], [0, -1]]", "");
    let no_flips = FlymcOptions {
        parallel_flips: false,
        ..FlymcOptions::default()
    };
    let alone = with_sets("flymc", &w, &sets, no_flips);
    let both = with_sets("portfolio", &w, &sets, no_flips);
    assert!(
        alone.exhausted && both.exhausted,
        "flymc exhausts, so does the portfolio"
    );
    assert!(alone.paths >= 2, "{}", alone.paths);
    let note = both.stats.notes.iter().find(|n| n.key == "portfolio");
    let shares: Vec<(String, u64)> =
        serde_json::from_value(note.expect("a portfolio states its shares").value.clone()).unwrap();
    assert_eq!(shares[0], ("flymc".to_string(), alone.paths), "{shares:?}");
    assert_eq!(
        (shares[1].0.as_str(), shares[2].0.as_str()),
        ("pct", "novelty")
    );
    // flymc took path 1, the other two the probe's paths, then flymc every other path until it
    // ran out: the portfolio stops at flymc's first turn without a plan.
    let probe = crate::portfolio::PROBE;
    for (_, n) in &shares[1..] {
        assert!(*n >= (probe - 1) / 2, "{shares:?}");
    }
    assert!(
        both.paths >= probe && both.paths <= probe + 2 * alone.paths,
        "{} paths, {shares:?}",
        both.paths
    );
    assert_eq!(both.paths, shares.iter().map(|(_, n)| n).sum::<u64>());
    assert!(both.stats.abstract_states > 0);
    assert!(both.unique_states.len() >= alone.unique_states.len());
}

#[test]
fn the_portfolio_gives_path_1_to_its_systematic_member_then_probes_then_every_other_path() {
    use crate::portfolio::{member_for, PROBE};
    assert_eq!(member_for(1, 3), 0);
    let probe: Vec<usize> = (2..=PROBE).map(|p| member_for(p, 3)).collect();
    assert!(!probe.contains(&0), "{probe:?}");
    assert_eq!(&probe[..4], &[1, 2, 1, 2]);
    let after: Vec<usize> = (PROBE + 1..PROBE + 9).map(|p| member_for(p, 3)).collect();
    assert_eq!(after, [0, 1, 0, 2, 0, 1, 0, 2]);
    // One member: every path is its own.
    assert!((1..100).all(|p| member_for(p, 1) == 0));
}

#[test]
fn novelty_is_seeded_and_extends_prefixes_that_reached_new_abstract_states() {
    let w = workload(
        3,
        "[[0, 1], [1, 2], [2, 0], [0, 2]]",
        "[faults]\ncrashes = 1\nreboots = 1",
    );
    let ids = |runs: &[Run]| runs.iter().map(|r| r.event_ids()).collect::<Vec<_>>();
    let (a, stats) = runs_of("novelty", &w, 3, 30);
    assert_eq!(ids(&a), ids(&runs_of("novelty", &w, 3, 30).0));
    assert!(stats.abstract_states > 1, "{stats:?}");
    // After the first path, the next one starts from that path's prefix up to its first new
    // abstract state after the initial one.
    let ctx = tiny_ctx(&w, 3);
    let mut s = build("novelty", &ctx).unwrap();
    let first = s.next_plan().unwrap();
    assert!(first.prefix.is_empty());
    s.observe(&first, &a[0]);
    assert_eq!(s.queue_len(), 2, "the empty prefix and the new one");
    let next = s.next_plan().unwrap();
    let events = a[0].event_ids();
    assert!(!next.prefix.is_empty() && next.prefix.len() < events.len());
    assert_eq!(next.prefix[..], events[..next.prefix.len()]);
}

#[test]
fn novelty_in_a_portfolio_extends_what_the_other_members_reached() {
    let w = workload(
        3,
        "[[0, 1], [1, 2], [2, 0], [0, 2]]",
        "[faults]\ncrashes = 1\nreboots = 1",
    );
    let (dfs, _) = runs_of("dfs", &w, 0, 1);
    let ctx = tiny_ctx(&w, 3);
    let mut s = build("novelty", &ctx).unwrap();
    let plan = s.next_plan().unwrap();
    // A run novelty did not plan, from another member: its new abstract states count.
    s.observe_other(&plan, &dfs[0]);
    assert_eq!(s.queue_len(), 2, "the empty prefix and the other run's");
    let next = s.next_plan().unwrap();
    let events = dfs[0].event_ids();
    assert!(!next.prefix.is_empty(), "{next:?}");
    assert_eq!(next.prefix[..], events[..next.prefix.len()]);
    // The systematic strategies keep their own branches only.
    let mut d = build("dfs", &ctx).unwrap();
    let first = d.next_plan().unwrap();
    d.observe_other(&first, &dfs[0]);
    assert_eq!(
        d.queue_len(),
        0,
        "dfs took nothing from a run it did not plan"
    );
}

/// Unique states of a dfs exploration of `w`, as shard `k` of `n` (or unsharded).
fn dfs_states(w: &flymc_model::Workload, shard: Option<(u32, u32)>) -> (u64, bool, Vec<u64>) {
    let mut ctx = StrategyContext::for_system(&TinySystem, w);
    ctx.symmetry = Symmetry::none();
    let mut s = build("dfs", &ctx).unwrap();
    if let Some((k, n)) = shard {
        s = Box::new(shard::Sharded::new(s, k, n));
    }
    let out = Exploration::new(&TinySystem, w, s.as_mut()).run().unwrap();
    let mut states: Vec<u64> = out.unique_states.into_iter().collect();
    states.sort_unstable();
    (out.paths, out.exhausted, states)
}

#[test]
fn dfs_shards_together_reach_the_states_of_one_unsharded_search() {
    let w = workload(
        2,
        "[[0, -1], [1, -1], [0, 1], [1, 0], [0, -1]]",
        "[faults]\ncrashes = 1\nreboots = 1",
    );
    let (paths, exhausted, all) = dfs_states(&w, None);
    assert!(exhausted);
    for n in [2, 3, 4] {
        let mut union = std::collections::BTreeSet::new();
        let mut shard_paths = Vec::new();
        for k in 0..n {
            let (p, exhausted, states) = dfs_states(&w, Some((k, n)));
            assert!(exhausted, "shard {k}/{n}");
            shard_paths.push(p);
            union.extend(states);
        }
        assert_eq!(
            union.into_iter().collect::<Vec<_>>(),
            all,
            "{n} shards ({shard_paths:?} paths) against one search ({paths} paths)"
        );
        // Each shard runs a share, not everything.
        assert!(
            shard_paths.iter().all(|p| *p < paths),
            "{shard_paths:?} vs {paths}"
        );
    }
}

#[test]
fn a_deadline_stops_handing_out_paths_without_claiming_exhaustion() {
    let w = workload(2, "[[0, -1], [1, -1], [1, -1]]", "");
    let ctx = StrategyContext::for_system(&TinySystem, &w);
    let mut s = build("dfs", &ctx).unwrap();
    let out = Exploration::new(&TinySystem, &w, s.as_mut())
        .deadline(Some(std::time::Instant::now()))
        .run()
        .unwrap();
    assert_eq!((out.paths, out.exhausted), (0, false));
}

#[test]
fn the_strategy_table_lists_every_kind_once_in_declaration_order() {
    for (i, t) in TABLE.iter().enumerate() {
        assert_eq!(t.kind as usize, i, "{}", t.name);
        assert_eq!(t.name.parse::<StrategyKind>().unwrap(), t.kind);
    }
    assert!("nope".parse::<StrategyKind>().is_err());
}
