//! `flymc hunt merge`: the shards' output folders joined into one set of reports, and their
//! findings folded into the corpus, as if one hunt had run them all.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use flymc_core::outfile;
use flymc_core::pathfile::{shorten, PathFile};

use super::classify;
use super::corpus::{self, Corpus};
use super::report::{CoveragePoint, FindingReport, HuntReport, WorkloadReport};

pub fn run(
    shards: &[std::path::PathBuf],
    out: &Path,
    corpus: Option<&Path>,
    fail_on: &str,
) -> Result<u8> {
    let mut reports = Vec::new();
    // Each shard's folder, resolved: what its findings' path files must stay inside.
    let mut roots = Vec::new();
    let mut states: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for dir in shards {
        let (r, shard_states, root) = read_shard(dir)?;
        for (k, v) in shard_states {
            states.entry(k).or_default().extend(v);
        }
        roots.push(root);
        reports.push(r);
    }
    check_split(&reports)?;
    std::fs::create_dir_all(out.join("findings"))
        .with_context(|| format!("cannot create {}", out.display()))?;
    let findings = merge_findings(&roots, &reports, out)?;
    let workloads = merge_workloads(&reports, &states);
    let started = reports
        .iter()
        .map(|r| r.started.clone())
        .min()
        .unwrap_or_else(super::now);
    let report = HuntReport {
        format: super::report::FORMAT.into(),
        version: super::report::VERSION,
        flymc_version: env!("CARGO_PKG_VERSION").into(),
        started,
        seconds: reports.iter().map(|r| r.seconds).fold(0.0, f64::max),
        shard: None,
        budget: reports
            .first()
            .map(|r| r.budget.clone())
            .unwrap_or_default(),
        fail_on: fail_on.into(),
        workloads,
        findings,
    };
    super::write_reports(&report, &states, out)?;
    if let Some(dir) = corpus {
        let mut c = Corpus::load(dir)?;
        classify::fold(&mut c, &report.findings, &super::now())?;
    }
    println!(
        "merged {} shard folders: {} workloads, {} findings",
        reports.len(),
        report.workloads.len(),
        report.findings.len()
    );
    super::summarize(&report, out, false);
    Ok(super::exit_code(&report))
}

/// A shard folder's report, its states and the folder resolved, checked.
fn read_shard(dir: &Path) -> Result<(HuntReport, BTreeMap<String, BTreeSet<u64>>, PathBuf)> {
    let file = dir.join("hunt.json");
    let text = flymc_model::bounded::read_text(&file, flymc_model::bounded::MAX_REPORT_BYTES)
        .with_context(|| {
            format!(
                "cannot read {}: is {} the output folder of a `flymc hunt` run?",
                file.display(),
                dir.display()
            )
        })?;
    let r: HuntReport = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a hunt report", file.display()))?;
    if r.format != super::report::FORMAT || r.version != super::report::VERSION {
        anyhow::bail!(
            "{} is a `{}` version {} file, not a flymc hunt report version {}",
            file.display(),
            r.format,
            r.version,
            super::report::VERSION
        );
    }
    let s = dir.join("states.json");
    let shard_states: BTreeMap<String, BTreeSet<u64>> = serde_json::from_str(
        &flymc_model::bounded::read_text(&s, flymc_model::bounded::MAX_REPORT_BYTES)
            .with_context(|| format!("cannot read {}", s.display()))?,
    )
    .with_context(|| format!("{} is not a hunt's states file", s.display()))?;
    for f in &r.findings {
        if !corpus::is_id(&f.id) {
            anyhow::bail!(
                "{} files a finding under the id {:?}, which is not 16 lowercase hex digits as hunts write them; merge only folders `flymc hunt` wrote",
                file.display(),
                shorten(&f.id)
            );
        }
    }
    let root =
        std::fs::canonicalize(dir).with_context(|| format!("cannot resolve {}", dir.display()))?;
    Ok((r, shard_states, root))
}

/// Shards of one split: the same count; a missing one is said, not an error.
fn check_split(reports: &[HuntReport]) -> Result<()> {
    let ns: BTreeSet<u32> = reports
        .iter()
        .filter_map(|r| r.shard.map(|s| s.1))
        .collect();
    let ks: BTreeSet<u32> = reports
        .iter()
        .filter_map(|r| r.shard.map(|s| s.0))
        .collect();
    if let Some(&n) = ns.first() {
        if ns.len() > 1 {
            anyhow::bail!("the folders come from hunts split different ways ({ns:?} shards)");
        }
        let missing: Vec<u32> = (0..n).filter(|k| !ks.contains(k)).collect();
        if !missing.is_empty() {
            println!(
                "merge: shards {missing:?} of {n} are missing: the result covers the others only"
            );
        }
    }
    Ok(())
}

