//! Where a path's wall-clock time goes, as the executor measures it, and the totals an
//! exploration keeps of it.
//!
//! On a real cluster a path pays for starting the nodes, for re-executing the prefix the
//! previous path already executed, for every enable → settle cycle, for crashes and reboots
//! and for stopping; knowing which dominates says which lever to pull. Per-event settle times
//! are kept exactly per path and as a histogram over an exploration (bounded memory however
//! long it runs), from which the median and p90 come.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub(crate) fn micros(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

/// One path's time, in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathTiming {
    /// Starting the cluster, until its first settled state.
    pub start_us: u64,
    /// Restoring a snapshot in place of start and prefix (0: the path started cold).
    pub restore_us: u64,
    /// The steps that re-executed the plan's prefix (what a snapshot restore would skip).
    /// Part of the step times below, not in addition to them.
    pub prefix_us: u64,
    /// Every enabled message, timer or client request: enable until the cluster settled,
    /// in step order. (Under a state-event cache hit the executor does not read the state,
    /// but it still waits for the cluster to settle before the next step: that wait counts.)
    pub settle_us: Vec<u64>,
    /// Crashes and reboots: from the kill or the launch until the cluster settled.
    pub faults_us: u64,
    pub faults: u32,
    /// Taking snapshots at branch points (what later paths restore).
    #[serde(default)]
    pub checkpoint_us: u64,
    #[serde(default)]
    pub checkpoints: u32,
    /// Stopping the cluster.
    pub stop_us: u64,
    /// The whole path, from the start to the cluster stopped.
    pub total_us: u64,
}

impl PathTiming {
    pub fn record_start(&mut self, d: Duration) {
        self.start_us += micros(d);
    }

    pub fn record_restore(&mut self, d: Duration) {
        self.restore_us += micros(d);
    }

    /// One step: a fault or an event, from the plan's prefix or not.
    pub fn record_step(&mut self, d: Duration, fault: bool, prefix: bool) {
        let us = micros(d);
        if fault {
            self.faults_us += us;
            self.faults += 1;
        } else {
            self.settle_us.push(us);
        }
        if prefix {
            self.prefix_us += us;
        }
    }

    pub fn record_stop(&mut self, d: Duration) {
        self.stop_us += micros(d);
    }

    pub fn record_checkpoint(&mut self, d: Duration) {
        self.checkpoint_us += micros(d);
        self.checkpoints += 1;
    }

    pub fn record_total(&mut self, d: Duration) {
        self.total_us = micros(d);
    }

    /// The time of the enabled events (faults aside).
    pub fn settle_total_us(&self) -> u64 {
        self.settle_us.iter().sum()
    }
}

/// Durations in logarithmic buckets: 32 per power of two, so a quantile read from it is within
/// about 3% of the exact one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Histogram {
    /// Bucket → how many values fell in it.
    buckets: BTreeMap<u32, u64>,
    count: u64,
}

const SUB: u32 = 5; // 2^5 sub-buckets per power of two

fn bucket(v: u64) -> u32 {
    if v < (1 << SUB) {
        return v as u32;
    }
    let e = 63 - v.leading_zeros(); // v in [2^e, 2^(e+1))
    let mantissa = (v >> (e - SUB)) as u32 & ((1 << SUB) - 1);
    ((e - SUB + 1) << SUB) | mantissa
}

/// The middle of a bucket's range.
fn value(b: u32) -> u64 {
    if b < (1 << SUB) {
        return b as u64;
    }
    let e = (b >> SUB) + SUB - 1;
    let mantissa = (b & ((1 << SUB) - 1)) as u64;
    let low = (1u64 << e) | (mantissa << (e - SUB));
    low + (1u64 << (e - SUB)) / 2
}

