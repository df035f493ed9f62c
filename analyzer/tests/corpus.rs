//! The analyzer's test corpus: small programs with their expected sets files
//! (`tests/corpus/<name>/expected.json`; regenerate with `FLYMC_BLESS=1` after checking the
//! text report by hand), the in-source annotations against an equivalent side file, bad input,
//! and the Raft simulation's hand-written sets file.

use std::path::{Path, PathBuf};

use flymc_analyzer::{analyze, Analysis, AnalyzeError, AnalyzeOptions, Lang};
use flymc_model::sets::SetsFile;

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(name)
}

fn opts(
    lang: Lang,
    sources: Vec<PathBuf>,
    annotations: Option<PathBuf>,
    system: &str,
) -> AnalyzeOptions {
    AnalyzeOptions {
        lang,
        sources,
        annotations,
        system: system.into(),
    }
}

fn check_expected(name: &str, lang: Lang) {
    let dir = corpus(name);
    let a = analyze(&opts(lang, vec![dir.clone()], None, name))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let json = a.to_json();
    SetsFile::parse(name, &json, &Default::default()).expect("flymc reads the output");
    let expected = dir.join("expected.json");
    if std::env::var_os("FLYMC_BLESS").is_some() {
        std::fs::write(&expected, &json).unwrap();
    }
    let want = std::fs::read_to_string(&expected).expect("expected.json (run with FLYMC_BLESS=1)");
    assert_eq!(
        json,
        want,
        "{name}: the sets differ from expected.json\n{}",
        a.to_text()
    );
}

#[test]
fn branches_guards_disk_and_increments() {
    // The paper's example: (A) m.type == PROP && m.ballot > n.ballot updates {ballot, key, value}.
    check_expected("paxos", Lang::Java);
    let a = analyze(&opts(Lang::Java, vec![corpus("paxos")], None, "paxos")).unwrap();
    let prop = &a.sets().messages["PROP"].entries[0];
    assert_eq!(prop.guard, "m.ballot > n.ballot");
    assert_eq!(
        prop.update,
        ["ballot", "key", "value"].map(String::from).into()
    );
    assert_eq!(prop.read, ["ballot"].map(String::from).into());
    assert_eq!(prop.disk, ["paxos"].map(String::from).into());
    assert_eq!(prop.send, ["ballot"].map(String::from).into());
    let resp = &a.sets().messages["PROP_RESP"].entries[0];
    assert_eq!(
        resp.guard,
        "n.majority > n.proposeCounter && m.resp == true"
    );
    assert_eq!(resp.increments, ["proposeCounter"].map(String::from).into());
}

#[test]
fn calls_through_helpers_and_early_returns() {
    check_expected("helpers", Lang::Java);
    let a = analyze(&opts(Lang::Java, vec![corpus("helpers")], None, "helpers")).unwrap();
    let e = &a.sets().messages["write"].entries;
    // the helper's comparison `w.epoch < currentEpoch()` is a guard over the node's epoch
    assert!(e
        .iter()
        .any(|x| x.guard == "!n.frozen && n.epoch > m.epoch" && x.update.is_empty()));
    let last = e.last().unwrap();
    assert_eq!(
        last.update,
        ["lastKey", "lastValue"].map(String::from).into()
    );
}

#[test]
fn sends_inside_loops() {
    check_expected("loops", Lang::Java);
    let a = analyze(&opts(Lang::Java, vec![corpus("loops")], None, "loops")).unwrap();
    let last = a.sets().messages["rumor"].entries.last().unwrap().clone();
    assert_eq!(last.send, ["best", "round"].map(String::from).into());
    assert!(last.update.contains("seen") && !last.update.contains("unrelated"));
}

#[test]
fn try_catch_and_crash_handling() {
    check_expected("crash", Lang::Java);
    let a = analyze(&opts(Lang::Java, vec![corpus("crash")], None, "crash")).unwrap();
    let crash = &a.sets().crash[0];
    assert_eq!(
        crash.peer_update,
        ["leader", "missed", "role"].map(String::from).into()
    );
    // the catch in the handler is reachable: `missed++` is an increment
    let hb = a.sets().messages["heartbeat"].entries.last().unwrap();
    assert!(hb.increments.contains("missed"));
}

#[test]
fn disk_writes() {
    check_expected("disk", Lang::Java);
    let a = analyze(&opts(Lang::Java, vec![corpus("disk")], None, "disk")).unwrap();
    let app = a.sets().messages["append"].entries.last().unwrap();
    assert_eq!(app.disk, ["channel", "raft.log"].map(String::from).into());
    let vote = a.sets().messages["vote"].entries.last().unwrap();
    assert_eq!(vote.disk, ["meta"].map(String::from).into());
}

#[test]
fn fields_through_this_and_locals() {
    check_expected("fields", Lang::Java);
    let a = analyze(&opts(Lang::Java, vec![corpus("fields")], None, "fields")).unwrap();
    let e = &a.sets().messages["put"].entries;
    let old = e
        .iter()
        .find(|x| x.guard == "m.version <= n.version")
        .unwrap();
    assert_eq!(old.update, ["data", "puts"].map(String::from).into());
    let new = e
        .iter()
        .find(|x| x.guard == "m.version > n.version")
        .unwrap();
    assert!(new.update.contains("version"));
    assert_eq!(
        e.last().unwrap().update,
        ["data", "puts", "version"].map(String::from).into()
    );
}

#[test]
fn increments_are_marked() {
    check_expected("increments", Lang::Java);
    let a = analyze(&opts(
        Lang::Java,
        vec![corpus("increments")],
        None,
        "increments",
    ))
    .unwrap();
    let m = &a.sets().messages;
    assert_eq!(
        m["INC"].entries[0].increments,
        ["acks", "hits", "total"].map(String::from).into()
    );
    assert!(m["ADD"].entries[0].increments.is_empty());
    assert!(m["RESET"].entries[0].increments.is_empty());
}

#[test]
fn rust_doc_comment_annotations() {
    check_expected("rust_node", Lang::Rust);
    let a = analyze(&opts(
        Lang::Rust,
        vec![corpus("rust_node")],
        None,
        "rust_node",
    ))
    .unwrap();
    let m = &a.sets().messages;
    assert!(m.contains_key("prepare") && m.contains_key("promise") && m.contains_key("tick"));
    assert_eq!(
        a.sets().crash[0].update,
        ["accepted", "acks"].map(String::from).into()
    );
    // `defaults = false` in a side file drops the default send dictionary (`Outbox.send`) for
    // the in-source annotations too: the promise is then no send.
    let dir = tempfile::tempdir().unwrap();
    let side = dir.path().join("a.toml");
    std::fs::write(&side, "version = 1\ndefaults = false\n").unwrap();
    let b = analyze(&opts(
        Lang::Rust,
        vec![corpus("rust_node")],
        Some(side),
        "rust_node",
    ))
    .unwrap();
    let sends = |a: &flymc_analyzer::Analysis| {
        a.sets().messages["prepare"]
            .entries
            .iter()
            .any(|e| !e.send.is_empty())
    };
    assert!(sends(&a) && !sends(&b));
}

/// A library-style Rust node (the shape of async-raft): renamed node variables, a variable
/// reported in another form (`guards = false`), message fields the hook reports under other
/// names (`report`), an async handler whose return value is the reply, a message-less handler
/// of its own kind, a send from an async block, and an enum constant matched against its
/// variants (decided, not a guard).
#[test]
fn rust_library_shapes() {
    check_expected("rust_library", Lang::Rust);
    let a = analyze(&opts(
        Lang::Rust,
        vec![corpus("rust_library")],
        None,
        "rust_library",
    ))
    .unwrap();
    let vote = &a.sets().messages["vote"];
    assert_eq!(vote.fields, ["last_index", "term"]);
    assert!(vote.entries.iter().all(|e| !e.guard.contains("n.log")
        && !e.guard.contains("candidate_id")
        && !e.guard.contains("last_index")));
    let stale = vote
        .entries
        .iter()
        .find(|e| e.guard == "n.term > m.term")
        .expect("a stale request is its own entry");
    assert!(stale.update.is_empty());
    assert_eq!(
        stale.send,
        ["term".to_string()].into(),
        "the reply carries the term"
    );
    let elect = &a.sets().messages["elect"];
    assert_eq!(elect.entries.len(), 1, "no guard from a decided match");
    assert!(elect.entries[0].send.contains("log") && elect.entries[0].update.contains("leader"));
}

