//! Hardening: path files and workloads are bounded and checked; a replay compares something.
//!
//! Each test edits a path recorded on a simulated system (or one of `tests/paths/`) the way a
//! careless or hostile user might, and expects one clear line and exit 2 before anything runs.

use crate::common;

use std::path::{Path, PathBuf};

use common::{assert_one_line_error, flymc_in, path_file, Ran};
use flymc_core::pathfile::{PathFile, MAX_BYTES, MAX_EVENTS};
use serde_json::{json, Value};

/// A path of cassandra-sim's cass-3 (found on the second path, in milliseconds).
fn recorded(dir: &Path) -> PathBuf {
    common::cass3_path(dir)
}

fn read_json(file: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

/// `json` written to `dir/name`, replayed.
fn replay_edited(dir: &Path, name: &str, json: &Value) -> Ran {
    let file = dir.join(name);
    std::fs::write(&file, serde_json::to_string_pretty(json).unwrap()).unwrap();
    flymc_in(dir, &["replay", file.to_str().unwrap()])
}

fn sha256_of(file: &Path) -> String {
    flymc_model::workload::sha256_hex(&std::fs::read(file).unwrap())
}

/// Defect 2: a path whose system is not its workload's is refused before any cluster starts,
/// instead of running one system on the other's workload and blaming it for diverging.
#[test]
fn a_path_whose_workload_is_another_systems_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/paths/raft-asyncraft-stale-commit.json");
    let mut json = read_json(&shipped);
    let workload = common::workloads().join("raft-asyncraft/stale-commit.toml");
    json["system"] = json!("raft");
    json["workload"]["file"] = json!(workload.to_str().unwrap());
    let r = replay_edited(d.path(), "raft.json", &json);
    assert_one_line_error(&r, "the path is for `raft` but its workload file");
    assert!(
        r.stderr
            .contains("stale-commit.toml is for `raft-asyncraft`"),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("replaying"), "{}", r.stdout);
}

/// Defect 3: a path file may name any file as its workload; a huge one is refused by its size,
/// not read whole (a sparse file: no disk spent).
#[test]
fn a_huge_workload_file_is_refused_unread() {
    let d = tempfile::tempdir().unwrap();
    let file = recorded(d.path());
    let big = d.path().join("big.toml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let mut json = read_json(&file);
    json["workload"]["file"] = json!(big.to_str().unwrap());
    let began = std::time::Instant::now();
    let r = replay_edited(d.path(), "big.json", &json);
    assert_one_line_error(
        &r,
        "big.toml is larger than the 1 MiB a workload file may be (2147483648 bytes)",
    );
    assert!(
        began.elapsed().as_secs() < 10,
        "it was read: {r:?}",
        r = r.all()
    );
}

/// Defect 4: a path without even its initial state would compare nothing and "match".
#[test]
fn an_empty_path_is_refused_not_matched() {
    let d = tempfile::tempdir().unwrap();
    let mut json = read_json(&recorded(d.path()));
    json["events"] = json!([]);
    json["states"] = json!([]);
    json["ending"] = json!({"hang": {"step": 0}});
    json["violation"] = Value::Null;
    let r = replay_edited(d.path(), "empty.json", &json);
    assert_one_line_error(
        &r,
        "is corrupt: it records no states; a path holds at least the initial state",
    );
    assert!(!r.stdout.contains("matched"), "{}", r.stdout);

    // A run that ends without a state does so after its last event, not before it.
    let mut json = read_json(&recorded(d.path()));
    let states = json["states"].as_array_mut().unwrap();
    states.pop();
    let last = json["events"].as_array().unwrap().len() - 1;
    json["ending"] = json!({"hang": {"step": last - 3}});
    let r = replay_edited(d.path(), "early-hang.json", &json);
    assert_one_line_error(&r, "ends without a state after step");
}

/// Defect 5: path files are refused by size before they are read, and by event count before
/// they are parsed into states (48 MB of events took 847 MB before).
#[test]
fn path_files_are_bounded_in_size_and_events() {
    let d = tempfile::tempdir().unwrap();
    let big = d.path().join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(MAX_BYTES + 1)
        .unwrap();
    let r = flymc_in(d.path(), &["replay", big.to_str().unwrap()]);
    assert_one_line_error(
        &r,
        "big.json is larger than the 256 MiB a path file may be (268435457 bytes)",
    );

    let mut json = read_json(&recorded(d.path()));
    let event = json["events"][0].clone();
    json["events"] = Value::Array(vec![event; MAX_EVENTS + 1]);
    let r = replay_edited(d.path(), "many.json", &json);
    assert_one_line_error(
        &r,
        "many.json holds 100001 events, but a path file may hold at most 100000 events",
    );
}

/// The limits hold every path flymc ships, with room to spare.
#[test]
fn shipped_paths_are_well_within_the_limits() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/paths");
    for entry in std::fs::read_dir(dir).unwrap() {
        let file = entry.unwrap().path();
        let size = std::fs::metadata(&file).unwrap().len();
        assert!(size * 10 < MAX_BYTES, "{}", file.display());
        let path = PathFile::load(&file).unwrap_or_else(|e| panic!("{e}"));
        assert!(path.events.len() * 100 < MAX_EVENTS, "{}", file.display());
    }
}

