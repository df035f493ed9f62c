//! `flymc bench real`: paths per second on real clusters, with every throughput lever on and then
//! with each one off, side by side in one run, and a check that every variant explored the same
//! paths in the same order (a lever may only change the speed).
//!
//! The levers: cluster snapshots (`--no-snapshots`), parallel clusters (`--jobs`) and, for the
//! Java hook, its own blocking HTTP client (against the JDK's HttpClient) and its exact quiet
//! check (against sampled checks only). The JVM's
//! class-data-sharing archive is always on (it is part of `flymc setup zookeeper`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use flymc_core::explore::{Exploration, Outcome};
use flymc_core::snapshots::SnapshotStats;
use flymc_core::workloads;
use flymc_core::CrashPoints;
use flymc_model::EventId;
use flymc_real::RealOptions;
use flymc_strategies::{StrategyContext, StrategyKind};
use serde::Serialize;

use crate::summary::paths_per_sec;
use crate::systems;

/// What to run.
#[derive(Clone, Debug)]
pub struct RealBenchConfig {
    /// Paths per variant on ZooKeeper `le-3crash`.
    pub zookeeper_paths: u64,
    /// Paths per variant on Raft `le`.
    pub raft_paths: u64,
    /// Clusters side by side in the all-levers row (`flymc run`'s default, 1, unless given);
    /// a row with the other count (2, or 1) shows what parallel clusters give on this machine.
    pub jobs: usize,
    /// Only these systems (`zookeeper`, `raft`; both when empty).
    pub only: Vec<String>,
    pub out: PathBuf,
}

/// The workloads, with dfs: `flymc run`'s default strategy when the benchmark was set up, and
/// the one whose paths share prefixes (the portfolio's pct and novelty paths share only the
/// cluster start; `flymc run` reports their time breakdown).
const WORKLOADS: &[(&str, &str)] = &[("zookeeper", "le-3crash"), ("raft", "le")];
const STRATEGY: StrategyKind = StrategyKind::Dfs;

/// One way of running: which levers are on.
#[derive(Clone, Debug, Serialize)]
pub struct Variant {
    pub name: String,
    pub snapshots: bool,
    /// Snapshots even where they cost more than re-execution (what the cost model saves).
    pub always: bool,
    pub jobs: usize,
    /// The Java hook talks over the JDK's HttpClient (its transport before 2026-11-27).
    pub jdk_http: bool,
    /// The Java hook settles on two sampled quiet checks only (before 2026-11-27).
    pub sampled_quiet: bool,
}

fn variants(jobs: usize, java_hooks: bool) -> Vec<Variant> {
    let v = |name: &str, snapshots, always, jobs| Variant {
        name: name.into(),
        snapshots,
        always,
        jobs,
        jdk_http: false,
        sampled_quiet: false,
    };
    // Parallel clusters pay only with cores to spare (each ZooKeeper cluster keeps about two
    // busy): the other job count gets its own row either way.
    let other = if jobs > 1 { 1 } else { 2 };
    let mut out = vec![
        v("all levers", true, false, jobs),
        v(&format!("--jobs {other}"), true, false, other),
    ];
    out.push(v("--no-snapshots", false, false, jobs));
    out.push(v("snapshots at every branch", true, true, jobs));
    // Only Java hooks have these levers: for Raft these rows would repeat the first.
    if java_hooks {
        out.push(Variant {
            jdk_http: true,
            ..v("hook over the JDK's HttpClient", true, false, jobs)
        });
        out.push(Variant {
            sampled_quiet: true,
            ..v("sampled quiescence only", true, false, jobs)
        });
    }
    out.push(v("none (before)", false, false, 1));
    out
}

/// Per path, in milliseconds (means over the variant's paths).
#[derive(Debug, Serialize)]
pub struct PerPath {
    pub total_ms: f64,
    pub start_ms: f64,
    pub restore_ms: f64,
    pub events_ms: f64,
    pub events: f64,
    pub settle_median_ms: Option<f64>,
    pub settle_p90_ms: Option<f64>,
    pub faults_ms: f64,
    pub snapshots_ms: f64,
    pub stop_ms: f64,
}

#[derive(Debug, Serialize)]
pub struct Row {
    pub system: String,
    pub workload: String,
    pub strategy: String,
    pub variant: Variant,
    pub paths: u64,
    pub seconds: f64,
    pub paths_per_sec: f64,
    /// This variant's paths/s over the all-levers variant's (1 for that one).
    pub speed_vs_all: f64,
    pub per_path: PerPath,
    pub snapshots: SnapshotStats,
    pub late_reports: u64,
    /// Explored exactly the paths, in the same order and reaching the same states, of the first
    /// variant with as many jobs.
    pub same_paths: bool,
}

#[derive(Debug, Serialize)]
pub struct RealReport {
    pub rows: Vec<Row>,
    pub seconds: f64,
}

