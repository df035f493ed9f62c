//! What each debugger command does and prints.

use std::io::Write;
use std::path::Path;

use flymc_model::{GlobalState, PropertyKind};

use super::command::{Command, DiffWhat, FilterChange, HELP};
use super::live::{self, Search};
use super::render;
use super::session::{Session, Source};

/// At most this many lines of changes after a move; `diff` shows them all.
const CHANGES_SHOWN: usize = 12;
/// At most this many passed events listed after a move.
const PASSED_SHOWN: usize = 10;
/// The path's events shown before and after the current step by `events`.
const AROUND: usize = 3;

/// Carry out `cmd`; `Ok(true)` to quit, `Err` a one-line complaint about its arguments.
pub fn handle(s: &mut Session, cmd: &Command) -> Result<bool, String> {
    match cmd {
        Command::Step(n) => step(s, *n),
        Command::Back(n) => back(s, *n),
        Command::Jump(n) if *n > s.last() => {
            return Err(format!("`jump`: the path's steps are 0 to {}", s.last()))
        }
        Command::Jump(n) => moved(s, *n, None),
        Command::State(node) => state(s, *node)?,
        Command::Diff(what) => diff(s, *what),
        Command::Events => events(s),
        Command::Filter(change) => {
            s.filter.apply(change);
            if let FilterChange::Set { node: Some(n), .. } = change {
                check_node(s, *n)?;
            }
            println!("filter: {}", s.filter.describe());
        }
        Command::Where => where_(s),
        Command::Help => println!("{HELP}"),
        Command::Quit => return Ok(true),
    }
    Ok(false)
}

fn check_node(s: &Session, n: usize) -> Result<(), String> {
    let nodes = s.path.states[0].state.nodes.len();
    if n >= nodes {
        return Err(format!(
            "there is no n{n}: the path has n0 to n{}",
            nodes - 1
        ));
    }
    Ok(())
}

pub fn header(s: &Session, file: &Path) -> String {
    let p = &s.path;
    format!(
        "flymc debug {}: {} / {}, path {} ({}, seed {}), {} events, {}\n\
         re-executed on {}: each step's state is observed there; `help` lists the commands",
        file.display(),
        p.system,
        p.workload.name,
        p.path_number,
        p.strategy,
        p.seed,
        p.events.len(),
        violation_line(s),
        s.system.name(),
    )
}

fn violation_line(s: &Session) -> String {
    match &s.path.violation {
        None => "no violation".into(),
        Some(v) => format!(
            "{} {} after event {} (step {}): {}",
            match v.kind {
                PropertyKind::Safety => "safety violation",
                PropertyKind::Liveness => "liveness violation",
            },
            v.property,
            v.step,
            (v.step + 1).min(s.last()),
            v.message
        ),
    }
}

fn step(s: &mut Session, count: usize) {
    if s.at == s.last() {
        println!("at the last step ({}): the path ends here", s.last());
        return;
    }
    match s.forward(count) {
        Some(to) => moved(s, to, Some(s.at)),
        None => println!(
            "no event after step {} passes the filter ({})",
            s.at,
            s.filter.describe()
        ),
    }
}

fn back(s: &mut Session, count: usize) {
    match s.backward(count) {
        Some(to) => moved(s, to, Some(s.at)),
        None => println!("at step 0 already"),
    }
}

/// Go to step `to` from step `from` (none: on starting) and say where that is: the events
/// passed, the event that led here and what it changed.
pub fn moved(s: &mut Session, to: usize, from: Option<usize>) {
    if let Some(n) = s.to_run(to) {
        match n {
            0 => print!("starting {} for the initial state ... ", s.system.name()),
            _ => print!(
                "re-executing the path's first {n} events on {} ... ",
                s.system.name()
            ),
        }
        let _ = std::io::stdout().flush();
    }
    if let Some(note) = s.goto(to) {
        println!("{note}");
    }
    let to = s.at;
    if let Some(from) = from.filter(|&f| f < to && to - f > 1) {
        passed(s, from, to);
    }
    if to == 0 {
        println!("step 0/{}: the initial state", s.last());
    } else {
        println!(
            "step {to}/{}: after event {}: {}",
            s.last(),
            to - 1,
            s.path.events[to - 1].description
        );
        let mut lines = render::changes(s.state(to - 1).state(), s.state(to).state());
        if let Some(n) = s.filter.node {
            let (dot, colon) = (format!("n{n}."), format!("n{n}:"));
            lines.retain(|l| l.starts_with(&dot) || l.starts_with(&colon));
        }
        print_changes(&lines, CHANGES_SHOWN);
    }
    if let Some(v) = s.path.violation.as_ref().filter(|v| v.step + 1 == to) {
        println!("the path's violation shows here: {v}");
    }
}