impl Histogram {
    pub fn add(&mut self, v: u64) {
        *self.buckets.entry(bucket(v)).or_insert(0) += 1;
        self.count += 1;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The value below which a fraction `q` (0..=1) of the values lie; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        // The rank of the value asked for, 1-based (nearest-rank definition).
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (&b, &n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return Some(value(b));
            }
        }
        self.buckets.keys().next_back().map(|&b| value(b))
    }
}

/// An exploration's totals: every path's [`PathTiming`] summed, settle times in a histogram.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingTotals {
    pub paths: u64,
    pub start_us: u64,
    pub restore_us: u64,
    pub prefix_us: u64,
    /// Sum of the per-event settle times.
    pub settle_us: u64,
    pub settle: Histogram,
    pub faults_us: u64,
    pub faults: u64,
    #[serde(default)]
    pub checkpoint_us: u64,
    #[serde(default)]
    pub checkpoints: u64,
    pub stop_us: u64,
    pub total_us: u64,
}

impl TimingTotals {
    pub fn add(&mut self, t: &PathTiming) {
        self.paths += 1;
        self.start_us += t.start_us;
        self.restore_us += t.restore_us;
        self.prefix_us += t.prefix_us;
        for &us in &t.settle_us {
            self.settle_us += us;
            self.settle.add(us);
        }
        self.faults_us += t.faults_us;
        self.faults += t.faults as u64;
        self.checkpoint_us += t.checkpoint_us;
        self.checkpoints += t.checkpoints as u64;
        self.stop_us += t.stop_us;
        self.total_us += t.total_us;
    }

    pub fn settle_median_us(&self) -> Option<u64> {
        self.settle.quantile(0.5)
    }

    pub fn settle_p90_us(&self) -> Option<u64> {
        self.settle.quantile(0.9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_keep_values_within_a_few_percent_and_in_order() {
        let mut last = 0;
        for v in (1..200_000u64).step_by(7).chain([1 << 40, u64::MAX / 2]) {
            let b = bucket(v);
            assert!(b >= last, "buckets grow with the value");
            last = b;
            let back = value(b) as f64;
            assert!(
                (back - v as f64).abs() <= v as f64 / 32.0,
                "{v} came back as {back}"
            );
        }
    }

    #[test]
    fn quantiles_of_a_known_spread() {
        let mut h = Histogram::default();
        assert_eq!(h.quantile(0.5), None);
        // 1..=1000 ms in µs: the median is 500 ms, p90 900 ms.
        for ms in 1..=1000u64 {
            h.add(ms * 1000);
        }
        let near = |got: Option<u64>, want: u64| {
            let got = got.unwrap() as f64;
            assert!(
                (got - want as f64).abs() <= want as f64 / 32.0,
                "{got} vs {want}"
            );
        };
        near(h.quantile(0.5), 500_000);
        near(h.quantile(0.9), 900_000);
        near(h.quantile(1.0), 1_000_000);
        near(h.quantile(0.0), 1000);
    }

    #[test]
    fn totals_sum_paths_and_split_faults_from_events() {
        let mut p = PathTiming::default();
        p.record_start(Duration::from_millis(1200));
        p.record_step(Duration::from_millis(20), false, true);
        p.record_step(Duration::from_millis(30), false, false);
        p.record_step(Duration::from_millis(400), true, true);
        p.record_stop(Duration::from_millis(100));
        p.record_total(Duration::from_millis(1800));
        assert_eq!(p.settle_us, vec![20_000, 30_000]);
        assert_eq!((p.faults, p.faults_us), (1, 400_000));
        assert_eq!(p.prefix_us, 420_000);
        let mut t = TimingTotals::default();
        t.add(&p);
        t.add(&p);
        assert_eq!(t.paths, 2);
        assert_eq!(t.settle.count(), 4);
        assert_eq!(t.settle_us, 100_000);
        assert_eq!(t.start_us, 2_400_000);
        assert_eq!(t.total_us, 3_600_000);
        assert_eq!((t.faults, t.faults_us), (2, 800_000));
    }
}
