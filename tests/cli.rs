//! Bad input gets one clear line, exit 2, and no panic; the listing commands work.

use crate::common;

use common::{assert_one_line_error, flymc_in};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

#[test]
fn unknown_system_names_the_valid_ones() {
    let d = tmp();
    let r = flymc_in(d.path(), &["run", "--system", "mongo", "--workload", "x"]);
    assert_one_line_error(
        &r,
        "unknown system `mongo`; valid systems: cassandra-sim, raft-sim, zk-le-sim, zab-sim, raft, raft-asyncraft, zookeeper",
    );
}

#[test]
fn unknown_workload_names_the_valid_ones() {
    let d = tmp();
    let r = flymc_in(
        d.path(),
        &["run", "--system", "cassandra-sim", "--workload", "cass-9"],
    );
    assert_one_line_error(&r, "unknown workload `cass-9` for cassandra-sim; valid workloads: cass-1, cass-2, cass-3, cass-5");
}

#[test]
fn malformed_toml_names_file_line_and_column() {
    let d = tmp();
    let f = d.path().join("broken.toml");
    std::fs::write(
        &f,
        "version = 1\nsystem = \"cassandra-sim\"\nnodes = 3 3\nmax_events = 10\n",
    )
    .unwrap();
    let r = flymc_in(
        d.path(),
        &[
            "run",
            "--system",
            "cassandra-sim",
            "--workload",
            f.to_str().unwrap(),
        ],
    );
    assert_one_line_error(&r, "broken.toml:3:");
    assert!(r.stderr.contains("malformed workload TOML"), "{}", r.stderr);
}

/// `flymc run` of cassandra-sim's cass-5 with `from` replaced by `to`, as a workload file.
fn run_cass5_edited(dir: &std::path::Path, from: &str, to: &str) -> common::Ran {
    let src =
        std::fs::read_to_string(common::workloads().join("cassandra-sim/cass-5.toml")).unwrap();
    let f = dir.join("edited.toml");
    let bad = src.replace(from, to);
    assert_ne!(bad, src, "cass-5 has `{from}` to edit");
    std::fs::write(&f, bad).unwrap();
    flymc_in(
        dir,
        &[
            "run",
            "--system",
            "cassandra-sim",
            "--workload",
            f.to_str().unwrap(),
        ],
    )
}

#[test]
fn negative_budget_is_named() {
    let d = tmp();
    let r = run_cass5_edited(d.path(), "crashes = 1", "crashes = -1");
    assert_one_line_error(&r, "faults.crashes is -1, but it must be 0 or more");
}

/// Issue 43: numbers past what flymc can do are refused with their limit, not truncated or
/// panicked on: `bench --seeds 18446744073709551615` pushed that many jobs (exit 101).
#[test]
fn numbers_past_their_limits_are_refused_with_the_limit() {
    let d = tmp();
    let max = "18446744073709551615";
    for (args, says) in [
        (
            vec!["bench", "--seeds", max, "--cap", "1", "--only", "cass-1"],
            "is not in 1..=10000",
        ),
        (
            vec!["bench", "--jobs", max, "--cap", "1", "--only", "cass-1"],
            "is not in 1..=256",
        ),
        (vec!["bench", "hooks", "--nodes", max], "is not in 1..=250"),
        (
            vec!["bench", "hooks", "--events", max],
            "is not in 1..=100000",
        ),
        (
            vec![
                "run",
                "--system",
                "raft-sim",
                "--workload",
                "raft-bug",
                "--walk-depth",
                max,
            ],
            "is not in 0..=100000",
        ),
    ] {
        let r = flymc_in(d.path(), &args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.all());
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert!(!r.all().contains("panicked"), "{}", r.all());
    }
    let r = run_cass5_edited(d.path(), "crashes = 1", "crashes = 4294967297");
    assert_one_line_error(
        &r,
        "faults.crashes is 4294967297, but it may be at most 100000",
    );
}

