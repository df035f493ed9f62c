//! What `flymc run` says at the end: one [`RunSummary`], rendered as text for people
//! ([`RunSummary::text`]) and as JSON (`--json FILE`).

use flymc_core::explore::Outcome;
use flymc_core::liveness::LivenessStats;
use flymc_core::snapshots::SnapshotStats;
use flymc_core::timing::TimingTotals;
use serde::Serialize;

/// Paths per second with a decimal, so slow real-cluster runs do not read "0 paths/s".
pub fn paths_per_sec(paths: u64, secs: f64) -> String {
    let r = paths as f64 / secs.max(1e-9);
    if r < 10.0 {
        format!("{r:.2}")
    } else {
        format!("{r:.1}")
    }
}

/// A duration in seconds, or in milliseconds below one (simulated paths take microseconds).
fn secs(us: u64) -> String {
    if us >= 1_000_000 {
        format!("{:.2} s", us as f64 / 1e6)
    } else {
        format!("{:.1} ms", us as f64 / 1e3)
    }
}

fn ms(us: Option<u64>) -> String {
    match us {
        None => "-".into(),
        Some(us) if us < 1000 => format!("{:.2} ms", us as f64 / 1e3),
        Some(us) => format!("{:.1} ms", us as f64 / 1e3),
    }
}

/// `time: start 1.21 s, prefix ..., ...`: where the paths' time went, per path on average.
fn time_line(t: &TimingTotals) -> String {
    let n = t.paths.max(1);
    let per = |us: u64| secs(us / n);
    let mut line = format!(
        "time per path: total {}, start {}",
        per(t.total_us),
        per(t.start_us)
    );
    if t.restore_us > 0 {
        line += &format!(", restore {}", per(t.restore_us));
    }
    line += &format!(
        ", events {} ({} per path, settle median {}, p90 {})",
        per(t.settle_us),
        t.settle.count() / n,
        ms(t.settle_median_us()),
        ms(t.settle_p90_us()),
    );
    if t.faults > 0 {
        line += &format!(
            ", crash/reboot {} ({:.1} per path)",
            per(t.faults_us),
            t.faults as f64 / n as f64
        );
    }
    if t.prefix_us > 0 {
        line += &format!(", of which the plan's prefix {}", per(t.prefix_us));
    }
    if t.checkpoints > 0 {
        line += &format!(
            ", snapshots {} ({:.1} per path)",
            per(t.checkpoint_us),
            t.checkpoints as f64 / n as f64
        );
    }
    line += &format!(", stop {}", per(t.stop_us));
    line
}

/// `snapshots: 12 taken, 30 paths restored and checked (1,234 steps not re-executed), 0 restores
/// differed from their snapshot, ...`, for runs that
/// asked for snapshots.
fn snapshot_line(s: &SnapshotStats) -> String {
    // Every restore is checked: each node's state on going on against the recorded one.
    let mut line = format!(
        "snapshots: {} taken, {} paths restored and checked ({} steps not re-executed), {} restores differed from their snapshot",
        s.taken, s.restored, s.steps_skipped, s.differed
    );
    if s.declined > 0 {
        line += &format!(", {} declined", s.declined);
    }
    if s.fallbacks > 0 {
        line += &format!(", {} restores fell back to re-execution", s.fallbacks);
    }
    if s.unprofitable > 0 {
        line += &format!(
            ", {} skipped as costing more than re-execution",
            s.unprofitable
        );
    }
    line
}

/// `liveness: 3 end states failed a liveness property: 2 transient, 1 dead (17 walks of
/// 300 events, at most 5 per state)`, when some did.
fn liveness_line(l: &LivenessStats) -> Option<String> {
    if l.judged == 0 {
        return None;
    }
    Some(format!(
        "liveness: {} end states failed a liveness property: {} transient (a walk reached it), {} dead ({} walks of {} events, at most {} per state, the critical-transition search included)",
        l.judged, l.transient, l.dead, l.walks, l.walk_depth, l.walks_per_state
    ))
}

