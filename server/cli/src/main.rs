//! The `flymc` command line.
//!
//! Exit codes: 0 explored without a violation (or a replay matched), 1 a violation was found (or
//! reproduced), 2 a usage, setup or target error (a run says first what it explored), 3 a
//! replay diverged from its path file, 128 + N ended by signal N after cleaning up (130 Ctrl-C,
//! 143 SIGTERM, 129 SIGHUP, 131 SIGQUIT; a run says first what it explored). docs/FINDINGS.md
//! lists them for users.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::builder::{RangedU64ValueParser, TypedValueParser};
use clap::{Parser, Subcommand};
use flymc::progress::Reporter;
use flymc::summary;
use flymc::systems;
use flymc_core::explore::{explore_partial, ExploreConfig, KeepLogs};
use flymc_core::pathfile::PathFile;
use flymc_core::replay::{replay, workload_for, ReplayOutcome};
use flymc_core::run::Run;
use flymc_core::workloads;
use flymc_core::CrashPoints;
use flymc_model::escape;
use flymc_model::workload::{MAX_EVENTS, MAX_NODES};
use flymc_strategies::{FlymcOptions, StrategyContext, StrategyKind};

#[derive(Parser)]
#[command(
    name = "flymc",
    version,
    about = "A systematic model checker for real distributed systems"
)]
struct Cli {
    /// Folder of workload files (default: ./workloads or the checkout's; or $FLYMC_WORKLOADS).
    #[arg(long, global = true, value_name = "DIR")]
    workloads: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Explore a workload's event orders until a violation, exhaustion, or the path budget.
    Run(RunArgs),
    /// Re-execute a path file and check it reaches the same states and violation.
    Replay {
        /// A path file written by `flymc run`.
        file: PathBuf,
        /// Where real nodes run: local processes or Docker containers.
        #[arg(long, default_value = "local", value_parser = ["local", "docker"])]
        backend: String,
        /// The system to run it on, a name or a system.toml (default: the path's system, built
        /// in or under ./systems/; the system file a path file records is not run on its word).
        #[arg(long, value_name = "NAME|FILE")]
        system: Option<String>,
        /// Run the programs the path file's own parameters name (ZooKeeper's `zookeeper_home`),
        /// which a path file alone does not choose (docs/SECURITY.md).
        #[arg(long)]
        trust_params: bool,
    },
    /// Write a sets file from annotated Java or Rust sources (FlyMC §4.1).
    Analyze(AnalyzeArgs),
    /// List the systems flymc can check.
    Systems,
    /// Compare every strategy on the simulated bug and exhaustion workloads (FlyMC Figures 1, 8
    /// and 13): prints tables, writes bench.json and two SVG bar charts.
    Bench(BenchArgs),
    /// List the workloads of one system (or of all).
    Workloads { system: Option<String> },
    /// Draw a path file as a sequence diagram: a lane per node, arrows for messages, marks for
    /// timers, crashes, reboots and the violation.
    Show(flymc::show::ShowArgs),
    /// Shrink a violating path (delta debugging): drop faults, undo reorderings and drop client
    /// requests while the same property still fails; writes the shrunk path beside it.
    Shrink(flymc::shrink::ShrinkArgs),
    /// Step through a path on the real or simulated target (MaceMC's Mdb): step, back, jump,
    /// state, diff, events, filter.
    Debug(flymc::debug::DebugArgs),
    /// A bug-hunting campaign for CI: replay the corpus's known findings, explore to a budget,
    /// write JUnit, SARIF, JSON and HTML reports (`flymc hunt merge` joins shards).
    Hunt(flymc::hunt::HuntArgs),
    /// Run a workload live (events as they arrive, random faults), predict its violations
    /// before they happen (CrystalBall's consequence prediction) and with --steer avoid them.
    Watch(flymc::watch::WatchArgs),
    /// Install and build what a real system needs (`flymc setup zookeeper [--docker]`), or CRIU
    /// for cluster snapshots (`flymc setup criu`).
    Setup {
        /// The system to set up, or `criu`.
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(
            systems::SETUPS.iter().map(|(name, _)| *name)
        ))]
        system: String,
        /// Also build the Docker image the docker backend runs (from nothing, no pull).
        #[arg(long)]
        docker: bool,
        /// zookeeper: build a variant of your own named NAME from --patch (and nothing else).
        #[arg(long, value_name = "NAME", requires = "patch")]
        variant: Option<String>,
        /// zookeeper: the unified diff (paths as in ZooKeeper's repository, `a/` and `b/`)
        /// applied to Debian's 3.8.0 source for --variant; the Java files it changes are
        /// recompiled with javac.
        #[arg(long, value_name = "FILE.diff", requires = "variant")]
        patch: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
