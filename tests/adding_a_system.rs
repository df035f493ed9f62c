//! docs/ADDING-A-SYSTEM.md, followed step by step: every block marked `file=PATH` is written into
//! a temporary folder (`$FLYMC_CHECKOUT` becoming this checkout), the `sh build` blocks build the
//! node program with cargo, and every line of the `sh step` blocks runs there in order (`flymc`
//! being this flymc, `cd DIR` moving on), with the exit code and the quoted messages its
//! `# exit N: "..."` comment states. If the walkthrough stops working, this test fails. The Rust
//! walkthrough and the Python one each run in a folder of their own. Besides, the shipped Python
//! system (integrations/pysyncobj) on the Python that .ci/run prepares in target/ci-venv.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// A fenced block of the doc: its info string and its text.
struct Block {
    info: String,
    text: String,
    line: usize,
}

fn blocks(doc: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, l) in doc.lines().enumerate() {
        match (&mut open, l.strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Block {
                    info: info.trim().to_string(),
                    text: String::new(),
                    line: i + 1,
                })
            }
            (Some(_), Some("")) => out.push(open.take().unwrap()),
            (Some(b), _) => {
                b.text.push_str(l);
                b.text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "a code block is not closed");
    out
}

/// What a step line says it does: its exit code and the messages its output holds.
struct Expect {
    code: i32,
    needles: Vec<String>,
}

/// `CMD   # exit N: text "needle" text "needle"` (no comment: exit 0).
fn split_step(line: &str) -> (String, Expect) {
    let Some(at) = line.find("# exit ") else {
        return (
            line.trim().to_string(),
            Expect {
                code: 0,
                needles: Vec::new(),
            },
        );
    };
    let comment = &line[at + "# exit ".len()..];
    let digits: String = comment.chars().take_while(char::is_ascii_digit).collect();
    let code = digits
        .parse()
        .unwrap_or_else(|_| panic!("`# exit N` without a number: {line}"));
    let needles = comment
        .split('"')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect();
    (line[..at].trim().to_string(), Expect { code, needles })
}

fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn quoted(p: &Path) -> String {
    format!("'{}'", p.display())
}

/// Where cargo puts what this test's flymc was built with: the node program is built there
/// too, so the crates flymc's hook needs are compiled once, not per run of this test.
fn target_dir() -> PathBuf {
    let flymc = Path::new(env!("CARGO_BIN_EXE_flymc"));
    flymc.parent().unwrap().parent().unwrap().to_path_buf()
}

/// `cargo build --manifest-path DIR/Cargo.toml ...` in `cwd`, offline and into the shared
/// target folder; then the binary is copied to `DIR/target/PROFILE/`, where the doc's build
/// leaves it.
fn build(line: &str, cwd: &Path) {
    let rest = line
        .strip_prefix("cargo ")
        .unwrap_or_else(|| panic!("a build step is a cargo command: {line}"));
    let words: Vec<&str> = rest.split_whitespace().collect();
    let manifest = words
        .iter()
        .position(|w| *w == "--manifest-path")
        .map(|i| cwd.join(words[i + 1]))
        .unwrap_or_else(|| cwd.join("Cargo.toml"));
    let dir = manifest.parent().unwrap();
    // The checkout's lock file: the versions flymc is tested with, all in the local registry.
    if !dir.join("Cargo.lock").exists() {
        std::fs::copy(checkout().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    }
    let out = Command::new(env!("CARGO"))
        .args(&words)
        .arg("--offline")
        .current_dir(cwd)
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "`{line}` failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&manifest).unwrap();
    let name = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("name = "))
        .map(|n| n.trim().trim_matches('"').to_string())
        .expect("the manifest names its package");
    let profile = if words.contains(&"--release") {
        "release"
    } else {
        "debug"
    };
    let to = dir.join("target").join(profile);
    std::fs::create_dir_all(&to).unwrap();
    std::fs::copy(target_dir().join(profile).join(&name), to.join(&name)).unwrap();
}

