//! `flymc bench`: compare every strategy on the simulated workloads (`sims`, FlyMC Figures 1,
//! 8 and 13), measure the event server with no-op demo nodes (`hooks`), or paths/s on real
//! clusters with each throughput lever on and off (`real`). The benchmarks themselves are
//! [`crate::bench`] and [`crate::hookbench`].

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::builder::RangedU64ValueParser;
use flymc_core::workloads;
use flymc_model::workload::{MAX_EVENTS, MAX_NODES};

use crate::bench::{self, real};

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Which benchmark: `sims` (strategies on the simulated workloads), `hooks` (the event
    /// server's throughput and added latency with no-op demo nodes) or `real` (paths/s on real
    /// ZooKeeper and Raft clusters with each throughput lever on and off).
    #[arg(value_enum, default_value_t = What::Sims)]
    pub what: What,
    /// real: paths per variant on ZooKeeper le-3crash.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub zookeeper_paths: u64,
    /// real: paths per variant on Raft le.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub raft_paths: u64,
    /// hooks: events to send through the server.
    #[arg(long, default_value_t = 2000,
          value_parser = clap::value_parser!(u64).range(1..=MAX_EVENTS as u64))]
    pub events: u64,
    /// hooks: demo nodes.
    #[arg(long, default_value_t = 2,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_NODES as u64))]
    pub nodes: usize,
    /// Path budget per exploration (FlyMC's Figure 8 stops at 10,000).
    #[arg(long, default_value_t = 10_000)]
    pub cap: u64,
    /// Seeds averaged for the random strategies.
    #[arg(long, default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(1..=crate::hunt::campaign::MAX_SEEDS))]
    pub seeds: u64,
    /// Explorations run side by side (default: the number of cores); each explores its paths
    /// one at a time (unlike `flymc run --jobs`, which runs one exploration's paths side by side).
    /// `bench real`: clusters side by side in its all-levers row (default 1, as `flymc run`).
    #[arg(long, value_parser = RangedU64ValueParser::<usize>::new().range(1..=256))]
    pub jobs: Option<usize>,
    /// Only these workloads (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Only these strategies (comma-separated; flymc's ablations run with flymc).
    #[arg(long, value_delimiter = ',')]
    pub strategies: Vec<String>,
    /// sims: use this sets file instead of the one its system ships (for the system the
    /// file's `system` names; repeatable), e.g. one `flymc analyze` wrote.
    #[arg(long, value_name = "FILE")]
    pub sets: Vec<PathBuf>,
    /// Depth bound for bdpor and brdpor.
    #[arg(long, default_value_t = 25)]
    pub bound: usize,
    /// Where bench.json and the charts go.
    #[arg(long, default_value = "flymc-out/bench", value_name = "DIR")]
    pub out: PathBuf,
}

/// Which benchmark.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    Sims,
    Hooks,
    Real,
}

pub fn run(args: BenchArgs, folder: Option<&Path>) -> Result<u8> {
    match args.what {
        What::Hooks => hooks(&args),
        What::Real => real(args, &workloads::folder(folder)?),
        What::Sims => sims(args, &workloads::folder(folder)?),
    }
}

fn hooks(args: &BenchArgs) -> Result<u8> {
    let cfg = crate::hookbench::HookBenchConfig {
        events: args.events,
        nodes: args.nodes,
        program: None,
    };
    let b = crate::hookbench::bench_hooks(&cfg)?;
    print!("{}", b.table());
    std::fs::create_dir_all(&args.out)?;
    let file = args.out.join("hooks.json");
    flymc_core::outfile::write_atomically(&file, serde_json::to_string_pretty(&b)?.as_bytes())?;
    println!("wrote {}", file.display());
    Ok(0)
}

fn real(args: BenchArgs, folder: &Path) -> Result<u8> {
    let cfg = real::RealBenchConfig {
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
    let report = real::run(&cfg, folder, &|line| eprintln!("{line}"))?;
    print!("{}", real::table(&report));
    println!("wrote {}", real::write(&report, &cfg.out)?.display());
    println!("bench took {:.1} s", report.seconds);
    if !report.consistent() {
        anyhow::bail!("variants explored different paths (the `same paths` column and `other paths from` lines say where): a lever changed them, or the system does not run deterministically under flymc there");
    }
    Ok(0)
}

fn sims(args: BenchArgs, folder: &Path) -> Result<u8> {
    let cfg = bench::BenchConfig {
        cap: args.cap,
        seeds: args.seeds,
        jobs: args
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        out: args.out.clone(),
        only: args.only,
        strategies: args.strategies,
        bound: args.bound,
        sets: bench::sets_by_system(&args.sets)?,
    };
    println!(
        "flymc bench sims: cap {} paths, {} seeds for random strategies, {} explorations side by side",
        cfg.cap, cfg.seeds, cfg.jobs
    );
    let report = bench::run(&cfg, folder, &|line| eprintln!("{line}"))?;
    print!("{}", bench::tables(&report));
    for f in bench::write(&report, &cfg.out)? {
        println!("wrote {}", f.display());
    }
    println!("bench took {:.1} s", report.seconds);
    Ok(0)
}
