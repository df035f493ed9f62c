//! The diagram as one standalone `<svg>` element, drawn by hand: a lane per node, a row per
//! step, arrows for messages, marks for the rest, a red box for the violation. Hovering shows
//! what the browser keeps in `<title>`s: a row's full description and what it changed, and on a
//! lane the node's whole state for as long as it stays the same (one `<title>` per change of
//! state, not per row and node, so a path of 800 events stays a few MB at most).
//!
//! Several diagrams share a page: the element's id and the selectors of its `<style>` carry
//! the path's token, and nothing else is referred to by id (arrowheads are polygons, not
//! markers).

use std::fmt::Write;

use flymc_core::pathfile::PathFile;

use super::diagram::{clip, node_lines, value_text, Action, Diagram, Row};
use super::markup::escape;

const GUTTER_W: f64 = 44.0;
const LANE_W: f64 = 120.0;
const HEADER_H: f64 = 40.0;
const ROW_H: f64 = 20.0;
const DESC_W: f64 = 620.0;
/// Room between the last lane and the descriptions, for the labels of marks on that lane.
const DESC_GAP: f64 = 40.0;
/// Characters of a description shown in the row (the whole one is in its `<title>`).
const DESC_CHARS: usize = 88;
/// Characters of one variable's value in a hover.
const VALUE_LIMIT: usize = 100;
/// Characters per line of the violation's message.
const WRAP: usize = 110;

pub fn svg(path: &PathFile) -> String {
    let d = Diagram::of(path);
    let layout = Layout::of(&d);
    let id = format!("flymc-seq-{}", d.token);
    let mut s = String::with_capacity(512 * d.rows.len() + 4096);
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" id="{id}" class="flymc-seq" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="monospace" font-size="11">"#,
        w = layout.width,
        h = layout.height
    );
    s.push_str(&style(&id));
    let _ = write!(
        s,
        r#"<title>{}</title>"#,
        escape(&format!(
            "{} / {}: path {}, {} events",
            path.system,
            path.workload.name,
            path.path_number,
            path.events.len()
        ))
    );
    s.push_str(&highlights(&d, &layout));
    s.push_str(&lanes(path, &d, &layout));
    for row in &d.rows {
        s.push_str(&row_svg(row, &d, layout.row_y[row.step]));
    }
    if let Some(y) = layout.violation_y {
        s.push_str(&violation_box(&d, y, layout.width));
    }
    s.push_str("</svg>");
    s
}

/// Where everything goes.
struct Layout {
    width: f64,
    height: f64,
    /// The middle of each row.
    row_y: Vec<f64>,
    /// The top of the violation's box.
    violation_y: Option<f64>,
    /// The bottom of the lanes.
    lanes_end: f64,
}

impl Layout {
    fn of(d: &Diagram) -> Layout {
        let width = GUTTER_W + d.nodes as f64 * LANE_W + DESC_GAP + DESC_W;
        let mut y = HEADER_H;
        let mut row_y = Vec::with_capacity(d.rows.len());
        let mut violation_y = None;
        let vstep = d.violation.as_ref().map(|v| v.step);
        for row in &d.rows {
            row_y.push(y + ROW_H / 2.0);
            y += ROW_H;
            if vstep == Some(row.step) {
                violation_y = Some(y + 4.0);
                y += violation_h(d) + 8.0;
            }
        }
        // The lanes end with the last row; the violation's box below it stands alone.
        let lanes_end = row_y.last().map_or(HEADER_H, |y| y + ROW_H / 2.0);
        if violation_y.is_none() && d.violation.is_some() {
            violation_y = Some(y + 4.0);
            y += violation_h(d) + 8.0;
        }
        Layout {
            width,
            height: y + 8.0,
            row_y,
            violation_y,
            lanes_end,
        }
    }
}

fn lane_x(i: usize) -> f64 {
    GUTTER_W + i as f64 * LANE_W + LANE_W / 2.0
}