/// The JSON summary of a run (`flymc run --json FILE`).
#[derive(Serialize)]
pub struct RunSummary<'a> {
    pub version: u32,
    pub system: &'a str,
    pub workload: &'a str,
    pub strategy: &'a str,
    pub seed: u64,
    pub paths: u64,
    pub events: u64,
    pub unique_states: usize,
    pub exhausted: bool,
    /// The path number of the violation, if one was found.
    pub violation_path: Option<u64>,
    pub elapsed_s: f64,
    pub paths_per_sec: f64,
    pub late_reports: u64,
    pub late_paths: u64,
    pub diverged: u64,
    /// Violations that did not recur when their path was executed again from a fresh start.
    pub unconfirmed: u64,
    /// Violating paths after the first (`--keep-going`, or of other properties).
    pub other_violations: u64,
    /// Paths the strategy still had to explore when the run ended.
    pub queue_left: usize,
    /// State-event cache lookups, and those answered from the cache.
    pub cache_lookups: u64,
    pub cache_hits: u64,
    /// To-explore paths the strategy dropped as redundant, by reason.
    pub pruned: &'a [(String, u64)],
    /// To-explore paths the strategy moved to its low-priority queue.
    pub deprioritized: u64,
    /// Coarse abstract states reached (`novelty`, `faults`, `portfolio`).
    pub abstract_states: u64,
    /// What only the strategy keeps, under the keys it gives (`fault_states`, `pct`,
    /// `portfolio`).
    #[serde(flatten)]
    pub notes: serde_json::Map<String, serde_json::Value>,
    /// The same notes for people: a clause of the summary line, or a line of its own.
    #[serde(skip)]
    pub note_texts: &'a [flymc_core::strategy::Note],
    /// Unique and abstract states after paths 1, 2, 4, 8, ... and the last.
    pub coverage: &'a [flymc_core::explore::Coverage],
    pub timing: TimingJson<'a>,
    pub snapshots: &'a SnapshotStats,
    /// The run asked for cluster snapshots (the text says how they went only then).
    #[serde(skip)]
    pub snapshots_on: bool,
    /// End states that failed a liveness property: transient or dead, and the walks taken.
    pub liveness: &'a LivenessStats,
    /// What ended the run early, if something did: `interrupted by SIGTERM`, or the error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// [`TimingTotals`] with the quantiles worked out.
#[derive(Serialize)]
pub struct TimingJson<'a> {
    #[serde(flatten)]
    pub totals: &'a TimingTotals,
    pub settle_median_us: Option<u64>,
    pub settle_p90_us: Option<u64>,
}

