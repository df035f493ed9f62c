//! The hunt as a SARIF 2.1.0 log (OASIS), for code-scanning views: one run, a rule per
//! violated property, a result per finding. A finding's status against the corpus is SARIF's
//! `baselineState` (new, unchanged, absent); a fixed finding is a `pass` result. Workloads
//! that could not run are the invocation's error notifications.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::{json, Value};

use super::report::{FindingReport, HuntReport, Status};

/// The OASIS schema (2.1.0 with errata 01) the log says it follows.
pub const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";
/// The base of the source locations' relative URIs: the checkout.
pub const SRCROOT: &str = "SRCROOT";
/// The partial fingerprint that carries a finding's id (its signature's hash).
pub const FINGERPRINT: &str = "flymcFindingId/v1";

/// Writes `report` to `file` as SARIF.
pub fn write(report: &HuntReport, file: &Path) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(&log(report)).map_err(std::io::Error::other)?;
    text.push('\n');
    flymc_core::outfile::write_atomically(file, text.as_bytes())
}

#[derive(Serialize)]
pub struct Log {
    #[serde(rename = "$schema")]
    pub schema: &'static str,
    pub version: &'static str,
    pub runs: Vec<Run>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub tool: Tool,
    pub original_uri_base_ids: BTreeMap<&'static str, BaseUri>,
    pub invocations: Vec<Invocation>,
    pub results: Vec<SarifResult>,
    pub properties: Value,
}

#[derive(Serialize)]
pub struct Tool {
    pub driver: Driver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Driver {
    pub name: &'static str,
    pub version: String,
    /// flymc has no public home page yet; SARIF makes this optional.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub information_uri: Option<&'static str>,
    pub rules: Vec<Rule>,
}

/// A property, as SARIF's reportingDescriptor.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub id: String,
    pub short_description: Text,
    pub properties: Value,
}

#[derive(Serialize)]
pub struct Text {
    pub text: String,
}