struct AnalyzeArgs {
    /// Source language.
    #[arg(long, value_parser = ["java", "rust"])]
    lang: String,
    /// Source files or folders (searched recursively).
    #[arg(required = true)]
    sources: Vec<PathBuf>,
    /// A TOML side file annotating code you do not want to touch (see analyzer/README.md).
    #[arg(long, value_name = "FILE")]
    annotations: Option<PathBuf>,
    /// The system name written into the sets file.
    #[arg(long, default_value = "unnamed")]
    system: String,
    /// Where to write the sets file (JSON). The `--format` output goes to stdout either way,
    /// except `--format json` with `--out`, where the JSON goes only to the file.
    #[arg(long, value_name = "SETS.json")]
    out: Option<PathBuf>,
    /// What to print: the sets file as JSON, or a human-readable report.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    format: String,
    /// Take the message kinds the analysis does not produce (code it was not given) from
    /// this sets file, e.g. a hand-written one; the report names them.
    #[arg(long, value_name = "SETS.json")]
    keep: Option<PathBuf>,
    /// Print, for every entry whose sets hold node variable VAR, which call or statement
    /// (file:line, method) put it in each set, instead of the report.
    #[arg(long, value_name = "VAR")]
    explain: Option<String>,
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Which benchmark: `sims` (strategies on the simulated workloads), `hooks` (the event
    /// server's throughput and added latency with no-op demo nodes) or `real` (paths/s on real
    /// ZooKeeper and Raft clusters with each throughput lever on and off).
    #[arg(default_value = "sims", value_parser = ["sims", "hooks", "real"])]
    what: String,
    /// real: paths per variant on ZooKeeper le-3crash.
    #[arg(long, default_value_t = 100, value_name = "N")]
    zookeeper_paths: u64,
    /// real: paths per variant on Raft le.
    #[arg(long, default_value_t = 100, value_name = "N")]
    raft_paths: u64,
    /// hooks: events to send through the server.
    #[arg(long, default_value_t = 2000,
          value_parser = clap::value_parser!(u64).range(1..=MAX_EVENTS as u64))]
    events: u64,
    /// hooks: demo nodes.
    #[arg(long, default_value_t = 2,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_NODES as u64))]
    nodes: usize,
    /// Path budget per exploration (FlyMC's Figure 8 stops at 10,000).
    #[arg(long, default_value_t = 10_000)]
    cap: u64,
    /// Seeds averaged for the random strategies.
    #[arg(long, default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(1..=flymc::hunt::campaign::MAX_SEEDS))]
    seeds: u64,
    /// Explorations run side by side (default: the number of cores); each explores its paths
    /// one at a time (unlike `flymc run --jobs`, which runs one exploration's paths side by side).
    /// `bench real`: clusters side by side in its all-levers row (default 1, as `flymc run`).
    #[arg(long, value_parser = RangedU64ValueParser::<usize>::new().range(1..=256))]
    jobs: Option<usize>,
    /// Only these workloads (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Only these strategies (comma-separated; flymc's ablations run with flymc).
    #[arg(long, value_delimiter = ',')]
    strategies: Vec<String>,
    /// sims: use this sets file instead of the one its system ships (for the system the
    /// file's `system` names; repeatable), e.g. one `flymc analyze` wrote.
    #[arg(long, value_name = "FILE")]
    sets: Vec<PathBuf>,
    /// Depth bound for bdpor and brdpor.
    #[arg(long, default_value_t = 25)]
    bound: usize,
    /// Where bench.json and the charts go.
    #[arg(long, default_value = "flymc-out/bench", value_name = "DIR")]
    out: PathBuf,
}