fn style(id: &str) -> String {
    let rules = [
        (".fm-lane", "stroke:#555;stroke-width:1.5"),
        (".fm-lane.fm-down", "stroke:#bbb;stroke-dasharray:3 3"),
        (".fm-state", "fill:transparent;stroke:none"),
        (".fm-state:hover", "fill:#0077cc22"),
        (".fm-node", "font-weight:bold;font-size:13px"),
        (".fm-step", "fill:#888"),
        (".fm-msg", "stroke:#1f5fa8;stroke-width:1.2;fill:none"),
        (".fm-head", "fill:#1f5fa8"),
        (".fm-label", "fill:#1f5fa8;font-size:9px"),
        (".fm-desc", "fill:#333"),
        (".fm-row:hover .fm-desc", "fill:#000;font-weight:bold"),
        (".fm-mark", "stroke:#333;fill:#fff"),
        (".fm-mark-text", "font-size:9px;font-weight:bold"),
        (".fm-crash", "stroke:#c00;stroke-width:2.5"),
        (".fm-reboot", "stroke:#080;fill:#dfd"),
        (".fm-disk", "stroke:#850;fill:#fec"),
        (".fm-client", "stroke:#606;fill:#fdf"),
        (".fm-timer", "stroke:#333;fill:#eee"),
        (".fm-vrow", "fill:#fdd"),
        (".fm-crit", "fill:#fe9"),
        (".fm-vbox", "fill:#fff0f0;stroke:#c00;stroke-width:2"),
        (".fm-vtitle", "fill:#c00;font-weight:bold;font-size:12px"),
        (".fm-vtext", "fill:#600"),
        (".fm-crit-label", "fill:#a60;font-weight:bold"),
    ];
    let mut s = String::from("<style>");
    for (sel, body) in rules {
        let _ = write!(s, "#{id} {sel}{{{body}}}");
    }
    s.push_str("</style>");
    s
}

/// Backgrounds of the violation's and the critical transition's rows.
fn highlights(d: &Diagram, l: &Layout) -> String {
    let mut s = String::new();
    let mut band = |step: usize, class: &str, label: &str| {
        if let Some(y) = l.row_y.get(step) {
            let _ = write!(
                s,
                r#"<rect class="{class}" x="0" y="{}" width="{}" height="{ROW_H}"/>"#,
                y - ROW_H / 2.0,
                l.width
            );
            if !label.is_empty() {
                let _ = write!(
                    s,
                    r#"<text class="fm-crit-label" x="{}" y="{}" text-anchor="end">{label}</text>"#,
                    l.width - 4.0,
                    y + 4.0
                );
            }
        }
    };
    if let Some(step) = d.critical {
        band(step, "fm-crit", "critical transition");
    }
    if let Some(v) = &d.violation {
        band(v.step, "fm-vrow", "");
    }
    s
}

/// Node names, the lanes (dashed while a node is down), and under them one hover area per
/// stretch of rows in which the node's state stays the same.
fn lanes(path: &PathFile, d: &Diagram, l: &Layout) -> String {
    let mut s = String::new();
    for i in 0..d.nodes {
        let x = lane_x(i);
        let _ = write!(
            s,
            r#"<text class="fm-node" data-node="n{i}" x="{x}" y="{}" text-anchor="middle">n{i}</text>"#,
            HEADER_H - 16.0
        );
        // Stretches: (first row after which the state holds, or none for the initial state).
        let mut starts: Vec<Option<usize>> = vec![None];
        for row in &d.rows {
            if row.changes.get(i).is_some_and(|c| !c.is_empty()) {
                starts.push(Some(row.step));
            }
        }
        for (k, start) in starts.iter().enumerate() {
            let top = start.map_or(HEADER_H - 6.0, |st| l.row_y[st]);
            let bottom = starts.get(k + 1).map_or(l.lanes_end, |next| {
                l.row_y[next.expect("later stretches start at a row")]
            });
            let state = match start {
                None => path.states.first(),
                Some(st) => path.states.get(st + 1),
            };
            let Some(state) = state else { continue };
            let Some(node) = state.state.nodes.get(i) else {
                continue;
            };
            let down = if node.alive { "" } else { " fm-down" };
            let _ = write!(
                s,
                r#"<line class="fm-lane{down}" data-node="n{i}" x1="{x}" y1="{top}" x2="{x}" y2="{bottom}"/>"#
            );
            let when = match start {
                None => "initially".to_string(),
                Some(st) => format!("after step {st}"),
            };
            let mut title = format!("n{i} {when}:");
            for line in node_lines(node, VALUE_LIMIT) {
                title.push('\n');
                title.push_str(&line);
            }
            let _ = write!(
                s,
                r#"<rect class="fm-state" x="{}" y="{top}" width="{}" height="{}"><title>{}</title></rect>"#,
                x - LANE_W * 0.3,
                LANE_W * 0.6,
                (bottom - top).max(1.0),
                escape(&title)
            );
        }
    }
    s
}

