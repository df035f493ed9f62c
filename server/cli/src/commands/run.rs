//! `flymc run`: explore a workload's event orders until a violation, exhaustion or the path
//! budget; write a path file per finding and say what was explored ([`crate::summary`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::builder::RangedU64ValueParser;
use flymc_core::explore::{Exploration, ExploreConfig, KeepLogs, Outcome};
use flymc_core::pathfile::PathFile;
use flymc_core::run::Run;
use flymc_core::strategy::Strategy;
use flymc_core::workloads;
use flymc_core::CrashPoints;
use flymc_model::escape;
use flymc_model::workload::MAX_EVENTS;
use flymc_model::{System, Workload};
use flymc_strategies::{FlymcOptions, StrategyContext, StrategyKind};

use super::options::ClusterArgs;
use super::params::{self, Param};
use crate::progress::Reporter;
use crate::summary;
use crate::systems;

#[derive(clap::Args)]
pub struct RunArgs {
    /// The system to check (see `flymc systems`).
    #[arg(long)]
    pub system: String,
    /// A workload name (see `flymc workloads SYSTEM`) or a path to a workload TOML file.
    #[arg(long)]
    pub workload: String,
    /// Exploration strategy [default: portfolio, or dfs with --stateless].
    #[arg(long, value_enum)]
    pub strategy: Option<StrategyKind>,
    /// Stop after this many paths.
    #[arg(long, value_name = "N")]
    pub max_paths: Option<u64>,
    /// Seed for the random strategies (recorded in path files).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Depth bound for bdpor and brdpor.
    #[arg(long, default_value_t = 25)]
    pub bound: usize,
    /// The bug depth pct builds its paths for: d - 1 priority change points per path (PCTCP).
    #[arg(long, value_name = "D", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub depth: u32,
    /// dfs over every interleaving, re-expanding a state each time another order reaches it
    /// (the FlyMC paper's naive DFS), instead of expanding each state once.
    #[arg(long)]
    pub stateless: bool,
    /// Where path files go.
    #[arg(long, default_value = "flymc-out", value_name = "DIR")]
    pub out: PathBuf,
    /// Run every new path twice and fail loudly on any difference.
    #[arg(long)]
    pub check_determinism: bool,
    /// Also write the path file of every explored path, not only of violating ones (to study
    /// what the checker did; one file per path).
    #[arg(long)]
    pub save_paths: bool,
    /// Also write the summary as JSON (paths, states, late reports, where the time went).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Go on exploring after a violation, to the path budget or exhaustion, and write a path
    /// file for every distinct finding (property and message), not only the first.
    #[arg(long)]
    pub keep_going: bool,
    /// Keep the nodes' logs of every path under DIR (`...-pathN.logs/`), not only those of
    /// violating paths (which are always kept beside their path file).
    #[arg(long)]
    pub keep_logs: bool,
    /// A workload parameter over the file's `[params]` (repeatable), recorded in path files so
    /// replays run with it: KEY=VALUE, VALUE a TOML value (5000, true, [1, 2]) or else a string
    /// (e.g. zookeeper's `variant=zookeeper-1419`, `zookeeper_home=DIR`).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<Param>,
    /// `--param variant=NAME` (how zookeeper runs chose a variant before `--param`).
    #[arg(long, value_name = "NAME", hide = true)]
    pub variant: Option<String>,
    /// `--param zookeeper_home=DIR` (as `--variant`).
    #[arg(long, value_name = "DIR", hide = true)]
    pub zookeeper_home: Option<PathBuf>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Paths explored at once, each on a cluster of its own (real nodes: own addresses, ports,
    /// data directories and event server). The strategy sees the results in path order, so a
    /// run with a given N is deterministic.
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=256))]
    pub jobs: u16,
    /// Re-execute every path from the start instead of restoring cluster snapshots taken at
    /// branch points (real nodes on the local backend, with CRIU from `flymc setup criu`).
    #[arg(long)]
    pub no_snapshots: bool,
    /// Where crashes strike: right after a node's crash-point write and at rest points
    /// (nothing pending but timers), or before every step. Default: after writes for systems
    /// whose nodes report them (ZooKeeper's hooks file has `disk` points), everywhere otherwise.
    #[arg(long, value_name = "WHERE")]
    pub crash_points: Option<CrashPointsArg>,
    /// Sets file for samc and flymc (default: the one the system ships).
    #[arg(long, value_name = "FILE")]
    pub sets: Option<PathBuf>,
    /// Random walks from the end state of a run that fails a liveness property before it is
    /// called dead and reported (MaceMC); a state some walk takes to the property is transient
    /// and not reported. Each walk re-executes the path (seconds on real nodes), and a dead
    /// state's critical-transition search takes up to W walks per probe. 0: report every end
    /// state that fails it, unclassified.
    #[arg(long, value_name = "W", default_value_t = flymc_core::liveness::Walks::DEFAULT_WALKS)]
    pub walks: u32,
    /// Events per liveness walk (default: the workload's event limit).
    #[arg(long, value_name = "D",
          value_parser = RangedU64ValueParser::<usize>::new().range(0..=MAX_EVENTS as u64))]
    pub walk_depth: Option<usize>,
    #[command(flatten)]
    pub ablation: Ablation,
}

