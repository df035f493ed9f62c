//! `flymc hunt`: a nightly bug-hunting campaign. It replays every path of a persistent corpus
//! first (known findings, CrystalBall §3.3), then explores its workloads until the budget,
//! files what it finds by [`report::Signature`], and writes JUnit, SARIF, JSON and HTML
//! reports from one [`report::HuntReport`]. `--shard K/N` splits the work deterministically;
//! `flymc hunt merge` joins the shards' outputs.

pub mod html;
pub mod junit;
pub mod locate;
pub mod report;
pub mod sarif;

use std::path::{Path, PathBuf};

use anyhow::Result;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HuntArgs {
    #[command(subcommand)]
    pub merge: Option<MergeCommand>,
    /// A campaign file (hunt.toml): targets, budget, properties to ignore.
    pub campaign: Option<PathBuf>,
    /// Hunt on this system (instead of, or on top of, a campaign file's targets).
    #[arg(long)]
    pub system: Option<String>,
    /// Its workloads (comma-separated; default: all of the system's).
    #[arg(long, value_delimiter = ',')]
    pub workload: Vec<String>,
    /// The strategy for --system's workloads.
    #[arg(long)]
    pub strategy: Option<String>,
    /// Seeds per workload for randomized strategies (seeds 0..N).
    #[arg(long, value_name = "N")]
    pub seeds: Option<u64>,
    /// The whole hunt's budget: a time (`120s`, `30m`, `2h`) or a path count per seed
    /// (`500paths`).
    #[arg(long)]
    pub budget: Option<String>,
    /// The persistent corpus of findings (read, and updated unless --shard).
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// Where the reports and this run's path files go.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run shard K of N (0-based): seeds K, K+N, ... of randomized strategies, and the
    /// branches at the first choice points that fall to K of systematic ones.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// What makes the exit code 1.
    #[arg(long, value_parser = ["new", "regressed", "any"])]
    pub fail_on: Option<String>,
    /// Properties whose violations are not findings (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub ignore: Vec<String>,
    /// Where real nodes run.
    #[arg(long, default_value = "local", value_parser = ["local", "docker"])]
    pub backend: String,
}

#[derive(clap::Subcommand)]
pub enum MergeCommand {
    /// Join the output folders of `flymc hunt --shard K/N` runs into one set of reports, and
    /// fold their findings into the corpus.
    Merge {
        /// The shards' output folders.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// Where the merged reports go.
        #[arg(long, value_name = "DIR", default_value = "flymc-hunt")]
        out: PathBuf,
        /// The corpus to fold the findings into.
        #[arg(long, value_name = "DIR")]
        corpus: Option<PathBuf>,
        /// What makes the exit code 1.
        #[arg(long, default_value = "new", value_parser = ["new", "regressed", "any"])]
        fail_on: String,
    },
}

pub fn run(args: HuntArgs, folder: Option<&Path>) -> Result<u8> {
    let _ = (args, folder);
    anyhow::bail!("`flymc hunt` is being built")
}