/// A command's stdout, then its stderr.
fn joined(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A step line, run by `sh` in `cwd`, its leading `flymc` this flymc.
fn step(command: &str, expect: &Expect, cwd: &Path) {
    let line = match command.strip_prefix("flymc ") {
        Some(rest) => format!("{} {rest}", quoted(Path::new(env!("CARGO_BIN_EXE_flymc")))),
        None => command.to_string(),
    };
    let out = Command::new("sh")
        .args(["-c", &line])
        .current_dir(cwd)
        .env("PWD", cwd)
        .env("FLYMC_CHECKOUT", checkout())
        .output()
        .unwrap();
    let all = joined(&out);
    assert_eq!(
        out.status.code(),
        Some(expect.code),
        "`{command}` in {}:\n{all}",
        cwd.display()
    );
    for n in &expect.needles {
        assert!(all.contains(n.as_str()), "`{command}`: no `{n}` in:\n{all}");
    }
}

/// The blocks of the doc's part that starts at the heading `from` and ends before `to`.
fn part(doc: &str, from: &str, to: &str) -> Vec<Block> {
    let start = doc
        .find(from)
        .unwrap_or_else(|| panic!("no `{from}` in the doc"));
    let end = start
        + doc[start..]
            .find(to)
            .unwrap_or_else(|| panic!("no `{to}` in the doc"));
    blocks(&doc[start..end])
}

/// Write the part's `file=` blocks under a new folder, then run its build and step lines in
/// order; the folder is kept alive until the end. Returns (builds, steps, violations).
fn walk(blocks: &[Block], want: &[&str]) -> (usize, usize, usize) {
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    let checkout = checkout().display().to_string();
    let mut files = Vec::new();
    for b in blocks {
        if let Some(path) = b
            .info
            .split_whitespace()
            .find_map(|w| w.strip_prefix("file="))
        {
            let f = root_path.join(path);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(&f, b.text.replace("$FLYMC_CHECKOUT", &checkout)).unwrap();
            files.push(path.to_string());
        }
    }
    for want in want {
        assert!(
            files.iter().any(|f| f.contains(want)),
            "the doc has no {want} block: {files:?}"
        );
    }
    let mut cwd = root_path.clone();
    let (mut builds, mut steps, mut violations) = (0, 0, 0);
    for b in blocks {
        let kind = match b.info.as_str() {
            "sh build" => "build",
            "sh step" => "step",
            _ => continue,
        };
        for line in b.text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (command, expect) = split_step(line);
            if let Some(dir) = command.strip_prefix("cd ") {
                cwd = cwd
                    .join(dir.trim())
                    .canonicalize()
                    .unwrap_or_else(|e| panic!("line {}: `{command}`: {e}", b.line));
                continue;
            }
            if kind == "build" {
                build(&command, &cwd);
                builds += 1;
            } else {
                step(&command, &expect, &cwd);
                steps += 1;
                violations += usize::from(expect.code == 1);
            }
        }
    }
    drop(root);
    (builds, steps, violations)
}

const PYTHON: &str = "## Walkthrough in Python";
const REFERENCE: &str = "## Reference: the `system.toml` format";

fn doc() -> String {
    std::fs::read_to_string(checkout().join("docs/ADDING-A-SYSTEM.md")).unwrap()
}

#[test]
fn the_walkthrough_of_adding_a_system_works_as_written() {
    let doc = doc();
    let blocks = part(&doc, "# Adding a system", PYTHON);
    let (builds, steps, violations) = walk(
        &blocks,
        &["system.toml", "Cargo.toml", "main.rs", "workloads/"],
    );
    assert!(builds >= 1, "the doc builds no node program");
    assert!(steps >= 5, "the doc runs {steps} flymc steps");
    assert!(violations >= 2, "the doc finds and replays no violation");
}

#[test]
fn the_python_walkthrough_works_as_written() {
    let doc = doc();
    let blocks = part(&doc, PYTHON, REFERENCE);
    let (_, steps, violations) = walk(&blocks, &["system.toml", "node.py", "workloads/"]);
    assert!(steps >= 4, "the Python part runs {steps} steps");
    assert!(
        violations >= 2,
        "the Python part finds and replays no violation"
    );
}

/// `target/ci-venv/bin` first on PATH: the Python that .ci/run gives the hook and PySyncObj.
fn ci_python_path() -> String {
    let venv = target_dir().join("ci-venv/bin");
    assert!(
        venv.join("python3").exists(),
        "{} is missing: run .ci/run's pip lines (the hook and PySyncObj into target/ci-venv)",
        venv.display()
    );
    format!(
        "{}:{}",
        venv.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn flymc_with_ci_python(args: &[&str], cwd: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_flymc"))
        .args(args)
        .current_dir(cwd)
        .env("PATH", ci_python_path())
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), joined(&out))
}

