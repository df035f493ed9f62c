//! Systems described in a file: raft-rs, added to flymc only through
//! `integrations/raftrs/system.toml`, runs, finds what its properties say and replays; a system
//! file under `systems/` is listed and found by name; bad files and a start command that exits
//! at once are one line and exit 2.

use crate::common;

use std::path::{Path, PathBuf};

use crate::support::node_program;
use common::{assert_one_line_error, flymc_in, found};

fn raftrs() -> PathBuf {
    node_program("flymc-raftrs-node", "flymc-raftrs-node");
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../integrations/raftrs/system.toml")
}

fn summary(out: &str) -> &str {
    out.lines()
        .find(|l| l.starts_with("summary: "))
        .unwrap_or_else(|| panic!("no summary in:\n{out}"))
}

#[test]
fn raft_rs_runs_from_its_system_file_with_dfs_and_random_walks_and_keeps_its_properties() {
    let d = tempfile::tempdir().unwrap();
    let sys = raftrs();
    let sys = sys.to_str().unwrap();
    for strategy in ["dfs", "random"] {
        let r = flymc_in(
            d.path(),
            &[
                "run",
                "--system",
                sys,
                "--workload",
                "le-crash",
                "--strategy",
                strategy,
                "--max-paths",
                "40",
            ],
        );
        assert_eq!(r.code, 0, "{}", r.all());
        assert!(
            r.stdout.contains("flymc: raftrs / le-crash"),
            "{}",
            r.stdout
        );
        assert!(
            summary(&r.stdout).starts_with("summary: 40 paths"),
            "{}",
            r.stdout
        );
    }
    // A client write is forwarded, committed and applied everywhere (the properties hold).
    let r = flymc_in(
        d.path(),
        &[
            "run",
            "--system",
            sys,
            "--workload",
            "write",
            "--max-paths",
            "30",
            "--strategy",
            "dfs",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.all());
}

#[test]
fn a_raft_rs_violation_replays_from_another_folder() {
    let d = tempfile::tempdir().unwrap();
    let sys = raftrs();
    // A workload property that a correct election breaks: no node ever leads.
    let w = d.path().join("workloads");
    std::fs::create_dir(&w).unwrap();
    let wl = w.join("no-leader.toml");
    std::fs::write(
        &wl,
        "version = 1\nsystem = \"raftrs\"\ndescription = \"d\"\nnodes = 3\nmax_events = 40\n\
         [params]\nelection_timers = [0]\nelections = 1\n\
         [[property]]\nname = \"never-a-leader\"\nalways = 'count(n.role == \"leader\") == 0'\n",
    )
    .unwrap();
    let path = found(
        d.path(),
        &[
            "--system",
            sys.to_str().unwrap(),
            "--workload",
            wl.to_str().unwrap(),
        ],
    );
    let elsewhere = tempfile::tempdir().unwrap();
    // The path records its system file, but a path file cannot choose what flymc runs.
    let r = flymc_in(elsewhere.path(), &["replay", path.to_str().unwrap()]);
    assert_one_line_error(&r, "pass --system FILE");
    let r = flymc_in(
        elsewhere.path(),
        &[
            "replay",
            path.to_str().unwrap(),
            "--system",
            sys.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 1, "the violation is reproduced:\n{}", r.all());
    assert!(r.stdout.contains("never-a-leader"), "{}", r.stdout);
    let canonical = sys.canonicalize().unwrap();
    assert!(
        r.stdout
            .contains(&format!("system file: {}", canonical.display())),
        "{}",
        r.stdout
    );
}

/// A user's system: a shell script that speaks no hook exits at once.
const EXITS: &str = r#"version = 1
name = "mine"
description = "a node that cannot start"

[node]
program = "sh"
args = ["-c", "echo starting node {node} at {addr}; echo 'fatal: no config in {data_dir}' >&2; exit 3"]

[state]
vars = ["term"]
"#;

const WORKLOAD: &str =
    "version = 1\nsystem = \"mine\"\ndescription = \"d\"\nnodes = 2\nmax_events = 5\n";

fn user_system(dir: &Path, text: &str) -> PathBuf {
    let sys = dir.join("systems/mine");
    std::fs::create_dir_all(sys.join("workloads")).unwrap();
    std::fs::write(sys.join("system.toml"), text).unwrap();
    std::fs::write(sys.join("workloads/w.toml"), WORKLOAD).unwrap();
    sys.join("system.toml")
}

#[test]
fn systems_under_systems_are_listed_and_found_by_name() {
    let d = tempfile::tempdir().unwrap();
    user_system(d.path(), EXITS);
    let r = flymc_in(d.path(), &["systems"]);
    assert_eq!(r.code, 0, "{}", r.all());
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with("mine ") && l.contains("a node that cannot start")),
        "{}",
        r.stdout
    );
    let r = flymc_in(d.path(), &["workloads", "mine"]);
    assert!(r.stdout.contains("mine           w"), "{}", r.all());
    // Found by name, its workloads beside it; its nodes exit at once: one line, the log tail
    // of the node seen first (either may be).
    let r = flymc_in(d.path(), &["run", "--system", "mine", "--workload", "w"]);
    assert_eq!(r.code, 2, "{}", r.all());
    let line = r.stderr.lines().find(|l| l.starts_with("error: ")).unwrap();
    assert!(
        (0..2).any(
            |n| line.contains(&format!("node n{n} exited on its own (exit status 3)"))
                && line.contains(&format!("its log ends: starting node {n} at 127."))
        ) && line.contains("fatal: no config in"),
        "{line}"
    );
    // A broken file is left out of the listing, with why.
    std::fs::write(d.path().join("systems/mine/system.toml"), "version = 1\n").unwrap();
    let r = flymc_in(d.path(), &["systems"]);
    assert!(
        r.stderr.contains("systems/mine/system.toml left out"),
        "{}",
        r.all()
    );
}

