//! Systems described in a file: raft-rs, added to flymc only through
//! `integrations/raftrs/system.toml`, runs, finds what its properties say and replays; a system
//! file under `systems/` is listed and found by name; bad files and a start command that exits
//! at once are one line and exit 2.

mod common;
#[path = "common/programs.rs"]
mod programs;

use std::path::{Path, PathBuf};

use common::{assert_one_line_error, flymc_in, found};
use programs::node_program;

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