/// PySyncObj 0.3.17's append handler truncates after `prevLogIdx` even for a stale append: the
/// shipped path (relative to its own folder, so it replays from any checkout) loses a committed
/// write, every time.
#[test]
fn the_shipped_pysyncobj_path_replays_the_stale_append_deviation() {
    let file =
        checkout().join("integrations/pysyncobj/paths/stale-append-loses-committed-write.json");
    let d = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        // A system that is not built in runs only from a system file the user names.
        let system = checkout().join("integrations/pysyncobj/system.toml");
        let args = [
            "replay",
            "--system",
            system.to_str().unwrap(),
            file.to_str().unwrap(),
        ];
        let (code, all) = flymc_with_ci_python(&args, d.path());
        assert_eq!(code, 1, "{all}");
        assert!(
            all.contains("reproduced: committed-never-lost violated"),
            "{all}"
        );
    }
}

/// The budget in which the portfolio finds the deviation (path 222 of seed 0) finds nothing
/// once the handler is fixed.
#[test]
fn the_fixed_pysyncobj_handler_runs_clean_where_the_deviation_is_found() {
    let system = checkout().join("integrations/pysyncobj/system.toml");
    let d = tempfile::tempdir().unwrap();
    let run = |w: &str| {
        flymc_with_ci_python(
            &[
                "run",
                "--system",
                system.to_str().unwrap(),
                "--workload",
                w,
                "--max-paths",
                "222",
            ],
            d.path(),
        )
    };
    let (code, all) = run("write-crash");
    assert_eq!(code, 1, "{all}");
    assert!(all.contains("committed-never-lost violated"), "{all}");
    let (code, all) = run("write-crash-fixed");
    assert_eq!(code, 0, "{all}");
    assert!(all.contains("no violation within 222 paths"), "{all}");
}

/// One step of a recorded path as the sets file sees it: the event's name, its node and its
/// fields, read back from the path file's description (`NAME nA->nB {..}`, `timeout NAME @nX`,
/// `client NAME @nX {..}`); `None` for crashes and reboots.
fn step_event(description: &str) -> Option<(String, usize, serde_json::Map<String, Value>)> {
    let (head, fields) = match description.find(" {") {
        Some(i) => (
            &description[..i],
            serde_json::from_str(&description[i + 1..]).unwrap(),
        ),
        None => (description, serde_json::Map::new()),
    };
    let words: Vec<&str> = head.split_whitespace().collect();
    let node = |w: &str| {
        w.trim_start_matches("@n")
            .trim_start_matches('n')
            .parse()
            .unwrap()
    };
    match words.as_slice() {
        ["crash" | "reboot", _] => None,
        ["timeout" | "client", name, at] => Some((name.to_string(), node(at), fields)),
        [name, route] => {
            let to = route.split("->").nth(1).unwrap();
            Some((name.to_string(), node(to), fields))
        }
        _ => panic!("a step described as `{description}`"),
    }
}

/// What the sets-file check found on recorded paths: the broken claims, and how much it saw.
#[derive(Default)]
struct SetsCheck {
    broken: Vec<String>,
    steps: usize,
    silent: usize,
    faults: usize,
    swapped: usize,
}