/// A system file under `systems/` is data until it is used: one whose property nests 5,000
/// parentheses (or is a 4,000-term chain, or 100,000 `!`) does not abort `flymc systems` or a
/// lookup of another system by name; the nesting is one line at its line and column, the
/// chains load; a description holding terminal escapes and a workflow command is listed inert.
#[test]
fn hostile_system_files_are_listed_inert_and_do_not_abort_other_lookups() {
    let d = tempfile::tempdir().unwrap();
    let other = d.path().join("systems/other");
    std::fs::create_dir_all(other.join("workloads")).unwrap();
    let described = EXITS
        .replace("name = \"mine\"", "name = \"other\"")
        .replace(
            "description = \"a node that cannot start\"",
            "description = \"inert \\u001b]0;pwned\\u0007\\u009b2J\\n::error::x\"",
        );
    std::fs::write(other.join("system.toml"), described).unwrap();
    std::fs::write(
        other.join("workloads/w.toml"),
        WORKLOAD.replace("\"mine\"", "\"other\""),
    )
    .unwrap();
    let deep = format!("{}n0.term == 1{}", "(".repeat(5000), ")".repeat(5000));
    let ors = vec!["n0.term == 1"; 4000].join(" || ");
    let nots = format!("{}(n0.term == 1)", "!".repeat(100_000));
    for (always, nested) in [(deep, true), (ors, false), (nots, false)] {
        user_system(
            d.path(),
            &format!("{EXITS}[[property]]\nname = \"p\"\nalways = '{always}'\n"),
        );
        let r = flymc_in(d.path(), &["systems"]);
        assert_eq!(r.code, 0, "{}", r.all());
        assert!(
            r.stdout.lines().any(|l| l.starts_with("raft-sim ")),
            "{}",
            r.all()
        );
        let listed = r.stdout.lines().find(|l| l.starts_with("other ")).unwrap();
        assert!(
            listed.contains("inert \\x1b]0;pwned\\x07\\u{9b}2J\\n::error::x"),
            "{listed}"
        );
        assert!(
            !r.all().contains(['\u{1b}', '\u{7}', '\u{9b}']),
            "{}",
            r.all()
        );
        assert!(!r.all().lines().any(|l| l.trim_start().starts_with("::")));
        let left_out: Vec<&str> = r
            .stderr
            .lines()
            .filter(|l| l.contains("left out"))
            .collect();
        if nested {
            assert_eq!(left_out.len(), 1, "{}", r.stderr);
            assert!(
                left_out[0].contains("system.toml:13:")
                    && left_out[0].contains("nested more than 64 deep"),
                "{}",
                left_out[0]
            );
            assert!(
                !r.stdout.lines().any(|l| l.starts_with("mine ")),
                "{}",
                r.stdout
            );
        } else {
            assert!(left_out.is_empty(), "{}", r.stderr);
            assert!(
                r.stdout.lines().any(|l| l.starts_with("mine ")),
                "{}",
                r.stdout
            );
        }
        let r = flymc_in(d.path(), &["workloads", "other"]);
        assert_eq!(r.code, 0, "{}", r.all());
        assert!(r.stdout.contains("other          w"), "{}", r.all());
    }
}