#[derive(clap::Args)]
struct RunArgs {
    /// The system to check (see `flymc systems`).
    #[arg(long)]
    system: String,
    /// A workload name (see `flymc workloads SYSTEM`) or a path to a workload TOML file.
    #[arg(long)]
    workload: String,
    /// Exploration strategy [default: portfolio, or dfs with --stateless].
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(StrategyKind::names())
        .map(|s| s.parse::<StrategyKind>().expect("clap checked the name")))]
    strategy: Option<StrategyKind>,
    /// Stop after this many paths.
    #[arg(long, value_name = "N")]
    max_paths: Option<u64>,
    /// Seed for the random strategies (recorded in path files).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Depth bound for bdpor and brdpor.
    #[arg(long, default_value_t = 25)]
    bound: usize,
    /// The bug depth pct builds its paths for: d - 1 priority change points per path (PCTCP).
    #[arg(long, value_name = "D", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    depth: u32,
    /// dfs over every interleaving, re-expanding a state each time another order reaches it
    /// (the FlyMC paper's naive DFS), instead of expanding each state once.
    #[arg(long)]
    stateless: bool,
    /// Where path files go.
    #[arg(long, default_value = "flymc-out", value_name = "DIR")]
    out: PathBuf,
    /// Run every new path twice and fail loudly on any difference.
    #[arg(long)]
    check_determinism: bool,
    /// Also write the path file of every explored path, not only of violating ones (to study
    /// what the checker did; one file per path).
    #[arg(long)]
    save_paths: bool,
    /// Also write the summary as JSON (paths, states, late reports, where the time went).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Go on exploring after a violation, to the path budget or exhaustion, and write a path
    /// file for every distinct finding (property and message), not only the first.
    #[arg(long)]
    keep_going: bool,
    /// Keep the nodes' logs of every path under DIR (`...-pathN.logs/`), not only those of
    /// violating paths (which are always kept beside their path file).
    #[arg(long)]
    keep_logs: bool,
    /// Keep every run's directory (node data directories and logs) instead of removing it
    /// when the path ends; its location is printed per path at debug level
    /// (FLYMC_LOG=flymc_real=debug). Real nodes only; takes disk space fast.
    #[arg(long)]
    keep_run_dirs: bool,
    /// Where real nodes run: local processes on 127.0.k.x or Docker containers.
    #[arg(long, default_value = "local", value_parser = ["local", "docker"])]
    backend: String,
    /// zookeeper: run this variant instead of the workload's (one `flymc setup zookeeper
    /// --variant NAME --patch FILE.diff` built, or zookeeper-1419).
    #[arg(long, value_name = "NAME")]
    variant: Option<String>,
    /// zookeeper: run the ZooKeeper you built, from its folder (with lib/*.jar), instead of
    /// Debian's (local processes).
    #[arg(long, value_name = "DIR")]
    zookeeper_home: Option<PathBuf>,
    /// Where the event server listens for real nodes' hooks (default 127.0.0.1, a free port).
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Option<std::net::SocketAddr>,
    /// Paths explored at once, each on a cluster of its own (real nodes: own addresses, ports,
    /// data directories and event server). The strategy sees the results in path order, so a
    /// run with a given N is deterministic.
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=256))]
    jobs: u16,
    /// Re-execute every path from the start instead of restoring cluster snapshots taken at
    /// branch points (real nodes on the local backend, with CRIU from `flymc setup criu`).
    #[arg(long)]
    no_snapshots: bool,
    /// Where crashes strike: right after a node's crash-point write and at rest points
    /// (nothing pending but timers), or before every step. Default: after writes for systems
    /// whose nodes report them (ZooKeeper's hooks file has `disk` points), everywhere otherwise.
    #[arg(long, value_name = "WHERE")]
    crash_points: Option<CrashPointsArg>,
    /// Sets file for samc and flymc (default: the one the system ships).
    #[arg(long, value_name = "FILE")]
    sets: Option<PathBuf>,
    /// Random walks from the end state of a run that fails a liveness property before it is
    /// called dead and reported (MaceMC); a state some walk takes to the property is transient
    /// and not reported. Each walk re-executes the path (seconds on real nodes), and a dead
    /// state's critical-transition search takes up to W walks per probe. 0: report every end
    /// state that fails it, unclassified.
    #[arg(long, value_name = "W", default_value_t = flymc_core::liveness::Walks::DEFAULT_WALKS)]
    walks: u32,
    /// Events per liveness walk (default: the workload's event limit).
    #[arg(long, value_name = "D",
          value_parser = RangedU64ValueParser::<usize>::new().range(0..=MAX_EVENTS as u64))]
    walk_depth: Option<usize>,
    #[command(flatten)]
    ablation: Ablation,
}

/// `--crash-points`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum CrashPointsArg {
    AfterWrites,
    Everywhere,
}