/// openraft's shapes, from a side file: state behind a `Valid<T>` wrapper (`wrappers`), a
/// `Vote` struct that is the term, the vote and the leader at once (`also`) compared as a
/// whole, nested message fields the hook reports flat (`report` with dotted paths), and
/// handlers whose effects are commands a runner executes after them (`[[queue]]`).
#[test]
fn rust_wrappers_nested_fields_and_whole_structs() {
    let dir = corpus("rust_wrapped");
    let side = dir.join("annotations.toml");
    let a = analyze(&opts(
        Lang::Rust,
        vec![dir.join("core.rs")],
        Some(side.clone()),
        "rust_wrapped",
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let json = a.to_json();
    SetsFile::parse("rust_wrapped", &json, &Default::default()).expect("flymc reads the output");
    let expected = dir.join("expected.json");
    if std::env::var_os("FLYMC_BLESS").is_some() {
        std::fs::write(&expected, &json).unwrap();
    }
    let want = std::fs::read_to_string(&expected).expect("expected.json (run with FLYMC_BLESS=1)");
    assert_eq!(json, want, "rust_wrapped: the sets differ\n{}", a.to_text());

    // Through the wrapper, the commit index is a node variable, compared with the nested
    // message field under the hook's name.
    let append = &a.sets().messages["append"];
    assert_eq!(append.fields, ["commit_index"]);
    let newer = append
        .entries
        .iter()
        .find(|e| e.guard == "m.commit_index > n.commit")
        .expect("a guard on the nested field, through the wrapper");
    assert_eq!(newer.update, ["commit".to_string()].into());
    // The whole-`Vote` comparison is no guard, and reads (and the write updates) every
    // variable the vote holds.
    let vote = &a.sets().messages["vote"];
    let all: std::collections::BTreeSet<String> = ["leader", "term", "voted_for"]
        .into_iter()
        .map(String::from)
        .collect();
    for e in &vote.entries {
        assert!(!e.guard.contains("n.term"), "{}", e.guard);
        assert!(e.read.is_superset(&all), "{}", e.guard);
        assert!(e.send.is_superset(&all), "{}", e.guard);
    }
    let behind = vote
        .entries
        .iter()
        .find(|e| e.guard == "n.log > m.last_index")
        .expect("a guard on the nested last_log_id.index");
    assert!(behind.update.is_empty());

    // Queued commands run after the handler and count for it, each only in its own arm of
    // the runner's `match`: the vote is saved only where it is granted, the commit applied
    // only where it advances, and every path answers (the queued reply) with the vote.
    let granted = vote
        .entries
        .iter()
        .find(|e| e.guard == "n.log <= m.last_index")
        .unwrap();
    assert_eq!(granted.disk, ["vote".to_string()].into());
    assert!(behind.disk.is_empty());
    let commit = &a.sets().messages["commit"];
    let advance = commit
        .entries
        .iter()
        .find(|e| e.guard == "m.commit_index > n.commit")
        .unwrap();
    let stays = commit
        .entries
        .iter()
        .find(|e| e.guard == "m.commit_index <= n.commit")
        .unwrap();
    assert!(advance.update.contains("applied") && advance.update.contains("commit"));
    assert!(stays.update.is_empty() && stays.disk.is_empty());
    for e in &commit.entries {
        assert!(e.send.is_superset(&all), "{}", e.guard);
    }

    // Without `wrappers`, `self.state` is a `Valid` and its fields are not node state: the
    // update of the commit index is not seen, which is why the wrapper must be named.
    let tmp = std::env::temp_dir().join(format!("flymc-wrapped-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let text = std::fs::read_to_string(&side).unwrap();
    // The side file with its `wrappers` line replaced, analysed.
    let with_wrappers = |name: &str, line: &str| {
        let file = tmp.join(name);
        std::fs::write(&file, text.replace("wrappers = [\"Valid\"]", line)).unwrap();
        analyze(&opts(
            Lang::Rust,
            vec![dir.join("core.rs")],
            Some(file),
            "rust_wrapped",
        ))
    };
    let b = with_wrappers("bare.toml", "").unwrap();
    assert!(b.sets().messages["append"]
        .entries
        .iter()
        .all(|e| !e.update.contains("commit")));
    // A wrapper that is not in the sources is an error naming it.
    let err = with_wrappers("missing.toml", "wrappers = [\"Nope\"]").unwrap_err();
    assert!(err.to_string().contains("Nope"), "{err}");
    let _ = std::fs::remove_dir_all(&tmp);
}

/// Remove the in-source annotations from a copy of a corpus program.
fn strip(src: &Path, dst: &Path) {
    let text = std::fs::read_to_string(src).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut l = line.to_string();
        while let Some(i) = l.find("@FlyMC") {
            let rest = &l[i..];
            let mut end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '@' || c == '_'))
                .unwrap_or(rest.len());
            if rest[end..].starts_with('(') {
                end += rest[end..].find(')').unwrap() + 1;
            }
            l = format!("{}{}", &l[..i], &l[i + end..]);
        }
        out.push_str(&l);
        out.push('\n');
    }
    std::fs::write(dst, out).unwrap();
}

fn same_with_side_file(name: &str, file: &str, lang: Lang, side: &str) {
    let dir = tempfile::tempdir().unwrap();
    strip(&corpus(name).join(file), &dir.path().join(file));
    let side_path = dir.path().join("annotations.toml");
    std::fs::write(&side_path, side).unwrap();
    let plain = analyze(&opts(lang, vec![dir.path().join(file)], None, name));
    assert!(
        matches!(plain, Err(AnalyzeError::NoHandlers(_))),
        "the stripped copy must have no annotations left"
    );
    let from_side = analyze(&opts(
        lang,
        vec![dir.path().join(file)],
        Some(side_path),
        name,
    ))
    .unwrap();
    let in_source = analyze(&opts(lang, vec![corpus(name)], None, name)).unwrap();
    assert_eq!(
        from_side.to_json(),
        in_source.to_json(),
        "{name}: side file and in-source annotations differ"
    );
}

/// A side file saying what a corpus program's in-source annotations say gives the same
/// output as they do, for every corpus program; one test each.
mod side_file_gives_the_same_output_as_in_source_annotations {
    use super::*;

    #[test]
    fn paxos() {
        same_with_side_file(
            "paxos",
            "Acceptor.java",
            Lang::Java,
            r#"version = 1
[[node_state]]
class = "Acceptor"
field = "ballot"
[[node_state]]
class = "Acceptor"
field = "key"
[[node_state]]
class = "Acceptor"
field = "value"
[[node_state]]
class = "Acceptor"
field = "proposeCounter"
[[node_state]]
class = "Acceptor"
field = "majority"
[[message]]
class = "Message"
kind_field = "type"
[[handler]]
class = "Acceptor"
method = "handle"
    "#,
        );
    }

    #[test]
    fn crash() {
        same_with_side_file(
            "crash",
            "Member.java",
            Lang::Java,
            r#"version = 1
[[node_state]]
class = "Member"
field = "term"
[[node_state]]
class = "Member"
field = "leader"
[[node_state]]
class = "Member"
field = "role"
[[node_state]]
class = "Member"
field = "missed"
[[message]]
class = "Heartbeat"
kind = "heartbeat"
[[handler]]
class = "Member"
method = "onHeartbeat"
[[crash]]
class = "Member"
method = "follow"
catch = "IOException"
[[crash]]
class = "Member"
method = "onPeerLost"
    "#,
        );
    }

    #[test]
    fn disk() {
        same_with_side_file(
            "disk",
            "Log.java",
            Lang::Java,
            r#"version = 1
[[node_state]]
class = "Log"
field = "lastIndex"
[[node_state]]
class = "Log"
field = "votedTerm"
[[message]]
class = "Append"
kind = "append"
[[message]]
class = "Vote"
kind = "vote"
[[handler]]
class = "Log"
method = "onAppend"
[[handler]]
class = "Log"
method = "onVote"
[[disk]]
call = "Log.saveMeta"
file = "meta"
    "#,
        );
    }

    #[test]
    fn rust_node() {
        same_with_side_file(
            "rust_node",
            "node.rs",
            Lang::Rust,
            r#"version = 1
[[node_state]]
class = "Node"
field = "ballot"
persistent = true
[[node_state]]
class = "Node"
field = "accepted"
[[node_state]]
class = "Node"
field = "acks"
[[message]]
class = "Msg"
[[handler]]
class = "Paxos"
method = "handle"
    "#,
        );
    }

    #[test]
    fn rust_library() {
        same_with_side_file(
            "rust_library",
            "core.rs",
            Lang::Rust,
            r#"version = 1
[[node_state]]
class = "Core"
field = "current_term"
name = "term"
persistent = true
[[node_state]]
class = "Core"
field = "voted_for"
persistent = true
[[node_state]]
class = "Core"
field = "last_log_index"
name = "log"
persistent = true
guards = false
[[node_state]]
class = "Core"
field = "target_state"
name = "role"
guards = false
[[node_state]]
class = "Core"
field = "current_leader"
name = "leader"
[[message]]
class = "VoteRequest"
kind = "vote"
report = { term = "term", last_log_index = "last_index" }
[[handler]]
class = "Core"
method = "handle_vote_request"
reply = true
[[handler]]
class = "Core"
method = "campaign"
kind = "elect"
    "#,
        );
    }
}

#[test]
fn a_file_that_does_not_parse_is_a_gap_and_the_rest_is_analysed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        corpus("paxos").join("Acceptor.java"),
        dir.path().join("Acceptor.java"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("Broken.java"),
        "class Broken {\n    void f() {\n        int x = ;\n    }\n}\n",
    )
    .unwrap();
    let a = analyze(&opts(
        Lang::Java,
        vec![dir.path().to_path_buf()],
        None,
        "paxos",
    ))
    .unwrap();
    let gap = a
        .gaps()
        .iter()
        .find(|g| g.file.ends_with("Broken.java"))
        .expect("a gap for the broken file");
    assert_eq!((gap.line, gap.column), (3, 15), "{gap}");
    assert!(gap.message.contains("syntax error"), "{gap}");
    assert!(gap.to_string().contains("Broken.java:3:15"), "{gap}");
    // the good file is still analysed
    assert_eq!(
        a.sets().messages["PROP"].entries[0].guard,
        "m.ballot > n.ballot"
    );
    assert!(a.to_text().contains("Broken.java:3:15"));

    // Rust: syn has no recovery, the file is skipped and reported
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        corpus("rust_node").join("node.rs"),
        dir.path().join("node.rs"),
    )
    .unwrap();
    std::fs::write(dir.path().join("bad.rs"), "fn f() {\n    let = 1;\n}\n").unwrap();
    let a = analyze(&opts(Lang::Rust, vec![dir.path().to_path_buf()], None, "r")).unwrap();
    let gap = a
        .gaps()
        .iter()
        .find(|g| g.file.ends_with("bad.rs"))
        .expect("a gap");
    assert_eq!(gap.line, 2, "{gap}");
    assert!(a.sets().messages.contains_key("prepare"));
}

