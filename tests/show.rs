//! `flymc show`: a freshly found raft-sim path drawn as text and as SVG has every lane, an
//! arrow or mark for every event and the violation; a real ZooKeeper path drawn as HTML and
//! rendered by headless Chromium still has them after the browser parsed it; bad input is one
//! line and exit 2.

use crate::common;

use std::path::{Path, PathBuf};

use common::reports::chromium;
use common::{assert_one_line_error, flymc_in, raft_bug_path};
use flymc_core::pathfile::PathFile;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// The checkout's recorded real ZooKeeper path (ZOOKEEPER-4643, 110 events, 3 nodes).
fn zk_4643() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/paths/zookeeper-zk-4643.json")
}

/// The first word of a description as `Event::describe` writes it, and what that event is.
fn kind_of(description: &str) -> &'static str {
    let words: Vec<&str> = description.split(' ').collect();
    match words.as_slice() {
        ["crash", ..] => "crash",
        ["reboot", ..] => "reboot",
        ["client", ..] => "client",
        ["timeout", name, ..] if name.starts_with("disk:") => "disk",
        ["timeout", ..] => "timer",
        [_, ends, ..] if ends.contains("->") => "message",
        _ => "other",
    }
}

#[test]
fn text_has_every_lane_every_event_and_the_violation() {
    let d = tmp();
    let file = raft_bug_path(d.path());
    let path = PathFile::load(&file).unwrap();
    let r = flymc_in(d.path(), &["show", file.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.all());
    let out = &r.stdout;
    let header = out
        .lines()
        .find(|l| l.starts_with("step"))
        .unwrap_or_else(|| panic!("no lane header in:\n{out}"));
    for n in ["n0", "n1", "n2"] {
        assert!(header.contains(n), "lane {n} missing from `{header}`");
    }
    let mut kinds = std::collections::BTreeSet::new();
    for (step, e) in path.events.iter().enumerate() {
        let prefix = format!("{step:>4}  ");
        let line = out
            .lines()
            .find(|l| l.starts_with(&prefix) && l.ends_with(&e.description))
            .unwrap_or_else(|| panic!("no row for step {step} ({}) in:\n{out}", e.description));
        let lanes = &line[prefix.len()..line.len() - e.description.len()];
        let kind = kind_of(&e.description);
        kinds.insert(kind);
        let want: &[&str] = match kind {
            "crash" => &["X"],
            "reboot" => &["R"],
            "client" => &["C"],
            "timer" => &["T"],
            "disk" => &["D"],
            "message" if e.description.contains(&self_send(&e.description)) => &["@"],
            "message" => &["*", "-"],
            _ => &[],
        };
        for w in want {
            assert!(
                lanes.contains(w),
                "step {step} ({}) should draw `{w}`: `{line}`",
                e.description
            );
        }
        if kind == "message" && !lanes.contains('@') {
            assert!(
                lanes.contains('>') || lanes.contains('<'),
                "no arrowhead at step {step}: `{line}`"
            );
        }
    }
    for k in ["crash", "reboot", "message"] {
        assert!(kinds.contains(k), "the raft-bug path has a {k}: {kinds:?}");
    }
    let v = path.violation.as_ref().expect("the path violates");
    assert!(
        out.contains(&format!(
            "VIOLATION after step {}: state-machine-safety",
            v.step
        )),
        "{out}"
    );
    assert!(out.contains(&v.message), "{out}");
    assert!(out.contains("initial state:"), "{out}");
    // A crash shows the node going down under its row.
    assert!(out.contains("n0: DOWN"), "{out}");
}

/// `nX->nX` for a description `NAME nA->nB ...`, so a self-send can be told apart.
fn self_send(description: &str) -> String {
    let ends = description.split(' ').nth(1).unwrap_or("");
    match ends.split_once("->") {
        Some((a, _)) => format!("{a}->{a}"),
        None => String::from("\u{0}"),
    }
}

#[test]
fn svg_has_every_lane_a_row_per_event_and_the_violation() {
    let d = tmp();
    let file = raft_bug_path(d.path());
    let path = PathFile::load(&file).unwrap();
    let r = flymc_in(
        d.path(),
        &["show", "--format", "svg", file.to_str().unwrap()],
    );
    assert_eq!(r.code, 0, "{}", r.all());
    let svg = r.stdout.trim();
    assert!(svg.starts_with("<svg "), "{}", &svg[..svg.len().min(200)]);
    assert!(svg.ends_with("</svg>"));
    assert!(svg.contains(r#"id="flymc-seq-"#));
    for n in ["n0", "n1", "n2"] {
        assert!(
            svg.contains(&format!(r#"class="fm-node" data-node="{n}""#)),
            "lane {n}"
        );
    }
    assert_eq!(
        svg.matches(r#"<g class="fm-row""#).count(),
        path.events.len()
    );
    let messages = path
        .events
        .iter()
        .filter(|e| kind_of(&e.description) == "message")
        .count();
    assert!(svg.matches(r#"class="fm-head""#).count() >= messages);
    assert!(svg.contains(r#"class="fm-crash""#), "a crash mark");
    assert!(svg.contains("fm-reboot"), "a reboot mark");
    assert!(
        svg.contains(r#"<g class="fm-violation" data-property="state-machine-safety">"#),
        "the violation box"
    );
    assert!(svg.contains("VIOLATION after step"));
    // Hovers: the whole state of each node at least initially.
    assert!(svg.contains("<title>n0 initially:"));
    // `--out` writes the same drawing to a file.
    let out = d.path().join("p.svg");
    let r = flymc_in(
        d.path(),
        &[
            "show",
            "--format",
            "svg",
            "--out",
            out.to_str().unwrap(),
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.all());
    assert!(r.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&out).unwrap().trim(), svg);
}

#[test]
fn html_of_a_real_zookeeper_path_renders_in_chromium() {
    let d = tmp();
    let page = d.path().join("zk-4643.html");
    let zk = zk_4643();
    let r = flymc_in(
        d.path(),
        &[
            "show",
            "--format",
            "html",
            "--out",
            page.to_str().unwrap(),
            zk.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.all());
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing for the browser to fetch.
    for external in ["<script", "<link", "src=", "@import", "url("] {
        assert!(!html.contains(external), "the page refers to `{external}`");
    }
    let dom = chromium(&page, &d.path().join("zk-4643.png"));
    let path = PathFile::load(&zk).unwrap();
    assert_eq!(path.events.len(), 110);
    for n in ["n0", "n1", "n2"] {
        assert!(
            dom.contains(&format!(r#"data-node="{n}" "#)),
            "lane {n} not in the rendered DOM"
        );
    }
    assert_eq!(
        dom.matches(r#"<g class="fm-row""#).count(),
        110,
        "a row per event in the rendered DOM"
    );
    assert_eq!(
        dom.matches(r#"<svg xmlns="http://www.w3.org/2000/svg" id="flymc-seq-"#)
            .count(),
        1
    );
    assert!(dom.contains(r#"<g class="fm-violation" data-property="acked-zxid-in-later-leaders">"#));
    assert!(dom.contains("VIOLATION after step 109: acked-zxid-in-later-leaders"));
    assert!(
        dom.contains("was acknowledged to a client, but n0 leads epoch 3 without it in its log")
    );
    assert!(
        dom.contains(r#"<table class="flymc-state">"#),
        "the states at the violation"
    );
    assert!(dom.contains("n2 (down)"), "n2 is down at the violation");
}

/// `flymc show FORMAT FILE` in `dir`, killed after a minute (a drawing that never ends fails
/// the test rather than hanging it).
fn show_within_a_minute(dir: &Path, format: &str, file: &Path) -> common::Ran {
    let out = std::process::Command::new("timeout")
        .arg("60")
        .arg(env!("CARGO_BIN_EXE_flymc"))
        .args(["show", "--format", format])
        .arg(file)
        .current_dir(dir)
        .output()
        .unwrap();
    common::Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Path file `file` with `edit` applied to its JSON, written as `name` in `dir`.
fn edited(
    dir: &Path,
    file: &Path,
    name: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) -> PathBuf {
    let mut path: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    edit(&mut path);
    // The states keep matching their recorded hashes, so the file loads.
    for rec in path["states"].as_array_mut().unwrap() {
        let state: flymc_model::GlobalState = serde_json::from_value(rec["state"].clone()).unwrap();
        rec["hash"] = format!("{:016x}", state.hash()).into();
    }
    let out = dir.join(name);
    std::fs::write(&out, path.to_string()).unwrap();
    out
}

/// Node numbers in event descriptions are the file's text (issue 43): `n18446744073709551615`,
/// `n3000000` and `n2000000` neither hang the drawing nor size it; the lanes are the nodes the
/// recorded states have, and those events are drawn as text.
#[test]
fn node_numbers_in_descriptions_do_not_size_the_drawing() {
    let d = tmp();
    let plain = raft_bug_path(d.path());
    let hostile = edited(d.path(), &plain, "hostile.json", |p| {
        p["events"][0]["description"] = "crash n18446744073709551615".into();
        p["events"][1]["description"] = "prepare n0->n3000000 {}".into();
        p["events"][2]["description"] = "timeout elect @n2000000".into();
    });
    for format in ["text", "svg", "html"] {
        let before = show_within_a_minute(d.path(), format, &plain);
        let r = show_within_a_minute(d.path(), format, &hostile);
        assert_eq!(r.code, 0, "{format}: {}", r.stderr);
        assert!(
            r.stdout.len() < before.stdout.len() + 4096,
            "{format}: {} bytes, {} without the hostile events",
            r.stdout.len(),
            before.stdout.len()
        );
        assert!(r.stdout.contains("n3000000"), "{format}: drawn as text");
    }
    let text = show_within_a_minute(d.path(), "text", &hostile).stdout;
    let header = text.lines().find(|l| l.starts_with("step ")).unwrap();
    assert!(header.ends_with("n2"), "{header}");
}

/// Control characters in a path file's descriptions, variables and violation message are
/// escaped (issue 43): `--format text` prints no terminal escape and no line a CI runner reads
/// as a workflow command; `--format svg` stays well-formed XML.
#[test]
fn control_characters_are_escaped_in_text_and_svg() {
    let d = tmp();
    let file = edited(d.path(), &raft_bug_path(d.path()), "loud.json", |p| {
        p["events"][0]["description"] = "ping n0->n1 {\"x\":\"\u{1b}]0;pwned\u{7}\"}".into();
        p["states"][1]["state"]["nodes"][0]["vars"]["role"] = "\u{9b}2J\u{0}\u{fffe}".into();
        p["violation"]["message"] = "boom\n::error::owned\u{1b}[31m".into();
    });
    let r = show_within_a_minute(d.path(), "text", &file);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !r.stdout.contains(['\u{1b}', '\u{7}', '\u{9b}', '\u{0}']),
        "{}",
        r.stdout
    );
    assert!(
        !r.stdout.lines().any(|l| l.trim_start().starts_with("::")),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains(r"\x1b]0;pwned\x07"), "{}", r.stdout);
    assert!(r.stdout.contains(r"\u{9b}2J\x00\u{fffe}"), "{}", r.stdout);
    let r = show_within_a_minute(d.path(), "svg", &file);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = roxmltree::Document::parse(&r.stdout).unwrap_or_else(|e| panic!("{e}"));
    let text: String = doc.descendants().filter_map(|n| n.text()).collect();
    assert!(text.contains(r"\x1b]0;pwned\x07"), "{text}");
    assert!(text.contains(r"\x1b[31m"), "{text}");
}

#[test]
fn a_missing_file_is_one_line_and_exit_2() {
    let d = tmp();
    let r = flymc_in(d.path(), &["show", "no-such-path.json"]);
    assert_one_line_error(&r, "cannot read path file no-such-path.json");
    assert!(r.stdout.is_empty());
}

#[test]
fn a_json_file_that_is_not_a_path_is_one_line_and_exit_2() {
    let d = tmp();
    std::fs::write(d.path().join("other.json"), r#"{"hello": [1, 2]}"#).unwrap();
    for format in ["text", "svg", "html"] {
        let r = flymc_in(d.path(), &["show", "--format", format, "other.json"]);
        assert_one_line_error(&r, "other.json is not a flymc path file");
        assert!(r.stdout.is_empty());
    }
}