/// Switches for flymc's ablations (FlyMC Figure 13).
#[derive(clap::Args, Clone, Copy, Default)]
struct Ablation {
    /// flymc without state symmetry.
    #[arg(long)]
    no_symmetry: bool,
    /// flymc without sets-file independence (MoDist's rule instead).
    #[arg(long)]
    no_independence: bool,
    /// flymc with parallel flips (the paper's; off by default: they cost paths on every
    /// measured bug, docs/BENCHMARKS.md).
    #[arg(long)]
    parallel_flips: bool,
    /// Parallel flips are off by default now; kept so that older scripts still run.
    #[arg(long, hide = true)]
    no_parallel_flips: bool,
    /// No state-event cache.
    #[arg(long)]
    no_cache: bool,
    /// faults and flymc judge states by the nodes' reported variables only, not also by what
    /// their crash-point writes put on disk (fewer paths, but a crash between two writes of
    /// one step can be pruned as already tried).
    #[arg(long)]
    no_disk_state: bool,
}

/// A reader that went away (`flymc workloads | head -3`) ends flymc the way it ends any Unix
/// tool, silently with SIGPIPE's status (141), after the nodes are cleaned up. Rust ignores
/// SIGPIPE, so the failed write surfaces as `println!`'s panic; restoring SIGPIPE's default
/// instead would kill flymc with its nodes still running.
fn exit_quietly_when_stdout_closes() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            flymc_real::cluster::cleanup_all();
            std::process::exit(141);
        }
        default_hook(info);
    }));
}

fn main() -> ExitCode {
    // First, while flymc has one thread: the process that cleans up after a SIGKILLed flymc.
    flymc_real::cluster::janitor::install();
    // Node processes must not outlive flymc, also on Ctrl-C.
    flymc_real::cluster::install_cleanup_handler();
    exit_quietly_when_stdout_closes();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FLYMC_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, not in a log file or a CI pipe.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout with exit 0 and usage errors with exit 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let result = dispatch(cli);
    if let Some(signal) = flymc_real::cluster::interrupted_by() {
        // A signal: the nodes were killed under whatever ran; `run` said what it explored,
        // other commands have nothing more to say.
        flymc_real::cluster::interruption_reported();
        flymc_real::cluster::wait_for_cleanup();
        return ExitCode::from(flymc_real::cluster::exit_code(signal));
    }
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // Errors quote files and nodes: escaped so they stay one inert line.
            eprintln!("error: {}", escape::line(&one_line(&e)));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes on one line.
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    let line = parts.join(": ").replace('\n', " ");
    match out_of_descriptors(&line) {
        Some(hint) => format!("{line}; {hint}"),
        None => line,
    }
}

/// What to do when an error comes from running out of file descriptors (EMFILE, ENFILE): the
/// OS's "Too many open files" names neither the limit nor the fix.
fn out_of_descriptors(line: &str) -> Option<String> {
    if line.contains("(os error 23)") {
        return Some(
            "the system ran out of open files (fs.file-max): close what holds them and run again"
                .into(),
        );
    }
    if !line.contains("(os error 24)") {
        return None;
    }
    let limit = flymc_real::eventserver::conns::descriptor_limit()
        .map_or("unlimited".into(), |n| n.to_string());
    Some(format!(
        "flymc ran out of file descriptors (its limit is {limit}): raise it with `ulimit -n` and run again"
    ))
}

