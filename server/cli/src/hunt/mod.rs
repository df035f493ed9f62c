//! `flymc hunt`: a nightly bug-hunting campaign. It replays every path of a persistent corpus
//! first (known findings, CrystalBall §3.3), then explores its workloads until the budget,
//! files what it finds by [`report::Signature`], and writes JUnit, SARIF, JSON and HTML
//! reports from one [`report::HuntReport`]. `--shard K/N` splits the work deterministically;
//! `flymc hunt merge` joins the shards' outputs.

/// `println!` for a summary line that quotes what nodes, shards and corpora said: control
/// characters escaped and a leading `::` neutralised before it reaches a terminal or a CI log.
macro_rules! say {
    ($($arg:tt)*) => {
        println!("{}", flymc_model::escape::line(&format!($($arg)*)))
    };
}

pub mod budget;
pub mod campaign;
pub mod classify;
pub mod corpus;
pub mod explore;
pub mod html;
pub mod junit;
pub mod locate;
pub mod merge;
pub mod recheck;
pub mod report;
pub mod sarif;
pub mod signature;

use std::path::{Path, PathBuf};

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Instant;

use anyhow::{Context, Result};
use flymc_core::pathfile::PathFile;
use flymc_core::workloads;
use flymc_model::{System, Workload};
use flymc_strategies::StrategyKind;

use crate::commands::options::ClusterArgs;
use crate::systems;
use campaign::{Campaign, Flags};
use classify::Seen;
use corpus::Corpus;
use explore::{Explored, Unit};
use recheck::Verdict;
use report::{FindingReport, HuntReport, Status};

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
    /// The strategy for --system's workloads [default: dfs].
    #[arg(long, value_enum)]
    pub strategy: Option<StrategyKind>,
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
    #[command(flatten)]
    pub cluster: ClusterArgs,
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
    if let Some(MergeCommand::Merge {
        shards,
        out,
        corpus,
        fail_on,
    }) = args.merge
    {
        return merge::run(&shards, &out, corpus.as_deref(), &fail_on);
    }
    let campaign = Campaign::new(
        args.campaign.as_deref(),
        Flags {
            system: args.system,
            workloads: args.workload,
            strategy: args.strategy.map(|k| k.name().to_string()),
            seeds: args.seeds,
            budget: args.budget,
            corpus: args.corpus,
            out: args.out,
            fail_on: args.fail_on,
            ignore: args.ignore,
        },
    )?;
    let shard = args.shard.as_deref().map(parse_shard).transpose()?;
    let folder = workloads::folder(folder)?;
    let options = args.cluster.options(true);
    let work = resolve(&campaign, &folder, &options, shard)?;
    let corpus = Corpus::load(&campaign.corpus)?;
    let out = &campaign.out;
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create the output folder {}", out.display()))?;
    let started = Instant::now();
    let started_at = now();
    let end = campaign.budget.time.map(|t| started + t);
    println!(
        "flymc hunt: {} workloads, budget {}{}, corpus {} ({} findings)",
        work.len(),
        campaign.budget_text,
        shard.map_or(String::new(), |(k, n)| format!(", shard {k}/{n}")),
        campaign.corpus.display(),
        corpus.entries.len()
    );
    let mut announced = HashSet::new();
    for w in work.iter().filter(|w| announced.insert(w.system.name())) {
        systems::announce(w.system.as_ref());
    }

    // 1. Known findings first: does each corpus path still violate on this build?
    let rechecked = recheck_corpus(&corpus, &work, &folder, shard, out)?;

    // 2. Explore until the budget, spreading what time is left over the explorations left.
    let units: usize = work.iter().map(|w| w.seeds.len()).sum();
    let mut done = 0usize;
    let mut explored: Vec<Explored> = Vec::new();
    let mut interrupted = false;
    for w in &work {
        let mut e = Explored::new(w.system.name(), &w.workload.name, w.strategy.name());
        for &seed in &w.seeds {
            if interrupted {
                break;
            }
            let deadline = end.map(|end| {
                let now = Instant::now();
                let left = u32::try_from(units - done).unwrap_or(u32::MAX);
                now + end.saturating_duration_since(now) / left
            });
            let unit = Unit {
                system: w.system.as_ref(),
                workload: &w.workload,
                strategy: w.strategy,
                seed,
                branches: w.branches,
                max_paths: campaign.budget.paths,
                deadline,
            };
            let before = (e.report.paths, e.found.len());
            if let Err(err) = e.run(&unit, &campaign.ignore, out) {
                e.report.exhausted = false;
                e.report.error = Some(format!("seed {seed}: {err:#}"));
            }
            done += 1;
            interrupted = e.interrupted;
            say!(
                "hunt: {}/{} {} seed {seed}: {} paths, {} findings{}",
                w.system.name(),
                w.workload.name,
                w.strategy,
                e.report.paths - before.0,
                e.found.len() - before.1,
                e.report
                    .error
                    .as_deref()
                    .map_or(String::new(), |err| format!(" (error: {err})"))
            );
        }
        explored.push(e);
    }

    // 3. What each finding is against the corpus, the corpus after it, and the reports.
    let mut findings = classify_all(&corpus, &rechecked, &explored, out, &started_at)?;
    locate(&mut findings, &work, &folder);
    classify::sort(&mut findings);
    let report = HuntReport {
        format: report::FORMAT.into(),
        version: report::VERSION,
        flymc_version: env!("CARGO_PKG_VERSION").into(),
        started: started_at.clone(),
        seconds: started.elapsed().as_secs_f64(),
        shard,
        budget: campaign.budget_text.clone(),
        fail_on: campaign.fail_on.clone(),
        workloads: explored.iter().map(|e| e.report.clone()).collect(),
        findings,
    };
    let states: BTreeMap<String, BTreeSet<u64>> = explored
        .iter()
        .map(|e| {
            (
                format!("{}/{}", e.report.system, e.report.workload),
                e.states.iter().copied().collect(),
            )
        })
        .collect();
    write_reports(&report, &states, out)?;
    if shard.is_none() && !interrupted {
        let mut corpus = corpus;
        classify::fold(&mut corpus, &report.findings, &started_at)?;
    }
    summarize(&report, out, shard.is_some());
    if let Some(signal) = flymc_real::cluster::interrupted_by() {
        println!("hunt interrupted: the reports hold what was explored; the corpus is unchanged");
        flymc_real::cluster::interruption_reported();
        return Ok(flymc_real::cluster::exit_code(signal));
    }
    Ok(exit_code(&report))
}

