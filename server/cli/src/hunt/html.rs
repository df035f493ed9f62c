//! `report.html`: the hunt as one self-contained page (inline CSS and SVG, no scripts, nothing
//! fetched): what ran and for how long, then each finding (new and regressed first, then known
//! and fixed) with its sequence diagram and the node states at its violation, then a row per
//! workload with its coverage plots folded, so a reader sees what is new without scrolling.

use std::fmt::Write;
use std::path::Path;

use flymc_core::pathfile::PathFile;

use super::report::{CoveragePoint, FindingReport, HuntReport, WorkloadReport};
use crate::show::diagram::state_after;
use crate::show::markup::{escape, state_table, STATE_TABLE_CSS};

pub const CSS: &str = "body{font:14px sans-serif;margin:1.5em;color:#222}\
h1{font-size:1.4em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}\
h3{font-size:1.05em}\
table.runs{border-collapse:collapse}\
table.runs th,table.runs td{border:1px solid #ccc;padding:3px 8px;text-align:left}\
table.runs td.num{text-align:right}\
table.runs thead th{background:#eee}\
td.err{color:#c00}\
.facts th{text-align:left;padding-right:1em;font-weight:normal;color:#555}\
.plots{display:flex;flex-wrap:wrap;gap:1em;margin:.5em 0 1.5em}\
.finding{border:1px solid #ccc;border-left-width:6px;padding:.2em 1em 1em;margin:1.5em 0;border-radius:4px}\
.finding.new{border-left-color:#c00}.finding.regressed{border-left-color:#e60}\
.finding.known{border-left-color:#888}.finding.fixed{border-left-color:#080}\
.status{display:inline-block;padding:0 .5em;border-radius:3px;color:#fff;font-size:.85em;text-transform:uppercase}\
.status.new{background:#c00}.status.regressed{background:#e60}.status.known{background:#888}.status.fixed{background:#080}\
.message{white-space:pre-wrap;font-family:monospace;background:#fff0f0;border:1px solid #e99;padding:.4em .8em}\
code{background:#f4f4f4;padding:0 .3em}\
.diagram{overflow-x:auto;border:1px solid #ddd;padding:4px;max-height:80vh;overflow-y:auto}\
.missing{color:#c00;font-style:italic}";

pub fn write(report: &HuntReport, file: &Path) -> std::io::Result<()> {
    flymc_core::outfile::write_atomically(file, page(report).as_bytes())
}

/// The whole page.
fn page(report: &HuntReport) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>flymc hunt, {}</title><style>{CSS}{STATE_TABLE_CSS}</style></head><body>",
        escape(&report.started)
    );
    s.push_str(&header(report));
    s.push_str(&findings(report));
    s.push_str(&workloads(report));
    s.push_str("</body></html>\n");
    s
}

fn header(r: &HuntReport) -> String {
    let mut s = String::from("<h1>flymc hunt</h1><table class=\"facts\">");
    let shard = r
        .shard
        .map_or("none (the whole hunt)".to_string(), |(k, n)| {
            format!("{k} of {n}")
        });
    let count = |st: super::report::Status| r.findings.iter().filter(|f| f.status == st).count();
    let findings = format!(
        "{} new, {} regressed, {} known, {} fixed",
        count(super::report::Status::New),
        count(super::report::Status::Regressed),
        count(super::report::Status::Known),
        count(super::report::Status::Fixed)
    );
    for (k, v) in [
        ("started", r.started.clone()),
        ("took", duration(r.seconds)),
        ("budget", r.budget.clone()),
        ("shard", shard),
        ("fails on", r.fail_on.clone()),
        ("findings", findings),
        ("flymc", r.flymc_version.clone()),
    ] {
        let _ = write!(s, "<tr><th>{k}</th><td>{}</td></tr>", escape(&v));
    }
    s.push_str("</table>");
    s
}

/// `3h 02m 05s`, `4m 10s`, `12.3 s`.
fn duration(seconds: f64) -> String {
    if seconds < 60.0 {
        return format!("{seconds:.1} s");
    }
    let t = seconds.round() as u64;
    let (h, m, sec) = (t / 3600, t / 60 % 60, t % 60);
    if h > 0 {
        format!("{h}h {m:02}m {sec:02}s")
    } else {
        format!("{m}m {sec:02}s")
    }
}