fn dispatch(cli: Cli) -> Result<u8> {
    let folder = cli.workloads.as_deref();
    match cli.command {
        Command::Run(args) => run(args, folder),
        Command::Replay {
            file,
            backend,
            system,
            trust_params,
        } => replay_cmd(&file, folder, &backend, system.as_deref(), trust_params),
        Command::Setup {
            system,
            variant: Some(variant),
            patch: Some(patch),
            ..
        } => {
            if system != flymc_zookeeper::SYSTEM_NAME {
                anyhow::bail!("--variant and --patch build ZooKeeper variants: use `flymc setup zookeeper --variant {variant} --patch FILE.diff`");
            }
            flymc_zookeeper::setup::build_variant(&variant, &patch, &mut |m| {
                println!("setup: {m}")
            })
            .map_err(anyhow::Error::msg)?;
            println!("setup: done; run it with `flymc run --system zookeeper --variant {variant} --workload NAME`");
            Ok(0)
        }
        Command::Setup { system, docker, .. } => {
            let (name, setup) = systems::SETUPS
                .iter()
                .find(|(name, _)| *name == system)
                .expect("clap checks the name against SETUPS");
            // Setup messages may echo what a file or a build printed.
            setup(docker, &mut |m| println!("setup: {}", escape::lines(m)))
                .map_err(|e| anyhow::Error::msg(escape::line(&e).into_owned()))?;
            if *name == systems::CRIU {
                println!("setup: done; CRIU is ready for cluster snapshots");
            } else {
                println!("setup: done; try `flymc workloads {name}`, then `flymc run --system {name} --workload NAME`");
            }
            Ok(0)
        }
        Command::Bench(args) => bench(args, folder),
        Command::Show(args) => flymc::show::run(&args),
        Command::Shrink(args) => flymc::shrink::run(&args, folder),
        Command::Debug(args) => flymc::debug::run(&args, folder),
        Command::Hunt(args) => flymc::hunt::run(args, folder),
        Command::Watch(args) => flymc::watch::run(&args, folder),
        Command::Analyze(args) => analyze(args),
        Command::Systems => {
            let (listed, left_out) = systems::listed_with_errors();
            // A system file's name and description are the file's text.
            for s in listed {
                let name = escape::line(s.name());
                println!("{name:<16} {}", escape::line(s.description()));
            }
            for (file, e) in left_out {
                let why = escape::line(&e.to_string()).into_owned();
                eprintln!(
                    "flymc: {} left out: {why}",
                    escape::line(&file.display().to_string())
                );
            }
            Ok(0)
        }
        Command::Workloads { system } => {
            let list: Vec<Box<dyn flymc_model::System>> = match system {
                Some(name) => vec![systems::find(&name)?],
                None => systems::listed(),
            };
            for system in list {
                let dir = systems::workloads_dir(system.as_ref(), folder)?;
                for name in workloads::names_in(&dir) {
                    let w = workloads::load_in(&dir, system.name(), &name)?;
                    println!(
                        "{:<14} {:<12} {}",
                        escape::line(system.name()),
                        escape::line(&name),
                        escape::line(&w.description)
                    );
                }
            }
            Ok(0)
        }
    }
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
}