#[test]
fn workload_for_another_system_is_refused() {
    let d = tmp();
    let f = common::workloads().join("zk-le-sim/le.toml");
    let r = flymc_in(
        d.path(),
        &[
            "run",
            "--system",
            "cassandra-sim",
            "--workload",
            f.to_str().unwrap(),
        ],
    );
    assert_one_line_error(&r, "is a workload for `zk-le-sim`, not for `cassandra-sim`");
}

#[test]
fn unknown_strategy_is_a_usage_error() {
    let d = tmp();
    let r = flymc_in(
        d.path(),
        &[
            "run",
            "--system",
            "zk-le-sim",
            "--workload",
            "le",
            "--strategy",
            "bfs",
        ],
    );
    assert_eq!(r.code, 2, "{}", r.all());
    assert!(
        r.stderr.contains("dfs") && r.stderr.contains("flymc"),
        "{}",
        r.stderr
    );
}

#[test]
fn systems_and_workloads_are_listed() {
    let d = tmp();
    let r = flymc_in(d.path(), &["systems"]);
    assert_eq!(r.code, 0);
    for s in ["cassandra-sim", "zk-le-sim"] {
        assert!(r.stdout.contains(s), "{}", r.stdout);
    }
    let r = flymc_in(d.path(), &["workloads", "cassandra-sim"]);
    assert_eq!(r.code, 0);
    for w in [
        "cass-1", "cass-2", "cass-3", "cass-5", "paxos-1", "paxos-2", "paxos-3",
    ] {
        assert!(r.stdout.contains(w), "{}", r.stdout);
    }
    let r = flymc_in(d.path(), &["workloads", "nope"]);
    assert_one_line_error(&r, "unknown system `nope`");
}

/// `flymc workloads | head -1`: a reader that is gone ends flymc silently with SIGPIPE's
/// status, not with a panic message.
#[test]
fn a_closed_stdout_ends_flymc_quietly() {
    let d = tmp();
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flymc"))
        .args(["workloads", "cassandra-sim"])
        .current_dir(d.path())
        .env("FLYMC_WORKLOADS", common::workloads())
        .stdout(writer)
        .output()
        .expect("the flymc binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

fn sets_error(edit: impl Fn(&str) -> String, needle: &str) {
    let d = tmp();
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../integrations/cassandra-sim/sets.json"
    ))
    .unwrap();
    let bad = edit(&src);
    assert_ne!(bad, src, "the edit must change the file");
    let f = d.path().join("bad-sets.json");
    std::fs::write(&f, bad).unwrap();
    let r = flymc_in(
        d.path(),
        &[
            "run",
            "--system",
            "cassandra-sim",
            "--workload",
            "paxos-1",
            "--strategy",
            "flymc",
            "--sets",
            f.to_str().unwrap(),
        ],
    );
    assert_one_line_error(&r, needle);
    assert!(
        r.stderr.contains("bad-sets.json:"),
        "the file and line are named: {}",
        r.stderr
    );
}

#[test]
fn sets_file_with_unknown_variable() {
    sets_error(
        |s| s.replacen("\"node_vars\": [", "\"node_vars\": [\"no_such_var\", ", 1),
        "unknown variable `no_such_var`",
    );
}

#[test]
fn sets_file_with_a_guard_that_does_not_parse() {
    sets_error(
        |s| s.replacen("\"guard\": \"", "\"guard\": \">> ", 1),
        "does not parse",
    );
}

#[test]
fn sets_file_with_a_message_kind_the_system_does_not_have() {
    sets_error(
        |s| s.replacen("\"prepare\":", "\"prepare_typo\":", 1),
        "message kind `prepare_typo` does not exist",
    );
}

