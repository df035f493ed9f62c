//! Where a property is defined: the source line a finding points at in SARIF and JUnit, found
//! in the files a system names ([`flymc_model::About::sources`]).

use std::path::Path;

use super::report::SourceLocation;

/// The model's generic properties (`no-exception`, `no-error-log`), which every run checks on
/// top of the system's own.
const GENERIC_SOURCES: &[&str] = &["server/model/src/exceptions.rs"];

/// The line that defines `property` for `system`, with `root` the checkout the system's
/// sources are relative to: the first line of its sources (then the generic ones) holding
/// `"property"` as a string literal. When that line only names it
/// (`pub const X: &str = "property";`), the first later line in that file that uses `X`
/// (`safety(X, ...)`, `fn name() { X }`) is where the property is built, and wins.
/// `None` when no file names it, or none can be read.
pub fn property_location(
    system: &dyn flymc_model::System,
    property: &str,
    root: &Path,
) -> Option<SourceLocation> {
    let literal = format!("\"{property}\"");
    system
        .about()
        .sources
        .iter()
        .map(String::as_str)
        .chain(GENERIC_SOURCES.iter().copied())
        .find_map(|file| {
            let text = std::fs::read_to_string(root.join(file)).ok()?;
            let lines: Vec<&str> = text.lines().collect();
            let at = lines.iter().position(|l| l.contains(&literal))?;
            let line = const_name(lines[at])
                .and_then(|name| first_use(&lines[at + 1..], name).map(|i| at + 1 + i))
                .unwrap_or(at);
            Some(SourceLocation {
                file: (*file).to_string(),
                line: u32::try_from(line + 1).ok()?,
            })
        })
}

/// `X` for a line `[pub] const X: &str = "...";`.
fn const_name(line: &str) -> Option<&str> {
    let rest = line.trim_start();
    let rest = rest.strip_prefix("pub ").unwrap_or(rest);
    let rest = rest.strip_prefix("const ")?;
    let (name, ty) = rest.split_once(':')?;
    ty.trim_start().starts_with("&str").then_some(name.trim())
}

/// The first of `lines` that uses the identifier `name` in code (not in a comment or an import).
fn first_use(lines: &[&str], name: &str) -> Option<usize> {
    lines.iter().position(|l| {
        let code = l.split("//").next().unwrap_or("").trim_start();
        !code.starts_with("use ") && !code.starts_with("pub use ") && has_word(code, name)
    })
}

/// Whether `text` holds `word` with no identifier character on either side.
fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::systems;
    use std::path::PathBuf;

    fn checkout() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn line_of(loc: &SourceLocation) -> String {
        let text = std::fs::read_to_string(checkout().join(&loc.file)).unwrap();
        text.lines().nth(loc.line as usize - 1).unwrap().to_string()
    }

    #[test]
    fn a_literal_in_the_systems_own_file() {
        let sys = systems::find("cassandra-sim").unwrap();
        let loc = property_location(sys.as_ref(), "replicas-converge", &checkout()).unwrap();
        assert_eq!(loc.file, "integrations/cassandra-sim/src/lib.rs");
        assert!(
            line_of(&loc).contains("safety(\"replicas-converge\""),
            "{loc:?}: {}",
            line_of(&loc)
        );
    }

    #[test]
    fn a_named_constant_leads_to_where_the_property_is_built() {
        let sys = systems::find("zookeeper").unwrap();
        let loc = property_location(sys.as_ref(), "one-leader-per-epoch", &checkout()).unwrap();
        assert_eq!(loc.file, "integrations/zookeeper/properties/src/lib.rs");
        assert!(
            line_of(&loc).contains("safety(ONE_LEADER_PER_EPOCH"),
            "{loc:?}"
        );

        let sys = systems::find("raft-asyncraft").unwrap();
        let loc = property_location(sys.as_ref(), "election-safety", &checkout()).unwrap();
        assert_eq!(loc.file, "integrations/raft/properties/src/lib.rs");
        assert_eq!(line_of(&loc).trim(), "ELECTION_SAFETY", "{loc:?}");
    }

    #[test]
    fn every_property_of_every_system_is_located() {
        let folder = checkout().join("workloads");
        for sys in systems::all() {
            assert!(
                !sys.about().sources.is_empty(),
                "{} names no sources",
                sys.name()
            );
            for w in flymc_core::workloads::all(&folder, sys.name()).unwrap() {
                for p in flymc_model::exceptions::run_properties(sys.as_ref(), &w) {
                    let name = p.name();
                    assert!(
                        property_location(sys.as_ref(), name, &checkout()).is_some(),
                        "{} / {name} not found in {:?}",
                        sys.name(),
                        sys.about().sources
                    );
                }
            }
        }
    }

    #[test]
    fn the_generic_properties_are_found_in_the_model() {
        let sys = systems::find("raft-sim").unwrap();
        let loc = property_location(sys.as_ref(), "no-exception", &checkout()).unwrap();
        assert_eq!(loc.file, GENERIC_SOURCES[0]);
        assert!(line_of(&loc).contains("NO_EXCEPTION"), "{loc:?}");
    }

    #[test]
    fn nothing_for_an_unknown_property_or_a_wrong_root() {
        let sys = systems::find("cassandra-sim").unwrap();
        assert_eq!(
            property_location(sys.as_ref(), "no-such-property", &checkout()),
            None
        );
        let nowhere = tempfile::tempdir().unwrap();
        assert_eq!(
            property_location(sys.as_ref(), "replicas-converge", nowhere.path()),
            None
        );
    }
}