#[test]
fn annotations_naming_missing_classes_or_fields_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let side = dir.path().join("a.toml");
    let run = |text: &str| {
        std::fs::write(&side, text).unwrap();
        analyze(&opts(
            Lang::Java,
            vec![corpus("paxos")],
            Some(side.clone()),
            "paxos",
        ))
        .unwrap_err()
    };
    let e = run("version = 1\n[[node_state]]\nclass = \"Acceptorr\"\nfield = \"ballot\"\n");
    assert!(matches!(e, AnalyzeError::Annotation { .. }), "{e}");
    assert!(e.to_string().contains("class `Acceptorr`"), "{e}");
    assert!(!e.to_string().contains('\n'));
    let e = run("version = 1\n[[node_state]]\nclass = \"Acceptor\"\nfield = \"balot\"\n");
    assert!(e.to_string().contains("field `Acceptor.balot`"), "{e}");
    let e = run("version = 1\n[[handler]]\nclass = \"Acceptor\"\nmethod = \"handel\"\n");
    assert!(e.to_string().contains("method `Acceptor.handel`"), "{e}");
    let e = run("version = 1\n[[crash]]\nclass = \"Acceptor\"\nmethod = \"persist\"\ncatch = \"SocketException\"\n");
    assert!(e.to_string().contains("catch (SocketException"), "{e}");
    let e = run("version = 1\n[[node_state]]\nclas = \"Acceptor\"\n");
    assert!(
        // `clas` is on line 3 (the line count used to be one short for a key at a line start)
        e.to_string().contains("line 3, column 1") && e.to_string().contains("`clas`"),
        "{e}"
    );
    let e = run("version = 1\n[[message]]\nclass = \"Message\"\nreport = { balot = \"ballot\" }\n");
    assert!(e.to_string().contains("field `Message.balot`"), "{e}");
    let e = run("version = 2\n");
    assert!(e.to_string().contains("version 2"), "{e}");
}

#[test]
fn an_unreadable_path_is_an_error_naming_it() {
    let e = analyze(&opts(
        Lang::Java,
        vec!["/nonexistent/flymc/src".into()],
        None,
        "x",
    ))
    .unwrap_err();
    assert!(matches!(e, AnalyzeError::Read { .. }));
    assert!(e.to_string().contains("/nonexistent/flymc/src"), "{e}");
    let e = analyze(&opts(
        Lang::Java,
        vec![corpus("paxos")],
        Some("/nonexistent/annotations.toml".into()),
        "x",
    ))
    .unwrap_err();
    assert!(
        e.to_string().contains("/nonexistent/annotations.toml"),
        "{e}"
    );
    let dir = tempfile::tempdir().unwrap();
    let e = analyze(&opts(Lang::Java, vec![dir.path().to_path_buf()], None, "x")).unwrap_err();
    assert!(matches!(e, AnalyzeError::NoSources(_)), "{e}");
}

/// The Raft simulation's handler, analysed through syn, against its hand-written sets file.
/// Differences are printed, not asserted: the hand-written file is a model, the analysis is of
/// the code.
#[test]
fn raft_sim_sets_are_produced_from_its_source() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let src = root.join("integrations/raft-sim/src");
    let side = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/raft/annotations.toml");
    let a = analyze(&opts(Lang::Rust, vec![src], Some(side), "raft-sim")).unwrap();
    let ours = a.sets();
    // raft-sim is still growing (its message enum gains variants): check the core kinds
    for k in [
        "append_entries",
        "append_entries_response",
        "request_vote",
        "request_vote_response",
    ] {
        assert!(ours.messages.contains_key(k), "{k}");
    }
    // sanity: a request_vote with a newer term adopts it
    let rv = &ours.messages["request_vote"];
    assert!(rv
        .entries
        .iter()
        .any(|e| e.guard.contains("m.term > n.current_term") && e.update.contains("current_term")));
    assert!(rv.entries.last().unwrap().send.contains("current_term"));
    let hand = root.join("integrations/raft-sim/sets.json");
    let Ok(text) = std::fs::read_to_string(&hand) else {
        return;
    };
    let Ok(theirs) = serde_json::from_str::<flymc_model::sets::RawSets>(&text) else {
        eprintln!("raft-sim/sets.json does not parse as a sets file; nothing to compare");
        return;
    };
    eprintln!("raft-sim: analysed vs hand-written sets (differences of the catch-all entries):");
    for (k, m) in &theirs.messages {
        let Some(o) = ours.messages.get(k) else {
            eprintln!("  {k}: hand-written only");
            continue;
        };
        let union = |es: &Vec<flymc_model::sets::RawEntry>, f: fn(&flymc_model::sets::RawEntry) -> &std::collections::BTreeSet<String>| {
            es.iter().flat_map(|e| f(e).iter().cloned()).collect::<std::collections::BTreeSet<String>>()
        };
        for (what, f) in [
            (
                "read",
                (|e| &e.read)
                    as fn(&flymc_model::sets::RawEntry) -> &std::collections::BTreeSet<String>,
            ),
            ("update", |e| &e.update),
            ("send", |e| &e.send),
        ] {
            let (h, a) = (union(&m.entries, f), union(&o.entries, f));
            if h != a {
                eprintln!(
                    "  {k}.{what}: only hand-written {:?}; only analysed {:?}",
                    h.difference(&a).collect::<Vec<_>>(),
                    a.difference(&h).collect::<Vec<_>>()
                );
            }
        }
        eprintln!(
            "  {k}: {} hand-written entries, {} analysed",
            m.entries.len(),
            o.entries.len()
        );
    }
}