/// The events from step `from` to `to`, those the filter lets through.
fn passed(s: &Session, from: usize, to: usize) {
    let shown: Vec<usize> = (from..to).filter(|&k| s.passes(k)).collect();
    let hidden = (to - from) - shown.len();
    for &k in shown.iter().take(PASSED_SHOWN) {
        println!("  event {k}: {}", s.path.events[k].description);
    }
    if shown.len() > PASSED_SHOWN {
        println!("  ... and {} more", shown.len() - PASSED_SHOWN);
    }
    if hidden > 0 {
        println!("  ({hidden} {} hidden by the filter)", events_word(hidden));
    }
}

fn events_word(n: usize) -> &'static str {
    match n {
        1 => "event",
        _ => "events",
    }
}

fn print_changes(lines: &[String], limit: usize) {
    if lines.is_empty() {
        println!("  (no change in the state)");
    }
    for l in lines.iter().take(limit) {
        println!("  {l}");
    }
    if lines.len() > limit {
        println!("  ... {} more; `diff` shows all", lines.len() - limit);
    }
}

fn source_line(s: &Session, k: usize) -> String {
    let recorded = &s.path.states[k];
    match s.state(k) {
        Source::Observed(seen) if *seen == recorded.state => format!(
            "observed in this session, equal to the recorded state (hash {})",
            recorded.hash
        ),
        Source::Observed(seen) => {
            let d = recorded.state.diff(seen, 3).join("; ");
            format!(
                "observed in this session (hash {:016x}); the recorded state differs: recorded vs observed {d}",
                seen.hash()
            )
        }
        Source::Recorded(_, why) => format!(
            "recorded in the path file, not observed in this session: {why} (hash {})",
            recorded.hash
        ),
    }
}

fn state(s: &Session, node: Option<usize>) -> Result<(), String> {
    if let Some(n) = node {
        check_node(s, n)?;
    }
    let k = s.at;
    println!("state at step {k}/{}: {}", s.last(), source_line(s, k));
    let st = s.state(k);
    let mut out = String::new();
    match node {
        None => render::state(&mut out, st.state()),
        Some(n) => {
            render::node(&mut out, n, &st.state().nodes[n]);
            render::pending(&mut out, st.state(), Some(n));
        }
    }
    print!("{out}");
    Ok(())
}

fn diff(s: &mut Session, what: DiffWhat) {
    let liveness = s
        .path
        .violation
        .as_ref()
        .is_some_and(|v| v.kind == PropertyKind::Liveness);
    if what != DiffWhat::Live {
        diff_previous(s);
    }
    match what {
        DiffWhat::Previous => {}
        DiffWhat::Both if !liveness => {}
        _ => diff_live(s),
    }
}

fn diff_previous(s: &Session) {
    let k = s.at;
    if k == 0 {
        println!("step 0 is the initial state: nothing before it to diff against");
        return;
    }
    println!(
        "changes from step {} to step {k} (event {}: {}):",
        k - 1,
        k - 1,
        s.path.events[k - 1].description
    );
    for (i, src) in [(k - 1, s.state(k - 1)), (k, s.state(k))] {
        if let Source::Recorded(_, why) = src {
            println!("  (step {i} as recorded: {why})");
        }
    }
    let lines = render::changes(s.state(k - 1).state(), s.state(k).state());
    print_changes(&lines, usize::MAX);
}

