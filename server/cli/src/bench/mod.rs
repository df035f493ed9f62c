//! `flymc bench`: every strategy on every simulated bug and exhaustion workload, side by side,
//! as in FlyMC's Figures 1, 8 and 13. Prints tables, writes JSON, and draws the bar charts.
//!
//! All numbers are measured here; nothing is asserted about them in tests.

mod chart;
pub mod real;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result};
use flymc_model::Workload;
use serde::Serialize;

use crate::systems;
use flymc_core::explore::Exploration;
use flymc_core::workloads;
use flymc_strategies::{FlymcOptions, StrategyContext, StrategyKind};

/// What to run.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// Path budget per exploration.
    pub cap: u64,
    /// Seeds averaged for the random strategies.
    pub seeds: u64,
    /// Explorations run side by side, each exploring one path at a time (not
    /// [`flymc_core::explore::ExploreConfig::jobs`], paths of one exploration side by side).
    pub jobs: usize,
    pub out: PathBuf,
    /// Only workloads whose name is in this list (all when empty).
    pub only: Vec<String>,
    /// Only these strategies (all when empty); flymc's ablations run when flymc does.
    pub strategies: Vec<String>,
    pub bound: usize,
    /// Sets files used instead of the shipped ones, by system (`--sets`).
    pub sets: std::collections::BTreeMap<String, PathBuf>,
}

/// `--sets` files by the system each names.
pub fn sets_by_system(files: &[PathBuf]) -> Result<std::collections::BTreeMap<String, PathBuf>> {
    #[derive(serde::Deserialize)]
    struct Head {
        system: String,
    }
    let mut out = std::collections::BTreeMap::new();
    for f in files {
        let text = flymc_model::bounded::read_text(f, flymc_model::bounded::MAX_SETS_BYTES)
            .with_context(|| format!("cannot read sets file {}", f.display()))?;
        let head: Head = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a sets file", f.display()))?;
        systems::find(&head.system)?;
        if let Some(old) = out.insert(head.system.clone(), f.clone()) {
            anyhow::bail!(
                "{} and {} are both sets files of `{}`: give one per system",
                old.display(),
                f.display(),
                head.system
            );
        }
    }
    Ok(out)
}

/// The exhaustion workloads of FlyMC's Figure 1.
pub const EXHAUSTION: &[(&str, &str)] = &[
    ("raft-sim", "raft-1"),
    ("raft-sim", "raft-2"),
    ("raft-sim", "raft-3"),
    ("cassandra-sim", "paxos-1"),
    ("cassandra-sim", "paxos-2"),
    ("cassandra-sim", "paxos-3"),
];

/// flymc's ablations (FlyMC Figure 13), and parallel flips added (off by default).
pub const ABLATIONS: &[(&str, FlymcOptions, bool)] = &[
    (
        "flymc",
        FlymcOptions {
            symmetry: true,
            independence: true,
            parallel_flips: false,
        },
        true,
    ),
    (
        "no-symmetry",
        FlymcOptions {
            symmetry: false,
            independence: true,
            parallel_flips: false,
        },
        true,
    ),
    (
        "no-independence",
        FlymcOptions {
            symmetry: true,
            independence: false,
            parallel_flips: false,
        },
        true,
    ),
    (
        "parallel-flips",
        FlymcOptions {
            symmetry: true,
            independence: true,
            parallel_flips: true,
        },
        true,
    ),
    (
        "no-cache",
        FlymcOptions {
            symmetry: true,
            independence: true,
            parallel_flips: false,
        },
        false,
    ),
];

/// One exploration's numbers.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub paths: u64,
    pub found: bool,
    pub exhausted: bool,
    pub unique_states: usize,
    pub seconds: f64,
    pub pruned_symmetry: u64,
    pub pruned_independence: u64,
    pub deprioritized: u64,
    pub cache_hit_rate: f64,
    pub other_violations: u64,
}

/// A strategy's result on a workload, averaged over seeds for random strategies.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    pub system: String,
    pub workload: String,
    pub strategy: String,
    /// Mean paths (to the bug, or to exhaustion).
    pub paths: f64,
    /// Runs that reached the goal (bug found, or space exhausted) out of `runs`.
    pub reached: u64,
    pub runs: u64,
    pub unique_states: f64,
    pub seconds: f64,
    pub cells: Vec<Cell>,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub version: u32,
    pub cap: u64,
    pub seeds: u64,
    pub bugs: Vec<Entry>,
    pub exhaustion: Vec<Entry>,
    pub ablations: Vec<Entry>,
    pub seconds: f64,
}