#[test]
fn bench_refuses_names_it_does_not_know_instead_of_running_nothing() {
    let d = tmp();
    let r = flymc_in(d.path(), &["bench", "--only", "cass-9", "--cap", "1"]);
    assert_one_line_error(
        &r,
        "--only: no benchmark workload `cass-9`; choose from cass-1,",
    );
    let r = flymc_in(d.path(), &["bench", "--strategies", "flymcc", "--cap", "1"]);
    assert_one_line_error(
        &r,
        "--strategies: no compared strategy `flymcc`; choose from dfs, random, mdpor, bdpor, rdpor, brdpor, samc, flymc",
    );
    // `faults` is a strategy, but it answers another question than the comparison asks.
    let r = flymc_in(d.path(), &["bench", "--strategies", "faults", "--cap", "1"]);
    assert_one_line_error(&r, "--strategies: no compared strategy `faults`");
}

#[test]
fn bench_runs_only_the_strategies_and_workloads_asked_for() {
    let d = tmp();
    let out = d.path().join("b");
    let r = flymc_in(
        d.path(),
        &[
            "bench",
            "--strategies",
            "flymc,mdpor",
            "--only",
            "cass-3",
            "--cap",
            "300",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.all());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("bench.json")).unwrap()).unwrap();
    let bugs: Vec<(String, String)> = json["bugs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["workload"].as_str().unwrap().to_string(),
                e["strategy"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        bugs,
        vec![
            ("cass-3".to_string(), "mdpor".to_string()),
            ("cass-3".to_string(), "flymc".to_string())
        ]
    );
    assert!(json["exhaustion"].as_array().unwrap().is_empty());
    // flymc's ablations come with flymc; no exhaustion table is printed for an empty section.
    let ablations = json["ablations"].as_array().unwrap();
    assert!(ablations.iter().any(|e| e["strategy"] == "no-symmetry"));
    assert!(!r.stdout.contains("to exhaust"), "{}", r.stdout);
    assert!(r.stdout.contains("flymc ablations"), "{}", r.stdout);
}

/// Without `--strategy` flymc runs the portfolio: its systematic member's default order first,
/// then pct and novelty; the summary shows how abstract-state coverage grew, and the finding
/// replays.
#[test]
fn the_default_strategy_is_the_portfolio_and_its_coverage_is_reported() {
    let d = tmp();
    let r = flymc_in(
        d.path(),
        &[
            "run",
            "--system",
            "raft-sim",
            "--workload",
            "raft-bug",
            "--json",
            "s.json",
        ],
    );
    assert_eq!(r.code, 1, "raft-bug is found: {}", r.all());
    assert!(r.stdout.contains("with portfolio (seed 0)"), "{}", r.stdout);
    assert!(
        r.stdout.contains("abstract states over paths: 1: "),
        "{}",
        r.stdout
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("s.json")).unwrap()).unwrap();
    assert_eq!(json["strategy"], "portfolio");
    let paths = json["paths"].as_u64().unwrap();
    let cov = json["coverage"].as_array().unwrap();
    let at: Vec<u64> = cov.iter().map(|c| c["path"].as_u64().unwrap()).collect();
    assert_eq!(at[..3], [1, 2, 4], "{at:?}");
    assert_eq!(*at.last().unwrap(), paths);
    let abs: Vec<u64> = cov
        .iter()
        .map(|c| c["abstract_states"].as_u64().unwrap())
        .collect();
    assert!(abs.windows(2).all(|w| w[0] <= w[1]), "{abs:?}");
    assert_eq!(
        *abs.last().unwrap(),
        json["abstract_states"].as_u64().unwrap()
    );
    // The members' shares add up to the paths, and more than one member ran.
    let shares = json["portfolio"].as_array().unwrap();
    let sum: u64 = shares.iter().map(|m| m[1].as_u64().unwrap()).sum();
    assert_eq!(sum, paths, "{shares:?}");
    assert!(shares.iter().filter(|m| m[1].as_u64() > Some(0)).count() >= 2);
    let file = common::path_file(&r, d.path());
    let again = flymc_in(d.path(), &["replay", file.to_str().unwrap()]);
    assert!(again.stdout.contains("reproduced"), "{}", again.all());
}

