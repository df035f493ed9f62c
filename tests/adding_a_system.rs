//! docs/ADDING-A-SYSTEM.md, followed step by step: every block marked `file=PATH` is written into
//! a temporary folder (`$FLYMC_CHECKOUT` becoming this checkout), the `sh build` blocks build the
//! node program with cargo, and every line of the `sh step` blocks runs there in order (`flymc`
//! being this flymc, `cd DIR` moving on), with the exit code and the quoted messages its
//! `# exit N: "..."` comment states. If the walkthrough stops working, this test fails.

use std::path::{Path, PathBuf};
use std::process::Command;

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
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
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

#[test]
fn the_walkthrough_of_adding_a_system_works_as_written() {
    let doc = std::fs::read_to_string(checkout().join("docs/ADDING-A-SYSTEM.md")).unwrap();
    let blocks = blocks(&doc);
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    let checkout = checkout().display().to_string();
    let mut files = Vec::new();
    for b in &blocks {
        if let Some(path) = b
            .info
            .split_whitespace()
            .find_map(|w| w.strip_prefix("file="))
        {
            let f = root.join(path);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(&f, b.text.replace("$FLYMC_CHECKOUT", &checkout)).unwrap();
            files.push(path.to_string());
        }
    }
    for want in ["system.toml", "Cargo.toml", "main.rs", "workloads/"] {
        assert!(
            files.iter().any(|f| f.contains(want)),
            "the doc has no {want} block: {files:?}"
        );
    }
    let mut cwd = root.clone();
    let (mut builds, mut steps, mut violations) = (0, 0, 0);
    for b in &blocks {
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
    assert!(builds >= 1, "the doc builds no node program");
    assert!(steps >= 5, "the doc runs {steps} flymc steps");
    assert!(violations >= 2, "the doc finds and replays no violation");
}
