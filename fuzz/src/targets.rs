//! The parsers fuzzed, each fed an input as the file (or text) a user could hand flymc, and
//! what is done with what parses (drawn, evaluated) so the data is used, not only read.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use flymc_model::guard::{self, Condition, Memory};
use flymc_model::{GlobalState, NodeView};
use serde_json::json;

/// One parser: its name (its corpus folder's) and where the checkout keeps real inputs for it.
pub struct Target {
    pub name: &'static str,
    /// Folders (relative to the checkout) whose files with `ext` seed the corpus.
    pub shipped: &'static [&'static str],
    pub ext: &'static str,
    /// Parse (and use) one input; how many bytes of output it made.
    run: fn(&Runner, &[u8]) -> usize,
}

pub const ALL: &[Target] = &[
    Target {
        name: "path",
        shipped: &["tests/paths"],
        ext: "json",
        run: path_file,
    },
    Target {
        name: "workload",
        shipped: &[
            "workloads/raft-sim",
            "workloads/zk-le-sim",
            "workloads/zookeeper",
        ],
        ext: "toml",
        run: workload,
    },
    Target {
        name: "system",
        shipped: &[
            "integrations/raftrs",
            "integrations/zookeeper",
            "integrations/raft/openraft",
        ],
        ext: "toml",
        run: system_file,
    },
    Target {
        name: "property",
        shipped: &[],
        ext: "txt",
        run: property,
    },
    Target {
        name: "hunt",
        shipped: &["hunts"],
        ext: "toml",
        run: hunt,
    },
];

/// Output longer than this many times the input (plus a constant) is a crash: a file's
/// numbers must not decide how much flymc writes.
const AMPLIFICATION: usize = 200;

/// A scratch folder the file-reading parsers read their input from.
pub struct Runner {
    dir: tempfile::TempDir,
}

impl Runner {
    pub fn new() -> std::io::Result<Runner> {
        Ok(Runner {
            dir: tempfile::tempdir()?,
        })
    }

    /// `input` written as `name` in the scratch folder.
    fn file(&self, name: &str, input: &[u8]) -> PathBuf {
        let f = self.dir.path().join(name);
        std::fs::write(&f, input).expect("the scratch folder is writable");
        f
    }

    /// Run `target` on `input`: `Err` says how it crashed (a panic, or output out of all
    /// proportion to the input).
    pub fn run(&mut self, target: &Target, input: &[u8]) -> Result<(), String> {
        let made = catch_unwind(AssertUnwindSafe(|| (target.run)(self, input))).map_err(|p| {
            let why = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".into());
            format!("panicked: {why}")
        })?;
        if made > AMPLIFICATION * input.len() + 1_000_000 {
            return Err(format!(
                "{made} bytes of output from {} bytes of input",
                input.len()
            ));
        }
        Ok(())
    }
}

fn text(input: &[u8]) -> String {
    String::from_utf8_lossy(input).into_owned()
}

/// A path file, drawn as text and SVG when it loads.
fn path_file(r: &Runner, input: &[u8]) -> usize {
    let f = r.file("path.json", input);
    match flymc_core::pathfile::PathFile::load(&f) {
        Ok(p) => flymc::show::text(&p).len() + flymc::show::svg(&p).len(),
        Err(e) => e.to_string().len(),
    }
}

/// A workload file, its conditions judged over a small state when it loads.
fn workload(_: &Runner, input: &[u8]) -> usize {
    match flymc_model::Workload::parse(Path::new("fuzz/w.toml"), &text(input)) {
        Ok(w) => {
            let s = state();
            let when = w
                .fault_when
                .as_ref()
                .map_or(0, |c| usize::from(c.holds(&s.nodes)));
            when + w.properties.len()
        }
        Err(e) => e.to_string().len(),
    }
}

/// A system file (the files it names resolved beside the scratch folder).
fn system_file(r: &Runner, input: &[u8]) -> usize {
    let f = r.dir.path().join("system.toml");
    match flymc_real::system_file::SystemFile::parse(&f, &text(input)) {
        Ok(s) => s.properties.len() + s.description.len(),
        Err(e) => e.to_string().len(),
    }
}

/// The property language as a guard, a summary, a `when` and a property, each evaluated.
fn property(_: &Runner, input: &[u8]) -> usize {
    let src = text(input);
    let s = state();
    let mut made = 0;
    let (node, msg) = (vars(), vars());
    if let Ok(g) = guard::parse(&src) {
        made += g.to_string().len() + usize::from(g.holds(&node, &msg));
    }
    if let Ok(g) = guard::parse_summary(&src, &["a".into(), "b".into()]) {
        made += g.to_string().len();
    }
    if let Ok(c) = Condition::parse(&src) {
        made += usize::from(c.holds(&s.nodes)) + c.vars().len() + c.nodes().len();
    }
    if let Ok(c) = Condition::parse_property(&src) {
        let mut memory = Memory::default();
        for _ in 0..3 {
            made += c.check(&s.nodes, &mut memory).err().map_or(0, |m| m.len());
        }
    }
    made
}

/// A hunt file, read as `flymc hunt FILE` reads it.
fn hunt(r: &Runner, input: &[u8]) -> usize {
    let f = r.file("hunt.toml", input);
    match flymc::hunt::campaign::Campaign::new(Some(&f), Default::default()) {
        Ok(c) => c.targets.len(),
        Err(e) => e.to_string().len(),
    }
}

/// Variables of every kind the language compares: integers at the edges, strings, lists.
fn vars() -> serde_json::Map<String, serde_json::Value> {
    let v = json!({
        "x": 1, "y": "a", "z": [1, 2, 3], "big": i64::MAX, "small": i64::MIN,
        "term": 2, "role": "leader", "log": [{"t": 1}], "leader": 0, "commit": 1
    });
    v.as_object().cloned().unwrap_or_default()
}

fn state() -> GlobalState {
    let node = |alive| NodeView {
        alive,
        vars: vars(),
    };
    GlobalState::new(vec![node(true), node(true), node(false)], &[])
}