fn run(args: RunArgs, folder: Option<&Path>) -> Result<u8> {
    if args.stateless && args.strategy() != StrategyKind::Dfs {
        anyhow::bail!(
            "--stateless only applies to --strategy dfs (got `{}`); drop it or use dfs",
            args.strategy()
        );
    }
    if let Some(addr) = args.listen.filter(|a| a.port() != 0 && args.jobs > 1) {
        anyhow::bail!(
            "--listen {addr} gives one event server a fixed port, and --jobs {} needs one server per job: listen on port 0 (--listen {}:0) or drop --jobs",
            args.jobs,
            addr.ip()
        );
    }
    let mut options = systems::options(&args.backend, args.listen, !args.no_snapshots)?;
    options.keep_run_dirs = args.keep_run_dirs;
    let system = systems::find_with(&args.system, &options)?;
    systems::announce(system.as_ref());
    let dir = systems::workloads_dir(system.as_ref(), folder)?;
    let mut workload = workloads::load_in(&dir, system.name(), &args.workload)?;
    workload.system_file = system.file();
    zookeeper_overrides(&args, &mut workload)?;
    workloads::check_expect(system.as_ref(), &workload)?;
    let sets = if args.strategy().uses_sets() || args.sets.is_some() {
        systems::load_sets(system.as_ref(), &workload, args.sets.as_deref())?
    } else {
        None
    };
    let ctx = StrategyContext {
        workload: &workload,
        symmetry: system.symmetry(&workload),
        seed: args.seed,
        bound: args.bound,
        // Expanding a state once is sound only when the reported state decides the future.
        stateless_dfs: args.stateless || !system.states_are_complete(),
        sets,
        flymc: FlymcOptions {
            symmetry: !args.ablation.no_symmetry,
            independence: !args.ablation.no_independence,
            parallel_flips: args.ablation.parallel_flips && !args.ablation.no_parallel_flips,
        },
        fault_vars: system.fault_vars(),
        disk_state: !args.ablation.no_disk_state,
        pct_depth: args.depth,
    };
    let mut strat = args.strategy().build(&ctx)?;
    let cfg = ExploreConfig {
        max_paths: args.max_paths,
        check_determinism: args.check_determinism,
        cache: !args.ablation.no_cache,
        jobs: args.jobs.into(),
        snapshots: system.snapshots(),
        keep_going: args.keep_going,
        interrupted: Some(flymc_real::cluster::interrupted),
        logs: Some(KeepLogs {
            dir: args.out.clone(),
            prefix: format!("{}-{}-{}", system.name(), workload.name, args.strategy()),
            all: args.keep_logs,
        }),
        walks: (args.walks > 0).then_some(flymc_core::liveness::Walks {
            walks: args.walks,
            depth: args.walk_depth,
            seed: args.seed,
        }),
        crash_points: match args.crash_points {
            Some(CrashPointsArg::AfterWrites) => CrashPoints::AfterWrites,
            Some(CrashPointsArg::Everywhere) => CrashPoints::Everywhere,
            None => CrashPoints::for_system(system.as_ref()),
        },
        ..Default::default()
    };
    println!(
        "flymc: {} / {} with {} (seed {}){}{}{}{}",
        system.name(),
        workload.name,
        args.strategy(),
        args.seed,
        if args.backend == "local" {
            String::new()
        } else {
            format!(", nodes on {}", args.backend)
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
    let mut reporter = Reporter::new(&format!("{}/{}", system.name(), workload.name));
    let mut saved: Result<()> = Ok(());
    let mut number = 0u64;
    let mut last: Option<flymc_core::explore::Progress> = None;
    // With --keep-going: every distinct finding, its first path. Distinct as a hunt tells them
    // apart (hunt::signature: the property and the message's words, numbers left out), so one
    // root cause reached at other indices or terms is one finding.
    let mut findings: Vec<(u64, Run)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let (outcome, failure) = explore_partial(
        system.as_ref(),
        &workload,
        strat.as_mut(),
        &cfg,
        &mut |p| {
            reporter.update(p);
            last = Some(p.clone());
        },
        &mut |run| {
            number += 1;
            if run.violation.is_some() && args.keep_going {
                let path =
                    PathFile::from_run(&workload, args.strategy().name(), args.seed, number, run);
                let finding =
                    flymc::hunt::signature::of(&path).map(|s| flymc::hunt::signature::id(&s));
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
                    PathFile::from_run(&workload, args.strategy().name(), args.seed, number, run)
                        .save(&file)
                        .map_err(Into::into);
            }
        },
    );
    reporter.finish();
    // Whatever ended the run, what was explored is reported and every path file kept.
    let signal = flymc_real::cluster::interrupted_by();
    // An error an interruption caused (nodes killed under the path) is no error of its own.
    let failure = failure.filter(|_| signal.is_none());
    let secs = outcome.elapsed.as_secs_f64();
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
        PathFile::from_run(&workload, args.strategy().name(), args.seed, *number, run)
            .save(&file)?;
        report_violation(*number, run, &file, system.file().as_deref());
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
    let code = match &outcome.violation {
        _ if signal.is_some() => {
            println!(
                "{}: the path under way was dropped; what was explored before it:",
                stopped.as_deref().unwrap_or("interrupted")
            );
            0
        }
        _ if failure.is_some() => {
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
    };
    let stats = &outcome.stats;
    let mut summary = format!(
        "summary: {} paths, {} events, {} unique states, {:.2} s ({} paths/s), queue left {}",
        outcome.paths,
        outcome.events,
        outcome.unique_states.len(),
        secs,
        summary::paths_per_sec(outcome.paths, secs),
        strat.queue_len(),
    );
    let lookups = outcome.cache_hits + outcome.cache_misses;
    if lookups > 0 {
        summary += &format!(
            ", state-event cache {:.0}% hits ({} of {})",
            100.0 * outcome.cache_hits as f64 / lookups as f64,
            outcome.cache_hits,
            lookups
        );
    }
    for (why, n) in &stats.pruned {
        summary += &format!(", pruned by {why} {n}");
    }
    if stats.fault_states > 0 {
        summary += &format!(", {} fault states", stats.fault_states);
    }
    if stats.abstract_states > 0 {
        summary += &format!(", {} abstract states", stats.abstract_states);
    }
    if stats.deprioritized > 0 {
        summary += &format!(", deprioritised {}", stats.deprioritized);
    }
    if outcome.diverged > 0 {
        summary += &format!(", {} paths diverged from their plan", outcome.diverged);
    }
    if outcome.unconfirmed > 0 {
        summary += &format!(
            ", {} violations dropped (they did not recur when executed again from a fresh start)",
            outcome.unconfirmed
        );
    }
    if outcome.late_paths > 0 {
        summary += &format!(
            ", {} events reported late on {} paths",
            outcome.late_reports, outcome.late_paths
        );
    }
    println!("{summary}");
    if !stats.shares.is_empty() {
        let shares: Vec<String> = stats
            .shares
            .iter()
            .map(|(m, n)| format!("{m} {n}"))
            .collect();
        println!("portfolio: paths by member: {}", shares.join(", "));
    }
    if let Some(b) = &stats.pct {
        println!(
            "pct guarantee: a bug of depth {} is hit with probability >= 1/({} chains x {} events^{}) = {:.3e} per path, so >= {:.3e} over these {} paths",
            b.depth,
            b.chains,
            b.events,
            b.depth.saturating_sub(1),
            b.per_run,
            b.over(outcome.paths),
            outcome.paths
        );
    }
    if let Some(line) = summary::coverage_line(&outcome.coverage) {
        println!("{line}");
    }
    if let Some(line) = summary::liveness_line(&outcome.liveness) {
        println!("{line}");
    }
    println!("{}", summary::time_line(&outcome.timing));
    if cfg.snapshots {
        println!("{}", summary::snapshot_line(&outcome.snapshots));
    }
    if let Some(file) = &args.json {
        let mut s = summary::RunSummary::new(
            &outcome,
            system.name(),
            &workload.name,
            args.strategy().name(),
            args.seed,
        );
        s.stopped = stopped;
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

fn analyze(args: AnalyzeArgs) -> Result<u8> {
    let opts = flymc_analyzer::AnalyzeOptions {
        lang: args.lang.parse().map_err(|e| anyhow::anyhow!("{e}"))?,
        sources: args.sources,
        annotations: args.annotations,
        system: args.system,
    };
    let mut a = flymc_analyzer::analyze(&opts)?;
    if let Some(keep) = &args.keep {
        a.keep_from(keep)?;
    }
    for gap in a.gaps() {
        eprintln!("warning: {gap}");
    }
    match args.format.as_str() {
        _ if args.explain.is_some() => print!("{}", a.explain(args.explain.as_deref().unwrap())?),
        "json" if args.out.is_none() => print!("{}", a.to_json()),
        "json" => {}
        _ => print!("{}", a.to_text()),
    }
    if let Some(out) = &args.out {
        flymc_core::outfile::write_atomically(out, a.to_json().as_bytes())
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out.display()))?;
        eprintln!(
            "wrote {} ({} gaps reported above)",
            out.display(),
            a.gaps().len()
        );
    }
    Ok(0)
}

/// `--variant` and `--zookeeper-home`: workload parameters of the zookeeper system, set over
/// the file's (and recorded in path files, so replays run the same build).
fn zookeeper_overrides(args: &RunArgs, w: &mut flymc_model::Workload) -> Result<()> {
    let given = [
        ("variant", args.variant.clone().map(serde_json::Value::from)),
        (
            "zookeeper_home",
            args.zookeeper_home
                .as_ref()
                .map(|d| std::path::absolute(d).unwrap_or_else(|_| d.clone()))
                .map(|d| serde_json::Value::from(d.display().to_string())),
        ),
    ];
    for (key, value) in given {
        let Some(value) = value else { continue };
        if w.system != flymc_zookeeper::SYSTEM_NAME {
            anyhow::bail!(
                "--{} is for --system zookeeper, not {}",
                key.replace('_', "-"),
                w.system
            );
        }
        w.set_param(key, value);
    }
    // Checked now, so a bad value is one line before anything starts.
    if w.system == flymc_zookeeper::SYSTEM_NAME {
        flymc_zookeeper::params(w).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(())
}

fn bench(args: BenchArgs, folder: Option<&Path>) -> Result<u8> {
    if args.what == "hooks" {
        let cfg = flymc::hookbench::HookBenchConfig {
            events: args.events,
            nodes: args.nodes,
            program: None,
        };
        let b = flymc::hookbench::bench_hooks(&cfg)?;
        print!("{}", b.table());
        std::fs::create_dir_all(&args.out)?;
        let file = args.out.join("hooks.json");
        flymc_core::outfile::write_atomically(&file, serde_json::to_string_pretty(&b)?.as_bytes())?;
        println!("wrote {}", file.display());
        return Ok(0);
    }
    let folder = workloads::folder(folder)?;
    if args.what == "real" {
        let cfg = flymc::bench::real::RealBenchConfig {
            zookeeper_paths: args.zookeeper_paths,
            raft_paths: args.raft_paths,
            jobs: args.jobs.unwrap_or(1),
            only: args.only,
            out: args.out,
        };
        println!(
            "flymc bench real: {} ZooKeeper and {} Raft paths per variant, --jobs {} with every lever on",
            cfg.zookeeper_paths, cfg.raft_paths, cfg.jobs
        );
        let report = flymc::bench::real::run(&cfg, &folder, &|line| eprintln!("{line}"))?;
        print!("{}", flymc::bench::real::table(&report));
        println!(
            "wrote {}",
            flymc::bench::real::write(&report, &cfg.out)?.display()
        );
        println!("bench took {:.1} s", report.seconds);
        if !report.consistent() {
            anyhow::bail!("variants explored different paths (the `same paths` column and `other paths from` lines say where): a lever changed them, or the system does not run deterministically under flymc there");
        }
        return Ok(0);
    }
    let cfg = flymc::bench::BenchConfig {
        cap: args.cap,
        seeds: args.seeds,
        jobs: args
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        out: args.out.clone(),
        only: args.only,
        strategies: args.strategies,
        bound: args.bound,
        sets: flymc::bench::sets_by_system(&args.sets)?,
    };
    println!(
        "flymc bench {}: cap {} paths, {} seeds for random strategies, {} explorations side by side",
        args.what, cfg.cap, cfg.seeds, cfg.jobs
    );
    let report = flymc::bench::run(&cfg, &folder, &|line| eprintln!("{line}"))?;
    print!("{}", flymc::bench::tables(&report));
    for f in flymc::bench::write(&report, &cfg.out)? {
        println!("wrote {}", f.display());
    }
    println!("bench took {:.1} s", report.seconds);
    Ok(0)
}

fn replay_cmd(
    file: &Path,
    folder: Option<&Path>,
    backend: &str,
    given: Option<&str>,
    trust_params: bool,
) -> Result<u8> {
    let path = PathFile::load(file)?;
    let system = systems::for_path(&path, backend, given)?;
    systems::check_recorded_params(&path, system.as_ref(), trust_params)?;
    let workload = workload_for(&path, folder)?;
    workloads::check_expect(system.as_ref(), &workload)?;
    println!(
        "replaying {} ({} / {}, {} events, recorded by {} path {})",
        file.display(),
        escape::line(&path.system),
        escape::line(&path.workload.name),
        path.events.len(),
        escape::line(&path.strategy),
        path.path_number
    );
    systems::announce(system.as_ref());
    // What follows quotes the path file and the nodes: escaped before it reaches a terminal.
    let json = |s: &flymc_model::GlobalState| -> Result<String> {
        Ok(escape::line(&serde_json::to_string(s)?).into_owned())
    };
    match replay(&path, system.as_ref(), &workload)? {
        ReplayOutcome::Reproduced(v) => {
            println!("reproduced: {}", escape::line(&v.to_string()));
            Ok(1)
        }
        ReplayOutcome::Matched => {
            println!("matched: every state as recorded, no violation");
            Ok(0)
        }
        ReplayOutcome::Diverged {
            step,
            event,
            expected,
            observed,
            differences,
        } => {
            println!("diverged at step {step} ({})", escape::line(&event));
            for d in &differences {
                println!("  expected vs observed: {}", escape::line(d));
            }
            println!("  expected state: {}", json(&expected)?);
            match observed {
                Some(o) => println!("  observed state: {}", json(&o)?),
                None => println!("  observed state: (step not taken)"),
            }
            if path.late_reports > 0 {
                println!(
                    "  note: while this path was recorded, nodes reported {} events late (after \
                     saying they were done); the recording may hold an order the system does not \
                     repeat",
                    path.late_reports
                );
            }
            Ok(3)
        }
        ReplayOutcome::ViolationDiffers { expected, observed } => {
            let show = |v: &Option<flymc_model::Violation>| {
                v.as_ref()
                    .map_or("no violation".to_string(), |v| v.to_string())
            };
            println!(
                "diverged: states matched but expected {} and observed {}",
                escape::line(&show(&expected)),
                escape::line(&show(&observed))
            );
            Ok(3)
        }
    }
}