/// Defect 8: `expect` naming no property would wait silently for a violation that cannot come.
#[test]
fn an_expected_property_that_does_not_exist_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let w = d.path().join("cass-3.toml");
    let good =
        std::fs::read_to_string(common::workloads().join("cassandra-sim/cass-3.toml")).unwrap();
    std::fs::write(&w, &good).unwrap();
    let run = |d: &Path| {
        flymc_in(
            d,
            &[
                "run",
                "--system",
                "cassandra-sim",
                "--workload",
                w.to_str().unwrap(),
                "--strategy",
                "flymc",
            ],
        )
    };
    let r = run(d.path());
    assert_eq!(r.code, 1, "{}", r.all());
    let file = path_file(&r, d.path());

    let bad = good.replace(
        "expect = \"no-handler-failure\"",
        "expect = \"no-handler-failures\"",
    );
    assert_ne!(bad, good);
    std::fs::write(&w, &bad).unwrap();
    let r = run(d.path());
    assert_one_line_error(
        &r,
        "cass-3.toml: expect = \"no-handler-failures\" names no property of cassandra-sim; its properties: ",
    );
    assert!(r.stderr.contains("no-handler-failure, "), "{}", r.stderr);
    assert!(r.stderr.contains("node-settles"), "{}", r.stderr);

    // The same at replay: the path recorded with this very file.
    let mut json = read_json(&file);
    json["workload"]["sha256"] = json!(sha256_of(&w));
    let r = replay_edited(d.path(), "expect.json", &json);
    assert_one_line_error(&r, "expect = \"no-handler-failures\" names no property");
}