fn diff_live(s: &mut Session) {
    let k = s.at;
    if !s.live.contains_key(&k) {
        print!(
            "searching for the nearest live run from step {k} on {} ... ",
            s.system.name()
        );
        let _ = std::io::stdout().flush();
        let found = live::search(s);
        println!("done");
        s.live.insert(k, found);
    }
    let here: GlobalState = s.state(k).state().clone();
    match &s.live[&k] {
        Search::NotApplicable(why) => println!("no live run to diff against: {why}"),
        Search::Dead(tried) => println!(
            "no run from step {k} reaches the property ({tried}): the state is likely dead, \
             so the critical transition is at an earlier step"
        ),
        Search::Found(l) => {
            let property = s.path.violation.as_ref().map_or("", |v| &v.property);
            println!(
                "nearest live run: from step {k}, {} reaches {property} after {} more events ({}):",
                live::tail_name(l.tail),
                l.events.len(),
                l.tried
            );
            for (i, e) in l.events.iter().enumerate().take(PASSED_SHOWN) {
                println!("  live run's event {}: {e}", l.from + i);
            }
            if l.events.len() > PASSED_SHOWN {
                println!("  ... and {} more", l.events.len() - PASSED_SHOWN);
            }
            println!(
                "changes from step {k} here to the live run's first live state (step {}):",
                l.from + l.events.len()
            );
            print_changes(&render::changes(&here, &l.state), usize::MAX);
        }
    }
}

fn events(s: &Session) {
    let k = s.at;
    let next = s.path.events.get(k);
    match s.enabled(k) {
        None if k == s.last() && next.is_none() => {
            println!("step {k} is the path's end: no events are enabled in what it recorded")
        }
        None => println!(
            "the events enabled at step {k} are unknown: {}",
            match s.state(k) {
                Source::Recorded(_, why) => why,
                Source::Observed(_) => "the re-execution stopped at this step".into(),
            }
        ),
        Some(enabled) => {
            let shown: Vec<_> = enabled
                .iter()
                .filter(|e| s.filter.passes(Some(super::filter::Brief::of(&e.event))))
                .collect();
            let hidden = enabled.len() - shown.len();
            println!(
                "enabled at step {k}: {}{}",
                enabled.len(),
                match hidden {
                    0 => String::new(),
                    h => format!(" ({h} hidden by the filter {})", s.filter.describe()),
                }
            );
            for e in shown {
                let taken = next.is_some_and(|n| n.id == e.event.id);
                println!(
                    "  {} {}{}",
                    if taken { "*" } else { " " },
                    e.event.describe(),
                    if taken {
                        "   <- the path takes this"
                    } else {
                        ""
                    }
                );
            }
            if let Some(n) = next.filter(|n| !enabled.iter().any(|e| e.event.id == n.id)) {
                println!(
                    "  the path's next event ({}) is not enabled here",
                    n.description
                );
            }
        }
    }
    around(s, k);
}

/// The path's events near step `k` that the filter lets through: a few before, the next one
/// (marked), a few after.
fn around(s: &Session, k: usize) {
    let n = s.path.events.len();
    let before: Vec<usize> = (0..k.min(n))
        .rev()
        .filter(|&i| s.passes(i))
        .take(AROUND)
        .collect();
    let after: Vec<usize> = (k..n).filter(|&i| s.passes(i)).take(AROUND + 1).collect();
    let filtered = match s.filter.is_off() {
        true => String::new(),
        false => format!(" (filter {})", s.filter.describe()),
    };
    println!("the path around step {k}{filtered}:");
    for i in before.into_iter().rev().chain(after) {
        let mark = if i == k { ">" } else { " " };
        println!("  {mark} event {i}: {}", s.path.events[i].description);
    }
}

fn where_(s: &Session) {
    let k = s.at;
    println!(
        "at step {k} of {} ({k} of the path's events executed)",
        s.last()
    );
    match k {
        0 => println!("last event: none (the initial state)"),
        _ => println!(
            "last event: {}: {}",
            k - 1,
            s.path.events[k - 1].description
        ),
    }
    match s.path.events.get(k) {
        Some(e) => println!("next event: {k}: {}", e.description),
        None => println!("next event: none (the path ends here)"),
    }
    println!("violation: {}", violation_line(s));
    println!("filter: {}", s.filter.describe());
}