#[test]
fn pct_states_its_guarantee_and_its_finding_replays() {
    let d = tmp();
    let args = [
        "run",
        "--system",
        "cassandra-sim",
        "--workload",
        "cass-5",
        "--strategy",
        "pct",
        "--depth",
        "2",
        "--seed",
        "1",
        "--max-paths",
        "2000",
        "--json",
        "s.json",
    ];
    let r = flymc_in(d.path(), &args);
    assert_eq!(r.code, 1, "cass-5 is found: {}", r.all());
    assert!(
        r.stdout
            .contains("pct guarantee: a bug of depth 2 is hit with probability >= 1/("),
        "{}",
        r.stdout
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("s.json")).unwrap()).unwrap();
    let per_run = json["pct"]["per_run"].as_f64().unwrap();
    let chains = json["pct"]["chains"].as_f64().unwrap();
    let events = json["pct"]["events"].as_f64().unwrap();
    assert_eq!(per_run, 1.0 / (chains * events), "{json}");
    assert!(json["pct"]["over_run"].as_f64().unwrap() >= per_run);
    let file = common::path_file(&r, d.path());
    let again = flymc_in(d.path(), &["replay", file.to_str().unwrap()]);
    assert_eq!(again.code, 1, "{}", again.all());
    assert!(again.stdout.contains("reproduced"), "{}", again.all());
    // A depth of 0 is refused by the parser.
    let zero = flymc_in(
        d.path(),
        &[
            "run",
            "--system",
            "cassandra-sim",
            "--workload",
            "cass-5",
            "--strategy",
            "pct",
            "--depth",
            "0",
        ],
    );
    assert_eq!(zero.code, 2, "{}", zero.all());
}

/// `flymc analyze`: the text report goes to stdout with or without `--out` (which gets the
/// sets file); `--format json --out` prints nothing; `--keep` fills in the kinds the analysis
/// did not produce and the report names them; a bad side file is one line and exit 2.
#[test]
fn analyze_writes_where_its_help_says_and_keeps_what_it_is_told() {
    let d = tmp();
    let root = common::workloads().join("..");
    let corpus = root.join("analyzer/tests/corpus/paxos_summaries");
    let side = corpus.join("annotations.toml");
    let (src, side) = (corpus.to_str().unwrap(), side.to_str().unwrap());
    let out = d.path().join("sets.json");
    let args = |extra: &[&str]| -> Vec<String> {
        [
            "analyze",
            "--lang",
            "java",
            src,
            "--annotations",
            side,
            "--system",
            "cassandra-sim",
        ]
        .iter()
        .chain(extra)
        .map(|s| s.to_string())
        .collect()
    };
    let run =
        |a: Vec<String>| flymc_in(d.path(), &a.iter().map(String::as_str).collect::<Vec<_>>());
    let r = run(args(&["--out", out.to_str().unwrap()]));
    assert_eq!(r.code, 0, "{}", r.all());
    assert!(
        r.stdout
            .starts_with("flymc analyze: system `cassandra-sim`"),
        "{}",
        r.all()
    );
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("\"format\": \"flymc-sets\""));
    let r = run(args(&["--format", "json", "--out", out.to_str().unwrap()]));
    assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{}", r.all());
    // the coordinator kinds of the hand-written Cassandra file, kept
    let hand = root.join("integrations/cassandra-sim/sets.json");
    let r = run(args(&["--keep", hand.to_str().unwrap()]));
    assert_eq!(r.code, 0, "{}", r.all());
    assert!(
        r.stdout
            .contains("(not analysed): cas, commit_response, prepare_response, propose_response"),
        "{}",
        r.all()
    );
    let bad = d.path().join("bad.toml");
    std::fs::write(
        &bad,
        "version = 1\n[[call]]\ncall = \"A.b(x)\"\nmeans = \"x >\"\n",
    )
    .unwrap();
    let mut a = args(&[]);
    a[5] = bad.to_str().unwrap().to_string();
    let r = run(a);
    assert_one_line_error(
        &r,
        &format!(
            "{}: line 4, column 13: [[call]] `A.b(x)` means: unexpected end of guard",
            bad.display()
        ),
    );
}