/// 1 when findings fail the hunt under its `fail_on`, 2 when a workload could not run, else 0.
pub fn exit_code(report: &HuntReport) -> u8 {
    if report.workloads.iter().any(|w| w.error.is_some()) {
        2
    } else if classify::failing(&report.findings, &report.fail_on) > 0 {
        1
    } else {
        0
    }
}

/// One workload to hunt on, resolved and checked before anything runs.
struct Work {
    system: Box<dyn System>,
    workload: Workload,
    strategy: StrategyKind,
    /// The seeds this hunt (or shard) runs.
    seeds: Vec<u64>,
    /// Shard k of n of a systematic strategy's branches.
    branches: Option<(u32, u32)>,
}

fn resolve(
    campaign: &Campaign,
    folder: &Path,
    options: &flymc_real::RealOptions,
    shard: Option<(u32, u32)>,
) -> Result<Vec<Work>> {
    let mut work = Vec::new();
    for t in &campaign.targets {
        let kind: StrategyKind = t
            .strategy
            .parse()
            .map_err(|e| anyhow::anyhow!("{e} (for {})", t.system))?;
        let randomized = kind.is_randomized();
        if shard.is_some() && !randomized && !flymc_strategies::shard::shards_by_branches(kind) {
            anyhow::bail!(
                "--shard cannot split `{}` soundly: randomized strategies are split by seeds and dfs by its first branches; hunt {} with dfs or a randomized strategy ({})",
                t.strategy,
                t.system,
                StrategyKind::all()
                    .filter(|s| s.is_randomized())
                    .map(StrategyKind::name)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        // The system first, so that a misspelt one is named as such.
        systems::find_with(&t.system, options)?;
        let names = if t.workloads.is_empty() {
            workloads::names(folder, &t.system)
        } else {
            t.workloads.clone()
        };
        if names.is_empty() {
            anyhow::bail!(
                "{} has no workloads under {}: add some or pass --workloads DIR",
                t.system,
                folder.join(&t.system).display()
            );
        }
        for name in names {
            let system = systems::find_with(&t.system, options)?;
            let workload = workloads::load(folder, system.name(), &name)?;
            workloads::check_expect(system.as_ref(), &workload)?;
            let (seeds, branches) = match (randomized, shard) {
                (true, Some((k, n))) => (
                    (0..t.seeds)
                        .filter(|s| s % u64::from(n) == u64::from(k))
                        .collect(),
                    None,
                ),
                (true, None) => ((0..t.seeds).collect(), None),
                (false, shard) => (vec![0], shard),
            };
            work.push(Work {
                system,
                workload,
                strategy: kind,
                seeds,
                branches,
            });
        }
    }
    if work.is_empty() {
        anyhow::bail!(
            "the campaign names no workload: the systems' workload folders under {} are empty",
            folder.display()
        );
    }
    Ok(work)
}

/// `K/N` with K < N.
fn parse_shard(text: &str) -> Result<(u32, u32)> {
    let bad = || {
        anyhow::anyhow!(
            "--shard `{text}` is not K/N with 0 <= K < N (for example 0/4; Slurm: $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)"
        )
    };
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let (k, n): (u32, u32) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if k >= n {
        return Err(bad());
    }
    Ok((k, n))
}

/// Replay the corpus findings of the hunted systems (this shard's share of them).
fn recheck_corpus(
    corpus: &Corpus,
    work: &[Work],
    folder: &Path,
    shard: Option<(u32, u32)>,
    out: &Path,
) -> Result<BTreeMap<String, Verdict>> {
    let mut verdicts = BTreeMap::new();
    let hunted: HashSet<&str> = work.iter().map(|w| w.system.name()).collect();
    let mine = corpus
        .entries
        .values()
        .filter(|e| hunted.contains(e.system.as_str()))
        .enumerate()
        .filter(|(i, _)| shard.is_none_or(|(k, n)| *i as u64 % u64::from(n) == u64::from(k)))
        .map(|(_, e)| e);
    for entry in mine {
        if flymc_real::cluster::interrupted_by().is_some() {
            break;
        }
        let file = corpus.path_file(&entry.id);
        let verdict = (|| -> Result<Verdict> {
            let path = PathFile::load(&file)?;
            let system = &work
                .iter()
                .find(|w| w.system.name() == entry.system)
                .expect("only hunted systems are rechecked")
                .system;
            let workload = workloads::load(folder, &entry.system, &entry.workload)?;
            let v = recheck::recheck(&path, system.as_ref(), &workload)?;
            std::fs::create_dir_all(out.join("findings"))?;
            flymc_core::outfile::copy_atomically(
                &file,
                &out.join("findings").join(format!("{}.json", entry.id)),
            )?;
            Ok(v)
        })();
        match verdict {
            Ok(v) => {
                say!(
                    "hunt: corpus {} ({} {}): {}",
                    entry.id,
                    entry.system,
                    entry.signature.property,
                    match &v {
                        Verdict::Violates => "still violates".to_string(),
                        Verdict::Passes { why } => format!("no longer violates: {why}"),
                    }
                );
                verdicts.insert(entry.id.clone(), v);
            }
            // A finding that cannot be replayed is not judged fixed: it stays as it was.
            Err(e) => say!(
                "hunt: corpus {} ({} {}): not replayed: {e:#}",
                entry.id,
                entry.system,
                entry.signature.property
            ),
        }
    }
    Ok(verdicts)
}

fn classify_all(
    corpus: &Corpus,
    rechecked: &BTreeMap<String, Verdict>,
    explored: &[Explored],
    out: &Path,
    now: &str,
) -> Result<Vec<FindingReport>> {
    let mut findings = Vec::new();
    let mut ids: BTreeSet<&str> = rechecked.keys().map(String::as_str).collect();
    let found: BTreeMap<&str, &explore::Found> = explored
        .iter()
        .flat_map(|e| e.found.iter().map(|(id, f)| (id.as_str(), f)))
        .collect();
    ids.extend(found.keys().copied());
    for id in ids {
        let entry = corpus.entries.get(id);
        let seen = Seen {
            entry,
            found: found.contains_key(id),
            still_violates: rechecked.get(id).map(|v| *v == Verdict::Violates),
        };
        let Some(status) = classify::status(&seen) else {
            continue;
        };
        let first_seen = entry.map_or(now, |e| e.first_seen.as_str());
        let (path, file) = match found.get(id) {
            Some(f) => (f.path.clone(), f.file.clone()),
            None => {
                let file = out.join("findings").join(format!("{id}.json"));
                (PathFile::load(&file)?, file)
            }
        };
        let file = std::fs::canonicalize(&file).unwrap_or(file);
        findings.extend(classify::report(id, status, &path, &file, first_seen));
    }
    Ok(findings)
}

/// Where each finding's property is defined, when its system says.
fn locate(findings: &mut [FindingReport], work: &[Work], folder: &Path) {
    let root = folder.parent().unwrap_or(Path::new("."));
    for f in findings.iter_mut() {
        if let Some(w) = work.iter().find(|w| w.system.name() == f.system) {
            f.location = locate::property_location(w.system.as_ref(), &f.signature.property, root);
        }
    }
}

/// hunt.json, junit.xml, results.sarif, report.html and states.json in `out`.
pub fn write_reports(
    report: &HuntReport,
    states: &BTreeMap<String, BTreeSet<u64>>,
    out: &Path,
) -> Result<()> {
    let w = |name: &str, r: std::io::Result<()>| {
        r.with_context(|| format!("cannot write {}", out.join(name).display()))
    };
    w(
        "hunt.json",
        flymc_core::outfile::write_atomically(
            &out.join("hunt.json"),
            (serde_json::to_string_pretty(report)? + "\n").as_bytes(),
        ),
    )?;
    w(
        "states.json",
        flymc_core::outfile::write_atomically(
            &out.join("states.json"),
            serde_json::to_string(states)?.as_bytes(),
        ),
    )?;
    w("junit.xml", junit::write(report, &out.join("junit.xml")))?;
    w(
        "results.sarif",
        sarif::write(report, &out.join("results.sarif")),
    )?;
    w("report.html", html::write(report, &out.join("report.html")))?;
    Ok(())
}

fn summarize(report: &HuntReport, out: &Path, shard: bool) {
    for w in &report.workloads {
        say!(
            "  {}/{} ({}): {} paths, {:.0} paths/hour, {} unique states{}{}",
            w.system,
            w.workload,
            w.strategy,
            w.paths,
            w.paths_per_hour,
            w.unique_states,
            if w.exhausted { ", exhausted" } else { "" },
            w.error
                .as_deref()
                .map_or(String::new(), |e| format!(", ERROR: {e}"))
        );
    }
    for status in [Status::New, Status::Regressed, Status::Known, Status::Fixed] {
        for f in report.findings.iter().filter(|f| f.status == status) {
            say!(
                "{} {} {}/{} {}: {}",
                status.as_str().to_uppercase(),
                f.id,
                f.system,
                f.workload,
                f.signature.property,
                f.message
            );
            say!("  {}", f.replay);
        }
    }
    println!(
        "reports: {}/{{hunt.json,junit.xml,results.sarif,report.html}}{}",
        out.display(),
        if shard {
            "; the corpus is left alone: `flymc hunt merge` folds the shards in"
        } else {
            ""
        }
    );
}

/// Now, RFC 3339 in UTC to the second.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