impl<'a> RunSummary<'a> {
    /// The summary of `outcome`; `queue_left`, `snapshots_on` and `stopped` are the caller's to
    /// set when they are not nothing.
    pub fn new(
        outcome: &'a Outcome,
        system: &'a str,
        workload: &'a str,
        strategy: &'a str,
        seed: u64,
    ) -> RunSummary<'a> {
        let secs = outcome.elapsed.as_secs_f64();
        RunSummary {
            version: 1,
            system,
            workload,
            strategy,
            seed,
            paths: outcome.paths,
            events: outcome.events,
            unique_states: outcome.unique_states.len(),
            exhausted: outcome.exhausted,
            violation_path: outcome.violation.as_ref().map(|(n, _)| *n),
            elapsed_s: secs,
            paths_per_sec: outcome.paths as f64 / secs.max(1e-9),
            late_reports: outcome.late_reports,
            late_paths: outcome.late_paths,
            diverged: outcome.diverged,
            unconfirmed: outcome.unconfirmed,
            other_violations: outcome.other_violations,
            queue_left: 0,
            cache_lookups: outcome.cache_hits + outcome.cache_misses,
            cache_hits: outcome.cache_hits,
            pruned: &outcome.stats.pruned,
            deprioritized: outcome.stats.deprioritized,
            abstract_states: outcome.stats.abstract_states,
            notes: (outcome.stats.notes.iter())
                .map(|n| (n.key.clone(), n.value.clone()))
                .collect(),
            note_texts: &outcome.stats.notes,
            coverage: &outcome.coverage,
            snapshots: &outcome.snapshots,
            snapshots_on: false,
            liveness: &outcome.liveness,
            timing: TimingJson {
                totals: &outcome.timing,
                settle_median_us: outcome.timing.settle_median_us(),
                settle_p90_us: outcome.timing.settle_p90_us(),
            },
            stopped: None,
        }
    }

    /// The summary for people: the counts on one line, then a line each for what this run
    /// has to say (the strategy's own notes, such as the portfolio's shares or pct's guarantee;
    /// coverage, liveness), where the time
    /// went, and the snapshots.
    pub fn text(&self) -> String {
        let mut lines = vec![self.counts_line()];
        for n in self.note_texts.iter().filter(|n| n.own_line) {
            lines.push(n.text.clone());
        }
        lines.extend(coverage_line(self.coverage));
        lines.extend(liveness_line(self.liveness));
        lines.push(time_line(self.timing.totals));
        if self.snapshots_on {
            lines.push(snapshot_line(self.snapshots));
        }
        lines.join("\n")
    }

    /// `summary: 12 paths, 340 events, 57 unique states, 0.02 s (600 paths/s), queue left 3`
    /// and what else the run counted.
    fn counts_line(&self) -> String {
        let mut line = format!(
            "summary: {} paths, {} events, {} unique states, {:.2} s ({} paths/s), queue left {}",
            self.paths,
            self.events,
            self.unique_states,
            self.elapsed_s,
            paths_per_sec(self.paths, self.elapsed_s),
            self.queue_left,
        );
        if self.cache_lookups > 0 {
            line += &format!(
                ", state-event cache {:.0}% hits ({} of {})",
                100.0 * self.cache_hits as f64 / self.cache_lookups as f64,
                self.cache_hits,
                self.cache_lookups
            );
        }
        for (why, n) in self.pruned {
            line += &format!(", pruned by {why} {n}");
        }
        for n in self.note_texts.iter().filter(|n| !n.own_line) {
            line += &format!(", {}", n.text);
        }
        if self.abstract_states > 0 {
            line += &format!(", {} abstract states", self.abstract_states);
        }
        if self.deprioritized > 0 {
            line += &format!(", deprioritised {}", self.deprioritized);
        }
        if self.diverged > 0 {
            line += &format!(", {} paths diverged from their plan", self.diverged);
        }
        if self.unconfirmed > 0 {
            line += &format!(
                ", {} violations dropped (they did not recur when executed again from a fresh start)",
                self.unconfirmed
            );
        }
        if self.late_paths > 0 {
            line += &format!(
                ", {} events reported late on {} paths",
                self.late_reports, self.late_paths
            );
        }
        line
    }
}

/// How abstract-state coverage grew over the paths, for strategies that track it:
/// `abstract states over paths: 1: 3, 2: 5, 4: 9, 7: 12`.
fn coverage_line(coverage: &[flymc_core::explore::Coverage]) -> Option<String> {
    if coverage.iter().all(|c| c.abstract_states == 0) {
        return None;
    }
    let points: Vec<String> = coverage
        .iter()
        .map(|c| format!("{}: {}", c.path, c.abstract_states))
        .collect();
    Some(format!("abstract states over paths: {}", points.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use flymc_core::timing::PathTiming;
    use std::time::Duration;

    #[test]
    fn slow_runs_keep_their_decimals() {
        assert_eq!(paths_per_sec(5, 16.2), "0.31");
        assert_eq!(paths_per_sec(89, 2.05), "43.4");
    }

    #[test]
    fn the_time_line_averages_per_path() {
        let mut t = TimingTotals::default();
        for _ in 0..2 {
            let mut p = PathTiming::default();
            p.record_start(Duration::from_millis(1200));
            p.record_step(Duration::from_millis(20), false, false);
            p.record_step(Duration::from_millis(500), true, false);
            p.record_stop(Duration::from_millis(100));
            p.record_total(Duration::from_millis(1900));
            t.add(&p);
        }
        let line = time_line(&t);
        assert!(line.contains("total 1.90 s, start 1.20 s"), "{line}");
        assert!(
            line.contains("events 20.0 ms (1 per path, settle median 20."),
            "{line}"
        );
        assert!(
            line.contains("crash/reboot 500.0 ms (1.0 per path)"),
            "{line}"
        );
        assert!(!line.contains("prefix"), "{line}");
    }
}
