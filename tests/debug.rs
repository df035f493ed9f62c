//! `flymc debug PATH`: the debugger driven through `--script` on simulated paths that
//! `flymc run` finds (a Raft safety bug, ZOOKEEPER-1419's livelock) and on a recorded path of
//! real async-raft nodes, comparing what it shows with what the path file recorded.

use crate::support;

use crate::common;

use std::path::Path;

use common::{assert_one_line_error, flymc_in, path_file, raft_bug_path, Ran};
use flymc_core::pathfile::PathFile;
use flymc_model::GlobalState;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// `flymc debug FILE --script` with these commands, one a line.
fn debug(dir: &Path, file: &Path, commands: &[&str]) -> Ran {
    let script = dir.join("script.txt");
    std::fs::write(&script, commands.join("\n")).unwrap();
    flymc_in(
        dir,
        &[
            "debug",
            file.to_str().unwrap(),
            "--script",
            script.to_str().unwrap(),
        ],
    )
}

/// What a command printed: the lines after its echo (`(flymc-debug step K/L) CMD`, the
/// `nth` such echo) up to the next prompt.
fn output_of<'a>(out: &'a str, prompt_step: usize, cmd: &str, nth: usize) -> Vec<&'a str> {
    let suffix = format!(") {cmd}");
    let echo = format!("(flymc-debug step {prompt_step}/");
    let mut lines = out.lines();
    let mut seen = 0;
    for l in lines.by_ref() {
        if l.starts_with(&echo) && l.ends_with(&suffix) {
            if seen == nth {
                break;
            }
            seen += 1;
        }
    }
    lines
        .take_while(|l| !l.starts_with("(flymc-debug step "))
        .collect()
}

/// Every node's every variable of `state` appears as `  name = value` under its node, and
/// each node says whether it is up.
fn assert_shows_state(lines: &[&str], state: &GlobalState) {
    for (i, node) in state.nodes.iter().enumerate() {
        let head = format!("n{i} ({})", if node.alive { "up" } else { "DOWN" });
        let at = lines
            .iter()
            .position(|l| *l == head)
            .unwrap_or_else(|| panic!("no `{head}` in:\n{}", lines.join("\n")));
        let block: Vec<&str> = lines[at + 1..]
            .iter()
            .take_while(|l| l.starts_with("  "))
            .copied()
            .collect();
        assert_eq!(block.len(), node.vars.len(), "n{i}: {block:?}");
        for (k, v) in &node.vars {
            let line = format!("  {k} = {v}");
            assert!(block.contains(&line.as_str()), "n{i}: no `{line}`");
        }
    }
    let net = format!("network: {} pending", state.network.len());
    assert!(lines.contains(&net.as_str()), "no `{net}`");
}

/// Does the description name an event node `n` handles?
fn at_node(description: &str, n: usize) -> bool {
    let words: Vec<&str> = description.split_whitespace().take(3).collect();
    let to = match words.as_slice() {
        ["crash" | "reboot", node, ..] => node.to_string(),
        ["timeout" | "client", _, at, ..] => at.trim_start_matches('@').to_string(),
        [_, arrow, ..] => arrow.split("->").nth(1).unwrap_or_default().to_string(),
        _ => String::new(),
    };
    to == format!("n{n}")
}