/// ZooKeeper 3.8.0's quorum package, when its source is on this machine: where `flymc setup
/// zookeeper` keeps it (CI runs the setup first), or an unpacked `apt-get source zookeeper` tree
/// named by FLYMC_ZK_SRC. The shipped sets file is what the analyzer produces, and every FLE
/// notification case and ZAB packet type has entries.
#[test]
fn zookeeper_quorum_package() {
    let rel = "zookeeper-server/src/main/java/org/apache/zookeeper/server/quorum";
    let cache = std::env::var_os("FLYMC_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/flymc")))
        .unwrap_or_default();
    let quorum = match std::env::var_os("FLYMC_ZK_SRC") {
        Some(root) => PathBuf::from(root).join(rel),
        None => cache.join("src/zookeeper-3.8.0").join(rel),
    };
    if !quorum.is_dir() {
        eprintln!("skipped: no ZooKeeper source at {}", quorum.display());
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let a = analyze(&opts(
        Lang::Java,
        vec![quorum],
        Some(repo.join("integrations/zookeeper/annotations.toml")),
        "zookeeper",
    ))
    .unwrap();
    eprintln!(
        "zookeeper: {} files, {} handlers, {} kinds in {:.2} s",
        a.files,
        a.handlers.len(),
        a.sets().messages.len(),
        a.elapsed.as_secs_f64()
    );
    for k in [
        "notification",
        "LEADERINFO",
        "NEWLEADER",
        "DIFF",
        "SNAP",
        "TRUNC",
        "PROPOSAL",
        "COMMIT",
        "UPTODATE",
        "ACK",
        "ACKEPOCH",
        "FOLLOWERINFO",
        "PING",
        "REQUEST",
        "REVALIDATE",
        "SYNC",
        "INFORM",
        "COMMITANDACTIVATE",
    ] {
        assert!(
            a.sets()
                .messages
                .get(k)
                .is_some_and(|m| m.entries.len() > 1),
            "{k}"
        );
    }
    let n = &a.sets().messages["notification"];
    for case in [
        "m.state == \"LOOKING\"",
        "m.state == \"FOLLOWING\"",
        "m.state == \"LEADING\"",
        "m.state == \"OBSERVING\"",
    ] {
        assert!(n.entries.iter().any(|e| e.guard.contains(case)), "{case}");
    }
    assert_is_shipped(
        &a,
        &repo,
        "integrations/zookeeper/sets.json",
        "regenerate it",
    );
}

/// The shipped sets file at `rel` (under the repository `repo`) is exactly `a`'s output, so it
/// cannot drift into a hand edit; `regenerate` says how to bring it back in line.
fn assert_is_shipped(a: &Analysis, repo: &Path, rel: &str, regenerate: &str) {
    let shipped = std::fs::read_to_string(repo.join(rel)).unwrap();
    assert_eq!(
        a.to_json(),
        shipped,
        "{rel} is stale or hand-edited: {regenerate}"
    );
}

/// Analyse the registry crate `krate` (its `src`) with the Raft integration's side file
/// `integrations/raft/analysis/<side>.toml`, as `system`. Returns the analysis and the repository.
fn raft_library(krate: &str, side: &str, system: &str) -> (Analysis, PathBuf) {
    let src = registry_crate(krate).join("src");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let side = repo.join(format!("integrations/raft/analysis/{side}.toml"));
    let a = analyze(&opts(Lang::Rust, vec![src], Some(side), system)).unwrap();
    (a, repo)
}

/// The crate sources cargo fetched for this workspace (`$CARGO_HOME/registry/src/*/<crate>`,
/// CARGO_HOME defaulting to ~/.cargo). The Raft node programs depend on these crates, so after
/// any build of the workspace they are there: their absence is a failure, not a skip.
fn registry_crate(krate: &str) -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("neither CARGO_HOME nor HOME is set: cannot find the cargo registry");
    let src = home.join("registry/src");
    let found = std::fs::read_dir(&src)
        .into_iter()
        .flatten()
        .flatten()
        .map(|d| d.path().join(krate))
        .find(|p| p.join("src").is_dir());
    found.unwrap_or_else(|| {
        panic!(
            "{krate} is not in the cargo registry under {}: build the workspace first \
             (`cargo build` fetches it), or set CARGO_HOME",
            src.display()
        )
    })
}

/// async-raft 0.6.1, the library inside the `raft-asyncraft` node program: the shipped
/// integrations/raft/sets-asyncraft.json is exactly what the analysis of its sources with
/// integrations/raft/analysis/asyncraft.toml produces, so it cannot drift into a hand edit.
#[test]
fn async_raft_sets_file_is_the_analysis_of_its_source() {
    let (a, repo) = raft_library("async-raft-0.6.1", "asyncraft", "raft-asyncraft");
    let m = &a.sets().messages;
    for k in ["vote", "append", "snapshot", "vote-reply"] {
        assert!(m.contains_key(k), "{k}");
    }
    // A request from an older term changes nothing and answers with the node's term.
    for k in ["vote", "append", "snapshot"] {
        let stale = m[k]
            .entries
            .iter()
            .find(|e| e.guard == "n.term > m.term")
            .unwrap_or_else(|| panic!("{k}: no entry for a stale request"));
        assert!(stale.update.is_empty() && stale.disk.is_empty(), "{k}");
        assert_eq!(stale.send, ["term".to_string()].into(), "{k}");
    }
    assert_is_shipped(
        &a,
        &repo,
        "integrations/raft/sets-asyncraft.json",
        "regenerate it with `flymc analyze --lang rust <registry>/async-raft-0.6.1/src --annotations \
         integrations/raft/analysis/asyncraft.toml --system raft-asyncraft --out integrations/raft/sets-asyncraft.json`",
    );
}

/// openraft 0.9.25, the library inside the `raft` node program: the shipped
/// integrations/raft/sets-openraft.json is exactly what the analysis of its sources with
/// integrations/raft/analysis/openraft.toml produces.
#[test]
fn openraft_sets_file_is_the_analysis_of_its_source() {
    let (a, repo) = raft_library("openraft-0.9.25", "openraft", "raft");
    let m = &a.sets().messages;
    // The request handlers' queued commands are seen: the vote is saved, the log appended,
    // and the reply (the node's vote) sent, all by commands run after the handler.
    for k in ["vote", "append"] {
        let all = m[k]
            .entries
            .last()
            .unwrap_or_else(|| panic!("{k}: no entries"));
        assert_eq!(all.guard, "true");
        assert!(all.disk.contains("vote") && all.disk.contains("log"), "{k}");
        assert!(
            all.send.contains("term") && all.send.contains("voted_for"),
            "{k}"
        );
    }
    // A granted vote may elect the node: its replication streams send the leader's vote.
    let reply = m["vote-reply"].entries.last().unwrap();
    assert!(reply.update.contains("role") && reply.send.contains("term"));
    // Kinds the analysis does not see get no entries (dependent on everything).
    for k in ["append-reply", "snapshot", "elect", "write"] {
        assert!(!m.contains_key(k), "{k}");
    }
    assert_is_shipped(
        &a,
        &repo,
        "integrations/raft/sets-openraft.json",
        "regenerate it with `flymc analyze --lang rust <registry>/openraft-0.9.25/src --annotations \
         integrations/raft/analysis/openraft.toml --system raft --out integrations/raft/sets-openraft.json`",
    );
}

/// Analyse `tests/corpus/<name>` (Java) with its `annotations.toml`, against its expected.json.
fn check_side_corpus(name: &str) -> Analysis {
    let dir = corpus(name);
    let a = analyze(&opts(
        Lang::Java,
        vec![dir.clone()],
        Some(dir.join("annotations.toml")),
        name,
    ))
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    let json = a.to_json();
    SetsFile::parse(name, &json, &Default::default()).expect("flymc reads the output");
    let expected = dir.join("expected.json");
    if std::env::var_os("FLYMC_BLESS").is_some() {
        std::fs::write(&expected, &json).unwrap();
    }
    let want = std::fs::read_to_string(&expected).expect("expected.json (run with FLYMC_BLESS=1)");
    assert_eq!(json, want, "{name}: the sets differ\n{}", a.to_text());
    a
}

/// Issue 23 (1a): Cassandra sends replies through a singleton, `MessagingService.instance()
/// .sendReply(..)`; the side file's `MessagingService.sendReply` must match it.
#[test]
fn a_class_pattern_matches_calls_through_its_singleton_accessor() {
    let a = check_side_corpus("paxos_service");
    let prepare = a.sets().messages["prepare"].entries.last().unwrap();
    assert!(prepare.send.contains("accepted"), "{}", a.to_text());
}