/// Every workload flymc ships expects a property its system checks.
#[test]
fn shipped_workloads_expect_existing_properties() {
    let folder = common::workloads();
    for system in flymc::systems::all() {
        for w in flymc_core::workloads::all(&folder, system.name()).unwrap() {
            flymc_core::workloads::check_expect(system.as_ref(), &w)
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// Defect 9: an event id is written one way, 16 lowercase hex digits; a 17th digit (a leading
/// zero) is refused with where it is.
#[test]
fn a_non_canonical_event_id_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let mut json = read_json(&recorded(d.path()));
    let id = json["events"][0]["id"].as_str().unwrap().to_string();
    json["events"][0]["id"] = json!(format!("0{id}"));
    let r = replay_edited(d.path(), "id.json", &json);
    assert_one_line_error(
        &r,
        &format!("is corrupt: `0{id}` is not an event id as flymc writes them (16 lowercase hex digits) at line "),
    );
}

/// Defect 9: `version: 1.0` is told it must be an integer, not that it has no version.
#[test]
fn a_fractional_version_is_told_to_be_an_integer() {
    let d = tempfile::tempdir().unwrap();
    let mut json = read_json(&recorded(d.path()));
    json["version"] = json!(1.0);
    let r = replay_edited(d.path(), "version.json", &json);
    assert_one_line_error(
        &r,
        "its \"version\" is 1.0, but it must be an integer (this flymc reads version 1)",
    );
}

/// A system file that leaves `ran` in `dir` when anything of it runs: its setup check or a
/// node. It accepts cass-3's parameters and names its expected property, so that nothing but
/// where flymc looks for systems keeps it from running a cass-3 path.
fn marking_system(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let marker = dir.join("ran");
    let file = dir.join(name).join("system.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let text = format!(
        r#"version = 1
name = "{name}"
description = "leaves a mark when started"

[node]
program = "sh"
args = ["-c", "touch {m}; exit 3"]

[state]
vars = ["term"]

[params]
variant = "x"
row = {{ owner = "x" }}
ops = []

[[check]]
run = ["sh", "-c", "touch {m}"]
fix = "none"

[[property]]
name = "no-handler-failure"
always = 'all(n.term >= 0)'
"#,
        m = marker.display()
    );
    std::fs::write(&file, text).unwrap();
    (file, marker)
}

/// Issue 43, item 1: a path file is data. The system file it records is not run: a built-in
/// system's name is the built-in system, whatever file the path names, for replay, shrink and
/// debug alike.
#[test]
fn a_path_file_cannot_make_a_built_in_system_run_another_system_file() {
    let d = tempfile::tempdir().unwrap();
    let mut json = read_json(&recorded(d.path()));
    let (hostile, marker) = marking_system(&d.path().join("elsewhere"), "cassandra-sim");
    json["workload"]["system_file"] = json!(hostile.to_str().unwrap());
    let r = replay_edited(d.path(), "hostile.json", &json);
    assert_eq!(
        r.code,
        1,
        "replayed on the built-in cassandra-sim:\n{}",
        r.all()
    );
    assert!(r.stdout.contains("reproduced: "), "{}", r.stdout);
    assert!(!r.stdout.contains("system file:"), "{}", r.stdout);
    assert!(!marker.exists(), "the path file's system file ran");

    let file = d.path().join("hostile.json");
    let script = d.path().join("script.txt");
    std::fs::write(&script, "step\nquit\n").unwrap();
    for args in [
        vec!["shrink", file.to_str().unwrap(), "--max-runs", "3"],
        vec![
            "debug",
            file.to_str().unwrap(),
            "--script",
            script.to_str().unwrap(),
        ],
    ] {
        let r = flymc_in(d.path(), &args);
        assert!(r.code == 0 || r.code == 1, "{args:?}:\n{}", r.all());
        assert!(!marker.exists(), "{args:?} ran the path file's system file");
    }
}

/// Issue 43, item 1: for a system that is not built in, the system file a path records is run
/// only when it is the one `--system NAME` finds (under ./systems/); otherwise one line says
/// to name it with `--system FILE`, and nothing starts.
#[test]
fn a_recorded_system_file_runs_only_when_the_users_lookup_finds_it() {
    let d = tempfile::tempdir().unwrap();
    let mut json = read_json(&recorded(d.path()));
    let (hostile, marker) = marking_system(&d.path().join("elsewhere"), "mine");
    json["system"] = json!("mine");
    json["workload"]["system_file"] = json!(hostile.to_str().unwrap());
    let r = replay_edited(d.path(), "mine.json", &json);
    assert_one_line_error(
        &r,
        "`mine` is neither built in nor under ./systems/; a path file cannot choose what flymc runs: pass --system FILE",
    );
    assert!(!marker.exists());

    // ./systems/ holds another file of that name: still not the recorded one.
    let (own, own_marker) = marking_system(&d.path().join("systems"), "mine");
    let r = flymc_in(d.path(), &["replay", "mine.json"]);
    assert_one_line_error(&r, &format!("`--system mine` finds {}", own.display()));
    assert!(!marker.exists() && !own_marker.exists());

    // The user's own file, named on the command line, or recorded and found under
    // ./systems/, is used (here it goes on to refuse cass-3's workload, before it runs).
    let r = flymc_in(
        d.path(),
        &["replay", "mine.json", "--system", hostile.to_str().unwrap()],
    );
    assert_one_line_error(&r, "the path is for `mine` but its workload file");
    json["workload"]["system_file"] = json!(own.to_str().unwrap());
    let r = replay_edited(d.path(), "own.json", &json);
    assert_one_line_error(&r, "the path is for `mine` but its workload file");
    assert!(!marker.exists() && !own_marker.exists());

    // `--system` must describe the path's system.
    let r = flymc_in(d.path(), &["replay", "mine.json", "--system", "raft-sim"]);
    assert_one_line_error(
        &r,
        "--system raft-sim describes `raft-sim`, but the path is for `mine`",
    );
}

/// Issue 43, item 7: a symlink someone left in the output folder, at a path file's name or
/// at the temporary name flymc used to write it through, is replaced, not followed.
#[test]
fn symlinks_in_the_output_folder_are_replaced_not_followed() {
    let d = tempfile::tempdir().unwrap();
    let file = recorded(d.path());
    let victim = d.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let link = |at: &Path| {
        let _ = std::fs::remove_file(at);
        std::os::unix::fs::symlink(&victim, at).unwrap();
    };
    // `flymc run`'s path file, and the shrunk path `flymc shrink` writes beside it.
    link(&file.with_extension("json.tmp"));
    let again = recorded(d.path());
    assert_eq!(again, file);
    let shrunk = file.with_file_name(format!(
        "{}.shrunk.json",
        file.file_stem().unwrap().to_string_lossy()
    ));
    link(&shrunk.with_extension("json.tmp"));
    link(&shrunk);
    let r = flymc_in(
        d.path(),
        &["shrink", file.to_str().unwrap(), "--max-runs", "5"],
    );
    assert_eq!(r.code, 1, "{}", r.all());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert!(!std::fs::symlink_metadata(&shrunk).unwrap().is_symlink());
    PathFile::load(&shrunk).unwrap();
}

/// Issue 43, item 1's root: a path file's parameters cannot choose the programs a system runs
/// either. A ZooKeeper path whose `zookeeper_home` names some folder is refused in one line by
/// replay, shrink and debug before anything starts, unless the user passes --trust-params.
#[test]
fn a_path_files_zookeeper_home_is_not_run_on_its_word() {
    let d = tempfile::tempdir().unwrap();
    let shipped =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/paths/zookeeper-zk-4643.json");
    let mut json = read_json(&shipped);
    let planted = d.path().join("planted");
    json["workload"]["params"]["zookeeper_home"] = json!(planted.to_str().unwrap());
    let r = replay_edited(d.path(), "planted.json", &json);
    assert_one_line_error(&r, "zookeeper_home");
    assert!(r.stderr.contains("--trust-params"), "{}", r.stderr);
    let file = d.path().join("planted.json");
    for args in [
        vec!["shrink", file.to_str().unwrap()],
        vec!["debug", file.to_str().unwrap()],
    ] {
        let r = flymc_in(d.path(), &args);
        assert_one_line_error(&r, "zookeeper_home");
    }
}
