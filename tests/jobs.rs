//! `--jobs N`: several paths at once, each on a target of its own, the strategy seeing their
//! runs in path order. On the simulated targets: the same paths in the same order every time,
//! exact path budgets and violations, and the same states at exhaustion with any N. Then a
//! real Raft cluster, where concurrent clusters must not share an address, port, data
//! directory or event server.

use crate::support;

use crate::common;

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use flymc::systems;
use flymc_core::dependence::Dependence;
use flymc_core::executor::RunOptions;
use flymc_core::explore::{Exploration, Outcome};
use flymc_core::plan::Plan;
use flymc_core::run::{Ending, Run};
use flymc_core::strategy::{Strategy, StrategyStats};
use flymc_core::workloads;
use flymc_model::{
    Event, EventId, GlobalState, NodeId, Property, Symmetry, System, Target, TargetError, Workload,
};
use flymc_raft::{Flavor, RaftSystem};
use flymc_real::RealTarget;
use flymc_strategies::{self as strategy, FlymcOptions, StrategyContext};

fn load(system: &dyn System, workload: &str) -> Workload {
    let folder = workloads::folder(Some(&common::workloads())).unwrap();
    workloads::load(&folder, system.name(), workload).unwrap()
}

fn build(system: &dyn System, w: &Workload, name: &str, opts: FlymcOptions) -> Box<dyn Strategy> {
    let ctx = StrategyContext {
        workload: w,
        symmetry: system.symmetry(w),
        seed: 3,
        bound: 25,
        stateless_dfs: system.has(flymc_model::Feature::SummaryStates),
        sets: systems::load_sets(system, w, None).unwrap(),
        flymc: opts,
        fault_vars: system.about().fault_vars.clone(),
        disk_state: true,
        pct_depth: 3,
    };
    strategy::build(name, &ctx).unwrap()
}

/// What an exploration did, run by run in the order the strategy saw them.
struct Explored {
    out: Outcome,
    paths: Vec<Vec<EventId>>,
    /// Abstract hashes of the states complete runs ended in.
    terminal: HashSet<u64>,
}

fn explore(
    system: &dyn System,
    w: &Workload,
    strategy: Box<dyn Strategy>,
    jobs: usize,
    max_paths: Option<u64>,
) -> Explored {
    let sym = system.symmetry(w);
    let mut strategy = InOrder {
        inner: strategy,
        handed: VecDeque::new(),
    };
    let (mut paths, mut terminal) = (Vec::new(), HashSet::new());
    let out = Exploration::new(system, w, &mut strategy)
        .jobs(jobs)
        .max_paths(max_paths)
        .on_run(|run| {
            paths.push(run.event_ids());
            if run.ending == Ending::Quiescent && run.final_enabled.is_empty() {
                terminal.insert(sym.abstract_state(run.states.last().unwrap()).hash);
            }
        })
        .run()
        .unwrap_or_else(|e| panic!("exploration failed: {e}"));
    assert!(
        strategy.handed.is_empty() || out.violation.is_some() || !out.exhausted,
        "every plan handed out was observed"
    );
    Explored {
        out,
        paths,
        terminal,
    }
}

/// Checks the loop's side of the contract: every run is observed with its own plan, in the
/// order the plans were handed out.
struct InOrder {
    inner: Box<dyn Strategy>,
    handed: VecDeque<Plan>,
}

impl Strategy for InOrder {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn next_plan(&mut self) -> Option<Plan> {
        let plan = self.inner.next_plan()?;
        self.handed.push_back(plan.clone());
        Some(plan)
    }
    fn observe(&mut self, plan: &Plan, run: &Run) {
        assert_eq!(
            self.handed.pop_front().as_ref(),
            Some(plan),
            "hand-out order"
        );
        assert!(
            run.diverged_at.is_some() || run.event_ids().starts_with(&plan.prefix),
            "the run of another plan"
        );
        self.inner.observe(plan, run)
    }
    fn queue_len(&self) -> usize {
        self.inner.queue_len()
    }
    fn dependence(&self) -> Option<Box<dyn Dependence + Send>> {
        self.inner.dependence()
    }
    fn stats(&self) -> StrategyStats {
        self.inner.stats()
    }
}