/// Issue 23 (1a): a side-file pattern that matches no call is a warning naming the pattern and
/// the nearest call sites in the sources (here: a misspelt method and a class whose calls all go
/// through another class).
#[test]
fn a_pattern_that_matches_nothing_is_a_warning_with_the_nearest_calls() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(corpus("paxos_service").join("annotations.toml")).unwrap();
    let text = text.replace(
        "send = [\"MessagingService.sendReply\"]",
        "send = [\"MessagingService.sendRepl\", \"Gossiper.sendReply\", \"Messenger.deliver\"]",
    );
    let text = text.replace(
        "pure = [\"UUID.variant\"]",
        "pure = [\"UUID.variant\", \"UUID.clock\"]",
    );
    // the second [[disk]] entry on savePaxosCommit, misspelt
    let i = text.rfind("savePaxosCommit").unwrap();
    let text = format!(
        "{}savePaxosComit{}",
        &text[..i],
        &text[i + "savePaxosCommit".len()..]
    );
    let side = dir.path().join("a.toml");
    std::fs::write(&side, &text).unwrap();
    let a = analyze(&opts(
        Lang::Java,
        vec![corpus("paxos_service")],
        Some(side.clone()),
        "paxos_service",
    ))
    .unwrap();
    let warnings: Vec<String> = a.gaps().iter().map(|g| g.to_string()).collect();
    let find = |p: &str| {
        warnings
            .iter()
            .find(|w| w.contains(&format!("`{p}`")))
            .unwrap_or_else(|| panic!("no warning for {p}: {warnings:#?}"))
            .clone()
    };
    let w = find("MessagingService.sendRepl");
    // at the pattern's line in the side file
    assert!(
        w.starts_with(&format!("{}:2:1: send pattern", side.display())),
        "{w}"
    );
    let disk = text
        .lines()
        .position(|l| l.contains("savePaxosComit"))
        .unwrap()
        + 1;
    assert!(find("SystemKeyspace.savePaxosComit")
        .starts_with(&format!("{}:{disk}:1: [[disk]] pattern", side.display())));
    assert!(
        w.contains("send pattern `MessagingService.sendRepl` matches no call")
            && w.contains("`MessagingService.instance().sendReply` (PaxosState.java:42)"),
        "{w}"
    );
    assert!(find("Gossiper.sendReply").contains("`MessagingService.instance().sendReply`"));
    assert!(find("Messenger.deliver").contains("no call of that name or a similar one"));
    assert!(find("UUID.clock").contains("pure pattern `UUID.clock` matches no call on node state"));
    // The patterns that match are not reported.
    assert!(!warnings
        .iter()
        .any(|w| w.contains("`SystemKeyspace.savePaxosCommit`")));
    let a = check_side_corpus("paxos_service");
    assert!(
        !a.gaps()
            .iter()
            .any(|g| g.message.contains("matches no call")),
        "{:?}",
        a.gaps()
    );
}

/// Issue 23 (1b): a [[call]] and a [[disk]] entry on one pattern both count, and so do two
/// [[disk]] entries.
#[test]
fn call_and_disk_entries_on_one_pattern_combine() {
    let a = check_side_corpus("paxos_service");
    let propose = a.sets().messages["propose"].entries.last().unwrap();
    assert_eq!(propose.disk, ["system.paxos".to_string()].into());
    // what the [[call]] model reads
    assert!(propose.read.contains("promised"), "{}", a.to_text());
    // two [[disk]] entries on one call: both files
    let commit = a.sets().messages["commit"].entries.last().unwrap();
    assert_eq!(
        commit.disk,
        ["commitlog", "system.paxos"].map(String::from).into()
    );
}

/// Issue 23 (1c): reading node state through a read-only call (`UUID.timestamp()`, known; a
/// side-file `pure` pattern, declared) is a read, not an update.
#[test]
fn a_read_only_call_on_node_state_is_no_update() {
    let a = check_side_corpus("paxos_service");
    let prepare = a.sets().messages["prepare"].entries.last().unwrap();
    assert!(prepare.read.contains("lastBallot"), "{}", a.to_text());
    assert!(prepare.update.is_empty(), "{}", a.to_text());
    let commit = a.sets().messages["commit"].entries.last().unwrap();
    assert!(commit.update.is_empty(), "{}", a.to_text());
}

/// Issue 23 (1d): a field's `also` variables are read when it is read (not updated), and are
/// persistent when the field is.
#[test]
fn also_variables_are_read_with_their_field_and_inherit_persistent() {
    let a = check_side_corpus("paxos_service");
    let commit = a.sets().messages["commit"].entries.last().unwrap();
    assert_eq!(
        commit.read,
        ["promised", "promisedBallot"].map(String::from).into()
    );
    assert!(commit.update.is_empty());
    assert_eq!(a.sets().crash[0].update, ["lastBallot".to_string()].into());
}

/// Issue 23 (2a): a conditional expression whose condition cannot become a guard is reported
/// at its own line.
#[test]
fn a_conditional_expression_is_reported_at_its_line() {
    let a = check_side_corpus("paxos_service");
    let g = a
        .gaps()
        .iter()
        .find(|g| g.message.contains("handler `PaxosState.prepare`"))
        .expect("the prepare handler's opaque condition");
    assert!(
        g.message
            .ends_with("both sides were kept: PaxosState.java:39"),
        "{g}"
    );
}

/// `tests/corpus/paxos_service` analysed with its side file edited by `edit` and written to
/// `paxos.toml` in the returned folder.
fn paxos_service_edited(
    edit: impl Fn(String) -> String,
) -> (Result<Analysis, AnalyzeError>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(corpus("paxos_service").join("annotations.toml")).unwrap();
    let side = dir.path().join("paxos.toml");
    std::fs::write(&side, edit(text)).unwrap();
    let a = analyze(&opts(
        Lang::Java,
        vec![corpus("paxos_service")],
        Some(side),
        "paxos_service",
    ));
    (a, dir)
}

fn paxos_service_error(edit: impl Fn(String) -> String) -> (AnalyzeError, tempfile::TempDir) {
    let (a, dir) = paxos_service_edited(edit);
    (a.expect_err("an error"), dir)
}

/// Issue 23 (2b, 2c): a handler guard naming an undeclared node variable or a field the message
/// does not have is a user error naming the side file, the handler and the name.
#[test]
fn a_guard_naming_an_unknown_variable_or_field_is_an_annotation_error() {
    let guard = |g: &'static str| {
        move |t: String| {
            t.replace(
                "method = \"commit\"\n",
                &format!("method = \"commit\"\nguard = '{g}'\n"),
            )
        }
    };
    let (e, dir) = paxos_service_error(guard("n.ballot == null"));
    let side = dir.path().join("paxos.toml").display().to_string();
    assert!(matches!(e, AnalyzeError::Annotation { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "{side}: handler `PaxosState.commit` guard `n.ballot == null` names node variable \
             `n.ballot`, which no node state declares (declared: accepted, lastBallot, promised, \
             promisedBallot)"
        )
    );
    let (e, dir) = paxos_service_error(guard("m.ballot != null"));
    let side = dir.path().join("paxos.toml").display().to_string();
    assert_eq!(
        e.to_string(),
        format!(
            "{side}: handler `PaxosState.commit` guard `m.ballot != null` names message field \
             `m.ballot`, which message `MessageIn` does not have (fields: @kind, from, payload)"
        )
    );
    // declared names pass
    let (a, _) = paxos_service_edited(guard("m.from != 0 && n.lastBallot != null"));
    let a = a.unwrap();
    assert!(a.sets().messages["commit"]
        .entries
        .iter()
        .any(|e| e.guard.contains("n.lastBallot != null")));
}

/// Issue 23 (2d): a top-level key written after a table is explained, with its line and column.
#[test]
fn a_top_level_key_after_a_table_is_explained() {
    let (e, dir) = paxos_service_error(|t| {
        t.replace("send = [\"MessagingService.sendReply\"]\n", "")
            + "send = [\"MessagingService.sendReply\"]\n"
    });
    let side = dir.path().join("paxos.toml").display().to_string();
    let text = std::fs::read_to_string(dir.path().join("paxos.toml")).unwrap();
    let line = text.lines().position(|l| l.starts_with("send")).unwrap() + 1;
    let header = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with('['))
        .last()
        .unwrap()
        .0
        + 1;
    let e = e.to_string();
    assert!(
        e.starts_with(&format!(
            "{side}: line {line}, column 1: unknown field `send`"
        )),
        "{e}"
    );
    assert!(
        e.ends_with(&format!(
            "; `send` is a top-level key, but TOML reads every key after a table header as part \
             of that table (here `[[disk]]` at line {header}): move `send` before the first \
             table header"
        )),
        "{e}"
    );
    assert!(!e.contains('\n'));
}

