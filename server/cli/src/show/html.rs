//! The diagram as one self-contained HTML page: the path's facts, the violation, the inline
//! SVG (hover a row or a lane for details) and the node states at the violation. No scripts,
//! no external resources.

use std::fmt::Write;

use flymc_core::pathfile::PathFile;

use super::diagram::state_after;
use super::markup::{escape, state_table, STATE_TABLE_CSS};

const CSS: &str = "body{font:14px sans-serif;margin:1.5em;color:#222}\
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}\
.facts{color:#555}\
.violation{border:2px solid #c00;background:#fff0f0;padding:.6em 1em;border-radius:4px;white-space:pre-wrap;font-family:monospace}\
.diagram{overflow-x:auto;border:1px solid #ddd;padding:4px}\
.legend{color:#555;font-size:12px}";

pub fn html(path: &PathFile) -> String {
    let title = format!(
        "{} / {}: path {}",
        path.system, path.workload.name, path.path_number
    );
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>flymc: {}</title><style>{CSS}{STATE_TABLE_CSS}</style></head><body>",
        escape(&title)
    );
    let _ = write!(s, "<h1>{}</h1>", escape(&title));
    let _ = write!(
        s,
        r#"<p class="facts">{} events; strategy {}, seed {}; ended: {}; recorded by flymc {}</p>"#,
        path.events.len(),
        escape(&path.strategy),
        path.seed,
        escape(&super::ending_text(&path.ending)),
        escape(&path.flymc_version)
    );
    if let Some(v) = &path.violation {
        let _ = write!(
            s,
            r#"<div class="violation">{}</div>"#,
            escape(&v.to_string())
        );
    }
    s.push_str(r#"<p class="legend">Arrows are messages (sender dot, receiver head); C a client request, T a timer, D a write to disk, X a crash, R a reboot. Hover a row for its whole description and what it changed, a lane for the node's whole state then.</p>"#);
    let _ = write!(s, r#"<div class="diagram">{}</div>"#, super::svg(path));
    if let Some(v) = &path.violation {
        if let Some(state) = state_after(path, v.step) {
            let _ = write!(
                s,
                "<h2>Node states at the violation (after step {})</h2>{}",
                v.step,
                state_table(state)
            );
        }
    }
    s.push_str("</body></html>\n");
    s
}