impl RealReport {
    /// Every variant explored the paths the first one did.
    pub fn consistent(&self) -> bool {
        self.rows.iter().all(|r| r.same_paths)
    }
}

fn per_path(out: &Outcome) -> PerPath {
    let t = &out.timing;
    let n = t.paths.max(1) as f64;
    let ms = |us: u64| us as f64 / 1e3 / n;
    PerPath {
        total_ms: ms(t.total_us),
        start_ms: ms(t.start_us),
        restore_ms: ms(t.restore_us),
        events_ms: ms(t.settle_us),
        events: t.settle.count() as f64 / n,
        settle_median_ms: t.settle_median_us().map(|u| u as f64 / 1e3),
        settle_p90_ms: t.settle_p90_us().map(|u| u as f64 / 1e3),
        faults_ms: ms(t.faults_us),
        snapshots_ms: ms(t.checkpoint_us),
        stop_ms: ms(t.stop_us),
    }
}

/// One explored path: per step, the event taken, how it reads, and the hash of the state it
/// led to (two variants may take the same events and the system answer one of them otherwise).
type Walk = Vec<(EventId, String, u64)>;

/// Explore `paths` paths of `workload` on `system` with one variant's levers.
fn explore_variant(
    system_name: &str,
    workload: &str,
    v: &Variant,
    paths: u64,
    folder: &Path,
) -> Result<(Outcome, Vec<Walk>)> {
    let options = RealOptions {
        snapshots: v.snapshots,
        hook_jdk_http: v.jdk_http,
        hook_sampled_quiet: v.sampled_quiet,
        ..RealOptions::default()
    };
    let system = systems::find_with(system_name, &options)?;
    let w = workloads::load(folder, system.name(), workload)?;
    let ctx = StrategyContext {
        sets: systems::load_sets(system.as_ref(), &w, None)?,
        ..StrategyContext::for_system(system.as_ref(), &w)
    };
    let mut strat = STRATEGY.build(&ctx)?;
    let mut ids = Vec::new();
    let out = Exploration::new(system.as_ref(), &w, strat.as_mut())
        .max_paths(Some(paths))
        .jobs(v.jobs)
        .snapshots(system.has(flymc_model::Feature::Snapshots))
        .snapshots_always(v.always)
        .interrupted(flymc_real::cluster::interrupted)
        .crash_points(CrashPoints::for_system(system.as_ref()))
        .on_run(|run| {
            let after = run.hashes.iter().skip(1);
            ids.push(
                run.events()
                    .zip(after)
                    .map(|(e, &h)| (e.id, e.describe(), h))
                    .collect(),
            )
        })
        .run()
        .with_context(|| format!("{system_name}/{workload} ({})", v.name))?;
    Ok((out, ids))
}

pub fn run(cfg: &RealBenchConfig, folder: &Path, log: &dyn Fn(&str)) -> Result<RealReport> {
    let began = std::time::Instant::now();
    for o in &cfg.only {
        if !WORKLOADS.iter().any(|(s, _)| s == o) {
            anyhow::bail!("no real benchmark for `{o}`; pick from: zookeeper, raft");
        }
    }
    let mut rows = Vec::new();
    for &(system, workload) in WORKLOADS {
        if !cfg.only.is_empty() && !cfg.only.iter().any(|o| o == system) {
            continue;
        }
        let paths = if system == "raft" {
            cfg.raft_paths
        } else {
            cfg.zookeeper_paths
        };
        // The all-levers rate, and per job count the paths its first variant explored (a run
        // with N jobs is deterministic for that N; another N explores in another order).
        let mut all_rate = None;
        let mut first: HashMap<usize, Vec<Walk>> = HashMap::new();
        for v in variants(cfg.jobs, system == "zookeeper") {
            log(&format!("{system}/{workload}: {paths} paths, {}", v.name));
            let (out, ids) = explore_variant(system, workload, &v, paths, folder)?;
            let rate = out.paths as f64 / out.elapsed.as_secs_f64().max(1e-9);
            let base_rate = *all_rate.get_or_insert(rate);
            let parted = first
                .get(&v.jobs)
                .and_then(|base| first_difference(base, &ids));
            let same = parted.is_none();
            if let Some(d) = parted {
                log(&format!("  other paths from {d}"));
            }
            log(&format!(
                "  {} paths in {:.1} s ({} paths/s){}",
                out.paths,
                out.elapsed.as_secs_f64(),
                paths_per_sec(out.paths, out.elapsed.as_secs_f64()),
                if same { "" } else { ": OTHER PATHS" }
            ));
            first.entry(v.jobs).or_insert(ids);
            rows.push(Row {
                system: system.into(),
                workload: workload.into(),
                strategy: STRATEGY.name().into(),
                variant: v,
                paths: out.paths,
                seconds: out.elapsed.as_secs_f64(),
                paths_per_sec: rate,
                speed_vs_all: rate / base_rate,
                per_path: per_path(&out),
                snapshots: out.snapshots.clone(),
                late_reports: out.late_reports,
                same_paths: same,
            });
        }
    }
    Ok(RealReport {
        rows,
        seconds: began.elapsed().as_secs_f64(),
    })
}