/// Issue 23 (1): method summaries make the guards Paxos needs out of library comparisons
/// (`UUID.timestamp()`, `UUID.equals`, inlined through `isAfter` / `hasBallot`) and a helper
/// summarised instead of inlined (`Ballots.newer`); `parts` make a node object's fields
/// variables of their own. The promise is guarded and its disk write is only in that branch.
#[test]
fn summaries_and_parts_give_the_paxos_guards() {
    let a = check_side_corpus("paxos_summaries");
    let s = a.sets();
    let entry = |kind: &str, guard: &str| {
        s.messages[kind]
            .entries
            .iter()
            .find(|e| e.guard == guard)
            .unwrap_or_else(|| panic!("{kind}: no entry `{guard}`\n{}", a.to_text()))
            .clone()
    };
    let promise = entry("prepare", "m.ballot > n.promised");
    assert_eq!(promise.disk, ["promise".to_string()].into());
    let reject = entry("prepare", "m.ballot <= n.promised");
    assert!(reject.disk.is_empty() && reject.update.is_empty());
    // accept when the ballot is the promised one or newer
    for g in [
        "m.ballot == n.promised",
        "m.ballot != n.promised && m.ballot > n.promised",
    ] {
        let accept = entry("propose", g);
        assert_eq!(
            accept.update,
            ["accepted", "promised"].map(String::from).into()
        );
        assert_eq!(accept.disk, ["proposal".to_string()].into());
    }
    let reject = entry(
        "propose",
        "m.ballot != n.promised && m.ballot <= n.promised",
    );
    assert!(reject.update.is_empty() && reject.disk.is_empty());
    let commit = entry("commit", "m.ballot > n.commit_ballot");
    assert_eq!(
        commit.update,
        ["commit_ballot", "commit_value"].map(String::from).into()
    );
    // The holders are no variables: only their parts are.
    assert_eq!(
        s.node_vars,
        ["accepted", "commit_ballot", "commit_value", "promised"]
            .map(String::from)
            .into()
    );
    // Every condition became a guard except the one on a whole holder (`inProgress == null`).
    let opaque: Vec<String> = a
        .gaps()
        .iter()
        .map(|g| g.to_string())
        .filter(|g| g.contains("could not become guards"))
        .collect();
    assert_eq!(opaque.len(), 1, "{opaque:#?}");
    assert!(opaque[0].contains("Replica.commit"), "{opaque:#?}");
}

/// Issue 23 (1): null checks become guards, through the language (`x == null`) and through a
/// default summary (`Objects.nonNull(x)` means `x != null`).
#[test]
fn null_checks_become_guards() {
    let a = check_side_corpus("paxos_summaries");
    let learn: Vec<&str> = a.sets().messages["learn"]
        .entries
        .iter()
        .map(|e| e.guard.as_str())
        .collect();
    assert!(
        learn.contains(&"n.accepted == null && n.commit_value != null"),
        "{}",
        a.to_text()
    );
}

/// Issue 23 (3): a reply whose value a branch over node state chooses (`reply(true)` or
/// `reply(false)`), or whose existence it decides, counts what the branch reads as sent.
#[test]
fn a_send_chosen_by_a_branch_reads_what_the_branch_reads() {
    let a = check_side_corpus("paxos_summaries");
    let s = a.sets();
    for e in &s.messages["prepare"].entries {
        assert!(e.send.contains("promised"), "{}", a.to_text());
    }
    // the acknowledgement sent only when nothing is in progress
    for e in &s.messages["commit"].entries {
        assert!(
            e.send.contains("promised") && e.send.contains("accepted"),
            "{}",
            a.to_text()
        );
    }
}

/// Issue 23 (1): a summary that does not parse names the side file's line and column; a
/// summary without parameters, parameters without a summary, and a part named like its holder
/// are one-line errors.
#[test]
fn bad_summaries_and_parts_are_annotation_errors() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(corpus("paxos_summaries").join("annotations.toml")).unwrap();
    let run = |edit: &dyn Fn(&str) -> String| {
        let side = dir.path().join("bad.toml");
        std::fs::write(&side, edit(&text)).unwrap();
        let e = analyze(&opts(
            Lang::Java,
            vec![corpus("paxos_summaries")],
            Some(side.clone()),
            "s",
        ))
        .expect_err("an error");
        assert!(matches!(e, AnalyzeError::Annotation { .. }), "{e}");
        let e = e.to_string();
        assert!(!e.contains('\n'), "{e}");
        e.strip_prefix(&format!("{}: ", side.display()))
            .unwrap_or_else(|| panic!("{e}"))
            .to_string()
    };
    let line = text
        .lines()
        .position(|l| l.contains("means = \"a > b\""))
        .unwrap()
        + 1;
    let e = run(&|t| t.replace("means = \"a > b\"", "means = \"a > c.b\""));
    assert!(
        e.starts_with(&format!(
            "line {line}, column 14: [[call]] `Ballots.newer(a, b)` means: unknown name `c`"
        )),
        "{e}"
    );
    // `n.` is the node's state: an undeclared variable is named
    let e = run(&|t| t.replace("means = \"a > b\"", "means = \"a > n.b\""));
    assert!(
        e.contains("`Ballots.newer` means reads `n.b`, which no [[node_state]] declares"),
        "{e}"
    );
    let e = run(&|t| t.replace("\"Ballots.newer(a, b)\"", "\"Ballots.newer\""));
    assert!(e.contains("has `means` but names no parameters"), "{e}");
    let e = run(&|t| t.replace("means = \"a > b\"\n", ""));
    assert!(
        e.contains("names parameters but says nothing they mean"),
        "{e}"
    );
    let e = run(&|t| {
        t.replace(
            "field = \"inProgress\"\n",
            "field = \"inProgress\"\nname = \"promised\"\n",
        )
    });
    assert!(
        e.contains("part `promised` has the holder's own name"),
        "{e}"
    );
}

/// Cassandra 2.0.0's paxos package, when its source is on this machine (FLYMC_CASSANDRA_SRC
/// names the folder holding `src/java`; see integrations/cassandra-sim/ANALYSIS.md): the
/// shipped `sets-analysed.json` is what the analyzer writes from it, with the coordinator kinds
/// kept from the hand-written `sets.json`, and the replica kinds are guarded.
#[test]
fn cassandra_paxos_sets_file_is_the_analysis_of_its_source() {
    let Some(root) = std::env::var_os("FLYMC_CASSANDRA_SRC") else {
        eprintln!("skipped: FLYMC_CASSANDRA_SRC is not set");
        return;
    };
    let paxos = PathBuf::from(root).join("src/java/org/apache/cassandra/service/paxos");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let sim = repo.join("integrations/cassandra-sim");
    let mut a = analyze(&opts(
        Lang::Java,
        vec![paxos],
        Some(sim.join("analysis/paxos-2.0.toml")),
        "cassandra-sim",
    ))
    .unwrap();
    assert!(a.gaps().is_empty(), "{:#?}", a.gaps());
    let kept = a.keep_from(&sim.join("sets.json")).unwrap();
    assert_eq!(
        kept,
        [
            "cas",
            "commit_response",
            "prepare_response",
            "propose_response"
        ]
        .map(String::from)
    );
    let guards = |k: &str| -> Vec<String> {
        a.sets().messages[k]
            .entries
            .iter()
            .map(|e| e.guard.clone())
            .collect()
    };
    assert_eq!(guards("prepare")[0], "m.ballot > n.in_progress_ballot");
    assert!(guards("propose").contains(&"m.ballot == n.in_progress_ballot".to_string()));
    assert_is_shipped(
        &a,
        &repo,
        "integrations/cassandra-sim/sets-analysed.json",
        "regenerate it with the command in integrations/cassandra-sim/ANALYSIS.md",
    );
}

/// Issue 46's reproductions: one Java file and a side file each, analysed as a new user would
/// (`flymc analyze --lang java DIR --annotations DIR/side.toml`).
fn repro(java: &str, side: &str) -> Result<Analysis, AnalyzeError> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Node.java"), java).unwrap();
    let side_file = dir.path().join("side.toml");
    std::fs::write(&side_file, side).unwrap();
    analyze(&opts(
        Lang::Java,
        vec![dir.path().to_path_buf()],
        Some(side_file),
        "repro",
    ))
}

/// The entry of `kind` whose guard is `guard` (panics with the report when there is none).
fn entry_of<'a>(a: &'a Analysis, kind: &str, guard: &str) -> &'a flymc_model::sets::RawEntry {
    a.sets().messages[kind]
        .entries
        .iter()
        .find(|e| e.guard == guard)
        .unwrap_or_else(|| panic!("{kind}: no entry `{guard}`\n{}", a.to_text()))
}