#[test]
fn steps_jumps_and_backs_show_the_recorded_states_their_changes_and_events() {
    let d = tmp();
    let file = raft_bug_path(d.path());
    let path = PathFile::load(&file).unwrap();
    let last = path.states.len() - 1;
    let ran = debug(
        d.path(),
        &file,
        &[
            "where", "jump 20", "state", "step", "diff", "events", "back 3", "state n1", "jump 0",
            "step 2", "quit", "state",
        ],
    );
    assert_eq!(ran.code, 0, "{}", ran.all());
    let out = &ran.stdout;
    // Re-executed on the simulated target, not read from the file.
    assert!(
        out.contains("re-executing the path's first 20 events on raft-sim"),
        "{out}"
    );

    let prompt = format!("(flymc-debug step 0/{last}) where");
    assert!(out.contains(&prompt), "{out}");
    let w = output_of(out, 0, "where", 0);
    assert!(w[0].starts_with(&format!("at step 0 of {last}")), "{w:?}");
    assert!(w.iter().any(|l| l.contains(&path.events[0].description)));
    assert!(w.iter().any(|l| l.contains("state-machine-safety")));

    // `state` at step 20: the recorded state 20, node by node.
    let s = output_of(out, 20, "state", 0);
    assert!(
        s[0].contains(&format!(
            "observed in this session, equal to the recorded state (hash {})",
            path.states[20].hash
        )),
        "{}",
        s[0]
    );
    assert_shows_state(&s, &path.states[20].state);

    // `step` lands at 21 after event 20; `diff` names exactly the variables that changed.
    let moved = output_of(out, 20, "step", 0);
    let expected = format!(
        "step 21/{last}: after event 20: {}",
        path.events[20].description
    );
    assert!(moved.contains(&expected.as_str()), "{moved:?}");
    let (before, after) = (&path.states[20].state, &path.states[21].state);
    let diff = output_of(out, 21, "diff", 0).join("\n");
    let mut changed = 0;
    for (i, (a, b)) in before.nodes.iter().zip(&after.nodes).enumerate() {
        for (k, v) in &a.vars {
            let named = diff.contains(&format!("n{i}.{k}: "));
            assert_eq!(named, b.vars.get(k) != Some(v), "n{i}.{k} in:\n{diff}");
            changed += usize::from(named);
        }
    }
    assert!(
        changed > 0 || before.network != after.network,
        "event 20 changed something"
    );

    // `events`: the enabled events, the path's marked; the path's events around here.
    let ev = output_of(out, 21, "events", 0);
    let marked: Vec<&&str> = ev.iter().filter(|l| l.starts_with("  * ")).collect();
    assert_eq!(marked.len(), 1, "{ev:?}");
    assert!(
        marked[0].contains(&path.events[21].description),
        "{}",
        marked[0]
    );
    let here = format!("  > event 21: {}", path.events[21].description);
    assert!(ev.contains(&here.as_str()), "{ev:?}");
    assert!(ev.iter().any(|l| l.contains("event 18: ")));

    // Backwards: no re-execution, the same recorded state.
    let b = output_of(out, 18, "state n1", 0);
    assert!(b[0].contains("equal to the recorded state"), "{b:?}");
    let one = GlobalState {
        nodes: vec![path.states[18].state.nodes[1].clone()],
        network: Vec::new(),
        env: serde_json::Value::Null,
    };
    // Up to what is in flight to or from n1, which the node view lists after its variables.
    let mut renamed: Vec<String> = b
        .iter()
        .take_while(|l| !l.starts_with("network:"))
        .map(|l| l.replace("n1 (", "n0 ("))
        .collect();
    renamed.push("network: 0 pending".into());
    let pending = path.states[18]
        .state
        .network
        .iter()
        .filter(|p| p.to == 1 || p.from == Some(1))
        .count();
    let line = format!("network: {pending} pending to or from n1");
    assert!(b.contains(&line.as_str()), "{b:?}");
    let renamed: Vec<&str> = renamed.iter().map(String::as_str).collect();
    assert_shows_state(&renamed, &one);

    // `step 2` from 0 lists the events passed; `quit` ends the script before `state`.
    let two = output_of(out, 0, "step 2", 0);
    assert!(two.contains(&format!("  event 0: {}", path.events[0].description).as_str()));
    assert!(two
        .iter()
        .any(|l| l.starts_with(&format!("step 2/{last}: after event 1:"))));
    assert!(out.trim_end().ends_with(") quit"), "{out}");
}

#[test]
fn every_state_re_executed_on_the_simulated_target_equals_the_recorded_one() {
    let d = tmp();
    let file = raft_bug_path(d.path());
    let path = PathFile::load(&file).unwrap();
    let mut script = vec!["state"];
    script.extend(std::iter::repeat_n("step\nstate", path.states.len() - 1));
    let ran = debug(d.path(), &file, &script);
    assert_eq!(ran.code, 0, "{}", ran.all());
    for (k, rec) in path.states.iter().enumerate() {
        let s = output_of(&ran.stdout, k, "state", 0);
        let line = format!("equal to the recorded state (hash {})", rec.hash);
        assert!(s[0].contains(&line), "step {k}: {}", s[0]);
    }
}

