//! The diagram as plain text: one column per node, one line per step, and under each line
//! the variables that step changed (the initial state in full before the first step).
//!
//! ```text
//! step  n0          n1          n2
//!    0  *---------->|           |            prepare {"ballot":1}
//!             n1: promised=1
//! ```

use std::fmt::Write;

use flymc_core::pathfile::PathFile;

use super::diagram::{node_lines, value_text, Action, Change, Diagram, Row};

/// Columns per lane.
const LANE: usize = 12;
/// Columns before the first lane (the step number).
const GUTTER: usize = 6;
/// Longest value shown for a variable.
const VALUE_LIMIT: usize = 120;

pub fn text(path: &PathFile) -> String {
    let d = Diagram::of(path);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} / {}: path {} ({} strategy, seed {}), {} events, ended: {}",
        path.system,
        path.workload.name,
        path.path_number,
        path.strategy,
        path.seed,
        path.events.len(),
        super::ending_text(&path.ending)
    );
    out.push_str(&header(d.nodes));
    if let Some(initial) = path.states.first() {
        out.push_str(&indent("initial state:"));
        for (i, node) in initial.state.nodes.iter().enumerate() {
            let _ = writeln!(
                out,
                "{}n{i}: {}",
                " ".repeat(GUTTER + 2),
                node_lines(node, VALUE_LIMIT).join(", ")
            );
        }
    }
    let mut alive: Vec<bool> = (0..d.nodes)
        .map(|i| {
            path.states
                .first()
                .and_then(|s| s.state.nodes.get(i))
                .is_none_or(|n| n.alive)
        })
        .collect();
    let violation_step = d.violation.as_ref().map(|v| v.step);
    for row in &d.rows {
        if d.critical == Some(row.step) {
            out.push_str(&indent(&format!(
                ">>>>> critical transition: step {} <<<<<",
                row.step
            )));
        }
        out.push_str(&row_line(row, &alive));
        out.push('\n');
        for (i, c) in row.changes.iter().enumerate() {
            if let Some(a) = c.alive {
                if let Some(slot) = alive.get_mut(i) {
                    *slot = a;
                }
            }
            if !c.is_empty() {
                let _ = writeln!(out, "{}n{i}: {}", " ".repeat(GUTTER + 2), change_text(c));
            }
        }
        if !row.has_state {
            out.push_str(&indent("(no state recorded after this step)"));
        }
        if violation_step == Some(row.step) {
            out.push_str(&violation_box(&d));
        }
    }
    if violation_step.is_some_and(|s| s >= d.rows.len()) {
        out.push_str(&violation_box(&d));
    }
    // Descriptions, variables and messages are the path file's text: escaped for the terminal.
    flymc_model::escape::lines(&out).into_owned()
}

fn indent(s: &str) -> String {
    format!("{}{s}\n", " ".repeat(GUTTER))
}

/// `step  n0          n1 ...`
fn header(nodes: usize) -> String {
    let mut s = format!("{:<GUTTER$}", "step");
    for i in 0..nodes {
        s.push_str(&format!("{:<LANE$}", format!("n{i}")));
    }
    s.truncate(s.trim_end().len());
    s.push('\n');
    s
}

/// The column of lane `i`.
fn lane(i: usize) -> usize {
    GUTTER + i * LANE
}

/// One step's line: lanes (`|` up, `:` down), the arrow or mark, then the description.
fn row_line(row: &Row, alive: &[bool]) -> String {
    let width = lane(alive.len());
    let mut cells: Vec<char> = vec![' '; width];
    for (i, up) in alive.iter().enumerate() {
        cells[lane(i)] = if *up { '|' } else { ':' };
    }
    let mut put = |col: usize, c: char| {
        if col < cells.len() {
            cells[col] = c;
        }
    };
    match row.action {
        Action::Message { from, to } if from == to => put(lane(from), '@'),
        Action::Message { from, to } => {
            let (a, b) = (lane(from.min(to)), lane(from.max(to)));
            for col in a + 1..b {
                put(col, '-');
            }
            put(lane(from), '*');
            if from < to {
                put(b - 1, '>');
            } else {
                put(a + 1, '<');
            }
        }
        Action::Inbound { to } => {
            for col in lane(to).saturating_sub(3)..lane(to) {
                put(col, '-');
            }
            put(lane(to) - 1, '>');
        }
        Action::Client { node }
        | Action::Timer { node }
        | Action::Disk { node }
        | Action::Crash { node }
        | Action::Reboot { node } => put(lane(node), row.action.mark()),
        Action::Unknown => {}
    }
    let lanes: String = cells.into_iter().collect();
    format!("{:>4}  {}  {}", row.step, &lanes[GUTTER..], row.description)
}

/// `role=leader, term=2` (and `DOWN`/`UP` first when the node crashed or came back).
fn change_text(c: &Change) -> String {
    let mut parts = Vec::new();
    match c.alive {
        Some(false) => parts.push("DOWN".to_string()),
        Some(true) => parts.push("UP".to_string()),
        None => {}
    }
    for (k, v) in &c.vars {
        parts.push(match v {
            Some(v) => format!("{k}={}", value_text(v, VALUE_LIMIT)),
            None => format!("{k} removed"),
        });
    }
    parts.join(", ")
}

fn violation_box(d: &Diagram) -> String {
    let Some(v) = &d.violation else {
        return String::new();
    };
    let title = format!(
        "##### VIOLATION after step {}: {} ({}) #####",
        v.step,
        v.property,
        format!("{:?}", v.kind).to_lowercase()
    );
    let mut s = indent(&title);
    for line in v.message.lines() {
        s.push_str(&indent(&format!("# {line}")));
    }
    s.push_str(&indent(&"#".repeat(title.chars().count())));
    s
}