/// Check `sets` against recorded paths (sets.md, *The check*): on every step, the event's entry
/// exists, the variables that changed at its node are in the entry's update set, no other node
/// changed (crashes and reboots included: their `peer_update` sets are empty), and an entry that
/// says it emits nothing added nothing to the network. Wherever two recorded paths share a
/// prefix and then take two events of one node in both orders, events the sets call
/// independent there end in the same state, network included. (Read sets are not observable
/// from states: they are checked only through that.)
fn check_sets(
    sets: &flymc_model::sets::SetsFile,
    paths: &[flymc_core::pathfile::PathFile],
) -> SetsCheck {
    use std::collections::HashMap;

    let ignore = ["exceptions", "logged"];
    let mut c = SetsCheck::default();
    // The state after each recorded prefix of event ids, to find both orders of a pair.
    let mut after: HashMap<Vec<String>, &flymc_model::GlobalState> = HashMap::new();
    for p in paths {
        for (i, e) in p.events.iter().enumerate() {
            let Some(post) = p.states.get(i + 1) else {
                break;
            };
            let ids: Vec<String> = p.events[..=i].iter().map(|e| e.id.to_string()).collect();
            after.insert(ids, &post.state);
            let (pre, post) = (&p.states[i].state, &post.state);
            let changed = |n: usize| -> Vec<&String> {
                let (a, b) = (&pre.nodes[n].vars, &post.nodes[n].vars);
                let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
                keys.into_iter()
                    .filter(|k| !ignore.contains(&k.as_str()) && a.get(*k) != b.get(*k))
                    .collect()
            };
            let Some((name, to, fields)) = step_event(&e.description) else {
                // A crash or a reboot: its node's own variables may all change, no peer's.
                c.faults += 1;
                let at: usize = e.description.rsplit('n').next().unwrap().parse().unwrap();
                for n in (0..pre.nodes.len()).filter(|&n| n != at) {
                    if let Some(k) = changed(n).first() {
                        c.broken.push(format!(
                            "`{}` at step {i} changed n{n}'s {k}, but crashes change no peer",
                            e.description
                        ));
                    }
                }
                continue;
            };
            let Some(entry) = sets.message(&name, &pre.nodes[to].vars, &fields) else {
                c.broken
                    .push(format!("no entry for `{}` at step {i}", e.description));
                continue;
            };
            for n in 0..pre.nodes.len() {
                for k in changed(n) {
                    if n != to || !entry.update.contains(k) {
                        c.broken.push(format!(
                            "`{}` at step {i} changed n{n}'s {k}, which its entry does not update",
                            e.description
                        ));
                    }
                }
            }
            if !entry.emits {
                c.silent += 1;
                if !post.network.iter().all(|m| pre.network.contains(m)) {
                    c.broken.push(format!(
                        "`{}` at step {i} sent something, but its entry emits nothing",
                        e.description
                    ));
                }
            }
            c.steps += 1;
        }
    }
    for p in paths {
        for i in 0..p.events.len().saturating_sub(1) {
            let (a, b) = (&p.events[i], &p.events[i + 1]);
            let (Some(x), Some(y)) = (step_event(&a.description), step_event(&b.description))
            else {
                continue;
            };
            if x.1 != y.1 || p.states.len() <= i + 2 {
                continue;
            }
            let pre = &p.states[i].state;
            let event = |e: &flymc_core::pathfile::PathEvent,
                         (name, to, fields): (String, usize, serde_json::Map<String, Value>)| {
                flymc_model::Event {
                    id: e.id,
                    kind: if e.description.starts_with("timeout ") {
                        flymc_model::EventKind::Timeout
                    } else if e.description.starts_with("client ") {
                        flymc_model::EventKind::Client
                    } else {
                        flymc_model::EventKind::Message
                    },
                    name,
                    from: None,
                    to,
                    fields,
                    parent: None,
                    delay_ms: None,
                }
            };
            let independent =
                flymc_strategies::flymc::independent(sets, pre, &event(a, x), &event(b, y));
            let mut other: Vec<String> = p.events[..i].iter().map(|e| e.id.to_string()).collect();
            other.push(b.id.to_string());
            other.push(a.id.to_string());
            if let (true, Some(theirs)) = (independent, after.get(&other)) {
                let mine = &p.states[i + 2].state;
                let strip = |s: &flymc_model::GlobalState| {
                    let nodes: Vec<_> = s
                        .nodes
                        .iter()
                        .map(|n| {
                            let mut v = n.vars.clone();
                            v.remove("exceptions");
                            v
                        })
                        .collect();
                    (nodes, s.network.clone())
                };
                if strip(mine) != strip(theirs) {
                    c.broken.push(format!(
                        "`{}` and `{}` are independent by the sets but do not commute",
                        a.description, b.description
                    ));
                }
                c.swapped += 1;
            }
        }
    }
    c
}