/// One step: its number, its arrow or mark, its description; all in a group whose `<title>`
/// is the whole description and what the step changed.
fn row_svg(row: &Row, d: &Diagram, y: f64) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<g class="fm-row" data-step="{}"><title>{}</title>"#,
        row.step,
        escape(&row_title(row))
    );
    let _ = write!(
        s,
        r#"<text class="fm-step" x="{}" y="{}" text-anchor="end">{}</text>"#,
        GUTTER_W - 8.0,
        y + 4.0,
        row.step
    );
    s.push_str(&action_svg(row, y));
    let _ = write!(
        s,
        r#"<text class="fm-desc" x="{}" y="{}">{}</text>"#,
        GUTTER_W + d.nodes as f64 * LANE_W + DESC_GAP,
        y + 4.0,
        escape(&clip(&row.description, DESC_CHARS))
    );
    s.push_str("</g>");
    s
}

fn row_title(row: &Row) -> String {
    let mut t = format!("step {}: {}", row.step, row.description);
    for (i, c) in row.changes.iter().enumerate() {
        if c.is_empty() {
            continue;
        }
        let _ = write!(t, "\nn{i}:");
        match c.alive {
            Some(true) => t.push_str(" UP"),
            Some(false) => t.push_str(" DOWN"),
            None => {}
        }
        for (k, v) in &c.vars {
            match v {
                Some(v) => {
                    let _ = write!(t, " {k}={}", value_text(v, VALUE_LIMIT));
                }
                None => {
                    let _ = write!(t, " {k} removed");
                }
            }
        }
    }
    if !row.has_state {
        t.push_str("\n(no state recorded after this step)");
    }
    t
}

/// The arrow or mark of one step.
fn action_svg(row: &Row, y: f64) -> String {
    let mut s = String::new();
    let name = row.name.as_str();
    match row.action {
        Action::Message { from, to } if from == to => {
            let x = lane_x(from);
            let _ = write!(
                s,
                r#"<path class="fm-msg" d="M{x},{} h14 v10 h-10"/>{}"#,
                y - 5.0,
                head(x, y + 5.0, -1.0)
            );
            let _ = write!(
                s,
                r#"<text class="fm-label" x="{}" y="{}">{}</text>"#,
                x + 18.0,
                y + 3.0,
                escape(&clip(&row.name, 14))
            );
        }
        Action::Message { from, to } => {
            let (x1, x2) = (lane_x(from), lane_x(to));
            let dir = if x2 > x1 { 1.0 } else { -1.0 };
            let _ = write!(
                s,
                r#"<circle class="fm-head" cx="{x1}" cy="{y}" r="2.5"/><line class="fm-msg" x1="{x1}" y1="{y}" x2="{}" y2="{y}"/>{}"#,
                x2 - dir * 6.0,
                head(x2, y, dir)
            );
            let chars = (((x2 - x1).abs() / 6.0) as usize).saturating_sub(2).max(4);
            let _ = write!(
                s,
                r#"<text class="fm-label" x="{}" y="{}" text-anchor="middle">{}</text>"#,
                (x1 + x2) / 2.0,
                y - 3.0,
                escape(&clip(&row.name, chars))
            );
        }
        Action::Inbound { to } => {
            let x = lane_x(to);
            let _ = write!(
                s,
                r#"<line class="fm-msg" x1="{}" y1="{y}" x2="{}" y2="{y}"/>{}"#,
                x - LANE_W * 0.4,
                x - 6.0,
                head(x, y, 1.0)
            );
        }
        Action::Crash { node } => {
            let x = lane_x(node);
            let _ = write!(
                s,
                r#"<path class="fm-crash" d="M{},{} l12,12 M{},{} l-12,12"/>"#,
                x - 6.0,
                y - 6.0,
                x + 6.0,
                y - 6.0
            );
            s.push_str(&side_label(x, y, "crash"));
        }
        Action::Reboot { node } => {
            s.push_str(&boxed_mark(lane_x(node), y, 'R', "fm-reboot", true));
            s.push_str(&side_label(lane_x(node), y, "reboot"));
        }
        Action::Timer { node } => {
            s.push_str(&boxed_mark(lane_x(node), y, 'T', "fm-timer", true));
            s.push_str(&side_label(lane_x(node), y, name));
        }
        Action::Disk { node } => {
            s.push_str(&boxed_mark(lane_x(node), y, 'D', "fm-disk", false));
            s.push_str(&side_label(lane_x(node), y, name));
        }
        Action::Client { node } => {
            let x = lane_x(node);
            let _ = write!(
                s,
                r#"<line class="fm-msg" x1="{}" y1="{y}" x2="{}" y2="{y}" stroke-dasharray="2 2"/>"#,
                x - LANE_W * 0.45,
                x - 7.0
            );
            s.push_str(&boxed_mark(x, y, 'C', "fm-client", false));
            s.push_str(&side_label(x, y, name));
        }
        Action::Unknown => {}
    }
    s
}

