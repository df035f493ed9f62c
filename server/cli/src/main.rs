//! The `flymc` command line: the arguments and which command runs. Each command is a module
//! (`flymc::commands`, and `show`, `shrink`, `debug`, `hunt`, `watch`); [`flymc::exit`] holds
//! how the binary starts and ends.
//!
//! Exit codes: 0 explored without a violation (or a replay matched), 1 a violation was found (or
//! reproduced), 2 a usage, setup or target error (a run says first what it explored), 3 a
//! replay diverged from its path file, 128 + N ended by signal N after cleaning up (130 Ctrl-C,
//! 143 SIGTERM, 129 SIGHUP, 131 SIGQUIT; a run says first what it explored). docs/FINDINGS.md
//! lists them for users.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use flymc::commands::{analyze, bench, replay, run, setup, systems, workloads};
use flymc::exit;

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
    Run(run::RunArgs),
    /// Re-execute a path file and check it reaches the same states and violation.
    Replay(replay::ReplayArgs),
    /// Write a sets file from annotated Java or Rust sources (FlyMC §4.1).
    Analyze(analyze::AnalyzeArgs),
    /// List the systems flymc can check.
    Systems,
    /// Compare every strategy on the simulated bug and exhaustion workloads (FlyMC Figures 1, 8
    /// and 13): prints tables, writes bench.json and two SVG bar charts.
    Bench(bench::BenchArgs),
    /// List the workloads of one system (or of all).
    Workloads(workloads::WorkloadsArgs),
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
    Setup(setup::SetupArgs),
}

fn main() -> ExitCode {
    // First, while flymc has one thread: the process that cleans up after a SIGKILLed flymc.
    flymc_real::cluster::janitor::install();
    // Node processes must not outlive flymc, also on Ctrl-C.
    flymc_real::cluster::install_cleanup_handler();
    exit::exit_quietly_when_stdout_closes();
    exit::init_logging();
    let mut cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return exit::usage_error(&e),
    };
    // FLYMC_* read once, here: the libraries are given what they say.
    match flymc::env::Env::read() {
        Ok(env) => cli.workloads = cli.workloads.or(env.install()),
        Err(message) => {
            eprintln!("flymc: {message}");
            return ExitCode::from(2);
        }
    }
    exit::code(dispatch(cli))
}

fn dispatch(cli: Cli) -> Result<u8> {
    let folder = cli.workloads.as_deref();
    match cli.command {
        Command::Run(args) => run::run(args, folder),
        Command::Replay(args) => replay::run(&args, folder),
        Command::Analyze(args) => analyze::run(args),
        Command::Systems => systems::run(),
        Command::Bench(args) => bench::run(args, folder),
        Command::Workloads(args) => workloads::run(&args, folder),
        Command::Show(args) => flymc::show::run(&args),
        Command::Shrink(args) => flymc::shrink::run(&args, folder),
        Command::Debug(args) => flymc::debug::run(&args, folder),
        Command::Hunt(args) => flymc::hunt::run(args, folder),
        Command::Watch(args) => flymc::watch::run(&args, folder),
        Command::Setup(args) => setup::run(args),
    }
}
