//! One workload's share of a hunt: its explorations (one per seed of a randomized strategy,
//! one of a systematic one), each until its deadline or path budget, with every violating path
//! kept once per signature and coverage sampled as it goes.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use flymc_core::explore::{Exploration, KeepLogs};
use flymc_core::pathfile::PathFile;
use flymc_model::{System, Workload};
use flymc_strategies::{shard::Sharded, Novelty, StrategyContext, StrategyKind};

use super::report::{CoveragePoint, WorkloadReport};
use super::signature;

/// Coverage is sampled at most this often (and at each exploration's end).
const SAMPLE_EVERY: Duration = Duration::from_millis(500);

/// One exploration to run: a workload with one seed.
pub struct Unit<'a> {
    pub system: &'a dyn System,
    pub workload: &'a Workload,
    pub strategy: StrategyKind,
    pub seed: u64,
    /// `Some((k, n))`: only shard k's branches (systematic strategies).
    pub branches: Option<(u32, u32)>,
    pub max_paths: Option<u64>,
    pub deadline: Option<Instant>,
}

/// A violating path this hunt found, saved under the output folder.
pub struct Found {
    pub id: String,
    pub file: PathBuf,
    pub path: PathFile,
}

/// What a workload's explorations added up to.
pub struct Explored {
    pub report: WorkloadReport,
    /// Every state hash reached, so that shards' reports can be joined exactly.
    pub states: HashSet<u64>,
    /// The first path of each finding, by id.
    pub found: BTreeMap<String, Found>,
    /// An interruption (a signal) ended it.
    pub interrupted: bool,
    /// Abstract states over all its explorations.
    novelty: Option<Novelty>,
}

impl Explored {
    pub fn new(system: &str, workload: &str, strategy: &str) -> Explored {
        Explored {
            report: WorkloadReport {
                system: system.into(),
                workload: workload.into(),
                strategy: strategy.into(),
                seeds: Vec::new(),
                paths: 0,
                events: 0,
                unique_states: 0,
                seconds: 0.0,
                paths_per_hour: 0.0,
                exhausted: true,
                coverage: Vec::new(),
                error: None,
            },
            states: HashSet::new(),
            found: BTreeMap::new(),
            interrupted: false,
            novelty: None,
        }
    }

    /// Run `unit`, adding what it found. `ignore`d properties are not findings; path files go
    /// to `out/findings/`, violating paths' node logs to `out/logs/`.
    pub fn run(&mut self, unit: &Unit, ignore: &[String], out: &Path) -> Result<()> {
        let mut ctx = StrategyContext::for_system(unit.system, unit.workload);
        ctx.seed = unit.seed;
        if unit.strategy.uses_sets() {
            ctx.sets = crate::systems::load_sets(unit.system, unit.workload, None)?;
        }
        let mut strat = unit.strategy.build(&ctx)?;
        if let Some((k, n)) = unit.branches {
            strat = Box::new(Sharded::new(strat, k, n));
        }
        let prefix = format!(
            "{}-{}-{}-seed{}",
            unit.system.name(),
            unit.workload.name,
            unit.strategy,
            unit.seed
        );
        let findings = out.join("findings");
        self.novelty.get_or_insert_with(|| {
            Novelty::new(
                unit.system.about().fault_vars.clone(),
                unit.system.symmetry(unit.workload),
            )
        });
        let (offset, paths_before) = (self.report.seconds, self.report.paths);
        let started = Instant::now();
        let mut last_sample: Option<Instant> = None;
        let mut number = 0u64;
        let mut saved: Result<()> = Ok(());
        let Explored {
            report,
            states,
            found,
            novelty,
            ..
        } = &mut *self;
        let novelty = novelty.as_mut().expect("made above");
        let (outcome, failure) = Exploration::new(unit.system, unit.workload, strat.as_mut())
            .max_paths(unit.max_paths)
            .keep_going(true)
            .snapshots(unit.system.has(flymc_model::Feature::Snapshots))
            .deadline(unit.deadline)
            .interrupted(flymc_real::cluster::interrupted)
            .crash_points(flymc_core::CrashPoints::for_system(unit.system))
            .keep_logs(KeepLogs {
                dir: out.join("logs"),
                prefix,
                all: false,
            })
            .on_run(|run| {
                number += 1;
                states.extend(run.hashes.iter().copied());
                novelty.learn(run);
                if last_sample.is_none_or(|t| t.elapsed() >= SAMPLE_EVERY) {
                    last_sample = Some(Instant::now());
                    report.coverage.push(CoveragePoint {
                        seconds: offset + started.elapsed().as_secs_f64(),
                        paths: paths_before + number,
                        unique_states: states.len() as u64,
                        abstract_states: novelty.covered() as u64,
                    });
                }
                let Some(v) = &run.violation else { return };
                let keep = !ignore.contains(&v.property) && saved.is_ok();
                let path =
                    PathFile::from_run(unit.workload, unit.strategy.name(), unit.seed, number, run);
                let id = signature::of(&path).map(|s| signature::id(&s));
                match id.filter(|id| keep && !found.contains_key(id)) {
                    Some(id) => {
                        let file = findings.join(format!("{id}.json"));
                        saved = std::fs::create_dir_all(&findings)
                            .map_err(anyhow::Error::from)
                            .and_then(|()| path.save(&file).map_err(Into::into));
                        found.insert(id.clone(), Found { id, file, path });
                    }
                    // The same finding again (or an ignored one): its first path's logs are
                    // the ones kept.
                    None => {
                        if let Some(logs) = &run.logs {
                            let _ = std::fs::remove_dir_all(logs);
                        }
                    }
                }
            })
            .run_partial();
        saved?;
        self.report.seeds.push(unit.seed);
        self.report.paths += outcome.paths;
        self.report.events += outcome.events;
        self.report.seconds += outcome.elapsed.as_secs_f64();
        self.report.exhausted &= outcome.exhausted;
        self.report.unique_states = self.states.len() as u64;
        self.report.paths_per_hour =
            self.report.paths as f64 * 3600.0 / self.report.seconds.max(1e-9);
        self.report.coverage.push(CoveragePoint {
            seconds: self.report.seconds,
            paths: self.report.paths,
            unique_states: self.report.unique_states,
            abstract_states: self.novelty.as_ref().map_or(0, |n| n.covered() as u64),
        });
        if flymc_real::cluster::interrupted_by().is_some() {
            self.interrupted = true;
        } else if let Some(e) = failure {
            self.report.exhausted = false;
            self.report.error = Some(format!("seed {}: {e}", unit.seed));
        }
        Ok(())
    }
}
