//! Exploration end to end: determinism on every simulated target, exhaustion of the fixed
//! variants without violation, and the FlyMC soundness experiment (§7.3c).

use crate::common;

use std::collections::HashSet;

use common::flymc_in;
use flymc::systems;
use flymc_core::executor::{Executor, RunOptions};
use flymc_core::explore::{Exploration, Outcome};
use flymc_core::plan::{Plan, Tail};
use flymc_core::run::{Ending, Run};
use flymc_core::workloads;
use flymc_model::{EventId, Symmetry};
use flymc_strategies::{self as strategy, FlymcOptions, StrategyContext};

#[test]
fn every_simulated_target_is_deterministic() {
    let d = tempfile::tempdir().unwrap();
    for (system, workload) in [
        ("cassandra-sim", "paxos-2"),
        ("cassandra-sim", "cass-5"),
        ("raft-sim", "raft-2"),
        ("raft-sim", "raft-bug"),
        ("zk-le-sim", "le-3crash"),
        ("zk-le-sim", "zk-1419"),
    ] {
        for strategy in ["dfs", "random", "flymc", "faults"] {
            let r = flymc_in(
                d.path(),
                &[
                    "run",
                    "--system",
                    system,
                    "--workload",
                    workload,
                    "--strategy",
                    strategy,
                    "--max-paths",
                    "40",
                    "--check-determinism",
                ],
            );
            assert!(
                r.code == 0 || r.code == 1,
                "{system}/{workload} {strategy}:\n{}",
                r.all()
            );
            assert!(!r.all().contains("nondeterminism"), "{}", r.all());
        }
    }
}

/// What one exploration reached.
struct Reached {
    paths: u64,
    exhausted: bool,
    violation: Option<String>,
    /// Abstract hashes of the states complete runs ended in (quiescent, nothing left to do).
    terminal: HashSet<u64>,
    /// Abstract hashes of every state seen.
    all: HashSet<u64>,
}

/// Explore `workload` with `strategy`, showing `on_run` every run and the system's symmetry.
fn explore_runs(
    system: &str,
    workload: &str,
    strategy: &str,
    opts: FlymcOptions,
    cap: u64,
    on_run: &mut dyn FnMut(&Run, &Symmetry),
) -> Outcome {
    explore_runs_with(system, workload, strategy, opts, cap, None, on_run)
}

/// `explore_runs` with a sets file other than the one the system ships.
fn explore_runs_with(
    system: &str,
    workload: &str,
    strategy: &str,
    opts: FlymcOptions,
    cap: u64,
    sets: Option<&std::path::Path>,
    on_run: &mut dyn FnMut(&Run, &Symmetry),
) -> Outcome {
    let system = systems::find(system).unwrap();
    let folder = workloads::folder(Some(&common::workloads())).unwrap();
    let w = workloads::load(&folder, system.name(), workload).unwrap();
    let sym = system.symmetry(&w);
    let ctx = StrategyContext {
        workload: &w,
        symmetry: sym.clone(),
        seed: 0,
        bound: 25,
        stateless_dfs: false,
        sets: systems::load_sets(system.as_ref(), &w, sets).unwrap(),
        flymc: opts,
        fault_vars: system.about().fault_vars.clone(),
        disk_state: true,
        pct_depth: 3,
    };
    let mut s = strategy::build(strategy, &ctx).unwrap();
    Exploration::new(system.as_ref(), &w, s.as_mut())
        .max_paths(Some(cap))
        .on_run(|run| on_run(run, &sym))
        .run()
        .unwrap()
}

/// Explore `workload` with `strategy`.
fn exhaust(system: &str, workload: &str, strategy: &str, opts: FlymcOptions, cap: u64) -> Reached {
    exhaust_with(system, workload, strategy, opts, cap, None)
}

/// `exhaust` with a sets file other than the one the system ships.
fn exhaust_with(
    system: &str,
    workload: &str,
    strategy: &str,
    opts: FlymcOptions,
    cap: u64,
    sets: Option<&std::path::Path>,
) -> Reached {
    let (mut terminal, mut all) = (HashSet::new(), HashSet::new());
    let out = explore_runs_with(
        system,
        workload,
        strategy,
        opts,
        cap,
        sets,
        &mut |run, sym| {
            for st in &run.states {
                all.insert(sym.abstract_state(st).hash);
            }
            if run.ending == Ending::Quiescent && run.final_enabled.is_empty() {
                terminal.insert(sym.abstract_state(run.states.last().unwrap()).hash);
            }
        },
    );
    Reached {
        paths: out.paths,
        exhausted: out.exhausted,
        violation: out.violation.map(|(_, r)| r.violation.unwrap().property),
        terminal,
        all,
    }
}