fn workloads(r: &HuntReport) -> String {
    let mut s = String::from("<h2>Workloads</h2>");
    if r.workloads.is_empty() {
        s.push_str("<p>No workload was explored.</p>");
        return s;
    }
    s.push_str("<table class=\"runs\"><thead><tr><th>system</th><th>workload</th><th>strategy</th><th>seeds</th><th>paths</th><th>paths/hour</th><th>unique states</th><th>exhausted</th><th>error</th></tr></thead><tbody>");
    for w in &r.workloads {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.0}</td><td class=\"num\">{}</td><td>{}</td><td class=\"err\">{}</td></tr>",
            escape(&w.system),
            escape(&w.workload),
            escape(&w.strategy),
            escape(&seeds(&w.seeds)),
            w.paths,
            w.paths_per_hour,
            w.unique_states,
            if w.exhausted { "yes" } else { "no" },
            escape(w.error.as_deref().unwrap_or(""))
        );
    }
    s.push_str("</tbody></table>");
    for w in &r.workloads {
        let _ = write!(
            s,
            "<details><summary>Coverage: {} / {} ({})</summary>{}</details>",
            escape(&w.system),
            escape(&w.workload),
            escape(&w.strategy),
            plots(w)
        );
    }
    s
}

/// `0-7`, `0, 4, 8`, or `none`.
fn seeds(seeds: &[u64]) -> String {
    match seeds {
        [] => "none".into(),
        [one] => one.to_string(),
        [first, .., last] if seeds.windows(2).all(|w| w[1] == w[0] + 1) => {
            format!("{first}-{last}")
        }
        _ if seeds.len() > 12 => format!(
            "{} seeds: {}, ...",
            seeds.len(),
            seeds[..8]
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// The workload's two plots: paths over time, and unique and abstract states over time.
fn plots(w: &WorkloadReport) -> String {
    if w.coverage.is_empty() {
        return "<p>No coverage samples.</p>".into();
    }
    let points = thin(&w.coverage, 400);
    let label = format!("{} / {}", w.system, w.workload);
    format!(
        "<div class=\"plots\">{}{}</div>",
        plot(
            &label,
            "paths",
            &points,
            &[("paths", "#1f5fa8", |p: &CoveragePoint| p.paths)]
        ),
        plot(
            &label,
            "states",
            &points,
            &[
                ("unique states", "#c05000", |p: &CoveragePoint| {
                    p.unique_states
                }),
                ("abstract states", "#208040", |p: &CoveragePoint| {
                    p.abstract_states
                }),
            ]
        )
    )
}

/// At most about `max` points, evenly spread, keeping the last (a long hunt samples often).
fn thin(points: &[CoveragePoint], max: usize) -> Vec<CoveragePoint> {
    let every = points.len().div_ceil(max).max(1);
    let mut out: Vec<CoveragePoint> = points.iter().step_by(every).copied().collect();
    if !(points.len() - 1).is_multiple_of(every) {
        out.push(points[points.len() - 1]);
    }
    out
}

type Series<'a> = (&'a str, &'a str, fn(&CoveragePoint) -> u64);

const PLOT_W: f64 = 420.0;
const PLOT_H: f64 = 200.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 26.0;
const BOTTOM: f64 = 34.0;

/// One line plot, drawn by hand: axes with their maxima, a polyline per series, a legend.
fn plot(workload: &str, what: &str, points: &[CoveragePoint], series: &[Series]) -> String {
    let t_max = points
        .iter()
        .map(|p| p.seconds)
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let y_max = points
        .iter()
        .flat_map(|p| series.iter().map(move |(_, _, f)| f(p)))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let (w, h) = (PLOT_W - LEFT - RIGHT, PLOT_H - TOP - BOTTOM);
    let x = |t: f64| LEFT + t / t_max * w;
    let y = |v: u64| TOP + h - v as f64 / y_max * h;
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="flymc-plot" data-plot="{what}" width="{PLOT_W}" height="{PLOT_H}" viewBox="0 0 {PLOT_W} {PLOT_H}" font-family="sans-serif" font-size="11"><title>{} over time: {}</title>"#,
        what,
        escape(workload)
    );
    // Axes, gridlines at the half and the top, and their labels.
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{w}" height="{h}" fill="#fafafa" stroke="#999"/><line x1="{LEFT}" y1="{}" x2="{}" y2="{}" stroke="#ddd"/>"##,
        TOP + h / 2.0,
        LEFT + w,
        TOP + h / 2.0
    );
    for (v, yy) in [(y_max, TOP), (y_max / 2.0, TOP + h / 2.0), (0.0, TOP + h)] {
        let _ = write!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            LEFT - 4.0,
            yy + 4.0,
            compact(v)
        );
    }
    let _ = write!(
        s,
        r##"<text x="{LEFT}" y="{}">0 s</text><text x="{}" y="{}" text-anchor="end">{}</text><text x="{}" y="{}" text-anchor="middle" fill="#555">time</text>"##,
        TOP + h + 14.0,
        LEFT + w,
        TOP + h + 14.0,
        escape(&duration(t_max)),
        LEFT + w / 2.0,
        TOP + h + 28.0
    );
    let mut legend_x = LEFT;
    for (name, color, f) in series {
        let pts: Vec<String> = points
            .iter()
            .map(|p| format!("{:.1},{:.1}", x(p.seconds), y(f(p))))
            .collect();
        let _ = write!(
            s,
            r#"<polyline class="series" data-series="{name}" fill="none" stroke="{color}" stroke-width="1.8" points="{}"/>"#,
            pts.join(" ")
        );
        let _ = write!(
            s,
            r#"<rect x="{legend_x}" y="8" width="10" height="10" fill="{color}"/><text x="{}" y="17">{name}</text>"#,
            legend_x + 14.0
        );
        legend_x += 14.0 + 7.0 * name.len() as f64 + 14.0;
    }
    s.push_str("</svg>");
    s
}