/// A simulated system whose targets take different, changing times to start a run, so that
/// runs under way together finish in an order that changes from run to run and from one
/// exploration to the next. (The delay stirs the timing; nothing waits on it.)
struct Stirred {
    inner: Box<dyn System>,
    starts: Arc<AtomicU64>,
}

struct StirredTarget {
    inner: Box<dyn Target>,
    starts: Arc<AtomicU64>,
}

impl Target for StirredTarget {
    fn start(&mut self, w: &Workload) -> Result<(), TargetError> {
        let n = self.starts.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(Duration::from_micros(n * 7919 % 3000));
        self.inner.start(w)
    }
    fn pending(&self) -> Vec<Event> {
        self.inner.pending()
    }
    fn enable(&mut self, id: EventId) -> Result<(), TargetError> {
        self.inner.enable(id)
    }
    fn settle(&mut self) -> Result<GlobalState, TargetError> {
        self.inner.settle()
    }
    fn crash(&mut self, node: NodeId) -> Result<(), TargetError> {
        self.inner.crash(node)
    }
    fn reboot(&mut self, node: NodeId) -> Result<(), TargetError> {
        self.inner.reboot(node)
    }
    fn stop(&mut self) -> Result<(), TargetError> {
        self.inner.stop()
    }
}

impl System for Stirred {
    fn about(&self) -> &flymc_model::About {
        self.inner.about()
    }
    fn target(&self, w: &Workload) -> Result<Box<dyn Target>, TargetError> {
        Ok(Box::new(StirredTarget {
            inner: self.inner.target(w)?,
            starts: self.starts.clone(),
        }))
    }
    fn properties(&self, w: &Workload) -> Vec<Box<dyn Property>> {
        self.inner.properties(w)
    }
    fn symmetry(&self, w: &Workload) -> Symmetry {
        self.inner.symmetry(w)
    }
}

fn stirred(name: &str) -> Stirred {
    Stirred {
        inner: systems::find(name).unwrap(),
        starts: Arc::new(AtomicU64::new(0)),
    }
}

#[test]
fn two_jobs_explore_the_same_paths_in_the_same_order_every_time() {
    for (system, workload) in [
        ("raft-sim", "raft-2"),
        ("zk-le-sim", "le-3crash"),
        ("cassandra-sim", "paxos-2"),
    ] {
        for name in ["dfs", "flymc", "mdpor", "rdpor", "random", "faults"] {
            let sys = stirred(system);
            let w = load(&sys, workload);
            let again = |jobs| {
                let s = build(&sys, &w, name, FlymcOptions::default());
                explore(&sys, &w, s, jobs, Some(40))
            };
            let (a, b) = (again(2), again(2));
            assert!(!a.paths.is_empty());
            assert_eq!(
                a.paths, b.paths,
                "{system}/{workload} {name}: two runs with --jobs 2 differ"
            );
            assert_eq!(a.out.paths, a.paths.len() as u64);
            assert_eq!(a.out.unique_states, b.out.unique_states);
            assert_eq!(
                (a.out.cache_hits, a.out.cache_misses),
                (b.out.cache_hits, b.out.cache_misses),
                "{system}/{workload} {name}: the cache a run sees depends on timing"
            );
            assert_eq!(a.out.stats.generated, b.out.stats.generated);
        }
    }
}