/// Every state the workload can reach, by a stateful search over the target (what DFS reaches
/// when it runs to the end, in far fewer runs): (abstract hashes of all, of terminal states).
fn reachable(system: &str, workload: &str) -> (HashSet<u64>, HashSet<u64>) {
    let system = systems::find(system).unwrap();
    let folder = workloads::folder(Some(&common::workloads())).unwrap();
    let w = workloads::load(&folder, system.name(), workload).unwrap();
    let sym = system.symmetry(&w);
    let exec = Executor::new(system.as_ref(), &w);
    let mut target = system.target(&w).unwrap();
    let mut seen: HashSet<u64> = HashSet::new();
    let (mut all, mut terminal) = (HashSet::new(), HashSet::new());
    let mut stack: Vec<Vec<EventId>> = vec![Vec::new()];
    while let Some(prefix) = stack.pop() {
        let plan = Plan {
            prefix,
            tail: Tail::Stop,
            strict: true,
            sleep: Vec::new(),
            sleep_at: 0,
        };
        let run = exec
            .run(target.as_mut(), &plan, RunOptions::default())
            .unwrap();
        assert!(run.violation.is_none(), "{workload}: {:?}", run.violation);
        let last = run.states.last().unwrap();
        if !seen.insert(last.hash()) {
            continue;
        }
        assert!(
            seen.len() < 200_000,
            "{workload}: state space too large for this test"
        );
        all.insert(sym.abstract_state(last).hash);
        if run.final_enabled.is_empty() {
            terminal.insert(sym.abstract_state(last).hash);
        }
        for e in &run.final_enabled {
            let mut p = plan.prefix.clone();
            p.push(e.event.id);
            stack.push(p);
        }
    }
    (all, terminal)
}

#[test]
fn fixed_paxos_1_and_raft_1_exhaust_without_violation() {
    // MoDist's same-node rule cannot exhaust paxos-1 within the cap (every late reply at the
    // coordinator races with everything after it), so there dfs and flymc are asked to.
    for (system, workload, strategies) in [
        ("cassandra-sim", "paxos-1", &["dfs", "flymc"][..]),
        ("raft-sim", "raft-1", &["dfs", "mdpor", "flymc"][..]),
    ] {
        for strategy in strategies {
            let r = exhaust(system, workload, strategy, FlymcOptions::default(), 20_000);
            assert!(
                r.exhausted,
                "{workload} {strategy}: not exhausted in {} paths",
                r.paths
            );
            assert_eq!(r.violation, None, "{workload} {strategy}");
        }
    }
}

/// FlyMC §7.3(c): without parallel flips (a prioritisation, not a reduction), flymc misses no
/// state that matters. Partial-order reduction skips, by design, the intermediate states of
/// commuting events taken in the other order (`a` then `b` and `b` then `a` pass through
/// different states on the way to the same one), so what must match is every state a complete
/// run can end in; and flymc must never report a state that cannot be reached. Compared up to
/// symmetry, which is what flymc reduces by.
#[test]
fn flymc_without_parallel_flips_reaches_every_end_state_dfs_reaches() {
    let no_pf = FlymcOptions {
        parallel_flips: false,
        ..FlymcOptions::default()
    };
    for (system, workload) in [
        ("raft-sim", "raft-1"),
        ("raft-sim", "raft-2"),
        ("cassandra-sim", "paxos-1"),
    ] {
        assert_flymc_reaches_every_end_state(system, workload, None);
    }
    // The reference search is what DFS reaches: where DFS exhausts, they agree.
    for (system, workload) in [("raft-sim", "raft-1"), ("cassandra-sim", "paxos-1")] {
        let dfs = exhaust(system, workload, "dfs", no_pf, 200_000);
        assert!(dfs.exhausted);
        let (all, terminal) = reachable(system, workload);
        assert_eq!(dfs.all, all, "{workload}");
        assert_eq!(dfs.terminal, terminal, "{workload}");
    }
}

/// Issue 23: the sets file `flymc analyze` wrote from Cassandra 2.0's paxos sources
/// (integrations/cassandra-sim/sets-analysed.json, which the target ships) is as sound as the
/// hand-written one: flymc with either (without parallel flips) reaches every end state of
/// paxos-1.
#[test]
fn flymc_with_either_cassandra_sets_file_reaches_every_paxos_1_end_state() {
    let sim = common::workloads().join("../integrations/cassandra-sim");
    for file in ["sets-analysed.json", "sets.json"] {
        assert_flymc_reaches_every_end_state("cassandra-sim", "paxos-1", Some(&sim.join(file)));
    }
}

/// flymc without parallel flips exhausts `workload` (with `sets`, or the shipped sets file),
/// reaching every end state a complete search reaches and no state it does not.
fn assert_flymc_reaches_every_end_state(
    system: &str,
    workload: &str,
    sets: Option<&std::path::Path>,
) {
    let no_pf = FlymcOptions {
        parallel_flips: false,
        ..FlymcOptions::default()
    };
    let (all, terminal) = reachable(system, workload);
    let fly = exhaust_with(system, workload, "flymc", no_pf, 200_000, sets);
    assert!(fly.exhausted, "flymc did not exhaust {workload} ({sets:?})");
    let missing = terminal.difference(&fly.terminal).count();
    assert_eq!(
        missing,
        0,
        "{workload}: flymc ({} paths, sets {sets:?}) missed {missing} of the {} end states",
        fly.paths,
        terminal.len()
    );
    assert!(
        fly.all.is_subset(&all),
        "{workload}: flymc reported states that cannot be reached"
    );
}

/// Ballots come from one clock shared by every coordinator (the order rounds start), so two
/// client requests at different nodes do not commute: which starts first decides who holds the
/// lower ballot. The sets file declares the clock `shared`, and flymc must explore both orders;
/// under MoDist's rule alone every path gave operation 0 the first ballot.
#[test]
fn flymc_lets_either_coordinator_take_the_first_ballot() {
    let mut op1_first = false;
    let opts = FlymcOptions::default();
    explore_runs(
        "cassandra-sim",
        "paxos-2",
        "flymc",
        opts,
        500,
        &mut |run, _| {
            op1_first |= run
                .states
                .iter()
                .any(|st| st.var(1, "ballot") == Some(&serde_json::json!(1)));
        },
    );
    assert!(op1_first, "no path in 500 let n1's operation take ballot 1");
}
