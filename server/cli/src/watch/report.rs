//! What `flymc watch` reports: per run and over all runs, in text and JSON.

use std::fmt::Write;

use flymc_core::live::predict::Bounds;
use flymc_core::live::{LiveEnding, LiveRun, PredictionStats};
use flymc_model::PropertyKind;
use serde::Serialize;

use super::{WatchArgs, Written};

/// The whole watch: its settings, the totals, and every run.
#[derive(Serialize)]
pub struct WatchReport {
    pub system: String,
    pub workload: String,
    pub steer: bool,
    pub seed: u64,
    pub fault_rate: f64,
    pub bounds: Bounds,
    pub summary: Summary,
    pub runs: Vec<RunReport>,
}

#[derive(Serialize)]
pub struct RunReport {
    #[serde(flatten)]
    pub run: LiveRun,
    pub path_files: Vec<Written>,
}

/// Totals over the runs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub runs: u64,
    pub steps: u64,
    /// Runs where a property failed (safety on the way, liveness at the end).
    pub violated: u64,
    pub safety_violations: u64,
    pub liveness_violations: u64,
    /// Safety violations that happened after a prediction of the same property.
    pub predicted_before: u64,
    /// How many steps before they happened those were first predicted: sum, min, max.
    pub ahead_sum: u64,
    pub ahead_min: Option<usize>,
    pub ahead_max: Option<usize>,
    pub predictions: PredictionStats,
    /// Runs with at least one predicted violation.
    pub runs_with_forecasts: u64,
    pub forecasts: u64,
    pub filters: u64,
    pub runs_steered: u64,
    pub unsteerable: u64,
    /// With steering: violations that happened anyway.
    pub violations_anyway: u64,
    pub node_failures: u64,
    pub interrupted: bool,
    pub path_files: u64,
    /// Path files whose re-execution from the initial state did not reproduce their violation.
    pub not_reproduced: u64,
    pub seconds: f64,
}

impl WatchReport {
    pub fn new(system: &str, workload: &str, args: &WatchArgs, bounds: Bounds) -> Self {
        WatchReport {
            system: system.into(),
            workload: workload.into(),
            steer: args.steer,
            seed: args.seed,
            fault_rate: args.faults,
            bounds,
            summary: Summary::default(),
            runs: Vec::new(),
        }
    }

    pub fn add(&mut self, run: LiveRun, files: Vec<Written>) {
        let s = &mut self.summary;
        s.runs += 1;
        s.steps += run.steps as u64;
        s.predictions.merge(&run.predictions);
        s.forecasts += run.forecasts.len() as u64;
        s.runs_with_forecasts += u64::from(!run.forecasts.is_empty());
        s.filters += run.filters.len() as u64;
        s.runs_steered += u64::from(!run.filters.is_empty());
        s.unsteerable += run.unsteerable;
        s.node_failures += u64::from(run.node_failure.is_some());
        s.interrupted |= run.ending == LiveEnding::Interrupted;
        s.path_files += files.len() as u64;
        s.not_reproduced += files.iter().filter(|f| !f.reproduced).count() as u64;
        s.seconds += run.millis as f64 / 1000.0;
        if let Some(v) = &run.violation {
            s.violated += 1;
            match v.kind {
                PropertyKind::Safety => s.safety_violations += 1,
                PropertyKind::Liveness => s.liveness_violations += 1,
            }
            s.violations_anyway += u64::from(run.steer && v.kind == PropertyKind::Safety);
            if let Some(a) = run
                .predicted_ahead
                .filter(|_| v.kind == PropertyKind::Safety)
            {
                s.predicted_before += 1;
                s.ahead_sum += a as u64;
                s.ahead_min = Some(s.ahead_min.map_or(a, |m| m.min(a)));
                s.ahead_max = Some(s.ahead_max.map_or(a, |m| m.max(a)));
            }
        }
        self.runs.push(RunReport {
            run,
            path_files: files,
        });
    }

