//! `flymc shrink`: a found path on a simulated target shrinks to fewer events, the shrunk file
//! replays to the same property, it never holds more faults than the original, and what a user
//! can get wrong is refused with one line and exit 2.

use crate::common;

use std::path::{Path, PathBuf};

use common::{assert_one_line_error, flymc_in, found, raft_bug_path};
use flymc_core::pathfile::PathFile;

fn faults(p: &PathFile) -> usize {
    p.events
        .iter()
        .filter(|e| e.description.starts_with("crash ") || e.description.starts_with("reboot "))
        .count()
}

/// Shrink `file`, then replay the shrunk file; checks what every shrink must hold.
fn shrink_and_replay(dir: &Path, file: &Path) -> (PathFile, PathFile) {
    let r = flymc_in(dir, &["shrink", file.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.all());
    let shrunk = file.with_extension("shrunk.json");
    assert!(
        r.stdout
            .contains(&format!("replay it: flymc replay {}", shrunk.display())),
        "{}",
        r.stdout
    );
    for what in [
        "events: ",
        "faults dropped: ",
        "reorderings undone: ",
        "re-executions: ",
    ] {
        assert!(r.stdout.contains(what), "no `{what}` in:\n{}", r.stdout);
    }
    let before = PathFile::load(file).unwrap();
    let after = PathFile::load(&shrunk).unwrap();
    let property = &before.violation.as_ref().unwrap().property;
    assert_eq!(&after.violation.as_ref().unwrap().property, property);
    assert!(
        faults(&after) <= faults(&before),
        "{} faults after, {} before",
        faults(&after),
        faults(&before)
    );
    assert!(
        r.stdout.contains(&format!(
            "events: {} -> {}",
            before.events.len(),
            after.events.len()
        )),
        "{}",
        r.stdout
    );
    let again = flymc_in(dir, &["replay", shrunk.to_str().unwrap()]);
    assert_eq!(again.code, 1, "{}", again.all());
    assert!(
        again.stdout.contains(&format!("reproduced: {property}")),
        "{}",
        again.stdout
    );
    (before, after)
}

#[test]
fn a_raft_sim_path_shrinks_and_replays() {
    let d = tempfile::tempdir().unwrap();
    let file = raft_bug_path(d.path());
    let (before, after) = shrink_and_replay(d.path(), &file);
    assert!(
        after.events.len() < before.events.len(),
        "{} events after, {} before",
        after.events.len(),
        before.events.len()
    );
}

#[test]
fn a_cassandra_sim_path_shrinks_and_replays() {
    let d = tempfile::tempdir().unwrap();
    let file = found(
        d.path(),
        &[
            "--system",
            "cassandra-sim",
            "--workload",
            "cass-5",
            "--strategy",
            "flymc",
        ],
    );
    let (before, after) = shrink_and_replay(d.path(), &file);
    assert!(
        after.events.len() < before.events.len(),
        "{} events after, {} before",
        after.events.len(),
        before.events.len()
    );
}

#[test]
fn a_small_budget_still_gives_a_path_that_replays() {
    let d = tempfile::tempdir().unwrap();
    let file = found(
        d.path(),
        &[
            "--system",
            "cassandra-sim",
            "--workload",
            "cass-5",
            "--strategy",
            "flymc",
        ],
    );
    let r = flymc_in(
        d.path(),
        &["shrink", file.to_str().unwrap(), "--max-runs", "2"],
    );
    assert_eq!(r.code, 1, "{}", r.all());
    assert!(
        r.stdout.contains("2 candidates") && r.stdout.contains("stopped at --max-runs 2"),
        "{}",
        r.stdout
    );
    let shrunk = file.with_extension("shrunk.json");
    let again = flymc_in(d.path(), &["replay", shrunk.to_str().unwrap()]);
    assert_eq!(again.code, 1, "{}", again.all());
}

#[test]
fn a_missing_file_is_one_line() {
    let d = tempfile::tempdir().unwrap();
    let r = flymc_in(d.path(), &["shrink", "no-such-path.json"]);
    assert_one_line_error(&r, "no-such-path.json");
}

/// A found path with one field changed by `edit`, written as `name` in `dir`.
fn edited(dir: &Path, name: &str, edit: impl Fn(&mut serde_json::Value)) -> PathBuf {
    let file = raft_bug_path(dir);
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    edit(&mut v);
    let out = dir.join(name);
    std::fs::write(&out, serde_json::to_string(&v).unwrap()).unwrap();
    out
}

#[test]
fn a_path_without_a_violation_is_one_line() {
    let d = tempfile::tempdir().unwrap();
    let file = edited(d.path(), "clean.json", |v| {
        v["violation"] = serde_json::Value::Null;
    });
    let r = flymc_in(d.path(), &["shrink", file.to_str().unwrap()]);
    assert_one_line_error(&r, "records no violation");
    assert!(!d.path().join("clean.shrunk.json").exists());
}

#[test]
fn a_workload_of_another_system_is_one_line() {
    let d = tempfile::tempdir().unwrap();
    let file = edited(d.path(), "other.json", |v| {
        v["system"] = "cassandra-sim".into();
    });
    let r = flymc_in(d.path(), &["shrink", file.to_str().unwrap()]);
    assert_one_line_error(&r, "is for `raft-sim`");
    assert!(!d.path().join("other.shrunk.json").exists());
}

#[test]
fn a_file_that_is_not_a_path_is_one_line() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("notes.json");
    std::fs::write(&file, "{\"hello\": 1}").unwrap();
    let r = flymc_in(d.path(), &["shrink", file.to_str().unwrap()]);
    assert_one_line_error(&r, "is not a flymc path file");
}