/// Findings: one per id, with the verdict that wins; its path copied beside the reports.
fn merge_findings(
    roots: &[PathBuf],
    reports: &[HuntReport],
    out: &Path,
) -> Result<Vec<FindingReport>> {
    let mut findings: BTreeMap<String, FindingReport> = BTreeMap::new();
    let by_shard = roots
        .iter()
        .zip(reports)
        .flat_map(|(root, r)| r.findings.iter().map(move |f| (root, f)));
    for (root, f) in by_shard {
        match findings.get_mut(&f.id) {
            Some(known) => known.status = classify::join(known.status, f.status),
            None => {
                let mut f = f.clone();
                let from = shard_path_file(root, &f)?;
                let file = out.join("findings").join(format!("{}.json", f.id));
                outfile::copy_atomically(&from, &file).with_context(|| {
                    format!("cannot copy {} into {}", from.display(), out.display())
                })?;
                let file = std::fs::canonicalize(&file).unwrap_or(file);
                f.replay = format!("flymc replay {}", file.display());
                f.path_file = file;
                findings.insert(f.id.clone(), f);
            }
        }
    }
    let mut findings: Vec<FindingReport> = findings.into_values().collect();
    classify::sort(&mut findings);
    Ok(findings)
}

/// Workloads: summed over shards, with unique states as the union of their states.
fn merge_workloads(
    reports: &[HuntReport],
    states: &BTreeMap<String, BTreeSet<u64>>,
) -> Vec<WorkloadReport> {
    let mut workloads: BTreeMap<(String, String, String), Joined> = BTreeMap::new();
    for w in reports.iter().flat_map(|r| &r.workloads) {
        let key = (w.system.clone(), w.workload.clone(), w.strategy.clone());
        match workloads.get_mut(&key) {
            None => {
                workloads.insert(key, (w.clone(), vec![w.coverage.clone()]));
            }
            Some((m, cov)) => {
                m.seeds.extend(&w.seeds);
                m.paths += w.paths;
                m.events += w.events;
                m.seconds = m.seconds.max(w.seconds);
                m.exhausted &= w.exhausted;
                m.error = match (m.error.take(), &w.error) {
                    (Some(a), Some(b)) => Some(format!("{a}; {b}")),
                    (a, b) => a.or(b.clone()),
                };
                cov.push(w.coverage.clone());
            }
        }
    }
    let workloads: Vec<WorkloadReport> = workloads
        .into_values()
        .map(|(mut w, cov)| {
            w.seeds.sort_unstable();
            w.seeds.dedup();
            w.unique_states = states
                .get(&format!("{}/{}", w.system, w.workload))
                .map_or(w.unique_states, |s| s.len() as u64);
            w.paths_per_hour = w.paths as f64 * 3600.0 / w.seconds.max(1e-9);
            w.coverage = sum_coverage(&cov);
            w
        })
        .collect();
    workloads
}

/// Finding `f`'s path file in the shard folder `root`: the shard's own `findings/ID.json`, not
/// whatever file its `hunt.json` names (shard folders travel, and a hunt.json is data), still
/// inside `root` once symlinks are resolved, and a path of the finding's system and workload.
fn shard_path_file(root: &Path, f: &FindingReport) -> Result<PathBuf> {
    let file = root.join("findings").join(format!("{}.json", f.id));
    let real = std::fs::canonicalize(&file).with_context(|| {
        format!(
            "the shard {} has no path file for its finding {} ({})",
            root.display(),
            f.id,
            file.display()
        )
    })?;
    if !real.starts_with(root) || !real.is_file() {
        anyhow::bail!(
            "{} leads outside the shard folder {} (to {}); merge copies only the shard's own files",
            file.display(),
            root.display(),
            real.display()
        );
    }
    let path = PathFile::load(&real)?;
    if (&path.system, &path.workload.name) != (&f.system, &f.workload) {
        anyhow::bail!(
            "{} is a path of {} / {}, but the shard files finding {} under {} / {}; merge only folders `flymc hunt` wrote",
            file.display(),
            path.system,
            path.workload.name,
            f.id,
            f.system,
            f.workload
        );
    }
    Ok(real)
}

/// A workload's report summed so far, with each shard's coverage curve.
type Joined = (WorkloadReport, Vec<Vec<CoveragePoint>>);

/// The shards' coverage as one curve: at each sample time, the sum of every shard's latest
/// sample (shards run side by side; their unique states may overlap, so that curve is an upper
/// bound, and the workload's `unique_states` is the exact union).
fn sum_coverage(shards: &[Vec<CoveragePoint>]) -> Vec<CoveragePoint> {
    let mut times: Vec<f64> = shards.iter().flatten().map(|p| p.seconds).collect();
    times.sort_by(f64::total_cmp);
    times.dedup();
    times
        .into_iter()
        .map(|t| {
            let mut sum = CoveragePoint {
                seconds: t,
                paths: 0,
                unique_states: 0,
                abstract_states: 0,
            };
            for s in shards {
                if let Some(p) = s.iter().rev().find(|p| p.seconds <= t) {
                    sum.paths += p.paths;
                    sum.unique_states += p.unique_states;
                    sum.abstract_states += p.abstract_states;
                }
            }
            sum
        })
        .collect()
}