/// A node with a term and a log field of type `Log`, handling `Msg` (kind `vote`); `LOG`
/// is replaced by the log's classes.
const LOG_NODE: &str = r#"
import java.io.FileOutputStream;
import java.util.*;
class Msg { long term; List<Long> entries; }
LOG
class Node {
    long term;
    Log log;
    void onMsg(Msg m) {
        if (m.term > term) {
            term = m.term;
            log.persist(term);
        }
    }
}
"#;

const LOG_SIDE: &str = r#"version = 1
[[node_state]]
class = "Node"
field = "term"
persistent = true

[[node_state]]
class = "Node"
field = "log"
persistent = true

[[message]]
class = "Msg"
kind = "vote"

[[handler]]
class = "Node"
method = "onMsg"
"#;

/// Issue 46 (1): a call on an interface runs the implementation that comes through an
/// abstract base (`FileLog extends LogBase implements Log` only through the base).
#[test]
fn interface_dispatch_reaches_implementations_through_an_abstract_base() {
    let java = LOG_NODE.replace(
        "LOG",
        r#"
interface Log { void persist(long t); }
abstract class LogBase implements Log {}
class FileLog extends LogBase {
    public void persist(long t) { new FileOutputStream("meta").write(1); }
}"#,
    );
    let a = repro(&java, LOG_SIDE).unwrap();
    let newer = entry_of(&a, "vote", "m.term > n.term");
    assert_eq!(newer.disk, ["meta".to_string()].into(), "{}", a.to_text());
    assert!(entry_of(&a, "vote", "m.term <= n.term").disk.is_empty());
}

/// Issue 46 (2): a concrete method overridden in a subclass: a call on the base runs every
/// override (the union, sound).
#[test]
fn a_call_on_a_base_class_runs_every_override() {
    let java = LOG_NODE.replace(
        "LOG",
        r#"
interface Log { void persist(long t); }
abstract class LogBase implements Log {
    public void persist(long t) { persistImpl(t); }
    protected void persistImpl(long t) {}
}
class FileLog extends LogBase {
    protected void persistImpl(long t) { new FileOutputStream("meta").write(1); }
}"#,
    );
    let a = repro(&java, LOG_SIDE).unwrap();
    let newer = entry_of(&a, "vote", "m.term > n.term");
    assert_eq!(newer.disk, ["meta".to_string()].into(), "{}", a.to_text());
}

/// Issue 46 (3): overloads are resolved by parameter types: a `List` argument takes
/// `append(List)` (implemented below the interface), a `long` the varargs default method
/// (boxing), which forwards to `append(List)`; neither is mistaken for recursion.
#[test]
fn overloads_are_resolved_by_parameter_types_boxing_and_varargs() {
    let java = LOG_NODE
        .replace(
            "LOG",
            r#"
interface Log {
    void persist(long t);
    void append(List<Long> es);
    default void append(Long... es) { append(Arrays.asList(es)); }
}
class MemLog implements Log {
    List<Long> kept;
    public void persist(long t) {}
    public void append(List<Long> es) { kept.addAll(es); }
}"#,
        )
        .replace("log.persist(term);", "log.append(m.entries);")
        .replace(
            "void onMsg(Msg m) {",
            "void onTick(Msg m) { log.append(m.term); }\n    void onMsg(Msg m) {",
        );
    let side = format!(
        "{LOG_SIDE}\n[[handler]]\nclass = \"Node\"\nmethod = \"onTick\"\nkind = \"tick\"\n"
    );
    let a = repro(&java, &side).unwrap();
    assert!(
        entry_of(&a, "vote", "m.term > n.term")
            .update
            .contains("log"),
        "{}",
        a.to_text()
    );
    assert!(
        entry_of(&a, "tick", "true").update.contains("log"),
        "{}",
        a.to_text()
    );
    assert!(
        !a.gaps().iter().any(|g| g.message.contains("not followed")),
        "{:#?}",
        a.gaps()
    );
}

/// Issue 46 (4): a varargs method called with fewer arguments than it declares is resolved
/// (here and on a node-state object, where it was taken for a mutating library call).
#[test]
fn a_varargs_method_called_with_fewer_arguments_is_resolved() {
    let java = r#"
import java.io.FileOutputStream;
class Msg { long term; }
class Store {
    void save(long t, String... tags) { new FileOutputStream("store").write(1); }
}
class Node {
    long term;
    Store store;
    void persist(long t, String... tags) { new FileOutputStream("meta").write(1); }
    void onMsg(Msg m) {
        if (m.term > term) {
            term = m.term;
            persist(term);
            store.save(term);
        }
    }
}
"#;
    let side = LOG_SIDE.replace("field = \"log\"", "field = \"store\"");
    let a = repro(java, &side).unwrap();
    let newer = entry_of(&a, "vote", "m.term > n.term");
    assert_eq!(
        newer.disk,
        ["meta".to_string(), "store".to_string()].into(),
        "{}",
        a.to_text()
    );
    assert_eq!(newer.update, ["term".to_string()].into(), "{}", a.to_text());
}

/// Issue 46 (5): a getter chain on a message (`r.getServerRequest().getRequestorId()`, a
/// protobuf class outside the sources) is the nested field a `report` path names: a guard.
#[test]
fn getter_chains_on_messages_become_guards() {
    let java = r#"
class Node {
    String leader;
    long term;
    void onAppend(AppendRequest r) {
        if (r.getServerRequest().getRequestorId() == null) {
            return;
        }
        leader = r.getServerRequest().getRequestorId();
    }
}
"#;
    let side = r#"version = 1
[[node_state]]
class = "Node"
field = "leader"

[[message]]
class = "AppendRequest"
kind = "append"
external = true
fields = ["serverRequest", "term"]
report = { "serverRequest.requestorId" = "leader", term = "term" }

[[handler]]
class = "Node"
method = "onAppend"
"#;
    let a = repro(java, side).unwrap();
    assert!(entry_of(&a, "append", "m.leader == null").update.is_empty());
    assert_eq!(
        entry_of(&a, "append", "m.leader != null").update,
        ["leader".to_string()].into()
    );
}

/// Issue 46 (6): a call pattern matches on a local's declared type (`final PeerId cur =
/// leaderId.get()`), as on a field's.
#[test]
fn call_patterns_honour_a_locals_declared_type() {
    let java = r#"
import java.util.concurrent.atomic.AtomicReference;
class Msg { PeerId from; long term; }
class Node {
    AtomicReference<PeerId> leaderId;
    long term;
    void onMsg(Msg m) {
        final PeerId cur = leaderId.get();
        if (cur.equals(m.from)) {
            term = m.term;
        }
    }
}
"#;
    let side = r#"version = 1
[[node_state]]
class = "Node"
field = "leaderId"
name = "leader"

[[node_state]]
class = "Node"
field = "term"

[[message]]
class = "Msg"
kind = "heartbeat"

[[handler]]
class = "Node"
method = "onMsg"

[[call]]
call = "PeerId.equals(a, b)"
means = "a == b"
"#;
    let a = repro(java, side).unwrap();
    assert_eq!(
        entry_of(&a, "heartbeat", "m.from == n.leader").update,
        ["term".to_string()].into(),
        "{}",
        a.to_text()
    );
    assert!(entry_of(&a, "heartbeat", "m.from != n.leader")
        .update
        .is_empty());
}

/// Issue 46 (7): a `report` key naming no field of the message (a misspelling) is an error
/// with the side file's line, as is an unknown key in any table.
#[test]
fn a_misspelled_report_key_or_unknown_key_is_an_error_with_its_line() {
    let java = "class Node { long term; void onVote(VoteRequest r) { term = r.candidateTerm; } }";
    let side = r#"version = 1
[[node_state]]
class = "Node"
field = "term"

[[message]]
class = "VoteRequest"
kind = "vote"
external = true
fields = ["candidateTerm"]
report = { candidateTrem = "term" }

[[handler]]
class = "Node"
method = "onVote"
"#;
    let e = repro(java, side)
        .expect_err("a misspelled report key")
        .to_string();
    assert!(
        e.contains("line 11") && e.contains("`VoteRequest.candidateTrem`"),
        "{e}"
    );
    assert!(e.contains("candidateTerm"), "names the fields: {e}");
    let e = repro(
        java,
        &side.replace("kind = \"vote\"", "kind = \"vote\"\nkinds = \"x\""),
    )
    .expect_err("an unknown key")
    .to_string();
    assert!(
        e.contains("line 9") && e.contains("unknown field `kinds`"),
        "{e}"
    );
}