struct Job {
    section: usize,
    system: String,
    workload: Workload,
    label: String,
    strategy: StrategyKind,
    flymc: FlymcOptions,
    cache: bool,
    seed: u64,
    expect: Option<String>,
}

fn run_job(job: &Job, cfg: &BenchConfig) -> Result<Cell> {
    let system = systems::find(&job.system)?;
    let sets = systems::load_sets(
        system.as_ref(),
        &job.workload,
        cfg.sets.get(&job.system).map(PathBuf::as_path),
    )?;
    let ctx = StrategyContext {
        seed: job.seed,
        bound: cfg.bound,
        sets,
        flymc: job.flymc,
        ..StrategyContext::for_system(system.as_ref(), &job.workload)
    };
    let mut strat = job.strategy.build(&ctx)?;
    // Explorations run side by side (`BenchConfig::jobs`), each one path at a time.
    let out = Exploration::new(system.as_ref(), &job.workload, strat.as_mut())
        .max_paths(Some(cfg.cap))
        .cache(job.cache)
        .stop_on_property(job.expect.clone())
        .interrupted(flymc_real::cluster::interrupted)
        .run()?;
    let pruned = |name: &str| {
        out.stats
            .pruned
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, n)| *n)
            .sum()
    };
    let lookups = out.cache_hits + out.cache_misses;
    Ok(Cell {
        paths: out.violation.as_ref().map_or(out.paths, |(n, _)| *n),
        found: out.violation.is_some(),
        exhausted: out.exhausted,
        unique_states: out.unique_states.len(),
        seconds: out.elapsed.as_secs_f64(),
        pruned_symmetry: pruned("symmetry"),
        pruned_independence: pruned("independence"),
        deprioritized: out.stats.deprioritized,
        cache_hit_rate: if lookups == 0 {
            0.0
        } else {
            out.cache_hits as f64 / lookups as f64
        },
        other_violations: out.other_violations,
    })
}

fn selected(cfg: &BenchConfig, name: &str) -> bool {
    cfg.only.is_empty() || cfg.only.iter().any(|o| o == name)
}

/// The strategies the bench compares, in the table's order.
fn compared() -> impl Iterator<Item = StrategyKind> {
    StrategyKind::all().filter(|s| s.is_compared())
}

fn strategy_selected(cfg: &BenchConfig, name: &str) -> bool {
    cfg.strategies.is_empty() || cfg.strategies.iter().any(|s| s == name)
}

/// A name in `asked` that is not in `known`, as an error that lists what is (a typo would
/// otherwise run an empty benchmark).
fn check_names(what: &str, flag: &str, asked: &[String], known: &[String]) -> Result<()> {
    if let Some(bad) = asked.iter().find(|a| !known.contains(a)) {
        anyhow::bail!(
            "{flag}: no {what} `{bad}`; choose from {}",
            known.join(", ")
        );
    }
    Ok(())
}