#[test]
fn one_job_explores_what_the_loop_explored_before_jobs() {
    // With one job the loop hands out a plan, waits for its run, observes it: the old loop.
    // Paths are compared with a plain sequential drive of the same strategy.
    let sys = systems::find("raft-sim").unwrap();
    let w = load(sys.as_ref(), "raft-2");
    for name in ["dfs", "flymc", "faults"] {
        let got = explore(
            sys.as_ref(),
            &w,
            build(sys.as_ref(), &w, name, FlymcOptions::default()),
            1,
            Some(60),
        );
        let mut s = build(sys.as_ref(), &w, name, FlymcOptions::default());
        let exec = flymc_core::executor::Executor::new(sys.as_ref(), &w);
        let mut target = sys.target(&w).unwrap();
        let mut want = Vec::new();
        let cache = flymc_core::cache::StateEventCache::new();
        while want.len() < 60 {
            let Some(plan) = s.next_plan() else { break };
            let mut view = cache.view(want.len() as u64);
            let mut dep = s.dependence();
            let run = exec
                .run(
                    target.as_mut(),
                    &plan,
                    RunOptions {
                        cache: Some(&mut view),
                        dep: dep.as_deref_mut().map(|d| d as &mut dyn Dependence),
                        ..Default::default()
                    },
                )
                .unwrap();
            cache.merge(want.len() as u64 + 1, view.into_entries());
            s.observe(&plan, &run);
            want.push(run.event_ids());
        }
        assert_eq!(got.paths, want, "{name}");
    }
}

#[test]
fn the_path_budget_is_exact_and_a_violation_is_the_lowest_numbered_one() {
    // cass-5's bug: flymc finds it after some dozens of paths.
    let sys = stirred("cassandra-sim");
    let w = load(&sys, "cass-5");
    for jobs in [2, 3] {
        let s = build(&sys, &w, "flymc", FlymcOptions::default());
        let capped = explore(&sys, &w, s, jobs, Some(10));
        assert_eq!(capped.out.paths, 10, "--jobs {jobs}");
        assert_eq!(capped.paths.len(), 10);
        assert!(!capped.out.exhausted);

        // Every path's verdict, stepping over violations, in this N's order.
        let s = build(&sys, &w, "flymc", FlymcOptions::default());
        let mut verdicts = Vec::new();
        let mut st = InOrder {
            inner: s,
            handed: VecDeque::new(),
        };
        Exploration::new(&sys, &w, &mut st)
            .jobs(jobs)
            .max_paths(Some(200))
            .stop_on_property(Some("no-such-property".into()))
            .on_run(|run| verdicts.push(run.violation.is_some()))
            .run()
            .unwrap();
        let first = verdicts
            .iter()
            .position(|v| *v)
            .expect("cass-5's bug within 200 paths") as u64
            + 1;

        let s = build(&sys, &w, "flymc", FlymcOptions::default());
        let stopped = explore(&sys, &w, s, jobs, None);
        let (number, run) = stopped.out.violation.expect("the bug is found");
        assert_eq!(
            number, first,
            "--jobs {jobs}: not the lowest-numbered violation"
        );
        assert_eq!(
            stopped.out.paths, first,
            "paths after the violation were counted"
        );
        assert_eq!(stopped.paths.len() as u64, first);
        assert_eq!(stopped.paths.last(), Some(&run.event_ids()));
    }
}

#[test]
fn dfs_reaches_the_same_states_with_any_number_of_jobs() {
    for (system, workload) in [("raft-sim", "raft-1"), ("raft-sim", "raft-2")] {
        let sys = stirred(system);
        let w = load(&sys, workload);
        let reached: Vec<Explored> = [1, 2, 3]
            .into_iter()
            .map(|jobs| {
                let s = build(&sys, &w, "dfs", FlymcOptions::default());
                explore(&sys, &w, s, jobs, Some(50_000))
            })
            .collect();
        for (jobs, r) in reached.iter().enumerate() {
            assert!(r.out.exhausted, "{workload} --jobs {}", jobs + 1);
            assert_eq!(
                r.out.unique_states,
                reached[0].out.unique_states,
                "{workload}: --jobs {} reached other states than --jobs 1 ({} against {})",
                jobs + 1,
                r.out.unique_states.len(),
                reached[0].out.unique_states.len()
            );
        }
    }
}

