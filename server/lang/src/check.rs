//! What a property checks: a condition in this language, or an external checker, a program
//! given each state as JSON on stdin (exit 0: the property holds; otherwise the first line it
//! prints says why).

use serde::{Deserialize, Serialize};

use crate::condition::Condition;
use crate::history::Memory;
use crate::Node;

/// What a property checks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Check {
    /// A property condition ([`Condition::parse_property`]: history built-ins allowed).
    Condition(#[serde(deserialize_with = "property_condition")] Condition),
    /// The program and its arguments (the program resolved against the workload's folder).
    Command(Vec<String>),
}

fn property_condition<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Condition, D::Error> {
    let text = String::deserialize(d)?;
    Condition::parse_property(&text).map_err(|e| serde::de::Error::custom(format!("`{text}`: {e}")))
}

impl Check {
    /// Judge the next state of a run: `nodes` are its nodes and `state` the whole of it (what a
    /// checker reads); `memory` is the property's, fresh per run.
    pub fn check<N: Node>(
        &self,
        nodes: &[N],
        state: &impl Serialize,
        memory: &mut Memory,
    ) -> Result<(), String> {
        match self {
            Check::Condition(c) => c.check(nodes, memory),
            Check::Command(argv) => run(argv, state),
        }
    }
}

/// Run a checker on `state`: JSON on stdin; exit 0 holds.
fn run(argv: &[String], state: &impl Serialize) -> Result<(), String> {
    use std::io::Write;
    let mut child = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("the checker {} could not run: {e}", argv[0]))?;
    let json = serde_json::to_vec(state).unwrap_or_default();
    if let Some(mut stdin) = child.stdin.take() {
        // A checker that exits without reading all of it still answers by its exit code.
        let _ = stdin.write_all(&json);
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("the checker {} failed: {e}", argv[0]))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stdout);
    let line = said
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let err = String::from_utf8_lossy(&out.stderr);
    let why = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| format!(": {}", l.trim()))
        .unwrap_or_default();
    Err(if line.is_empty() {
        format!(
            "the checker {} says it does not hold ({}){why}",
            argv[0], out.status
        )
    } else {
        line.to_string()
    })
}