#[derive(Serialize)]
pub struct BaseUri {
    pub description: Text,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Invocation {
    pub execution_successful: bool,
    pub start_time_utc: String,
    pub tool_execution_notifications: Vec<Notification>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Notification {
    pub level: &'static str,
    pub message: Text,
    pub properties: Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SarifResult {
    pub rule_id: String,
    pub rule_index: usize,
    pub kind: &'static str,
    pub level: &'static str,
    pub baseline_state: &'static str,
    pub message: Text,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<Location>,
    pub related_locations: Vec<Location>,
    pub partial_fingerprints: BTreeMap<&'static str, String>,
    pub properties: Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    pub physical_location: PhysicalLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Text>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PhysicalLocation {
    pub artifact_location: ArtifactLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<Region>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactLocation {
    pub uri: String,
    /// Present for a relative `uri` only (SARIF §3.4.4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri_base_id: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Region {
    pub start_line: u32,
}

/// The SARIF log for `report`.
pub fn log(report: &HuntReport) -> Log {
    let mut rules: Vec<Rule> = Vec::new();
    let mut results = Vec::new();
    for f in &report.findings {
        let property = &f.signature.property;
        let index = match rules.iter().position(|r| &r.id == property) {
            Some(i) => i,
            None => {
                rules.push(Rule {
                    id: property.clone(),
                    short_description: Text {
                        text: format!("{} property `{property}`", f.kind),
                    },
                    properties: json!({ "kind": f.kind }),
                });
                rules.len() - 1
            }
        };
        results.push(result(f, index));
    }
    let notifications: Vec<Notification> = report
        .workloads
        .iter()
        .filter_map(|w| {
            let e = w.error.as_ref()?;
            Some(Notification {
                level: "error",
                message: Text {
                    text: format!("{} / {} could not run: {e}", w.system, w.workload),
                },
                properties: json!({ "system": w.system, "workload": w.workload }),
            })
        })
        .collect();
    let mut properties = json!({
        "budget": report.budget,
        "failOn": report.fail_on,
        "seconds": report.seconds,
        "workloads": report.workloads.len(),
    });
    if let Some((k, n)) = report.shard {
        properties["shard"] = json!(format!("{k}/{n}"));
    }
    Log {
        schema: SCHEMA,
        version: "2.1.0",
        runs: vec![Run {
            tool: Tool {
                driver: Driver {
                    name: "flymc",
                    version: report.flymc_version.clone(),
                    information_uri: None,
                    rules,
                },
            },
            original_uri_base_ids: BTreeMap::from([(
                SRCROOT,
                BaseUri {
                    description: Text {
                        text: "The root of the checkout the hunt ran in.".into(),
                    },
                },
            )]),
            invocations: vec![Invocation {
                execution_successful: notifications.is_empty(),
                start_time_utc: report.started.clone(),
                tool_execution_notifications: notifications,
            }],
            results,
            properties,
        }],
    }
}

/// A finding as a result: a failure unless fixed, against the corpus as the baseline (a
/// regression was absent from the last run that passed, so it is new again).
fn result(f: &FindingReport, rule_index: usize) -> SarifResult {
    let (kind, level, baseline_state) = match f.status {
        Status::New => ("fail", "error", "new"),
        Status::Regressed => ("fail", "error", "new"),
        Status::Known => ("fail", "warning", "unchanged"),
        Status::Fixed => ("pass", "none", "absent"),
    };
    let text = match f.status {
        Status::Fixed => format!(
            "{} no longer violated on the path that showed: {}",
            f.signature.property, f.message
        ),
        _ => format!(
            "{} violated after step {} ({} finding on {} / {}): {}",
            f.signature.property,
            f.step,
            f.status.as_str(),
            f.system,
            f.workload,
            f.message
        ),
    };
    let locations = f
        .location
        .iter()
        .map(|l| Location {
            id: None,
            physical_location: PhysicalLocation {
                artifact_location: ArtifactLocation {
                    uri: relative_uri(&l.file),
                    uri_base_id: Some(SRCROOT),
                },
                region: Some(Region {
                    start_line: l.line.max(1),
                }),
            },
            message: None,
        })
        .collect();
    SarifResult {
        rule_id: f.signature.property.clone(),
        rule_index,
        kind,
        level,
        baseline_state,
        message: Text { text },
        locations,
        related_locations: vec![Location {
            id: Some(1),
            physical_location: PhysicalLocation {
                artifact_location: ArtifactLocation {
                    uri: file_uri(&f.path_file),
                    uri_base_id: None,
                },
                region: None,
            },
            message: Some(Text {
                text: format!("the path that shows it; replay it: {}", f.replay),
            }),
        }],
        partial_fingerprints: BTreeMap::from([(FINGERPRINT, f.id.clone())]),
        properties: json!({
            "status": f.status.as_str(),
            "system": f.system,
            "workload": f.workload,
            "kind": f.kind,
            "pathFile": f.path_file.display().to_string(),
            "replay": f.replay,
            "steps": f.steps,
            "step": f.step,
            "strategy": f.strategy,
            "seed": f.seed,
            "firstSeen": f.first_seen,
            "signatureEvents": f.signature.events,
        }),
    }
}

/// A checkout-relative path as a relative URI reference (`/`-separated, percent-encoded).
fn relative_uri(file: &str) -> String {
    percent_encode(&file.replace('\\', "/"))
}

/// An absolute path as a `file://` URI; a relative one stays a relative reference.
fn file_uri(path: &Path) -> String {
    let p = path.to_string_lossy().replace('\\', "/");
    if p.starts_with('/') {
        format!("file://{}", percent_encode(&p))
    } else {
        percent_encode(&p)
    }
}

/// Everything but RFC 3986's unreserved characters and `/` percent-encoded (UTF-8 bytes).
fn percent_encode(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                o.push(b as char)
            }
            _ => o.push_str(&format!("%{b:02X}")),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_encoded() {
        assert_eq!(
            file_uri(Path::new("/tmp/a b/p#1.json")),
            "file:///tmp/a%20b/p%231.json"
        );
        assert_eq!(
            relative_uri("integrations/x/src/lib.rs"),
            "integrations/x/src/lib.rs"
        );
        assert_eq!(file_uri(Path::new("out/é.json")), "out/%C3%A9.json");
    }
}