/// The hand-written sets file of integrations/pysyncobj (sets.md), checked against runs of the
/// real nodes (every path of dfs runs, with crashes and reboots), by [`check_sets`]; and the
/// check itself checked: copies of the file with a claim made false (an update left out, a
/// handler said to send nothing, two dependent events said to commute) are caught on the same
/// paths.
#[test]
fn the_hand_written_pysyncobj_sets_hold_on_recorded_runs() {
    use flymc_core::pathfile::PathFile;
    use flymc_model::sets::{Known, SetsFile};

    let dir = checkout().join("integrations/pysyncobj");
    let text = std::fs::read_to_string(dir.join("sets.json")).unwrap();
    let parse = |text: &str| SetsFile::parse("sets.json", text, &Known::default()).unwrap();
    let sets = parse(&text);
    let d = tempfile::tempdir().unwrap();
    // dfs for long paths with crashes and reboots; mdpor (every two events at one node race)
    // for both orders of adjacent events at one node after a common prefix: its reversal of
    // such a pair runs the later one first, and the default order then runs the other.
    for (w, strategy) in [
        ("write-crash-fixed", "dfs"),
        ("election", "dfs"),
        ("write-crash-fixed", "mdpor"),
        ("election", "mdpor"),
    ] {
        let out = format!("paths-{strategy}");
        let (code, all) = flymc_with_ci_python(
            &[
                "run",
                "--system",
                dir.join("system.toml").to_str().unwrap(),
                "--workload",
                w,
                "--strategy",
                strategy,
                "--max-paths",
                "25",
                "--save-paths",
                "--out",
                &out,
            ],
            d.path(),
        );
        assert!(code == 0 || code == 1, "{all}");
    }
    let mut paths = Vec::new();
    for out in ["paths-dfs", "paths-mdpor"] {
        for f in std::fs::read_dir(d.path().join(out)).unwrap() {
            let f = f.unwrap().path();
            if f.to_string_lossy().contains("-all-path") {
                paths.push(PathFile::load(&f).unwrap());
            }
        }
    }
    assert!(paths.len() >= 80, "{} recorded paths", paths.len());
    let c = check_sets(&sets, &paths);
    println!(
        "sets checked on {} paths: {} steps ({} that emit nothing), {} crashes and reboots, {} independent pairs seen in both orders",
        paths.len(),
        c.steps,
        c.silent,
        c.faults,
        c.swapped
    );
    assert!(c.broken.is_empty(), "{}", c.broken.join("\n"));
    // Every kind of claim met the runs: otherwise its part of the check proves nothing.
    assert!(
        c.steps > 500 && c.silent > 0 && c.faults > 0 && c.swapped > 0,
        "{} steps, {} silent, {} faults, {} swapped",
        c.steps,
        c.silent,
        c.faults,
        c.swapped
    );

    // The check catches each kind of false claim on these same paths.
    let mut no_log = parse(&text);
    for e in no_log.messages.values_mut().flatten() {
        e.update.remove("log");
    }
    let broken = check_sets(&no_log, &paths).broken;
    assert!(
        broken
            .iter()
            .any(|b| b.contains("which its entry does not update")),
        "an update set without `log` passed"
    );
    let mut mute = parse(&text);
    for e in mute.messages.values_mut().flatten() {
        e.emits = false;
    }
    let broken = check_sets(&mute, &paths).broken;
    assert!(
        broken
            .iter()
            .any(|b| b.contains("but its entry emits nothing")),
        "handlers said to send nothing passed"
    );
    let mut blind = parse(&text);
    for e in blind.messages.values_mut().flatten() {
        e.read.clear();
        e.update.clear();
        e.send.clear();
        e.disk.clear();
    }
    let broken = check_sets(&blind, &paths).broken;
    assert!(
        broken.iter().any(|b| b.contains("do not commute")),
        "events that do not commute passed as independent"
    );
}

/// `[symmetry] roles` in a system file reaches the `flymc` strategy: with PySyncObj's
/// `roles = "all"` it prunes transitions that differ from explored ones only by a renaming of
/// nodes, which the same system with `roles = "none"` cannot (its "pruned by symmetry" count
/// is then transitions explored before as they are), over the same 40 paths.
#[test]
fn the_flymc_strategy_uses_the_symmetry_a_system_file_declares() {
    let src = checkout().join("integrations/pysyncobj");
    let d = tempfile::tempdir().unwrap();
    let copy = d.path().join("pysyncobj");
    std::fs::create_dir_all(copy.join("workloads")).unwrap();
    for f in ["node.py", "fix.py", "sets.json", "system.toml"] {
        std::fs::copy(src.join(f), copy.join(f)).unwrap();
    }
    std::fs::copy(
        src.join("workloads/election.toml"),
        copy.join("workloads/election.toml"),
    )
    .unwrap();
    let pruned = |system: &Path| -> u64 {
        let (code, all) = flymc_with_ci_python(
            &[
                "run",
                "--system",
                system.to_str().unwrap(),
                "--workload",
                "election",
                "--strategy",
                "flymc",
                "--max-paths",
                "40",
                "--keep-going",
            ],
            d.path(),
        );
        assert!(code == 0 || code == 1, "{all}");
        let at = all.find("pruned by symmetry ").expect(&all) + "pruned by symmetry ".len();
        all[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let declared = pruned(&copy.join("system.toml"));
    let toml = std::fs::read_to_string(copy.join("system.toml")).unwrap();
    assert!(toml.contains("roles = \"all\""), "{toml}");
    std::fs::write(
        copy.join("system.toml"),
        toml.replace("roles = \"all\"", "roles = \"none\""),
    )
    .unwrap();
    let none = pruned(&copy.join("system.toml"));
    println!(
        "pruned by symmetry in 40 paths: {declared} with roles = \"all\", {none} with \"none\""
    );
    assert!(
        declared > none,
        "pruned by symmetry: {declared} with roles = \"all\", {none} with roles = \"none\""
    );
}