/// `flymc bench --sets` takes a sets file per system; a file of no known system, or two for
/// one system, is refused before anything runs.
#[test]
fn bench_sets_files_are_checked_before_running() {
    let d = tmp();
    let f = d.path().join("x.json");
    std::fs::write(&f, r#"{"system": "mongo"}"#).unwrap();
    let r = flymc_in(d.path(), &["bench", "--sets", f.to_str().unwrap()]);
    assert_one_line_error(&r, "unknown system `mongo`; valid systems: cassandra-sim, raft-sim, zk-le-sim, zab-sim, raft, raft-asyncraft, zookeeper");
    let sim = common::workloads().join("../integrations/cassandra-sim");
    let (a, b) = (sim.join("sets.json"), sim.join("sets-analysed.json"));
    let r = flymc_in(
        d.path(),
        &[
            "bench",
            "--sets",
            a.to_str().unwrap(),
            "--sets",
            b.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 2, "{}", r.all());
    assert!(
        r.stderr
            .contains("are both sets files of `cassandra-sim`: give one per system"),
        "{}",
        r.all()
    );
}

/// The property language against hostile workloads (issue 43): 5,000 nested parentheses are one
/// line at their line and column, in `always` and in `[faults] when`; a 4,000-term `||` chain
/// (77 KB) and 100,000 `!` are checked without exhausting the stack.
#[test]
fn deep_nesting_is_one_line_and_long_chains_are_checked() {
    let d = tmp();
    let base = std::fs::read_to_string(common::workloads().join("raft-sim/raft-1.toml")).unwrap();
    let line = base.lines().count() + 4;
    let run = |name: &str, extra: &str| {
        let f = d.path().join(format!("{name}.toml"));
        std::fs::write(&f, format!("{base}\n{extra}")).unwrap();
        let args = [
            "run",
            "--system",
            "raft-sim",
            "--workload",
            f.to_str().unwrap(),
        ];
        flymc_in(d.path(), &[&args[..], &["--max-paths", "5"]].concat())
    };
    let deep = format!("{}n0.id >= 0{}", "(".repeat(5000), ")".repeat(5000));
    let r = run(
        "deep",
        &format!("[[property]]\nname = \"deep\"\nalways = '{deep}'\n"),
    );
    assert_one_line_error(
        &r,
        &format!("deep.toml:{line}:75: property `deep`: nested more than 64 deep"),
    );
    let ors = vec!["n0.id == 123456789"; 4000].join(" || ");
    assert!(ors.len() > 77_000);
    let r = run(
        "ors",
        &format!("[[property]]\nname = \"ors\"\nalways = '{ors} || n0.id >= 0'\n"),
    );
    assert_eq!(r.code, 0, "{}", r.all());
    let nots = format!("{}(n0.id >= 0)", "!".repeat(100_000));
    let r = run(
        "nots",
        &format!("[[property]]\nname = \"nots\"\nalways = '{nots}'\n"),
    );
    assert_eq!(r.code, 0, "{}", r.all());
}

/// Text flymc did not write reaches the terminal escaped (issue 43): a property's message that
/// holds an OSC title, a bell, a C1 CSI and a `::error::` workflow command is printed inert by
/// `run` and `replay`; a replay that diverges on such a state says so inert too; logs written
/// to a pipe carry no colour codes.
#[test]
fn run_and_replay_print_what_they_did_not_write_escaped() {
    let d = tmp();
    let base = std::fs::read_to_string(common::workloads().join("raft-sim/raft-1.toml")).unwrap();
    let f = d.path().join("loud.toml");
    std::fs::write(
        &f,
        format!(
            "{base}\n[[property]]\nname = \"loud\"\nalways = \"all(n.commit_index == 0) || \\\"\\u001b]0;pwned\\u0007\\u009b2J\\n::error::x\\\" == 1\"\n"
        ),
    )
    .unwrap();
    let raw = |s: &str| {
        s.contains(['\u{1b}', '\u{7}', '\u{9b}'])
            || s.lines().any(|l| l.trim_start().starts_with("::"))
    };
    let r = std::process::Command::new(env!("CARGO_BIN_EXE_flymc"))
        .args([
            "run",
            "--system",
            "raft-sim",
            "--max-paths",
            "30",
            "--workload",
        ])
        .arg(&f)
        .current_dir(d.path())
        .env("FLYMC_WORKLOADS", common::workloads())
        .env("FLYMC_LOG", "debug")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&r.stdout).into_owned(),
        String::from_utf8_lossy(&r.stderr).into_owned(),
    );
    assert_eq!(r.status.code(), Some(1), "{stdout}{stderr}");
    assert!(!raw(&stdout) && !raw(&stderr), "{stdout}{stderr}");
    let violation = stdout.lines().find(|l| l.starts_with("VIOLATION")).unwrap();
    assert!(
        violation.contains(r#""\x1b]0;pwned\x07\u{9b}2J\n::error::x" == 1"#),
        "{violation}"
    );
    let ran = common::Ran {
        code: 1,
        stdout,
        stderr,
    };
    let file = common::path_file(&ran, d.path());
    let r = flymc_in(d.path(), &["replay", file.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.all());
    assert!(!raw(&r.all()), "{}", r.all());
    assert!(
        r.stdout.contains(r"reproduced: loud violated"),
        "{}",
        r.all()
    );
    // A recorded state and event the nodes will not repeat: the divergence quotes both.
    let mut path: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    path["events"][0]["description"] = "\u{1b}[2J::warning::x".into();
    path["states"][1]["state"]["nodes"][0]["vars"]["role"] = "\u{9b}31m\n::error::y".into();
    let state: flymc_model::GlobalState =
        serde_json::from_value(path["states"][1]["state"].clone()).unwrap();
    path["states"][1]["hash"] = format!("{:016x}", state.hash()).into();
    let bad = d.path().join("bad.json");
    std::fs::write(&bad, path.to_string()).unwrap();
    let r = flymc_in(d.path(), &["replay", bad.to_str().unwrap()]);
    assert_eq!(r.code, 3, "{}", r.all());
    assert!(!raw(&r.all()), "{}", r.all());
    assert!(
        r.stdout
            .contains(r"diverged at step 0 (\x1b[2J::warning::x)"),
        "{}",
        r.all()
    );
    assert!(r.stdout.contains(r"\u{9b}31m\n::error::y"), "{}", r.all());
}

/// A workload's own `[[property]]`s, in the condition language (`count`, `unique`, `any`,
/// `all`): one that holds leaves the run clean, one that fails is a violation whose path
/// replays, and a condition that does not parse is one line with file, line and column.
#[test]
fn workload_properties_are_checked_and_their_errors_located() {
    let d = tmp();
    let base = std::fs::read_to_string(common::workloads().join("raft-sim/raft-1.toml")).unwrap();
    let write = |name: &str, props: &str| {
        let f = d.path().join(format!("{name}.toml"));
        std::fs::write(&f, format!("{base}\n{props}")).unwrap();
        f
    };
    let run = |workload: &std::path::Path, extra: &[&str]| {
        let mut args = vec!["run", "--system", "raft-sim", "--workload"];
        args.push(workload.to_str().unwrap());
        args.extend_from_slice(extra);
        flymc_in(d.path(), &args)
    };
    let holds = write(
        "holds",
        "[[property]]\nname = \"one-leader-per-term\"\nalways = 'unique(n.leader per n.term) && count(n.role == \"leader\") <= 1'\n",
    );
    let r = run(&holds, &["--max-paths", "30"]);
    assert_eq!(r.code, 0, "{}", r.all());
    let fails = write(
        "fails",
        "[[property]]\nname = \"never-commits\"\nalways = 'all(n.commit == 0)'\n",
    );
    let r = run(&fails, &["--max-paths", "30"]);
    assert_eq!(r.code, 1, "{}", r.all());
    assert!(
        r.stdout.contains("never-commits violated")
            && r.stdout.contains("`all(n.commit == 0)` does not hold"),
        "{}",
        r.all()
    );
    let file = common::path_file(&r, d.path());
    let again = flymc_in(d.path(), &["replay", file.to_str().unwrap()]);
    assert!(
        again.stdout.contains("reproduced: never-commits"),
        "{}",
        again.all()
    );
    let bad = write(
        "bad",
        "[[property]]\nname = \"x\"\nalways = 'count(n.role == ) > 1'\n",
    );
    let r = run(&bad, &[]);
    let line = base.lines().count() + 4;
    assert_one_line_error(
        &r,
        &format!("bad.toml:{line}:27: property `x`: unexpected `)`"),
    );
    // An external checker: the state as JSON on stdin, the exit code and one line back.
    std::fs::write(
        d.path().join("check.py"),
        "import json, sys\nstate = json.load(sys.stdin)\nfor i, n in enumerate(state['nodes']):\n    if n['vars'].get('role') == 'leader':\n        print(f'n{i} leads')\n        sys.exit(1)\n",
    )
    .unwrap();
    let checked = write(
        "checked",
        "[[property]]\nname = \"checker\"\ncommand = [\"python3\", \"check.py\"]\n",
    );
    let r = run(&checked, &["--max-paths", "5"]);
    assert_eq!(r.code, 1, "{}", r.all());
    assert!(
        r.stdout.contains("checker violated") && r.stdout.contains("after step 0: n0 leads"),
        "{}",
        r.all()
    );
    let gone = write(
        "gone",
        "[[property]]\nname = \"checker\"\ncommand = [\"./nowhere/check\"]\n",
    );
    let r = run(&gone, &[]);
    assert_one_line_error(&r, "property `checker`: the checker");
    let both = write(
        "both",
        "[[property]]\nname = \"x\"\nalways = 'true'\neventually = 'true'\n",
    );
    let r = run(&both, &[]);
    assert_one_line_error(&r, "give exactly one of `always");
}

#[test]
fn watch_predicts_a_violation_ahead_whose_path_file_replays() {
    let d = tmp();
    let r = flymc_in(
        d.path(),
        &[
            "watch",
            "--system",
            "cassandra-sim",
            "--workload",
            "cass-3",
            "--runs",
            "2",
            "--states",
            "300",
            "--json",
            "w.json",
            "--out",
            "out",
        ],
    );
    assert!(matches!(r.code, 0 | 1), "{}", r.all());
    assert!(r.stdout.contains("predictions: "), "{}", r.all());
    let text = std::fs::read_to_string(d.path().join("w.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["summary"]["runs"], 2);
    // From the initial state, the missed prepare's failure is seven events ahead.
    let forecast = &json["runs"][0]["forecasts"][0];
    assert_eq!(forecast["property"], "no-handler-failure");
    assert_eq!(forecast["steps_ahead"], 7);
    let written = &json["runs"][0]["path_files"][0];
    assert_eq!(written["reproduced"], true);
    let replay = flymc_in(d.path(), &["replay", written["file"].as_str().unwrap()]);
    assert_eq!(replay.code, 1, "{}", replay.all());
    assert!(replay.stdout.contains("reproduced: no-handler-failure"));
}

/// `--keep-going` counts findings as a hunt does (hunt::signature: numbers left out): cass-3's
/// handler failure at n0, n1 or n2 is one finding, not three.
#[test]
fn keep_going_counts_one_finding_reached_at_different_nodes_once() {
    let d = tmp();
    let r = flymc_in(
        d.path(),
        &[
            "run",
            "--system",
            "cassandra-sim",
            "--workload",
            "cass-3",
            "--keep-going",
            "--max-paths",
            "3000",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.all());
    let count = r
        .stdout
        .lines()
        .find(|l| l.contains("distinct findings on"))
        .unwrap_or_else(|| panic!("no count in:\n{}", r.all()));
    assert!(count.starts_with("1 distinct findings on "), "{count}");
    assert_eq!(
        r.stdout.matches("VIOLATION on path").count(),
        1,
        "{}",
        r.all()
    );
}

/// Issue 44: `--param KEY=VALUE` sets a workload parameter over the file's (here raft-bug's
/// variant on the workload of the fixed code), the path file records it, and the replay runs
/// with it, from the path file alone.
#[test]
fn a_param_sets_the_workloads_parameter_and_its_path_replays() {
    let d = tmp();
    let file = common::found(
        d.path(),
        &[
            "--system",
            "raft-sim",
            "--workload",
            "raft-bug-fixed",
            "--param",
            "variant=bug-apply-before-match",
            "--strategy",
            "random",
            "--seed",
            "1",
            "--max-paths",
            "2000",
        ],
    );
    let recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        recorded["workload"]["params"]["variant"], "bug-apply-before-match",
        "{recorded}"
    );
    let again = flymc_in(d.path(), &["replay", file.to_str().unwrap()]);
    assert_eq!(again.code, 1, "{}", again.all());
    assert!(
        again.stdout.contains("reproduced: state-machine-safety"),
        "{}",
        again.all()
    );
}

/// Issue 44: a `--param` that is not KEY=VALUE, one the system does not take, one of the wrong
/// type, and a bad value through an old flag that stands for one (`--variant`): each is one
/// line and exit 2, before anything runs.
#[test]
fn bad_params_are_one_line_errors() {
    let d = tmp();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--system", "raft-sim", "--workload", "raft-1"];
        args.extend_from_slice(extra);
        flymc_in(d.path(), &args)
    };
    assert_one_line_error(&run(&["--param", "variant"]), "`variant` is not KEY=VALUE");
    assert_one_line_error(&run(&["--param", "=1"]), "is not a parameter name");
    assert_one_line_error(
        &run(&["--param", "colour=red"]),
        "unknown parameter `colour` in [params]; valid: variant, initial_leader, updates, election_timers",
    );
    assert_one_line_error(
        &run(&["--param", "updates=many"]),
        "params.updates must be a non-negative integer, got string \"many\"",
    );
    assert_one_line_error(
        &run(&["--variant", "nope"]),
        "unknown variant `nope`; valid: fixed, bug-apply-before-match",
    );
    let help = flymc_in(d.path(), &["run", "--help"]);
    assert!(
        help.stdout.contains("--param <KEY=VALUE>"),
        "{}",
        help.stdout
    );
    assert!(!help.stdout.contains("--zookeeper-home"), "{}", help.stdout);
}

/// Issue 44: `--backend`, `--strategy`, `--format` and `--lang` are choices of a type: a bad
/// value is one line and exit 2, and names every valid value.
#[test]
fn a_bad_choice_is_one_line_naming_the_valid_ones() {
    let d = tmp();
    let run = ["run", "--system", "raft-sim", "--workload", "raft-1"];
    for (args, valid) in [
        (
            [&run[..], &["--backend", "dokcer"]].concat(),
            vec!["local", "docker"],
        ),
        (
            vec!["replay", "p.json", "--backend", "k8s"],
            vec!["local", "docker"],
        ),
        (
            vec!["hunt", "--system", "raft-sim", "--backend", "k8s"],
            vec!["local", "docker"],
        ),
        (
            [&run[..], &["--strategy", "bfs"]].concat(),
            flymc_strategies::StrategyKind::names(),
        ),
        (
            vec!["show", "p.json", "--format", "png"],
            vec!["text", "svg", "html"],
        ),
        (vec!["analyze", "--lang", "go", "src"], vec!["java", "rust"]),
        (
            vec!["analyze", "--lang", "java", "--format", "xml", "src"],
            vec!["text", "json"],
        ),
    ] {
        let r = flymc_in(d.path(), &args);
        assert_one_line_error(&r, "invalid value");
        for v in valid {
            assert!(r.stderr.contains(v), "{args:?}: `{v}` not in {}", r.stderr);
        }
    }
}