/// An arrowhead pointing at `x` (rightwards when `dir` is 1, leftwards when -1).
fn head(x: f64, y: f64, dir: f64) -> String {
    let b = x - dir * 7.0;
    format!(
        r#"<polygon class="fm-head" points="{x},{y} {b},{} {b},{}"/>"#,
        y - 3.5,
        y + 3.5
    )
}

/// A small circle or square on a lane with a letter in it.
fn boxed_mark(x: f64, y: f64, letter: char, class: &str, round: bool) -> String {
    let shape = if round {
        format!(r#"<circle class="fm-mark {class}" cx="{x}" cy="{y}" r="6.5"/>"#)
    } else {
        format!(
            r#"<rect class="fm-mark {class}" x="{}" y="{}" width="13" height="13"/>"#,
            x - 6.5,
            y - 6.5
        )
    };
    format!(
        r#"{shape}<text class="fm-mark-text" x="{x}" y="{}" text-anchor="middle">{letter}</text>"#,
        y + 3.0
    )
}

/// A mark's name, right of its lane.
fn side_label(x: f64, y: f64, text: &str) -> String {
    format!(
        r#"<text class="fm-label" x="{}" y="{}">{}</text>"#,
        x + 10.0,
        y + 3.0,
        escape(&clip(text, 12))
    )
}

fn violation_lines(d: &Diagram) -> Vec<String> {
    let Some(v) = &d.violation else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for para in v.message.lines() {
        let mut line = String::new();
        for word in para.split(' ') {
            if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > WRAP {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        lines.push(line);
    }
    // A message of thousands of lines (a stack trace) stays readable in the page, not here.
    if lines.len() > 12 {
        lines.truncate(12);
        lines.push("...".into());
    }
    lines
}

fn violation_h(d: &Diagram) -> f64 {
    28.0 + violation_lines(d).len() as f64 * 14.0
}

fn violation_box(d: &Diagram, top: f64, width: f64) -> String {
    let Some(v) = &d.violation else {
        return String::new();
    };
    let mut s = format!(
        r#"<g class="fm-violation" data-property="{}"><title>{}</title><rect class="fm-vbox" x="4" y="{top}" width="{}" height="{}" rx="4"/>"#,
        escape(&v.property),
        escape(&v.to_string()),
        width - 8.0,
        violation_h(d)
    );
    let _ = write!(
        s,
        r#"<text class="fm-vtitle" x="14" y="{}">VIOLATION after step {}: {} ({})</text>"#,
        top + 18.0,
        v.step,
        escape(&v.property),
        format!("{:?}", v.kind).to_lowercase()
    );
    for (k, line) in violation_lines(d).iter().enumerate() {
        let _ = write!(
            s,
            r#"<text class="fm-vtext" x="14" y="{}">{}</text>"#,
            top + 34.0 + k as f64 * 14.0,
            escape(line)
        );
    }
    s.push_str("</g>");
    s
}