/// `--crash-points`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum CrashPointsArg {
    AfterWrites,
    Everywhere,
}

/// Switches for flymc's ablations (FlyMC Figure 13).
#[derive(clap::Args, Clone, Copy, Default)]
pub struct Ablation {
    /// flymc without state symmetry.
    #[arg(long)]
    pub no_symmetry: bool,
    /// flymc without sets-file independence (MoDist's rule instead).
    #[arg(long)]
    pub no_independence: bool,
    /// flymc with parallel flips (the paper's; off by default: they cost paths on every
    /// measured bug, docs/BENCHMARKS.md).
    #[arg(long)]
    pub parallel_flips: bool,
    /// Parallel flips are off by default now; kept so that older scripts still run.
    #[arg(long, hide = true)]
    pub no_parallel_flips: bool,
    /// No state-event cache.
    #[arg(long)]
    pub no_cache: bool,
    /// faults and flymc judge states by the nodes' reported variables only, not also by what
    /// their crash-point writes put on disk (fewer paths, but a crash between two writes of
    /// one step can be pruned as already tried).
    #[arg(long)]
    pub no_disk_state: bool,
}

impl RunArgs {
    /// The strategy asked for, or the default: the portfolio (dfs for `--stateless`, the
    /// paper's naive DFS, which only dfs has).
    fn strategy(&self) -> StrategyKind {
        match self.strategy {
            Some(s) => s,
            None if self.stateless => StrategyKind::Dfs,
            None => StrategyKind::Portfolio,
        }
    }

    /// `--param`s, and the old flags that stand for some.
    fn all_params(&self) -> Vec<Param> {
        let mut all = self.params.clone();
        let alias = |key: &str, value: String| Param {
            key: key.into(),
            value: value.into(),
        };
        all.extend(self.variant.clone().map(|v| alias("variant", v)));
        all.extend(
            self.zookeeper_home
                .as_ref()
                .map(|d| alias("zookeeper_home", d.display().to_string())),
        );
        all
    }
}

pub fn run(args: RunArgs, folder: Option<&Path>) -> Result<u8> {
    check_flags(&args)?;
    let (system, workload) = prepare(&args, folder)?;
    let explored = explore(&args, system.as_ref(), &workload)?;
    report(&args, system.as_ref(), &workload, explored)
}

/// Flags that do not go together, refused before anything starts.
fn check_flags(args: &RunArgs) -> Result<()> {
    if args.stateless && args.strategy() != StrategyKind::Dfs {
        anyhow::bail!(
            "--stateless only applies to --strategy dfs (got `{}`); drop it or use dfs",
            args.strategy()
        );
    }
    if let Some(addr) = args
        .cluster
        .listen
        .filter(|a| a.port() != 0 && args.jobs > 1)
    {
        anyhow::bail!(
            "--listen {addr} gives one event server a fixed port, and --jobs {} needs one server per job: listen on port 0 (--listen {}:0) or drop --jobs",
            args.jobs,
            addr.ip()
        );
    }
    // A taken address is the user's to fix, said before anything starts: inside the
    // exploration it would look like a cluster that failed to start, and be retried.
    if let Some(addr) = args.cluster.listen.filter(|a| a.port() != 0) {
        std::net::TcpListener::bind(addr).map_err(|e| {
            anyhow::anyhow!(
                "cannot start the event server on {addr}: {e}; pick another address with --listen"
            )
        })?;
    }
    Ok(())
}

/// The system, and the workload with the command line's parameters, checked.
fn prepare(args: &RunArgs, folder: Option<&Path>) -> Result<(Box<dyn System>, Workload)> {
    let options = args.cluster.options(!args.no_snapshots);
    let system = systems::find_with(&args.system, &options)?;
    systems::announce(system.as_ref());
    let dir = systems::workloads_dir(system.as_ref(), folder)?;
    let mut workload = workloads::load_in(&dir, system.name(), &args.workload)?;
    workload.system_file = system.about().file.clone();
    params::apply(&args.all_params(), system.as_ref(), &mut workload)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    workloads::check_expect(system.as_ref(), &workload)?;
    Ok((system, workload))
}