/// `1.2k`, `3.4M`, `950`.
fn compact(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn findings(r: &HuntReport) -> String {
    let mut s = format!("<h2>Findings ({})</h2>", r.findings.len());
    if r.findings.is_empty() {
        s.push_str("<p>Nothing violated a property.</p>");
        return s;
    }
    let mut order: Vec<&FindingReport> = r.findings.iter().collect();
    // Status orders new, regressed, known, fixed; the sort is stable within each.
    order.sort_by_key(|f| f.status);
    for f in order {
        s.push_str(&finding(f));
    }
    s
}

fn finding(f: &FindingReport) -> String {
    let status = f.status.as_str();
    let mut s = format!(
        r#"<section class="finding {status}" id="finding-{}" data-status="{status}"><h3><span class="status {status}">{status}</span> {} &mdash; {} / {}: {}</h3>"#,
        escape(&f.id),
        escape(&f.id),
        escape(&f.system),
        escape(&f.workload),
        escape(&f.signature.property)
    );
    let _ = write!(s, r#"<div class="message">{}</div>"#, escape(&f.message));
    s.push_str("<table class=\"facts\">");
    let mut fact = |k: &str, v: String| {
        let _ = write!(s, "<tr><th>{k}</th><td>{v}</td></tr>");
    };
    fact(
        "property",
        format!("{} ({})", escape(&f.signature.property), escape(&f.kind)),
    );
    fact("replay", format!("<code>{}</code>", escape(&f.replay)));
    if let Some(loc) = &f.location {
        fact(
            "source",
            format!("<code>{}:{}</code>", escape(&loc.file), loc.line),
        );
    }
    fact(
        "path",
        format!(
            "{} events, violated after step {}; strategy {}, seed {}",
            f.steps,
            f.step,
            escape(&f.strategy),
            f.seed
        ),
    );
    fact(
        "path file",
        format!(
            "<code>{}</code>",
            escape(&f.path_file.display().to_string())
        ),
    );
    fact("first seen", escape(&f.first_seen));
    s.push_str("</table>");
    match PathFile::load(&f.path_file) {
        Ok(path) => {
            let _ = write!(
                s,
                r#"<h4>The path</h4><div class="diagram">{}</div>"#,
                crate::show::svg(&path)
            );
            if let Some(state) = state_after(&path, f.step) {
                let _ = write!(
                    s,
                    "<h4>Node states at the violation (after step {})</h4>{}",
                    f.step,
                    state_table(state)
                );
            }
        }
        Err(e) => {
            let _ = write!(
                s,
                r#"<p class="missing">No diagram: {}</p>"#,
                escape(&e.to_string())
            );
        }
    }
    s.push_str("</section>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_and_durations_read_well() {
        assert_eq!(seeds(&[0, 1, 2, 3]), "0-3");
        assert_eq!(seeds(&[1, 5, 9]), "1, 5, 9");
        assert_eq!(seeds(&[]), "none");
        assert_eq!(duration(12.34), "12.3 s");
        assert_eq!(duration(250.0), "4m 10s");
        assert_eq!(duration(3.0 * 3600.0 + 125.0), "3h 02m 05s");
    }

    #[test]
    fn thinning_keeps_the_first_and_last_points() {
        let pts: Vec<CoveragePoint> = (0..1001)
            .map(|i| CoveragePoint {
                seconds: i as f64,
                paths: i,
                unique_states: i,
                abstract_states: i,
            })
            .collect();
        let t = thin(&pts, 400);
        assert!(t.len() <= 402);
        assert_eq!(t[0].paths, 0);
        assert_eq!(t[t.len() - 1].paths, 1000);
    }
}