/// flymc reduces by partial order and symmetry, so which intermediate states it passes through
/// depends on which representative of an order it runs; what must not depend on N is every
/// state a complete run can end in (the soundness test in exploration.rs, with N jobs).
#[test]
fn flymc_reaches_the_same_end_states_with_any_number_of_jobs() {
    for (system, workload) in [("raft-sim", "raft-1"), ("cassandra-sim", "paxos-1")] {
        let sys = stirred(system);
        let w = load(&sys, workload);
        let reached: Vec<Explored> = [1, 2, 3]
            .into_iter()
            .map(|jobs| {
                let s = build(&sys, &w, "flymc", FlymcOptions::default());
                explore(&sys, &w, s, jobs, Some(50_000))
            })
            .collect();
        for (jobs, r) in reached.iter().enumerate() {
            assert!(r.out.exhausted, "{workload} --jobs {}", jobs + 1);
            assert_eq!(
                r.terminal,
                reached[0].terminal,
                "{workload}: --jobs {} ended in other states than --jobs 1",
                jobs + 1
            );
        }
    }
}

fn openraft() -> RaftSystem {
    RaftSystem::with_program(
        Flavor::OpenRaft,
        support::node_program("flymc-raft-nodes", "flymc-raft-node"),
    )
}

/// raft/le with one election: flymc exhausts it in about forty paths.
fn one_election() -> Workload {
    Workload::parse(
        std::path::Path::new("le-1.toml"),
        "version = 1\nsystem = \"raft\"\nnodes = 3\nmax_events = 60\n\
         [params]\nelection_timers = [0]\nelections = 1\n",
    )
    .unwrap()
}

#[test]
fn clusters_of_concurrent_jobs_share_no_address_port_data_dir_or_event_server() {
    let sys = openraft();
    let w = one_election();
    let mut a = RealTarget::new(sys.config(&w).unwrap());
    let mut b = RealTarget::new(sys.config(&w).unwrap());
    a.start(&w).unwrap();
    b.start(&w).unwrap();
    let (sa, sb) = (a.slots().to_vec(), b.slots().to_vec());
    for x in &sa {
        for y in &sb {
            assert_ne!(x.addr.ip(), y.addr.ip(), "a shared address");
            assert!(!x.data_dir.starts_with(y.data_dir.parent().unwrap()));
            assert!(!y.data_dir.starts_with(x.data_dir.parent().unwrap()));
        }
    }
    let (ea, eb) = (a.server().unwrap().addr(), b.server().unwrap().addr());
    assert_ne!(ea, eb, "a shared event server");
    // Both clusters run at once, each through its own server.
    assert_eq!(a.settle().unwrap().nodes.len(), 3);
    assert_eq!(b.settle().unwrap().nodes.len(), 3);
    a.stop().unwrap();
    b.stop().unwrap();
}

#[test]
fn real_raft_election_reaches_the_same_states_with_one_and_two_jobs() {
    let sys = openraft();
    let w = one_election();
    let run = |jobs, max| {
        let s = build(&sys, &w, "flymc", FlymcOptions::default());
        explore(&sys, &w, s, jobs, max)
    };
    let (one, two) = (run(1, None), run(2, None));
    assert!(one.out.exhausted && two.out.exhausted);
    assert!(one.paths.len() > 10, "more than a handful of orders");
    assert_eq!(
        one.out.unique_states,
        two.out.unique_states,
        "--jobs 2 reached other states than --jobs 1 ({} against {})",
        two.out.unique_states.len(),
        one.out.unique_states.len()
    );
    assert_eq!(one.terminal, two.terminal);
    // And two jobs repeat themselves on real nodes too.
    assert_eq!(run(2, Some(12)).paths, two.paths[..12]);
}