#[test]
fn bad_system_files_are_one_line_with_file_line_and_column() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        (
            EXITS.replace("[state]", "colour = 1\n[state]"),
            "system.toml:9:1: malformed system file: unknown field `colour`",
        ),
        (
            format!("{EXITS}[[property]]\nname = \"p\"\nalways = 'all(n.trem > 0)'\n"),
            "system.toml:13:17: property `p`: unknown variable `trem`: state.vars lists term",
        ),
        (
            format!("{EXITS}[[property]]\nname = \"p\"\nalways = 'all(n.term >'\n"),
            "system.toml:13:",
        ),
        (
            EXITS.replace("{node}", "{nod}"),
            "system.toml:7:35: unknown placeholder {nod}",
        ),
    ];
    for (text, needle) in cases {
        let f = user_system(d.path(), &text);
        let r = flymc_in(
            d.path(),
            &["run", "--system", f.to_str().unwrap(), "--workload", "w"],
        );
        assert_one_line_error(&r, needle);
    }
    let r = flymc_in(
        d.path(),
        &[
            "run",
            "--system",
            "./nowhere/system.toml",
            "--workload",
            "w",
        ],
    );
    assert_one_line_error(&r, "cannot read system file ./nowhere/system.toml");
}

#[test]
fn a_failing_setup_check_is_one_line_with_its_fix() {
    let d = tempfile::tempdir().unwrap();
    let text = EXITS.replace(
        "[state]",
        "[[check]]\nrun = [\"sh\", \"-c\", \"command -v no-such-server-binary\"]\nfix = \"install no-such-server (apt-get install no-such-server)\"\n\n[state]",
    );
    let f = user_system(d.path(), &text);
    let r = flymc_in(
        d.path(),
        &["run", "--system", f.to_str().unwrap(), "--workload", "w"],
    );
    assert_eq!(r.code, 2, "{}", r.all());
    let line = r.stderr.lines().find(|l| l.starts_with("error: ")).unwrap();
    assert!(
        line.contains("setup check `sh -c command -v no-such-server-binary` failed: install no-such-server (apt-get install no-such-server)"),
        "{line}"
    );
}