#[test]
fn a_node_filter_limits_events_and_stepping_to_that_nodes_events() {
    let d = tmp();
    let file = raft_bug_path(d.path());
    let path = PathFile::load(&file).unwrap();
    let ran = debug(
        d.path(),
        &file,
        &[
            "jump 4",
            "events",
            "filter node=n1",
            "events",
            "step",
            "filter kind=timeout",
            "step",
            "filter off",
            "events",
        ],
    );
    assert_eq!(ran.code, 0, "{}", ran.all());
    let out = &ran.stdout;
    let enabled = |lines: &[&str]| -> Vec<String> {
        lines
            .iter()
            .take_while(|l| !l.starts_with("the path around"))
            .filter(|l| l.starts_with("  * ") || l.starts_with("    "))
            .map(|l| {
                l[4..]
                    .trim_end_matches("   <- the path takes this")
                    .to_string()
            })
            .collect()
    };
    let all = enabled(&output_of(out, 4, "events", 0));
    let some_lines = output_of(out, 4, "events", 1);
    let some = enabled(&some_lines);
    assert!(
        !some.is_empty() && some.len() < all.len(),
        "{all:?} {some:?}"
    );
    assert!(some.iter().all(|e| at_node(e, 1)), "{some:?}");
    assert_eq!(
        all.iter().filter(|e| at_node(e, 1)).count(),
        some.len(),
        "the filter hides only other nodes' events"
    );
    let hidden = format!("({} hidden by the filter node=n1)", all.len() - some.len());
    assert!(some_lines[0].ends_with(&hidden), "{}", some_lines[0]);
    // The path's events around here: n1's only.
    let around: Vec<&&str> = some_lines
        .iter()
        .skip_while(|l| !l.starts_with("the path around"))
        .skip(1)
        .collect();
    assert!(!around.is_empty());
    for l in around {
        let desc = l.split_once(": ").unwrap().1;
        assert!(at_node(desc, 1), "{l}");
    }

    // `step` under the filter goes to just after n1's next event, over the others.
    let first = (4..path.events.len())
        .find(|&k| at_node(&path.events[k].description, 1))
        .unwrap();
    let moved = output_of(out, 4, "step", 0);
    let line = format!("after event {first}: {}", path.events[first].description);
    assert!(moved.iter().any(|l| l.ends_with(&line)), "{moved:?}");
    // Both filters: n1's next timer.
    let timer = (first + 1..path.events.len())
        .find(|&k| {
            let e = &path.events[k].description;
            at_node(e, 1) && e.starts_with("timeout ")
        })
        .unwrap();
    let moved = output_of(out, first + 1, "step", 0);
    let line = format!("after event {timer}: {}", path.events[timer].description);
    assert!(moved.iter().any(|l| l.ends_with(&line)), "{moved:?}");
    assert!(out.contains("filter: node=n1 kind=timeout"));
    let unfiltered = enabled(&output_of(out, timer + 1, "events", 0));
    assert!(unfiltered.iter().any(|e| !at_node(e, 1)), "{unfiltered:?}");
}

#[test]
fn diff_on_a_livelock_compares_with_the_nearest_live_run() {
    let d = tmp();
    let ran = flymc_in(
        d.path(),
        &[
            "run",
            "--system",
            "zk-le-sim",
            "--workload",
            "zk-1419",
            "--strategy",
            "flymc",
            // Path 1 is the livelock; a bound keeps a regression from exploring for an hour.
            "--max-paths",
            "20",
            "--out",
            "paths",
        ],
    );
    assert_eq!(ran.code, 1, "{}", ran.all());
    let file = path_file(&ran, d.path());
    let path = PathFile::load(&file).unwrap();
    let v = path.violation.as_ref().unwrap();
    assert_eq!(v.property, "eventually-quorum-follows-leader");
    let last = path.states.len() - 1;
    let end = format!("jump {last}");
    let ran = debug(d.path(), &file, &["jump 10", "diff", &end, "diff live"]);
    assert_eq!(ran.code, 0, "{}", ran.all());
    let out = &ran.stdout;
    // Early on a walk still elects a leader: the diff shows what differs from its first state
    // with a quorum following a leader.
    let early = output_of(out, 10, "diff", 0);
    assert!(
        early[0].starts_with("changes from step 9 to step 10"),
        "{early:?}"
    );
    let live = early
        .iter()
        .position(|l| l.starts_with("nearest live run: from step 10"))
        .unwrap_or_else(|| panic!("{early:?}"));
    let to_live: Vec<&&str> = early[live..]
        .iter()
        .skip_while(|l| !l.starts_with("changes from step 10 here to the live run"))
        .collect();
    assert!(
        to_live
            .iter()
            .any(|l| l.contains(".state: \"LOOKING\" -> \"LEADING\"")),
        "{to_live:?}"
    );
    // At the end of the livelock no walk gets out.
    let dead = output_of(out, last, "diff live", 0);
    assert!(
        dead.iter()
            .any(|l| l.starts_with(&format!("no run from step {last} reaches the property"))),
        "{dead:?}"
    );
}