/// Where two explorations' paths part: `path N step S` (1-based path numbers), with the two
/// events taken there, or the one event both took there with another resulting state.
fn first_difference(a: &[Walk], b: &[Walk]) -> Option<String> {
    let n = a.iter().zip(b).position(|(x, y)| x != y);
    match n {
        Some(n) => {
            let (x, y) = (&a[n], &b[n]);
            let step = x
                .iter()
                .zip(y)
                .position(|(p, q)| p != q)
                .unwrap_or(x.len().min(y.len()));
            let at = |w: &Walk| {
                w.get(step)
                    .map_or("(the path ended)".to_string(), |e| e.1.clone())
            };
            let what = match (x.get(step), y.get(step)) {
                // The same event, another resulting state: the system answered it otherwise.
                (Some(p), Some(q)) if p.0 == q.0 => format!("{} led to another state", p.1),
                _ => format!("{} against {}", at(x), at(y)),
            };
            Some(format!(
                "path {} step {} ({} against {} steps): {what}",
                n + 1,
                step,
                x.len(),
                y.len(),
            ))
        }
        None if a.len() != b.len() => Some(format!("path {}", a.len().min(b.len()) + 1)),
        None => None,
    }
}

/// The table, as text (Markdown, for docs/BENCHMARKS.md).
pub fn table(report: &RealReport) -> String {
    let mut s = String::from(
        "| workload | variant | paths | paths/s | all levers is | per path | start | restore | events (n, median, p90) | crash/reboot | snapshots | same paths |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    let ms = |m: f64| {
        if m >= 1000.0 {
            format!("{:.2} s", m / 1e3)
        } else {
            format!("{m:.0} ms")
        }
    };
    let q = |m: Option<f64>| m.map_or("-".into(), |m| format!("{m:.1} ms"));
    for r in &report.rows {
        let p = &r.per_path;
        s += &format!(
            "| {}/{} | {} | {} | {:.2} | {:.2}x | {} | {} | {} | {} ({:.0}, {}, {}) | {} | {} ({} taken, {} restored) | {} |\n",
            r.system,
            r.workload,
            r.variant.name,
            r.paths,
            r.paths_per_sec,
            1.0 / r.speed_vs_all,
            ms(p.total_ms),
            ms(p.start_ms),
            ms(p.restore_ms),
            ms(p.events_ms),
            p.events,
            q(p.settle_median_ms),
            q(p.settle_p90_ms),
            ms(p.faults_ms),
            ms(p.snapshots_ms),
            r.snapshots.taken,
            r.snapshots.restored,
            if r.same_paths { "yes" } else { "NO" },
        );
    }
    s
}

/// Write `real.json` into `out`; returns its path.
pub fn write(report: &RealReport, out: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let json = out.join("real.json");
    flymc_core::outfile::write_atomically(
        &json,
        (serde_json::to_string_pretty(report)? + "\n").as_bytes(),
    )
    .with_context(|| format!("cannot write {}", json.display()))?;
    Ok(json)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(ids: &[(u64, &str)]) -> Walk {
        ids.iter()
            .map(|&(i, d)| (EventId(i), d.to_string(), i * 10))
            .collect()
    }

    #[test]
    fn where_two_explorations_part_names_the_path_the_step_and_both_events() {
        let a = vec![
            walk(&[(1, "start")]),
            walk(&[(1, "start"), (2, "ACK n0->n2")]),
        ];
        let b = vec![
            walk(&[(1, "start")]),
            walk(&[(1, "start"), (3, "crash n0")]),
        ];
        assert_eq!(first_difference(&a, &a), None);
        assert_eq!(
            first_difference(&a, &b).as_deref(),
            Some("path 2 step 1 (2 against 2 steps): ACK n0->n2 against crash n0")
        );
        let shorter = vec![walk(&[(1, "start")]), walk(&[(1, "start")])];
        assert_eq!(
            first_difference(&a, &shorter).as_deref(),
            Some("path 2 step 1 (2 against 1 steps): ACK n0->n2 against (the path ended)")
        );
        assert_eq!(first_difference(&a, &a[..1]).as_deref(), Some("path 2"));
        let mut answered = a.clone();
        answered[1][1].2 = 7;
        assert_eq!(
            first_difference(&a, &answered).as_deref(),
            Some("path 2 step 1 (2 against 2 steps): ACK n0->n2 led to another state")
        );
    }
}