/// What an exploration left to report.
struct Explored {
    outcome: Outcome,
    /// The error that stopped it, if one did.
    failure: Option<flymc_core::explore::ExploreError>,
    /// With --keep-going: every distinct finding, its first path.
    findings: Vec<(u64, Run)>,
    /// Whether every `--save-paths` file was written.
    saved: Result<()>,
    strat: Box<dyn Strategy>,
    snapshots: bool,
}

fn explore(args: &RunArgs, system: &dyn System, workload: &Workload) -> Result<Explored> {
    let sets = if args.strategy().uses_sets() || args.sets.is_some() {
        systems::load_sets(system, workload, args.sets.as_deref())?
    } else {
        None
    };
    let ctx = StrategyContext {
        workload,
        symmetry: system.symmetry(workload),
        seed: args.seed,
        bound: args.bound,
        // Expanding a state once is sound only when the reported state decides the future.
        stateless_dfs: args.stateless || system.has(flymc_model::Feature::SummaryStates),
        sets,
        flymc: FlymcOptions {
            symmetry: !args.ablation.no_symmetry,
            independence: !args.ablation.no_independence,
            parallel_flips: args.ablation.parallel_flips && !args.ablation.no_parallel_flips,
        },
        fault_vars: system.about().fault_vars.clone(),
        disk_state: !args.ablation.no_disk_state,
        pct_depth: args.depth,
    };
    let mut strat = args.strategy().build(&ctx)?;
    let exploration = Exploration::new(system, workload, strat.as_mut())
        .max_paths(args.max_paths)
        .check_determinism(args.check_determinism)
        .cache(!args.ablation.no_cache)
        .jobs(args.jobs.into())
        .snapshots(system.has(flymc_model::Feature::Snapshots))
        .keep_going(args.keep_going)
        .interrupted(flymc_real::cluster::interrupted)
        .keep_logs(KeepLogs {
            dir: args.out.clone(),
            prefix: format!("{}-{}-{}", system.name(), workload.name, args.strategy()),
            all: args.keep_logs,
        })
        .walks((args.walks > 0).then_some(flymc_core::liveness::Walks {
            walks: args.walks,
            depth: args.walk_depth,
            seed: args.seed,
        }))
        .crash_points(match args.crash_points {
            Some(CrashPointsArg::AfterWrites) => CrashPoints::AfterWrites,
            Some(CrashPointsArg::Everywhere) => CrashPoints::Everywhere,
            None => CrashPoints::for_system(system),
        });
    header(args, system, workload, exploration.config());
    let snapshots = exploration.config().snapshots;
    let mut reporter = Reporter::new(&format!("{}/{}", system.name(), workload.name));
    let mut saved: Result<()> = Ok(());
    let mut number = 0u64;
    // With --keep-going: every distinct finding, its first path. Distinct as a hunt tells them
    // apart (hunt::signature: the property and the message's words, numbers left out), so one
    // root cause reached at other indices or terms is one finding.
    let mut findings: Vec<(u64, Run)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let (outcome, failure) = exploration
        .on_progress(|p| reporter.update(p))
        .on_run(|run| {
            number += 1;
            if run.violation.is_some() && args.keep_going {
                let path =
                    PathFile::from_run(workload, args.strategy().name(), args.seed, number, run);
                let finding =
                    crate::hunt::signature::of(&path).map(|s| crate::hunt::signature::id(&s));
                if seen.insert(finding.unwrap_or_default()) {
                    findings.push((number, run.clone()));
                } else if let Some(logs) = run.logs.as_ref().filter(|_| !args.keep_logs) {
                    // The same finding again: its first path's logs are the ones kept.
                    let _ = std::fs::remove_dir_all(logs);
                }
            }
            if args.save_paths && saved.is_ok() {
                let file = args.out.join(format!(
                    "{}-{}-{}-all-path{number}.json",
                    system.name(),
                    workload.name,
                    args.strategy()
                ));
                saved =
                    PathFile::from_run(workload, args.strategy().name(), args.seed, number, run)
                        .save(&file)
                        .map_err(Into::into);
            }
        })
        .run_partial();
    reporter.finish();
    Ok(Explored {
        outcome,
        failure,
        findings,
        saved,
        strat,
        snapshots,
    })
}

/// `flymc: zookeeper / le-3crash with dfs (seed 0), crashes after writes, at most 5 paths`.
fn header(args: &RunArgs, system: &dyn System, workload: &Workload, cfg: &ExploreConfig) {
    println!(
        "flymc: {} / {} with {} (seed {}){}{}{}{}",
        system.name(),
        workload.name,
        args.strategy(),
        args.seed,
        if args.cluster.backend == flymc_real::BackendKind::Local {
            String::new()
        } else {
            format!(", nodes on {}", args.cluster.backend_name())
        },
        if args.jobs > 1 {
            format!(", {} jobs", args.jobs)
        } else {
            String::new()
        },
        match cfg.crash_points {
            CrashPoints::AfterWrites if workload.crashes > 0 => ", crashes after writes",
            _ => "",
        },
        args.max_paths
            .map(|m| format!(", at most {m} paths"))
            .unwrap_or_default()
    );
}