/// Run the whole benchmark.
pub fn run(cfg: &BenchConfig, folder: &Path, log: &(dyn Fn(&str) + Sync)) -> Result<Report> {
    let start = Instant::now();
    let jobs = plan(cfg, folder)?;
    let results = run_jobs(&jobs, cfg, log)?;
    let [bugs, exhaustion, ablations] = entries(&jobs, results);
    Ok(Report {
        version: 1,
        cap: cfg.cap,
        seeds: cfg.seeds,
        bugs,
        exhaustion,
        ablations,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Every exploration the benchmark runs, in the report's order: the bug workloads with every
/// compared strategy (randomized ones once per seed), exhaustion, and flymc's ablations.
fn plan(cfg: &BenchConfig, folder: &Path) -> Result<Vec<Job>> {
    let mut jobs: Vec<Job> = Vec::new();
    // The comparison runs every compared strategy on every system, so a simulated system
    // joins it only with a sets file (built in or `--sets`): the twins (zab-sim) have none,
    // and samc and flymc cannot run without one.
    let (sims, left_out): (Vec<_>, Vec<_>) = systems::all()
        .into_iter()
        .filter(|s| s.name().ends_with("-sim"))
        .partition(|s| s.about().sets.is_some() || cfg.sets.contains_key(s.name()));
    let load = |system: &str, name: &str| workloads::load(folder, system, name);
    // The bug workloads: every workload that names the property its bug breaks.
    let mut bugs: Vec<(&str, Workload, String)> = Vec::new();
    for system in &sims {
        for name in workloads::names(folder, system.name()) {
            let w = load(system.name(), &name)?;
            if let Some(expect) = w.expect.clone() {
                bugs.push((system.name(), w, expect));
            }
        }
    }
    let known: Vec<String> = bugs
        .iter()
        .map(|(_, w, _)| w.name.clone())
        .chain(EXHAUSTION.iter().map(|(_, name)| name.to_string()))
        .collect();
    check_names("benchmark workload", "--only", &cfg.only, &known)?;
    let names: Vec<String> = compared().map(|s| s.name().to_string()).collect();
    check_names("compared strategy", "--strategies", &cfg.strategies, &names)?;
    for s in &left_out {
        eprintln!(
            "bench: {} left out of the comparison: it ships no sets file (give one with --sets)",
            s.name()
        );
    }
    // Section 0: bugs.
    for (system, w, expect) in &bugs {
        if selected(cfg, &w.name) {
            for s in compared().filter(|s| strategy_selected(cfg, s.name())) {
                let seeds = if s.is_randomized() { cfg.seeds } else { 1 };
                for seed in 0..seeds {
                    jobs.push(Job {
                        section: 0,
                        system: system.to_string(),
                        workload: w.clone(),
                        label: s.name().into(),
                        strategy: s,
                        flymc: FlymcOptions::default(),
                        cache: true,
                        seed,
                        expect: Some(expect.clone()),
                    });
                }
            }
        }
    }
    // Section 1: exhaustion, for the strategies that can exhaust.
    for &(system, name) in EXHAUSTION {
        if !selected(cfg, name) {
            continue;
        }
        let w = load(system, name)?;
        for s in compared().filter(|s| s.can_exhaust() && strategy_selected(cfg, s.name())) {
            jobs.push(Job {
                section: 1,
                system: system.into(),
                workload: w.clone(),
                label: s.name().into(),
                strategy: s,
                flymc: FlymcOptions::default(),
                cache: true,
                seed: 0,
                expect: None,
            });
        }
    }
    // Section 2: ablations on the bug and exhaustion workloads.
    let mut ablation_targets: Vec<(String, Workload)> = Vec::new();
    for j in jobs.iter().filter(|j| j.strategy == StrategyKind::Flymc) {
        ablation_targets.push((j.system.clone(), j.workload.clone()));
    }
    for (system, w) in ablation_targets {
        for &(label, opts, cache) in ABLATIONS {
            jobs.push(Job {
                section: 2,
                expect: w.expect.clone(),
                system: system.clone(),
                workload: w.clone(),
                label: label.into(),
                strategy: StrategyKind::Flymc,
                flymc: opts,
                cache,
                seed: 0,
            });
        }
    }
    Ok(jobs)
}

/// Run `jobs`, `cfg.jobs` at a time, logging each as it ends; the cells in `jobs`' order.
fn run_jobs(jobs: &[Job], cfg: &BenchConfig, log: &(dyn Fn(&str) + Sync)) -> Result<Vec<Cell>> {
    let total = jobs.len();
    let results: Mutex<Vec<Option<Cell>>> = Mutex::new(vec![None; total]);
    let next = Mutex::new(0usize);
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..cfg.jobs.max(1) {
            scope.spawn(|| loop {
                let k = {
                    let mut n = next.lock().expect("no poisoned lock");
                    if *n >= total || failure.lock().expect("lock").is_some() {
                        return;
                    }
                    *n += 1;
                    *n - 1
                };
                let job = &jobs[k];
                match run_job(job, cfg) {
                    Ok(cell) => {
                        log(&format!(
                            "[{}/{}] {:<14} {:<10} {:<18} seed {}: {} paths{} ({:.1} s)",
                            k + 1,
                            total,
                            job.system,
                            job.workload.name,
                            job.label,
                            job.seed,
                            cell.paths,
                            if cell.found {
                                ", bug found"
                            } else if cell.exhausted {
                                ", exhausted"
                            } else {
                                ""
                            },
                            cell.seconds
                        ));
                        results.lock().expect("lock")[k] = Some(cell);
                    }
                    Err(e) => {
                        *failure.lock().expect("lock") = Some(e.context(format!(
                            "{} / {} with {}",
                            job.system, job.workload.name, job.label
                        )));
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().expect("lock") {
        return Err(e);
    }
    Ok(results
        .into_inner()
        .expect("lock")
        .into_iter()
        .map(|c| c.expect("every job ran"))
        .collect())
}

/// The cells of the same (section, workload, label) grouped into entries, with their means.
fn entries(jobs: &[Job], results: Vec<Cell>) -> [Vec<Entry>; 3] {
    let mut sections: [Vec<Entry>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for (job, cell) in jobs.iter().zip(results) {
        let list = &mut sections[job.section];
        let entry = match list.iter_mut().find(|e| {
            e.workload == job.workload.name && e.strategy == job.label && e.system == job.system
        }) {
            Some(e) => e,
            None => {
                list.push(Entry {
                    system: job.system.clone(),
                    workload: job.workload.name.clone(),
                    strategy: job.label.clone(),
                    paths: 0.0,
                    reached: 0,
                    runs: 0,
                    unique_states: 0.0,
                    seconds: 0.0,
                    cells: Vec::new(),
                });
                list.last_mut().expect("just pushed")
            }
        };
        entry.cells.push(cell);
    }
    for (section, list) in sections.iter_mut().enumerate() {
        for e in list.iter_mut() {
            let n = e.cells.len() as f64;
            e.runs = e.cells.len() as u64;
            e.reached = e
                .cells
                .iter()
                .filter(|c| {
                    if section == 1 {
                        c.exhausted
                    } else {
                        c.found || c.exhausted
                    }
                })
                .count() as u64;
            e.paths = e.cells.iter().map(|c| c.paths as f64).sum::<f64>() / n;
            e.unique_states = e.cells.iter().map(|c| c.unique_states as f64).sum::<f64>() / n;
            e.seconds = e.cells.iter().map(|c| c.seconds).sum::<f64>() / n;
        }
    }
    sections
}

/// Write `bench.json`, `bugs.svg` and `exhaustion.svg` into `cfg.out`; returns their paths.
pub fn write(report: &Report, out: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let json = out.join("bench.json");
    flymc_core::outfile::write_atomically(&json, serde_json::to_string_pretty(report)?.as_bytes())
        .with_context(|| format!("cannot write {}", json.display()))?;
    let bugs = out.join("bugs.svg");
    chart::bars(
        &bugs,
        "Paths to reach each bug (log scale; capped runs marked ^)",
        &report.bugs,
        report.cap,
        false,
    )?;
    let exh = out.join("exhaustion.svg");
    chart::bars(
        &exh,
        "Paths to exhaust the search space (log scale; capped runs marked ^)",
        &report.exhaustion,
        report.cap,
        true,
    )?;
    Ok(vec![json, bugs, exh])
}

/// The tables, as text.
pub fn tables(report: &Report) -> String {
    let mut s = String::new();
    // A section with nothing selected (`--only`, `--strategies`) is left out.
    let table = |s: &mut String, title: &str, entries: &[Entry], exhaustion: bool| {
        if entries.is_empty() {
            return;
        }
        s.push_str(&format!("\n{title}\n"));
        let mut workloads: Vec<&str> = Vec::new();
        let mut strategies: Vec<&str> = Vec::new();
        for e in entries {
            if !workloads.contains(&e.workload.as_str()) {
                workloads.push(&e.workload);
            }
            if !strategies.contains(&e.strategy.as_str()) {
                strategies.push(&e.strategy);
            }
        }
        s.push_str(&format!("{:<12}", "workload"));
        for st in &strategies {
            s.push_str(&format!("{st:>18}"));
        }
        s.push('\n');
        for w in &workloads {
            s.push_str(&format!("{w:<12}"));
            for st in &strategies {
                let cell = entries
                    .iter()
                    .find(|e| e.workload == *w && e.strategy == *st)
                    .map_or("-".to_string(), |e| {
                        let mark = if e.reached == e.runs { "" } else { "^" };
                        let frac = if e.runs > 1 {
                            format!(" {}/{}", e.reached, e.runs)
                        } else {
                            String::new()
                        };
                        if exhaustion {
                            format!("{:.0}{mark} ({:.0}st)", e.paths, e.unique_states)
                        } else {
                            format!("{:.0}{mark}{frac}", e.paths)
                        }
                    });
                s.push_str(&format!("{cell:>18}"));
            }
            s.push('\n');
        }
    };
    table(&mut s, "Paths to the first hit of each bug (^ = not reached within the cap; k/n = seeds that reached it)", &report.bugs, false);
    table(
        &mut s,
        "Paths (and unique states) to exhaust (^ = not exhausted within the cap)",
        &report.exhaustion,
        true,
    );
    if !report.ablations.is_empty() {
        s.push_str("\nflymc ablations (paths; pruned by symmetry / by independence; deprioritised by parallel flips; cache hit rate)\n");
    }
    for e in &report.ablations {
        let c = &e.cells[0];
        s.push_str(&format!(
            "{:<12} {:<18} paths {:>6}{}  sym {:>7}  indep {:>7}  deprio {:>7}  cache {:>4.0}%\n",
            e.workload,
            e.strategy,
            c.paths,
            if c.found || c.exhausted { "" } else { "^" },
            c.pruned_symmetry,
            c.pruned_independence,
            c.deprioritized,
            100.0 * c.cache_hit_rate
        ));
    }
    s
}
