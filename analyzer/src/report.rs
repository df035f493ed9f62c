//! Output: the sets file as JSON (one entry per line, like the hand-written ones) and the
//! human-readable report.

use std::fmt::Write;

use flymc_model::sets::RawSets;
use serde::Serialize;

use crate::{Analysis, AnalyzeError};

fn one<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("serialisable")
}

/// The sets file as JSON.
pub fn json(s: &RawSets) -> String {
    let mut o = String::new();
    o.push_str("{\n");
    let _ = writeln!(o, "  \"format\": {},", one(&s.format));
    let _ = writeln!(o, "  \"version\": {},", s.version);
    let _ = writeln!(o, "  \"system\": {},", one(&s.system));
    let _ = writeln!(o, "  \"node_vars\": {},", one(&s.node_vars));
    if !s.shared.is_empty() {
        let _ = writeln!(o, "  \"shared\": {},", one(&s.shared));
    }
    o.push_str("  \"messages\": {");
    let n = s.messages.len();
    for (i, (k, m)) in s.messages.iter().enumerate() {
        let _ = write!(o, "\n    {}: {{\n", one(k));
        let _ = writeln!(o, "      \"fields\": {},", one(&m.fields));
        o.push_str("      \"entries\": [\n");
        for (j, e) in m.entries.iter().enumerate() {
            let _ = write!(o, "        {}", one(e));
            o.push_str(if j + 1 < m.entries.len() { ",\n" } else { "\n" });
        }
        o.push_str("      ]\n    }");
        if i + 1 < n {
            o.push(',');
        }
    }
    o.push_str(if n > 0 { "\n  },\n" } else { "},\n" });
    for (name, list, last) in [("crash", &s.crash, false), ("reboot", &s.reboot, true)] {
        let _ = write!(o, "  \"{name}\": [");
        for (j, f) in list.iter().enumerate() {
            let _ = write!(o, "\n    {}", one(f));
            if j + 1 < list.len() {
                o.push(',');
            }
        }
        o.push_str(if list.is_empty() { "]" } else { "\n  ]" });
        o.push_str(if last { "\n" } else { ",\n" });
    }
    o.push_str("}\n");
    o
}

fn set(s: &std::collections::BTreeSet<String>) -> String {
    if s.is_empty() {
        "--".into()
    } else {
        s.iter().cloned().collect::<Vec<_>>().join(", ")
    }
}

/// The human-readable report.
pub fn text(a: &Analysis) -> String {
    let s = a.sets();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "flymc analyze: system `{}`: {} files, {} handlers, {} message kinds, {} node variables, {:.2} s",
        s.system,
        a.files,
        a.handlers.len(),
        s.messages.len(),
        s.node_vars.len(),
        a.elapsed.as_secs_f64()
    );
    let _ = writeln!(o, "node variables: {}", set(&s.node_vars));
    if let Some(from) = &a.kept_from {
        let _ = writeln!(
            o,
            "kept from {from} (not analysed): {}",
            if a.kept.is_empty() {
                "--".to_string()
            } else {
                a.kept.join(", ")
            }
        );
    }
    o.push('\n');
    for (kind, m) in &s.messages {
        let from = a
            .kinds
            .get(kind)
            .map(|k| k.handlers.join(", "))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "message `{kind}` (fields: {}; handled in {from})",
            if m.fields.is_empty() {
                "--".into()
            } else {
                m.fields.join(", ")
            }
        );
        for (i, e) in m.entries.iter().enumerate() {
            let _ = writeln!(o, "  ({}) if {}", i + 1, e.guard);
            let _ = writeln!(o, "      read      = {}", set(&e.read));
            let _ = writeln!(o, "      update    = {}", set(&e.update));
            if !e.increments.is_empty() {
                let _ = writeln!(o, "      increments= {}", set(&e.increments));
            }
            let _ = writeln!(o, "      send      = {}", set(&e.send));
            let _ = writeln!(o, "      disk      = {}", set(&e.disk));
        }
        o.push('\n');
    }
    for (name, list) in [("crash", &s.crash), ("reboot", &s.reboot)] {
        for f in list {
            let _ = writeln!(
                o,
                "{name}: if {}: update = {}; peers update = {}",
                f.guard,
                set(&f.update),
                set(&f.peer_update)
            );
        }
    }
    o.push('\n');
    let _ = writeln!(o, "handlers:");
    for h in &a.handlers {
        let message = if h.message_class.is_empty() {
            String::new()
        } else {
            format!("; message {}", h.message_class)
        };
        let _ = writeln!(
            o,
            "  {} ({}:{}{message}): kinds {}; {} path groups; {} opaque conditions; {} external calls",
            h.name,
            h.file,
            h.line,
            if h.kinds.is_empty() { "--".into() } else { h.kinds.join(", ") },
            h.paths,
            h.opaque_conditions.len(),
            h.external_calls.len()
        );
        if !h.external_calls.is_empty() {
            let _ = writeln!(o, "    external calls: {}", h.external_calls.join(", "));
        }
    }
    if !a.gaps().is_empty() {
        o.push('\n');
        let _ = writeln!(o, "what the analysis could not see ({}):", a.gaps().len());
        for g in a.gaps() {
            let _ = writeln!(o, "  {g}");
        }
    }
    o
}

/// `flymc analyze --explain VAR`: for every entry whose sets hold `var`, where it entered
/// each of them (file:line and method, or why: control dependence, `also`).
pub fn explain(a: &Analysis, var: &str) -> Result<String, AnalyzeError> {
    let mut o = String::new();
    let s = a.sets();
    if !s.node_vars.contains(var) {
        return Err(AnalyzeError::UnknownVariable(format!(
            "`{var}` is not a node variable of this analysis; name one of: {}",
            set(&s.node_vars)
        )));
    }
    for (kind, m) in &s.messages {
        let origins = a
            .kinds
            .get(kind)
            .map(|k| &k.origins[..])
            .unwrap_or_default();
        for (i, e) in m.entries.iter().enumerate() {
            let sets = [
                ("read", &e.read),
                ("update", &e.update),
                ("send", &e.send),
                ("disk", &e.disk),
            ];
            let mut lines = Vec::new();
            for (name, set) in sets {
                if !set.contains(var) {
                    continue;
                }
                let from = origins
                    .get(i)
                    .and_then(|o| o.get(&(name, var.to_string())))
                    .map(|at| at.iter().cloned().collect::<Vec<_>>().join("; "))
                    .unwrap_or_else(|| "kept from another sets file (not analysed)".into());
                lines.push(format!("      {name:<7}: {from}"));
            }
            if !lines.is_empty() {
                let _ = writeln!(o, "message `{kind}` ({}) if {}", i + 1, e.guard);
                for l in lines {
                    let _ = writeln!(o, "{l}");
                }
            }
        }
    }
    if o.is_empty() {
        let _ = writeln!(o, "`{var}` is in no entry's read, update, send or disk set");
    }
    Ok(o)
}