/// Whatever ended the run, what was explored is reported and every path file kept.
fn report(
    args: &RunArgs,
    system: &dyn System,
    workload: &Workload,
    explored: Explored,
) -> Result<u8> {
    let Explored {
        outcome,
        failure,
        mut findings,
        saved,
        strat,
        snapshots,
    } = explored;
    let signal = flymc_real::cluster::interrupted_by();
    // An error an interruption caused (nodes killed under the path) is no error of its own.
    let failure = failure.filter(|_| signal.is_none());
    if !args.keep_going {
        findings.extend(outcome.violation.clone());
    }
    for (number, run) in &findings {
        let file = args.out.join(format!(
            "{}-{}-{}-path{}.json",
            system.name(),
            workload.name,
            args.strategy(),
            number
        ));
        PathFile::from_run(workload, args.strategy().name(), args.seed, *number, run)
            .save(&file)?;
        report_violation(*number, run, &file, system.about().file.clone().as_deref());
    }
    if args.keep_going && outcome.violation.is_some() {
        println!(
            "{} distinct findings on {} violating paths",
            findings.len(),
            outcome.other_violations + 1
        );
    }
    let stopped = match (signal, &failure) {
        (Some(s), _) => Some(format!(
            "interrupted by {}",
            flymc_real::cluster::signal_name(s)
        )),
        (None, Some(e)) => Some(e.to_string()),
        (None, None) => None,
    };
    let interrupted = signal.and(stopped.as_deref());
    let code = ending(&outcome, strat.as_ref(), interrupted, failure.is_some());
    let strategy = args.strategy();
    let mut s = summary::RunSummary::new(
        &outcome,
        system.name(),
        &workload.name,
        strategy.name(),
        args.seed,
    );
    s.queue_left = strat.queue_len();
    s.snapshots_on = snapshots;
    s.stopped = stopped;
    println!("{}", s.text());
    if let Some(file) = &args.json {
        let text = serde_json::to_string_pretty(&s)? + "\n";
        flymc_core::outfile::write_atomically(file, text.as_bytes()).map_err(|e| {
            anyhow::anyhow!("cannot write the JSON summary to {}: {e}", file.display())
        })?;
    }
    saved?;
    if let Some(signal) = signal {
        flymc_real::cluster::interruption_reported();
        return Ok(flymc_real::cluster::exit_code(signal));
    }
    if let Some(e) = failure {
        return Err(e.into());
    }
    Ok(code)
}

/// The line that says how the run ended (none for a violation, reported above it), and the
/// exit code it makes. `interrupted`: by a signal, said as `interrupted by SIGTERM`.
fn ending(outcome: &Outcome, strat: &dyn Strategy, interrupted: Option<&str>, failed: bool) -> u8 {
    if let Some(why) = interrupted {
        println!("{why}: the path under way was dropped; what was explored before it:");
        return 0;
    }
    match &outcome.violation {
        _ if failed => {
            println!(
                "stopped by an error (below) on path {}; what was explored before it:",
                outcome.paths + 1
            );
            0
        }
        Some(_) => 1,
        None if outcome.exhausted => {
            println!("no violation: {}", strat.exhaustion());
            0
        }
        None => {
            println!(
                "no violation within {} paths (not exhausted)",
                outcome.paths
            );
            0
        }
    }
}

/// What a user needs to act on a violating path: the finding, its path file, its logs.
/// `system_file`: the system file a system not built in came from, which a replay must be given
/// (a path file does not choose the system file it runs on).
fn report_violation(number: u64, run: &Run, file: &Path, system_file: Option<&Path>) {
    let v = run
        .violation
        .as_ref()
        .expect("a violating run has its violation");
    // The message may quote what a node logged or threw: escaped before it reaches a terminal.
    println!(
        "VIOLATION on path {number}: {}",
        escape::line(&v.to_string())
    );
    if let Some(c) = &run.critical {
        println!("  critical transition: {}", escape::line(&c.to_string()));
    }
    println!(
        "  path file: {} ({} events)",
        file.display(),
        run.steps.len()
    );
    if let Some(logs) = &run.logs {
        println!("  node logs: {}", logs.display());
    }
    match system_file {
        Some(f) => println!(
            "  replay it: flymc replay --system {} {}",
            f.display(),
            file.display()
        ),
        None => println!("  replay it: flymc replay {}", file.display()),
    }
    if run.late_reports > 0 {
        println!(
            "  caution: on this path nodes reported {} events after saying they were done \
             with their cause, so the order around them was chosen without them; if the \
             path does not replay, this finding may be an artefact of that timing",
            run.late_reports
        );
    }
}