/// `flymc ARGS` in `dir` under coreutils' `timeout 60`: a hang ends as exit 124, not as a test
/// that never ends.
fn flymc_bounded(dir: &Path, args: &[&str]) -> common::Ran {
    let out = std::process::Command::new("timeout")
        .arg("60")
        .arg(env!("CARGO_BIN_EXE_flymc"))
        .args(args)
        .current_dir(dir)
        .env("FLYMC_WORKLOADS", common::workloads())
        .output()
        .expect("timeout runs");
    common::Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Issue 43: `[[check]] run = []` was accepted and checked nothing.
#[test]
fn an_empty_setup_check_is_refused_at_its_line_and_column() {
    let d = tempfile::tempdir().unwrap();
    for run in ["[]", "[\"\"]"] {
        let text = EXITS.replace(
            "[state]",
            &format!("[[check]]\nrun = {run}\nfix = \"x\"\n\n[state]"),
        );
        let f = user_system(d.path(), &text);
        let r = flymc_in(
            d.path(),
            &["run", "--system", f.to_str().unwrap(), "--workload", "w"],
        );
        assert_one_line_error(&r, "system.toml:10:7: [[check]] `run` is empty");
    }
}

/// Issue 43: a setup check that never ended hung the run. It is killed after its
/// `timeout_secs` with what it started (its process group), and the run refused in one line.
#[test]
fn a_setup_check_that_never_ends_is_killed_with_what_it_started() {
    let d = tempfile::tempdir().unwrap();
    let text = EXITS.replace(
        "[state]",
        "[[check]]\nrun = [\"sh\", \"-c\", \"sleep 1000 & echo $! > sleeper; wait\"]\nfix = \"never shown\"\ntimeout_secs = 1\n\n[state]",
    );
    let f = user_system(d.path(), &text);
    let r = flymc_bounded(
        d.path(),
        &["run", "--system", f.to_str().unwrap(), "--workload", "w"],
    );
    assert_one_line_error(
        &r,
        "setup check `sh -c sleep 1000 & echo $! > sleeper; wait` did not end within 1 s, so it was killed",
    );
    let pid = std::fs::read_to_string(d.path().join("systems/mine/sleeper")).unwrap();
    // Gone, or a zombie waiting for init to reap it: either way it runs no more.
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
    assert!(stat.is_empty() || state.starts_with('Z'), "{stat}");
    let text = text.replace("timeout_secs = 1", "timeout_secs = 0");
    let f = user_system(d.path(), &text);
    let r = flymc_in(
        d.path(),
        &["run", "--system", f.to_str().unwrap(), "--workload", "w"],
    );
    assert_one_line_error(
        &r,
        "system.toml:12:16: [[check]] timeout_secs = 0: give 1 to 3600 seconds",
    );
}

/// Issue 43: `sets = "/dev/zero"` read until memory ran out. A sets file must be a regular
/// file of at most 16 MiB, and a system file of at most 1 MiB.
#[test]
fn sets_files_that_are_devices_or_huge_are_refused_in_one_line() {
    let d = tempfile::tempdir().unwrap();
    let with_sets = |sets: &str| {
        EXITS.replace(
            "description = \"a node that cannot start\"\n",
            &format!("description = \"a node that cannot start\"\nsets = \"{sets}\"\n"),
        )
    };
    let f = user_system(d.path(), &with_sets("/dev/zero"));
    let run = |f: &Path| {
        flymc_bounded(
            d.path(),
            &["run", "--system", f.to_str().unwrap(), "--workload", "w"],
        )
    };
    assert_one_line_error(
        &run(&f),
        "system.toml:4:8: cannot read the sets file /dev/zero: it is not a regular file but a character device; give a file",
    );
    // Sparse: no disk is spent, and it is refused by its size.
    let big = d.path().join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len((16 << 20) + 1)
        .unwrap();
    let f = user_system(d.path(), &with_sets(big.to_str().unwrap()));
    assert_one_line_error(
        &run(&f),
        "big.json: it is larger than the 16 MiB flymc reads of such a file (16777217 bytes)",
    );
    let r = flymc_bounded(
        d.path(),
        &[
            "run",
            "--system",
            "raft-sim",
            "--workload",
            "raft-bug",
            "--sets",
            "/dev/zero",
        ],
    );
    assert_one_line_error(
        &r,
        "cannot read sets file /dev/zero: it is not a regular file but a character device; give a file",
    );
    std::fs::File::create(&f)
        .unwrap()
        .set_len((1 << 20) + 1)
        .unwrap();
    assert_one_line_error(
        &run(&f),
        "system.toml: it is larger than the 1 MiB flymc reads of such a file (1048577 bytes)",
    );
}