#[test]
fn a_bad_command_ends_a_script_with_one_line_and_is_only_a_hint_at_the_terminal() {
    let d = tmp();
    let file = raft_bug_path(d.path());
    let last = PathFile::load(&file).unwrap().states.len() - 1;
    let ran = debug(d.path(), &file, &["step", "frobnicate", "step"]);
    assert_one_line_error(&ran, "script.txt:2: unknown command `frobnicate`");
    let ran = debug(d.path(), &file, &["jump 999"]);
    assert_one_line_error(&ran, &format!("the path's steps are 0 to {last}"));
    let ran = debug(d.path(), &file, &["state n7"]);
    assert_one_line_error(&ran, "there is no n7");
    let ran = flymc_in(
        d.path(),
        &["debug", file.to_str().unwrap(), "--script", "missing.txt"],
    );
    assert_one_line_error(&ran, "cannot read the script missing.txt");
    let ran = flymc_in(d.path(), &["debug", "nothing-here.json"]);
    assert_one_line_error(&ran, "nothing-here.json");

    // At the terminal (stdin), a bad command gets a hint and the session goes on to EOF.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_flymc"))
        .args(["debug", file.to_str().unwrap()])
        .current_dir(d.path())
        .env("FLYMC_WORKLOADS", common::workloads())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"frobnicate\nstep\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("unknown command `frobnicate`")
            && text.contains("(`help` lists the commands)"),
        "{text}"
    );
    assert!(
        text.contains(&format!("(flymc-debug step 1/{last})")),
        "{text}"
    );
}

/// The shipped async-raft path (38 events, real node processes): the debugger re-executes it
/// on real nodes, forward and by jumps, and every state it shows is the recorded one.
#[test]
fn on_real_raft_nodes_the_re_executed_states_equal_the_recorded_ones() {
    support::node_program("flymc-raft-nodes", "flymc-asyncraft-node");
    let d = tmp();
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/paths/raft-asyncraft-stale-commit.json");
    let path = PathFile::load(&file).unwrap();
    let last = path.states.len() - 1;
    let end = format!("jump {last}");
    let ran = debug(
        d.path(),
        &file,
        &[
            "jump 20", "state", "step", "state", "events", &end, "state", "back 17", "state",
            "diff",
        ],
    );
    assert_eq!(ran.code, 0, "{}", ran.all());
    let out = &ran.stdout;
    assert!(
        out.contains("re-executing the path's first 20 events on raft-asyncraft"),
        "{out}"
    );
    assert!(out.contains(&format!("re-executing the path's first {last} events")));
    for k in [20, 21, last, last - 17] {
        let s = output_of(out, k, "state", 0);
        let line = format!(
            "observed in this session, equal to the recorded state (hash {})",
            path.states[k].hash
        );
        assert!(s[0].contains(&line), "step {k}: {}", s[0]);
        assert_shows_state(&s, &path.states[k].state);
    }
    assert!(out.contains("the path's violation shows here: state-machine-safety"));
    // What real nodes had enabled, the path's event among it.
    let ev = output_of(out, 21, "events", 0);
    let marked: Vec<&&str> = ev.iter().filter(|l| l.starts_with("  * ")).collect();
    assert_eq!(marked.len(), 1, "{ev:?}");
    assert!(marked[0].contains(&path.events[21].description), "{ev:?}");
}
