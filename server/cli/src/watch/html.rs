//! The watch report as a section in the HTML format `flymc hunt` writes (its stylesheet, its
//! tables): the totals, then every filter with the prediction that caused it.

use std::fmt::Write;

use super::report::{percent, WatchReport};
use crate::show::markup::escape;

pub fn page(r: &WatchReport) -> String {
    let title = format!("flymc watch, {} / {}", r.system, r.workload);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{}</style></head><body>{}</body></html>\n",
        escape(&title),
        crate::hunt::html::CSS,
        section(r)
    )
}

/// The section: a facts table, then one row per filter.
pub fn section(r: &WatchReport) -> String {
    let s = &r.summary;
    let p = &s.predictions;
    let mut h = format!(
        "<h2>flymc watch: {} / {}</h2><table class=\"facts\">",
        escape(&r.system),
        escape(&r.workload)
    );
    let per = |n: u64| {
        if p.count == 0 {
            0.0
        } else {
            n as f64 / p.count as f64
        }
    };
    for (k, v) in [
        ("runs", format!("{} ({} steps)", s.runs, s.steps)),
        ("steering", if r.steer { "on" } else { "off" }.to_string()),
        (
            "violated",
            format!(
                "{} ({}): {} safety, {} liveness",
                s.violated,
                percent(s.violated, s.runs),
                s.safety_violations,
                s.liveness_violations
            ),
        ),
        (
            "predictions",
            format!(
                "{}: {:.0} states, depth {:.1}, {:.1} ms on average",
                p.count,
                per(p.states),
                per(p.depth_sum),
                per(p.micros) / 1000.0
            ),
        ),
        (
            "predicted before they happened",
            format!("{} of {}", s.predicted_before, s.safety_violations),
        ),
        ("filters installed", s.filters.to_string()),
        ("violations anyway", s.violations_anyway.to_string()),
        ("nodes failed on their own", s.node_failures.to_string()),
    ] {
        let _ = write!(h, "<tr><th>{k}</th><td>{}</td></tr>", escape(&v));
    }
    h.push_str("</table>");
    let filters: Vec<_> = r
        .runs
        .iter()
        .flat_map(|run| run.run.filters.iter().map(move |f| (run.run.seed, f)))
        .collect();
    if filters.is_empty() {
        return h;
    }
    h.push_str("<table class=\"runs\"><thead><tr><th>seed</th><th>step</th><th>held</th><th>leads to</th><th>steps ahead</th><th>prediction</th><th>ran instead</th></tr></thead><tbody>");
    for (seed, f) in filters {
        let _ = write!(
            h,
            "<tr><td class=\"num\">{seed}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{} states, depth {}, {:.1} ms</td><td>{}</td></tr>",
            f.step,
            escape(&f.held),
            escape(&f.property),
            f.steps_ahead,
            f.caused_by.states,
            f.caused_by.depth,
            f.caused_by.micros as f64 / 1000.0,
            escape(&f.instead)
        );
    }
    h.push_str("</tbody></table>");
    h
}
