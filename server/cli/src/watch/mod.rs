//! `flymc watch`: run a workload live (no checker choices), predict its violations from every
//! live state with consequence prediction, and with `--steer` hold back the events that lead
//! to them ([`flymc_core::live`]). Writes a path file for every predicted violation (the first
//! of each property per run) and for every violation that happened, each confirmed by
//! re-executing it from the initial state, and reports in text, JSON ([`report`]) and HTML
//! ([`html`]).

mod html;
mod report;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use flymc_core::live::predict::Bounds;
use flymc_core::live::{self, LiveConfig, LiveRun};
use flymc_core::pathfile::PathFile;
use flymc_core::workloads;
use flymc_model::{EventId, System, Workload};

use crate::systems;
pub use report::{Summary, WatchReport};

#[derive(clap::Args)]
pub struct WatchArgs {
    /// The system to run (see `flymc systems`).
    #[arg(long)]
    pub system: String,
    /// A workload name (see `flymc workloads SYSTEM`) or a path to a workload TOML file.
    #[arg(long)]
    pub workload: String,
    /// Hold back events that prediction shows lead to a violation (execution steering).
    #[arg(long)]
    pub steer: bool,
    /// Stop each run after this long (`90s`, `5m`, `1h`, or seconds).
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Stop each run after N steps (default: the workload's event limit).
    #[arg(long, value_name = "N")]
    pub steps: Option<usize>,
    /// Chance per step that a crash or reboot the workload's fault budget allows strikes.
    #[arg(long, value_name = "RATE", default_value_t = 0.05, value_parser = parse_rate)]
    pub faults: f64,
    /// Seed of the first run's arrival order and faults; run k uses SEED + k.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Live runs, one after another.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub runs: u64,
    /// Events a prediction looks ahead, at most.
    #[arg(long, default_value_t = Bounds::default().depth, value_name = "N")]
    pub depth: usize,
    /// States a prediction explores, at most.
    #[arg(long, default_value_t = Bounds::default().states, value_name = "N")]
    pub states: usize,
    /// Milliseconds a prediction takes, at most.
    #[arg(long, default_value_t = Bounds::default().time.as_millis() as u64, value_name = "MS")]
    pub predict_ms: u64,
    /// Also write the report as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the report as an HTML page (the format `flymc hunt` uses).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Where path files go.
    #[arg(long, default_value = "flymc-out", value_name = "DIR")]
    pub out: PathBuf,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration: write e.g. 90s, 5m or 1h"))?;
    let secs = match unit {
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("`{s}`: the unit must be s, m or h")),
    };
    Ok(Duration::from_secs_f64(secs))
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(format!("`{s}` is not a rate: give a number from 0 to 1")),
    }
}

pub fn run(args: &WatchArgs, folder: Option<&Path>) -> Result<u8> {
    let system = systems::find(&args.system)?;
    let dir = systems::workloads_dir(system.as_ref(), folder)?;
    let mut workload = workloads::load_in(&dir, system.name(), &args.workload)?;
    workload.system_file = system.about().file.clone();
    workloads::check_expect(system.as_ref(), &workload)?;
    let bounds = Bounds {
        depth: args.depth,
        states: args.states,
        time: Duration::from_millis(args.predict_ms),
    };
    println!(
        "flymc watch: {} / {}, {} run{} from seed {}, faults {}/step, {}prediction to {} events, {} states, {} ms",
        system.name(),
        workload.name,
        args.runs,
        if args.runs == 1 { "" } else { "s" },
        args.seed,
        args.faults,
        if args.steer { "steering, " } else { "" },
        bounds.depth,
        bounds.states,
        args.predict_ms
    );
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut report = WatchReport::new(system.name(), &workload.name, args, bounds);
    for k in 0..args.runs {
        if flymc_real::cluster::interrupted() {
            break;
        }
        let cfg = LiveConfig {
            seed: args.seed + k,
            steps: args.steps,
            duration: args.duration,
            fault_rate: args.faults,
            predict: Some(bounds),
            steer: args.steer,
            interrupted: Some(flymc_real::cluster::interrupted),
        };
        let run = live::watch(system.as_ref(), &workload, &cfg)?;
        let files = write_paths(system.as_ref(), &workload, &run, &args.out)?;
        if args.runs <= 10 {
            print!("{}", report::run_text(&run, &files));
        }
        report.add(run, files);
    }
    print!("{}", report.text());
    if let Some(file) = &args.json {
        std::fs::write(file, serde_json::to_string_pretty(&report)? + "\n")
            .with_context(|| format!("cannot write the JSON report to {}", file.display()))?;
    }
    if let Some(file) = &args.html {
        std::fs::write(file, html::page(&report))
            .with_context(|| format!("cannot write the HTML report to {}", file.display()))?;
    }
    Ok(u8::from(report.summary.violated > 0))
}

/// A path file written for a run, and whether re-executing it from the initial state
/// reproduced the violation it was written for.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Written {
    pub file: PathBuf,
    pub property: String,
    /// `predicted` or `happened`.
    pub what: &'static str,
    pub steps_ahead: Option<usize>,
    pub reproduced: bool,
}

/// Path files for the run's forecasts and its violation, each re-executed from the initial
/// state to confirm it.
fn write_paths(
    system: &dyn System,
    w: &Workload,
    run: &LiveRun,
    out: &Path,
) -> Result<Vec<Written>> {
    let mut jobs: Vec<(Vec<EventId>, String, &'static str, Option<usize>)> = run
        .forecasts
        .iter()
        .map(|f| {
            (
                f.path.clone(),
                f.property.clone(),
                "predicted",
                Some(f.steps_ahead),
            )
        })
        .collect();
    if let Some(v) = run
        .violation
        .as_ref()
        .filter(|v| v.kind == flymc_model::PropertyKind::Safety)
    {
        let ids = run.history.iter().map(|e| e.id).collect();
        jobs.push((ids, v.property.clone(), "happened", None));
    }
    let mut written = Vec::new();
    for (n, (ids, property, what, ahead)) in jobs.into_iter().enumerate() {
        let replayed = live::replay_ids(system, w, ids)?;
        let reproduced = replayed
            .violation
            .as_ref()
            .is_some_and(|v| v.property == property);
        let file = out.join(format!(
            "{}-{}-watch-seed{}-{what}-{property}.json",
            system.name(),
            w.name,
            run.seed
        ));
        PathFile::from_run(w, "watch", run.seed, n as u64 + 1, &replayed).save(&file)?;
        written.push(Written {
            file,
            property,
            what,
            steps_ahead: ahead,
            reproduced,
        });
    }
    Ok(written)
}
