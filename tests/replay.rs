//! Every simulated bug is found from its workload alone, and its path file replays to the same
//! violation; path files that are corrupt, of another version, or whose workload changed are
//! refused with one clear line.

use crate::common;

use std::path::Path;

use common::{assert_one_line_error, flymc_in, path_file, Ran};

/// Find the bug of `system/workload` with `strategy`, then replay the path file.
fn find_and_replay(system: &str, workload: &str, strategy: &str, property: &str) {
    let d = tempfile::tempdir().unwrap();
    let r = flymc_in(
        d.path(),
        &[
            "run",
            "--system",
            system,
            "--workload",
            workload,
            "--strategy",
            strategy,
            "--max-paths",
            "10000",
        ],
    );
    assert_eq!(r.code, 1, "expected a violation:\n{}", r.all());
    assert!(r.stdout.contains("VIOLATION on path"), "{}", r.stdout);
    assert!(
        r.stdout.contains(property),
        "expected {property}:\n{}",
        r.stdout
    );
    let file = path_file(&r, d.path());
    let again = flymc_in(d.path(), &["replay", file.to_str().unwrap()]);
    assert_eq!(again.code, 1, "{}", again.all());
    assert!(
        again.stdout.contains(&format!("reproduced: {property}")),
        "{}",
        again.stdout
    );
}

#[test]
fn cass_3_finds_5925_with_dfs_and_replays() {
    find_and_replay("cassandra-sim", "cass-3", "dfs", "no-handler-failure");
}

#[test]
fn cass_2_finds_6013_with_a_baseline_and_replays() {
    find_and_replay(
        "cassandra-sim",
        "cass-2",
        "random",
        "applied-false-not-committed",
    );
}

#[test]
fn cass_1_finds_6023_and_replays() {
    find_and_replay("cassandra-sim", "cass-1", "random", "serializable-result");
}

#[test]
fn cass_5_finds_the_crash_bug_and_replays() {
    find_and_replay("cassandra-sim", "cass-5", "flymc", "replicas-converge");
}

#[test]
fn raft_bug_is_found_and_replays() {
    find_and_replay("raft-sim", "raft-bug", "random", "state-machine-safety");
}

#[test]
fn zk_1419_liveness_bug_is_found_and_replays() {
    find_and_replay(
        "zk-le-sim",
        "zk-1419",
        "flymc",
        "eventually-quorum-follows-leader",
    );
}

/// A recorded path file for the edits below.
fn recorded(dir: &Path, workload: &str) -> std::path::PathBuf {
    let r = flymc_in(
        dir,
        &[
            "run",
            "--system",
            "cassandra-sim",
            "--workload",
            workload,
            "--strategy",
            "flymc",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.all());
    path_file(&r, dir)
}

fn replay(dir: &Path, file: &Path) -> Ran {
    flymc_in(dir, &["replay", file.to_str().unwrap()])
}

#[test]
fn corrupt_path_files_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let file = recorded(d.path(), "cass-3");
    let text = std::fs::read_to_string(&file).unwrap();

    std::fs::write(&file, &text[..text.len() / 2]).unwrap();
    assert_one_line_error(
        &replay(d.path(), &file),
        "is not a flymc path file: invalid JSON at line",
    );

    // A state edited by hand no longer matches its hash.
    let edited = text.replacen("\"alive\": true", "\"alive\": false", 1);
    std::fs::write(&file, edited).unwrap();
    assert_one_line_error(&replay(d.path(), &file), "does not match its recorded hash");

    std::fs::write(&file, "{\"hello\": 1}").unwrap();
    assert_one_line_error(&replay(d.path(), &file), "is not a flymc path file");

    assert_one_line_error(
        &replay(d.path(), &d.path().join("missing.json")),
        "cannot read path file",
    );
}

#[test]
fn path_files_of_another_version_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let file = recorded(d.path(), "cass-3");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replacen("\"version\": 1", "\"version\": 2", 1)).unwrap();
    assert_one_line_error(
        &replay(d.path(), &file),
        "format version 2, but this flymc reads version 1",
    );
}

#[test]
fn a_changed_workload_file_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let w = d.path().join("cass-3.toml");
    std::fs::copy(common::workloads().join("cassandra-sim/cass-3.toml"), &w).unwrap();
    let r = flymc_in(
        d.path(),
        &[
            "run",
            "--system",
            "cassandra-sim",
            "--workload",
            w.to_str().unwrap(),
            "--strategy",
            "flymc",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.all());
    let file = path_file(&r, d.path());
    assert_eq!(replay(d.path(), &file).code, 1);
    let mut text = std::fs::read_to_string(&w).unwrap();
    text.push_str("\n# edited\n");
    std::fs::write(&w, text).unwrap();
    assert_one_line_error(
        &replay(d.path(), &file),
        "changed since this path was recorded",
    );
}

#[test]
fn a_diverging_replay_names_late_reports_recorded_with_the_path() {
    let d = tempfile::tempdir().unwrap();
    let file = recorded(d.path(), "cass-3");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(
        json.get("late_reports").is_none(),
        "a simulated target reports nothing late, and the field is left out"
    );
    // An event the system never enables: the replay diverges there.
    json["events"][1]["id"] = serde_json::json!("00000000000000ff");
    std::fs::write(&file, json.to_string()).unwrap();
    let r = replay(d.path(), &file);
    assert_eq!(r.code, 3, "{}", r.all());
    assert!(r.stdout.contains("diverged at step 1"), "{}", r.stdout);
    assert!(!r.stdout.contains("late"), "{}", r.stdout);

    json["late_reports"] = serde_json::json!(3);
    std::fs::write(&file, json.to_string()).unwrap();
    let r = replay(d.path(), &file);
    assert_eq!(r.code, 3, "{}", r.all());
    assert!(
        r.stdout
            .contains("while this path was recorded, nodes reported 3 events late"),
        "{}",
        r.stdout
    );
}
