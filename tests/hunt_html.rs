//! The hunt's `report.html`: written from a report value with two findings whose path files
//! this test finds with `flymc run`, and rendered by headless Chromium, it has one sequence
//! diagram per finding, new findings first, then the workload table and the folded coverage
//! plots; a finding whose path file is gone is said so in the page.

use crate::common;

use std::path::{Path, PathBuf};

use common::reports::chromium;
use common::{flymc_in, path_file};
use flymc::hunt::report::{
    CoveragePoint, FindingReport, HuntReport, Signature, Status, WorkloadReport,
};
use flymc_core::pathfile::PathFile;

/// A path file `flymc run` finds now, with its violation's property, message and step.
fn found(dir: &Path, system: &str, workload: &str, strategy: &str) -> (PathBuf, PathFile) {
    let r = flymc_in(
        dir,
        &[
            "run",
            "--system",
            system,
            "--workload",
            workload,
            "--strategy",
            strategy,
            "--out",
            "out",
        ],
    );
    assert_eq!(r.code, 1, "the run finds a bug:\n{}", r.all());
    let file = path_file(&r, dir);
    let path = PathFile::load(&file).unwrap();
    (file, path)
}

fn finding(id: &str, status: Status, file: &Path, path: &PathFile) -> FindingReport {
    let v = path.violation.clone().expect("the path violates");
    FindingReport {
        id: id.into(),
        status,
        signature: Signature {
            system: path.system.clone(),
            property: v.property.clone(),
            events: vec!["message:append_entries".into()],
            message: v.message.clone(),
            workload: None,
        },
        system: path.system.clone(),
        workload: path.workload.name.clone(),
        kind: "safety".into(),
        message: v.message.clone(),
        path_file: file.to_path_buf(),
        replay: format!("flymc replay {}", file.display()),
        steps: path.events.len(),
        step: v.step,
        strategy: path.strategy.clone(),
        seed: path.seed,
        first_seen: "2025-01-01T00:00:00Z".into(),
        location: None,
    }
}

fn workload(system: &str, name: &str, coverage: Vec<CoveragePoint>) -> WorkloadReport {
    WorkloadReport {
        system: system.into(),
        workload: name.into(),
        strategy: "random".into(),
        seeds: vec![0, 1, 2, 3],
        paths: coverage.last().map_or(0, |p| p.paths),
        events: 1000,
        unique_states: coverage.last().map_or(0, |p| p.unique_states),
        seconds: 30.0,
        paths_per_hour: 12345.0,
        exhausted: false,
        coverage,
        error: None,
    }
}

fn report(workloads: Vec<WorkloadReport>, findings: Vec<FindingReport>) -> HuntReport {
    HuntReport {
        format: "flymc-hunt".into(),
        version: 1,
        flymc_version: "0.1.0".into(),
        started: "2025-06-01T02:00:00Z".into(),
        seconds: 3725.0,
        shard: Some((1, 4)),
        budget: "1h".into(),
        fail_on: "new".into(),
        workloads,
        findings,
    }
}

#[test]
fn report_has_a_diagram_per_finding_and_the_coverage_plot() {
    let d = tempfile::tempdir().unwrap();
    let (raft_file, raft) = found(d.path(), "raft-sim", "raft-bug", "random");
    let (cass_file, cass) = found(d.path(), "cassandra-sim", "cass-5", "flymc");
    let coverage: Vec<CoveragePoint> = (0..=10)
        .map(|i| CoveragePoint {
            seconds: 3.0 * i as f64,
            paths: 100 * i,
            unique_states: 900 * i - 20 * i * i,
            abstract_states: 40 * i,
        })
        .collect();
    let mut broken = workload("zookeeper", "le", Vec::new());
    broken.error = Some("zookeeper is not set up: run `flymc setup zookeeper`".into());
    let r = report(
        vec![workload("raft-sim", "raft-bug", coverage), broken],
        // Known first: the page puts the new one first.
        vec![
            finding("00000000000000aa", Status::Known, &cass_file, &cass),
            finding("00000000000000bb", Status::New, &raft_file, &raft),
        ],
    );
    let page = d.path().join("report.html");
    flymc::hunt::html::write(&r, &page).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    for external in ["<script", "<link", "src=", "@import", "url("] {
        assert!(!html.contains(external), "the page refers to `{external}`");
    }
    // What is new comes before the workload table, and the plots are folded.
    let workloads = html.find("<h2>Workloads").expect("the workload table");
    assert!(html.find(r#"id="finding-00000000000000aa""#).unwrap() < workloads);
    assert!(html.contains("<details><summary>Coverage: raft-sim / raft-bug (random)</summary>"));

    let dom = chromium(&page, &d.path().join("report.png"));
    // One diagram per finding, each with its own id, inside its finding's section.
    let diagrams: Vec<&str> = dom
        .match_indices(r#"id="flymc-seq-"#)
        .map(|(i, _)| &dom[i..i + 40])
        .collect();
    assert_eq!(diagrams.len(), 2, "{diagrams:?}");
    assert_ne!(diagrams[0], diagrams[1], "diagram ids are unique per path");
    let new = dom
        .find(r#"id="finding-00000000000000bb""#)
        .expect("the new finding");
    let known = dom
        .find(r#"id="finding-00000000000000aa""#)
        .expect("the known finding");
    assert!(new < known, "new findings come first");
    let first_diagram = dom.find(r#"id="flymc-seq-"#).unwrap();
    assert!(new < first_diagram && first_diagram < known);
    for (path, property) in [
        (&raft, "state-machine-safety"),
        (&cass, "replicas-converge"),
    ] {
        assert!(
            dom.contains(&format!(
                r#"<g class="fm-violation" data-property="{property}">"#
            )),
            "{property}'s violation in its diagram"
        );
        assert!(dom.contains(&format!("flymc replay {}", path_of(path, &r).display())));
    }
    assert_eq!(
        dom.matches(r#"<table class="flymc-state">"#).count(),
        2,
        "the node states at each violation"
    );
    // The workload table and the plots of the one workload with coverage.
    for cell in ["raft-bug", "12345", "zookeeper is not set up"] {
        assert!(dom.contains(cell), "`{cell}` in the workload table");
    }
    assert_eq!(dom.matches(r#"class="flymc-plot""#).count(), 2);
    for series in ["paths", "unique states", "abstract states"] {
        assert!(
            dom.contains(&format!(r#"data-series="{series}""#)),
            "the {series} series"
        );
    }
    assert!(dom.contains("No coverage samples."));
    assert!(dom.contains("1 of 4"), "the shard");
    assert!(dom.contains("1h 02m 05s"), "how long");
}

/// The path file a finding of `r` points at for `path`.
fn path_of<'a>(path: &PathFile, r: &'a HuntReport) -> &'a Path {
    &r.findings
        .iter()
        .find(|f| f.system == path.system)
        .unwrap()
        .path_file
}

#[test]
fn a_finding_whose_path_file_is_gone_says_so() {
    let d = tempfile::tempdir().unwrap();
    let (file, path) = found(d.path(), "raft-sim", "raft-bug", "random");
    let mut f = finding("00000000000000cc", Status::Fixed, &file, &path);
    f.path_file = d.path().join("gone.json");
    let r = report(Vec::new(), vec![f]);
    let page = d.path().join("report.html");
    flymc::hunt::html::write(&r, &page).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("No diagram: cannot read path file"), "{html}");
    assert!(html.contains("gone.json"));
    assert!(!html.contains(r#"id="flymc-seq-"#));
}
