//! `flymc hunt` across nights: a finding is new, then known, then fixed when the build is
//! fixed, then regressed when the bug comes back; shards joined by `hunt merge` equal one
//! unsharded hunt; bad input is one line and exit 2.

use crate::common;

use std::path::{Path, PathBuf};

use common::{assert_one_line_error, flymc_in, workloads, Ran};
use serde_json::Value;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

fn hunt_json(out: &Path) -> Value {
    let text = std::fs::read_to_string(out.join("hunt.json")).expect("hunt.json written");
    serde_json::from_str(&text).expect("hunt.json is JSON")
}

/// (status, id) of every finding.
fn findings(report: &Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["status"].as_str().unwrap().to_string(),
                f["id"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The corpus's findings: id and state.
fn corpus(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let f = e.unwrap().path();
            assert!(f.join("path.json").is_file(), "{} has no path", f.display());
            let v: Value =
                serde_json::from_str(&std::fs::read_to_string(f.join("finding.json")).unwrap())
                    .unwrap();
            (
                v["id"].as_str().unwrap().to_string(),
                v["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

/// A copy of the raft-sim workloads whose raft-bug runs `variant`.
fn workloads_with(dir: &Path, variant: &str) -> PathBuf {
    let wl = dir.join("workloads");
    std::fs::create_dir_all(wl.join("raft-sim")).unwrap();
    let text = std::fs::read_to_string(workloads().join("raft-sim/raft-bug.toml")).unwrap();
    let text = text.replace(
        "variant = \"bug-apply-before-match\"",
        &format!("variant = \"{variant}\""),
    );
    // The fixed code violates nothing, so it expects nothing.
    let text = if variant == "fixed" {
        text.lines()
            .filter(|l| !l.starts_with("expect"))
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        text
    };
    std::fs::write(wl.join("raft-sim/raft-bug.toml"), text).unwrap();
    wl
}

fn night(dir: &Path, variant: &str, out: &str) -> Ran {
    night_with(dir, variant, out, &["--seeds", "3", "--budget", "300paths"])
}

/// A hunt on raft-sim's raft-bug running `variant`, with the corpus of the nights before.
fn night_with(dir: &Path, variant: &str, out: &str, args: &[&str]) -> Ran {
    let wl = workloads_with(dir, variant);
    let mut all = vec![
        "--workloads",
        wl.to_str().unwrap(),
        "hunt",
        "--system",
        "raft-sim",
        "--workload",
        "raft-bug",
        "--strategy",
        "random",
        "--corpus",
        "corpus",
        "--out",
        out,
    ];
    all.extend(args);
    flymc_in(dir, &all)
}

#[test]
fn a_finding_is_new_then_known_then_fixed_then_regressed() {
    let d = tmp();
    let dir = d.path();

    let r = night(dir, "bug-apply-before-match", "n1");
    assert_eq!(r.code, 1, "new findings fail the hunt:\n{}", r.all());
    let first = findings(&hunt_json(&dir.join("n1")));
    assert_eq!(
        first.len(),
        1,
        "one bug, one finding: {first:?}\n{}",
        r.all()
    );
    assert_eq!(first[0].0, "new");
    let id = first[0].1.clone();
    assert_eq!(corpus(&dir.join("corpus")), [(id.clone(), "open".into())]);
    assert!(r.stdout.contains(&format!("NEW {id}")), "{}", r.stdout);
    for report in ["hunt.json", "junit.xml", "results.sarif", "report.html"] {
        assert!(dir.join("n1").join(report).is_file(), "{report}");
    }

    // The same build again: the corpus path still violates, exploration finds it again.
    let r = night(dir, "bug-apply-before-match", "n2");
    assert_eq!(
        r.code,
        0,
        "known findings do not fail the hunt:\n{}",
        r.all()
    );
    assert_eq!(
        findings(&hunt_json(&dir.join("n2"))),
        [("known".into(), id.clone())]
    );
    assert!(r.stdout.contains("still violates"), "{}", r.stdout);

    // The fix: its path no longer violates, and exploration finds nothing.
    let r = night(dir, "fixed", "n3");
    assert_eq!(r.code, 0, "{}", r.all());
    assert_eq!(
        findings(&hunt_json(&dir.join("n3"))),
        [("fixed".into(), id.clone())]
    );
    assert_eq!(corpus(&dir.join("corpus")), [(id.clone(), "fixed".into())]);

    // The bug is back.
    let r = night(dir, "bug-apply-before-match", "n4");
    assert_eq!(r.code, 1, "a regression fails the hunt:\n{}", r.all());
    assert_eq!(
        findings(&hunt_json(&dir.join("n4"))),
        [("regressed".into(), id.clone())]
    );
    assert_eq!(corpus(&dir.join("corpus")), [(id.clone(), "open".into())]);
    // Only regressions fail it under --fail-on regressed; nothing under it on a known one.
    let r = night_with(
        dir,
        "bug-apply-before-match",
        "n5",
        &[
            "--seeds",
            "1",
            "--budget",
            "10paths",
            "--fail-on",
            "regressed",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.all());
    assert_eq!(
        findings(&hunt_json(&dir.join("n5"))),
        [("known".into(), id)]
    );
}

/// `flymc hunt ARGS --out OUT --corpus CORPUS` in `dir`, where the unsharded hunts and the
/// shards each have their corpus (the unsharded one adds its findings to its corpus).
fn hunt(dir: &Path, args: &[&str], out: &str) -> Value {
    let corpus = if args.contains(&"--shard") {
        "shards-corpus"
    } else {
        "corpus"
    };
    let mut all: Vec<&str> = vec!["hunt"];
    all.extend(args);
    all.extend(["--out", out, "--corpus", corpus]);
    let r = flymc_in(dir, &all);
    assert!(r.code == 0 || r.code == 1, "{}", r.all());
    hunt_json(&dir.join(out))
}

fn merge(dir: &Path, shards: &[String], out: &str) -> Value {
    let mut all: Vec<&str> = vec!["hunt", "merge", "--out", out, "--corpus", "shards-corpus"];
    all.extend(shards.iter().map(String::as_str));
    let r = flymc_in(dir, &all);
    assert!(r.code == 0 || r.code == 1, "{}", r.all());
    hunt_json(&dir.join(out))
}

fn workload_field(report: &Value, field: &str) -> Value {
    report["workloads"][0][field].clone()
}

#[test]
fn shards_merged_equal_one_unsharded_hunt() {
    let d = tmp();
    let dir = d.path();
    // A systematic search run to exhaustion, split by its first branches.
    let args = [
        "--system",
        "raft-sim",
        "--workload",
        "raft-2",
        "--strategy",
        "dfs",
        "--budget",
        "100000paths",
    ];
    let one = hunt(dir, &args, "one");
    let n = 3;
    let shards: Vec<String> = (0..n)
        .map(|k| {
            let out = format!("dfs{k}");
            let shard = format!("{k}/{n}");
            let mut a = args.to_vec();
            a.extend(["--shard", &shard]);
            let r = hunt(dir, &a, &out);
            assert_eq!(r["shard"], serde_json::json!([k, n]));
            assert_eq!(workload_field(&r, "exhausted"), true);
            out
        })
        .collect();
    let joined = merge(dir, &shards, "dfs-merged");
    assert_eq!(workload_field(&one, "exhausted"), true);
    assert_eq!(workload_field(&joined, "exhausted"), true);
    assert_eq!(
        workload_field(&joined, "unique_states"),
        workload_field(&one, "unique_states"),
        "the shards together reach the states one search reaches"
    );

    // A randomized strategy, split by seeds: the same seeds, the same findings.
    let args = [
        "--system",
        "raft-sim",
        "--workload",
        "raft-bug",
        "--strategy",
        "random",
        "--seeds",
        "4",
        "--budget",
        "200paths",
    ];
    let one = hunt(dir, &args, "rnd");
    let shards: Vec<String> = (0..2)
        .map(|k| {
            let out = format!("rnd{k}");
            let shard = format!("{k}/2");
            let mut a = args.to_vec();
            a.extend(["--shard", &shard]);
            let r = hunt(dir, &a, &out);
            assert_eq!(workload_field(&r, "seeds"), serde_json::json!([k, k + 2]));
            out
        })
        .collect();
    let joined = merge(dir, &shards, "rnd-merged");
    assert_eq!(
        workload_field(&joined, "seeds"),
        serde_json::json!([0, 1, 2, 3])
    );
    assert_eq!(
        workload_field(&joined, "paths"),
        workload_field(&one, "paths")
    );
    assert_eq!(findings(&joined), findings(&one));
    assert!(
        !findings(&one).is_empty(),
        "raft-bug's bug is found within 4 x 200 paths"
    );
    // The merge, not the shards, files the findings in the corpus.
    assert_eq!(
        corpus(&dir.join("shards-corpus")),
        corpus(&dir.join("corpus"))
    );
}

/// Issue 43: `--budget 18446744073709551615s` and `--seeds 18446744073709551615` panicked
/// (exit 101), and `--budget 307445734561825861m` wrapped to 44 seconds; each is refused with
/// the most it may be, before anything runs.
#[test]
fn budgets_and_seeds_past_their_limits_are_refused_with_the_limit() {
    let d = tmp();
    let dir = d.path();
    for budget in ["18446744073709551615s", "307445734561825861m", "8785h"] {
        assert_one_line_error(
            &flymc_in(dir, &["hunt", "--system", "raft-sim", "--budget", budget]),
            &format!("budget `{budget}` is longer than the 8784h a budget may give (366 days)"),
        );
    }
    assert_one_line_error(
        &flymc_in(
            dir,
            &[
                "hunt",
                "--system",
                "raft-sim",
                "--strategy",
                "random",
                "--budget",
                "1paths",
                "--seeds",
                "18446744073709551615",
            ],
        ),
        "seeds = 18446744073709551615 for raft-sim: a target may have at most 10000 seeds",
    );
    std::fs::write(
        dir.join("hunt.toml"),
        "version = 1\nbudget = \"1paths\"\n\n[[target]]\nsystem = \"raft-sim\"\nstrategy = \"random\"\nseeds = 10001\n",
    )
    .unwrap();
    assert_one_line_error(
        &flymc_in(dir, &["hunt", "hunt.toml"]),
        "seeds = 10001 for raft-sim: a target may have at most 10000 seeds",
    );
    assert!(!dir.join("flymc-hunt").exists());
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let d = tmp();
    let dir = d.path();
    std::fs::write(
        dir.join("hunt.toml"),
        "version = 1\nbudget = \"1m\"\n\n[[target]]\nsystm = \"raft-sim\"\n",
    )
    .unwrap();
    assert_one_line_error(&flymc_in(dir, &["hunt", "hunt.toml"]), "hunt.toml:5:1");
    assert_one_line_error(
        &flymc_in(dir, &["hunt", "--system", "raft-sim"]),
        "no budget",
    );
    assert_one_line_error(
        &flymc_in(
            dir,
            &["hunt", "--system", "raft-sim", "--budget", "5 fortnights"],
        ),
        "budget `5 fortnights`",
    );
    assert_one_line_error(
        &flymc_in(
            dir,
            &[
                "hunt", "--system", "raft-sim", "--budget", "1m", "--shard", "4/4",
            ],
        ),
        "--shard `4/4` is not K/N",
    );
    assert_one_line_error(
        &flymc_in(
            dir,
            &[
                "hunt",
                "--system",
                "raft-sim",
                "--budget",
                "1m",
                "--strategy",
                "mdpor",
                "--shard",
                "0/2",
            ],
        ),
        "--shard cannot split `mdpor`",
    );
    assert_one_line_error(
        &flymc_in(dir, &["hunt", "--system", "mongo", "--budget", "1m"]),
        "unknown system `mongo`",
    );
    assert_one_line_error(
        &flymc_in(dir, &["hunt", "merge", "--out", "m", "nowhere"]),
        "is nowhere the output folder of a `flymc hunt` run?",
    );
    assert!(!dir.join("m").join("hunt.json").exists());
}

#[test]
fn a_hunt_over_the_simulated_systems_writes_four_reports_that_validate_and_render() {
    let d = tmp();
    let dir = d.path();
    let campaign = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../hunts/sims.toml");
    // hunts/sims.toml's budget is 120 s; CI runs it shorter beside the other tests.
    let r = flymc_in(
        dir,
        &[
            "hunt",
            campaign.to_str().unwrap(),
            "--budget",
            "45s",
            "--corpus",
            "corpus",
            "--out",
            "out",
        ],
    );
    assert_eq!(
        r.code,
        1,
        "the simulated bugs are new findings:\n{}",
        r.all()
    );
    let out = dir.join("out");
    let report = hunt_json(&out);
    let found = findings(&report);
    assert!(found.len() >= 2, "{found:?}");
    assert!(found.iter().all(|(s, _)| s == "new"));
    let workloads = report["workloads"].as_array().unwrap();
    assert_eq!(
        workloads.len(),
        16,
        "every workload of the three simulated systems"
    );
    assert!(workloads.iter().all(|w| w["paths"].as_u64().unwrap() > 0));

    common::reports::validate_junit(&out.join("junit.xml")).expect("JUnit valid");
    common::reports::validate_sarif(&out.join("results.sarif")).expect("SARIF valid");
    assert_eq!(
        common::reports::xpath(&out.join("junit.xml"), "count(//testcase)"),
        "16"
    );
    assert_eq!(
        common::reports::xpath(&out.join("junit.xml"), "count(//failure)"),
        found.len().to_string()
    );
    let sarif: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.sarif")).unwrap()).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), found.len());
    assert!(
        results.iter().all(
            |r| r["locations"][0]["physicalLocation"]["region"]["startLine"].as_u64() > Some(0)
        ),
        "every simulated property is located at its source"
    );

    let dom = common::reports::chromium(&out.join("report.html"), &dir.join("report.png"));
    assert_eq!(
        dom.matches(r#"id="flymc-seq-"#).count(),
        found.len(),
        "one diagram per finding"
    );
    for (_, id) in &found {
        assert!(dom.contains(&format!(r#"id="finding-{id}""#)), "{id}");
    }
}

/// A corpus `finding.json` of a raft-sim raft-2 finding, filed under `id`.
fn corpus_entry(corpus: &Path, folder: &str, id: &str) -> PathBuf {
    let dir = corpus.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    let entry = serde_json::json!({
        "id": id,
        "signature": {"system": "raft-sim", "property": "election-safety", "events": [], "message": "m"},
        "system": "raft-sim",
        "workload": "raft-2",
        "kind": "safety",
        "message": "m",
        "state": "open",
        "first_seen": "2026-11-29T00:00:00Z",
        "last_seen": "2026-11-29T00:00:00Z",
        "strategy": "dfs",
        "seed": 0
    });
    std::fs::write(dir.join("finding.json"), entry.to_string()).unwrap();
    dir
}

/// A short hunt on raft-sim's raft-2 (no bug) with the corpus `corpus`.
fn short_hunt(dir: &Path, out: &str) -> Ran {
    flymc_in(
        dir,
        &[
            "hunt",
            "--system",
            "raft-sim",
            "--workload",
            "raft-2",
            "--strategy",
            "dfs",
            "--budget",
            "5paths",
            "--corpus",
            "corpus",
            "--out",
            out,
        ],
    )
}

/// Issue 43, item 3: a finding's id names files in the corpus and the output folder, so one
/// that is not an id a hunt writes, or not its own folder's, is refused before it is used.
#[test]
fn a_corpus_finding_whose_id_is_not_its_folders_is_refused() {
    for (folder, id) in [
        ("escape", "../../../escape"),
        ("0123456789abcdef", "/tmp/escape"),
        ("0123456789abcdef", "fedcba9876543210"),
    ] {
        let d = tmp();
        let dir = d.path();
        corpus_entry(&dir.join("corpus"), folder, id);
        let r = short_hunt(dir, "out");
        assert_one_line_error(
            &r,
            &format!("corpus/{folder}/finding.json is not a corpus finding (its id "),
        );
        assert!(!dir.join("out/hunt.json").exists(), "{}", r.all());
    }
}

/// Issue 43, item 9: a corpus path of another system cannot close a finding: it is a corpus
/// error, named under the finding's own system, and the finding stays open.
#[test]
fn a_corpus_path_of_another_system_does_not_close_a_finding() {
    let d = tmp();
    let dir = d.path();
    let cass = common::cass3_path(dir);
    let id = "00000000000000aa";
    let entry = corpus_entry(&dir.join("corpus"), id, id);
    std::fs::copy(&cass, entry.join("path.json")).unwrap();
    let r = short_hunt(dir, "out");
    assert_eq!(r.code, 0, "{}", r.all());
    assert!(
        r.stdout.contains(&format!(
            "hunt: corpus {id} (raft-sim election-safety): not replayed: corpus error: its path.json is a path of cassandra-sim / cass-3, not of the finding's raft-sim / raft-2"
        )),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("FIXED"), "{}", r.stdout);
    assert!(findings(&hunt_json(&dir.join("out"))).is_empty());
    assert_eq!(corpus(&dir.join("corpus")), [(id.into(), "open".into())]);
}

/// Issue 43, items 2 and 7: `hunt merge` copies each shard's own `findings/ID.json`, never a
/// file its hunt.json names, nor one a symlink leads to outside the shard, nor under an id that
/// is a path; the copies are no more readable than their source; symlinks at the reports'
/// names are replaced, not followed.
#[test]
fn merge_copies_only_each_shards_own_path_files() {
    use std::os::unix::fs::PermissionsExt;
    let d = tmp();
    let dir = d.path();
    let mode = |f: &Path| std::fs::metadata(f).unwrap().permissions().mode() & 0o777;
    let secret = dir.join("secret");
    std::fs::write(&secret, "SECRET").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let shard = hunt(
        dir,
        &[
            "--system",
            "cassandra-sim",
            "--workload",
            "cass-3",
            "--strategy",
            "random",
            "--seeds",
            "1",
            "--budget",
            "50paths",
            "--shard",
            "0/1",
        ],
        "s0",
    );
    let id = findings(&shard)
        .first()
        .expect("cass-3's bug is found in 50 random paths")
        .1
        .clone();
    let own = dir.join("s0/findings").join(format!("{id}.json"));
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o600)).unwrap();
    let edit = |f: &dyn Fn(&mut Value)| {
        let mut report = hunt_json(&dir.join("s0"));
        f(&mut report);
        std::fs::write(dir.join("s0/hunt.json"), report.to_string()).unwrap();
    };
    edit(&|r| r["findings"][0]["path_file"] = Value::from(secret.to_str().unwrap()));
    let victim = dir.join("victim");
    std::fs::write(&victim, "keep").unwrap();
    std::fs::create_dir_all(dir.join("m")).unwrap();
    for name in ["hunt.json", "junit.xml", "results.sarif", "report.html"] {
        std::os::unix::fs::symlink(&victim, dir.join("m").join(name)).unwrap();
    }
    let merge = |out: &str| {
        flymc_in(
            dir,
            &[
                "hunt",
                "merge",
                "--out",
                out,
                "--corpus",
                "shards-corpus",
                "s0",
            ],
        )
    };
    let r = merge("m");
    assert_eq!(r.code, 1, "{}", r.all());
    let copied = dir.join("m/findings").join(format!("{id}.json"));
    assert_eq!(
        std::fs::read(&copied).unwrap(),
        std::fs::read(&own).unwrap()
    );
    assert_eq!(mode(&copied), 0o600);
    let in_corpus = dir.join("shards-corpus").join(&id).join("path.json");
    assert_eq!(
        std::fs::read(&in_corpus).unwrap(),
        std::fs::read(&own).unwrap()
    );
    assert_eq!(mode(&in_corpus), 0o600);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");

    // A symlink out of the shard folder.
    let kept = std::fs::read(&own).unwrap();
    std::fs::remove_file(&own).unwrap();
    std::os::unix::fs::symlink(&secret, &own).unwrap();
    let r = merge("m2");
    assert_one_line_error(&r, "leads outside the shard folder");
    assert!(!dir.join("m2/findings").join(format!("{id}.json")).exists());
    std::fs::remove_file(&own).unwrap();
    std::fs::write(&own, kept).unwrap();

    // An id that is a path.
    edit(&|r| r["findings"][0]["id"] = Value::from("../../escape"));
    let r = merge("m3");
    assert_one_line_error(&r, "which is not 16 lowercase hex digits");
    assert!(!dir.join("escape.json").exists() && !dir.join("m3").exists());
}