    pub fn text(&self) -> String {
        let s = &self.summary;
        let p = &s.predictions;
        let mut t = String::new();
        let rate = |n: u64| percent(n, s.runs);
        let _ = writeln!(
            t,
            "watch: {} runs, {} steps, {:.1} s; violated {} ({}): {} safety, {} liveness; {} nodes failed on their own{}",
            s.runs,
            s.steps,
            s.seconds,
            s.violated,
            rate(s.violated),
            s.safety_violations,
            s.liveness_violations,
            s.node_failures,
            if s.interrupted { "; interrupted" } else { "" }
        );
        let _ = writeln!(
            t,
            "predictions: {} ({} found a violation), {:.0} states and depth {:.1} on average (deepest {}), {:.1} ms on average, {:.1} ms at most, {} local actions pruned",
            p.count,
            p.with_violation,
            mean(p.states, p.count),
            mean(p.depth_sum, p.count),
            p.max_depth,
            mean(p.micros, p.count) / 1000.0,
            p.max_micros as f64 / 1000.0,
            p.pruned_local
        );
        let ahead = match (s.ahead_min, s.ahead_max) {
            (Some(lo), Some(hi)) => format!(
                ", {:.1} steps ahead on average ({lo} to {hi})",
                mean(s.ahead_sum, s.predicted_before)
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            t,
            "predicted: {} violations in {} runs; of the {} safety violations that happened, {} were predicted before they did{ahead}",
            s.forecasts, s.runs_with_forecasts, s.safety_violations, s.predicted_before
        );
        if self.steer {
            let _ = writeln!(
                t,
                "steering: {} filters in {} runs, {} doomed arrivals without a safe filter, {} violations happened anyway",
                s.filters, s.runs_steered, s.unsteerable, s.violations_anyway
            );
        }
        let _ = writeln!(
            t,
            "path files: {} written, {} did not reproduce their violation from the initial state",
            s.path_files, s.not_reproduced
        );
        t
    }
}

/// One run, for watches of a few runs.
pub fn run_text(run: &LiveRun, files: &[Written]) -> String {
    let mut t = String::new();
    let end = match (&run.violation, &run.node_failure) {
        (Some(v), _) => format!("VIOLATION {v}"),
        (None, Some(f)) => format!("a node failed on its own {f}"),
        (None, None) => format!("{:?}", run.ending).to_lowercase(),
    };
    let _ = writeln!(
        t,
        "run seed {}: {} steps, {}; {} predictions, {} filters",
        run.seed,
        run.steps,
        end,
        run.predictions.count,
        run.filters.len()
    );
    for f in &run.forecasts {
        let _ = writeln!(
            t,
            "  predicted at step {}: {} {} steps ahead ({})",
            f.step, f.property, f.steps_ahead, f.message
        );
    }
    for f in &run.filters {
        let _ = writeln!(
            t,
            "  filter at step {}: {} {} ({} within {} steps; prediction {} states, depth {}, {:.1} ms), ran {} instead (checked: {} states, depth {})",
            f.step,
            f.action,
            f.held,
            f.property,
            f.steps_ahead,
            f.caused_by.states,
            f.caused_by.depth,
            f.caused_by.micros as f64 / 1000.0,
            f.instead,
            f.checked_by.states,
            f.checked_by.depth
        );
    }
    for w in files {
        let _ = writeln!(
            t,
            "  path file ({} {}): {}{}; replay it: flymc replay {}",
            w.what,
            w.property,
            w.file.display(),
            if w.reproduced {
                ""
            } else {
                " (did not reproduce)"
            },
            w.file.display()
        );
    }
    t
}

pub fn percent(n: u64, of: u64) -> String {
    match of {
        0 => "-".into(),
        _ => format!("{:.0}%", 100.0 * n as f64 / of as f64),
    }
}

fn mean(sum: u64, n: u64) -> f64 {
    match n {
        0 => 0.0,
        _ => sum as f64 / n as f64,
    }
}