/// Issue 46 (8): `means` reads node state, and a summary is the call's value: Raft's
/// lexicographic "candidate log up to date" becomes guards.
#[test]
fn summaries_read_node_state_and_give_the_up_to_date_guards() {
    let java = r#"
class Msg { long term; long lastLogTerm; long lastLogIndex; String candidate; }
interface Log { boolean isUpToDate(long t, long i); long lastIndex(); }
class Node {
    String votedFor;
    Log log;
    long next;
    void onVote(Msg m) {
        if (log.isUpToDate(m.lastLogTerm, m.lastLogIndex)) {
            votedFor = m.candidate;
        }
        next = log.lastIndex() + 1;
    }
}
"#;
    let side = r#"version = 1
[[node_state]]
class = "Node"
field = "votedFor"
name = "voted_for"

[[node_state]]
class = "Node"
field = "next"

[[node_state]]
name = "last_term"

[[node_state]]
name = "last_index"

[[message]]
class = "Msg"
kind = "vote"

[[handler]]
class = "Node"
method = "onVote"

[[call]]
call = "Log.isUpToDate(l, t, i)"
means = "t > n.last_term || (t == n.last_term && i >= n.last_index)"

[[call]]
call = "Log.lastIndex(l)"
means = "n.last_index"
"#;
    let a = repro(java, side).unwrap();
    let voted = |g: &str| entry_of(&a, "vote", g).update.contains("voted_for");
    assert!(voted("m.lastLogTerm > n.last_term"), "{}", a.to_text());
    // same last term, and the candidate's last index at least ours
    let entries = &a.sets().messages["vote"].entries;
    let tie = entries
        .iter()
        .find(|e| {
            e.guard.contains("m.lastLogTerm == n.last_term")
                && e.guard.contains("n.last_index <= m.lastLogIndex")
        })
        .unwrap_or_else(|| panic!("{}", a.to_text()));
    assert!(tie.update.contains("voted_for"));
    // an older last term, or a shorter log with the same: no vote
    for e in entries.iter().filter(|e| {
        e.guard.contains("m.lastLogTerm < n.last_term")
            || e.guard.contains("n.last_index > m.lastLogIndex")
    }) {
        assert!(!e.update.contains("voted_for"), "{}", a.to_text());
    }
    let all = entry_of(&a, "vote", "true");
    assert!(all.read.contains("last_term") && all.read.contains("last_index"));
    assert!(all.update.contains("next"));
    // a `means` naming an undeclared node variable is an error
    let e = repro(java, &side.replace("n.last_index\"", "n.lastIdx\""))
        .expect_err("unknown variable")
        .to_string();
    assert!(e.contains("n.lastIdx"), "{e}");
}

/// Issue 46 (9), as analyzer/README.md documents it: a value a `returns = "log"` model gives
/// is the log itself, so a mutating call on it updates `log` (sound), a read-only one does not;
/// a value computed from it by a read-only call is a plain value.
#[test]
fn a_returns_model_gives_the_variable_itself() {
    let java = r#"
import java.util.List;
class Msg { long term; }
class Node {
    Store store;
    long size;
    void onAdd(Msg m) { List<Long> es = store.entries(); es.add(m.term); }
    void onSize(Msg m) { List<Long> es = store.entries(); size = es.size(); }
}
"#;
    let side = r#"version = 1
[[node_state]]
name = "log"

[[node_state]]
class = "Node"
field = "size"

[[message]]
class = "Msg"

[[handler]]
class = "Node"
method = "onAdd"
kind = "add"

[[handler]]
class = "Node"
method = "onSize"
kind = "size"

[[call]]
call = "Store.entries"
returns = "log"
"#;
    let a = repro(java, side).unwrap();
    assert_eq!(
        entry_of(&a, "add", "true").update,
        ["log".to_string()].into()
    );
    let size = entry_of(&a, "size", "true");
    assert_eq!(size.update, ["size".to_string()].into());
    assert!(size.read.contains("log"));
}

/// Issue 46 (10): the report and warnings say where things are: an unreachable call is not
/// "no such call"; handlers with their line; several overloads named; no `message )` for an
/// event without a message; the external calls listed; `explain` says which statement put a
/// variable in each set.
#[test]
fn the_report_says_where_handlers_calls_and_set_members_come_from() {
    let java = r#"
class Msg { long term; }
class Net { void broadcast(long t) {} }
class Node {
    long term;
    Net net;
    void onMsg(Msg m) {
        if (m.term > term) {
            term = m.term;
            System.out.println(term);
        }
    }
    void onMsg(Msg m, int retries) { term = 0; }
    void onTimeout() { term = term + 1; }
    void background() { net.broadcast(term); }
}
"#;
    let side = r#"version = 1
send = ["Net.broadcast", "Net.multicast"]

[[node_state]]
class = "Node"
field = "term"

[[message]]
class = "Msg"
kind = "vote"

[[handler]]
class = "Node"
method = "onMsg"

[[handler]]
class = "Node"
method = "onTimeout"
kind = "timeout"
"#;
    let a = repro(java, side).unwrap();
    let gaps: Vec<String> = a.gaps().iter().map(|g| g.to_string()).collect();
    let gap = |needle: &str| {
        gaps.iter()
            .find(|g| g.contains(needle))
            .unwrap_or_else(|| panic!("no gap about {needle}: {gaps:#?}"))
    };
    let b = gap("`Net.broadcast`");
    assert!(b.contains("none is reachable from any handler"), "{b}");
    assert!(gap("`Net.multicast`").contains("matches no call"));
    let overloads = gap("overloads");
    assert!(
        overloads.contains("Node.onMsg(Msg) at Node.java:7")
            && overloads.contains("Node.onMsg(Msg, int) at Node.java:13"),
        "{overloads}"
    );
    let text = a.to_text();
    assert!(
        text.contains("Node.onMsg (Node.java:7; message Msg)"),
        "{text}"
    );
    assert!(
        text.contains("Node.onTimeout (Node.java:14): kinds timeout"),
        "{text}"
    );
    assert!(!text.contains("message )"), "{text}");
    assert!(text.contains("external calls: "), "{text}");
    assert!(text.contains("println"), "{text}");
    let why = a.explain("term").unwrap();
    assert!(
        why.contains("message `vote` (1) if m.term > n.term")
            && why.contains("update : Node.java:9 (Node.onMsg)")
            && why.contains("read   : Node.java:8 (Node.onMsg)"),
        "{why}"
    );
    assert!(why.contains("Node.java:14 (Node.onTimeout)"), "{why}");
    assert!(a.explain("nope").is_err());
}

/// Issue 46: analyzer/README.md's worked example (an RPC server whose messages are generated
/// protobuf classes and whose log is an interface behind an abstract base) gives what the
/// README says: `tests/corpus/rpc_protobuf` analysed with the README's side file.
#[test]
fn the_readme_worked_example_gives_guarded_sets() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let example = readme
        .split("## Worked example")
        .nth(1)
        .expect("README has the worked example");
    let side = example
        .split("```toml\n")
        .nth(1)
        .and_then(|t| t.split("```").next())
        .expect("the example's side file");
    let dir = tempfile::tempdir().unwrap();
    let side_file = dir.path().join("raft.toml");
    std::fs::write(&side_file, side).unwrap();
    let a = analyze(&opts(
        Lang::Java,
        vec![corpus("rpc_protobuf")],
        Some(side_file),
        "rpc",
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let text = a.to_text();
    let stale = entry_of(&a, "append", "n.term > m.term");
    assert!(stale.update.is_empty() && stale.disk.is_empty(), "{text}");
    assert!(stale.send.contains("term"), "{text}");
    let all = entry_of(&a, "append", "true");
    for v in ["log", "term", "leader"] {
        assert!(all.update.contains(v), "{v}: {text}");
    }
    assert_eq!(
        all.disk,
        ["meta".to_string(), "segment".to_string()].into(),
        "{text}"
    );
    let vote = &a.sets().messages["vote"].entries;
    let newer = vote
        .iter()
        .find(|e| e.guard.contains("m.last_term > n.last_term"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(newer.update.contains("voted_for") && newer.disk.contains("meta"));
    for e in vote
        .iter()
        .filter(|e| e.guard.contains("m.last_term < n.last_term"))
    {
        assert!(!e.update.contains("voted_for"), "{text}");
    }
    assert!(
        !a.gaps().iter().any(|g| g.message.contains("not followed")),
        "{:#?}",
        a.gaps()
    );
    let why = a.explain("log").unwrap();
    assert!(why.contains("(SegmentedLog.write)"), "{why}");
}
