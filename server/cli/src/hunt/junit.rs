//! The hunt as JUnit XML, in the dialect Jenkins, GitLab and GitHub's test reporters read
//! (Ant's, as Maven Surefire writes it; `tests/schemas/junit-10.xsd` checks it): one
//! `<testsuite>` per system, one `<testcase>` per workload, a `<failure>` per finding that
//! fails the hunt, an `<error>` for a workload that could not run, and the rest (known and
//! fixed findings, the workload's numbers) in `<system-out>`.

use std::fmt::Write as _;
use std::path::Path;

use super::report::{FindingReport, HuntReport, WorkloadReport};

/// Writes `report` to `file` as JUnit XML.
pub fn write(report: &HuntReport, file: &Path) -> std::io::Result<()> {
    flymc_core::outfile::write_atomically(file, render(report).as_bytes())
}

/// One workload's test case: its numbers (absent for a workload that only appears through a
/// finding replayed from the corpus) and its findings.
struct Case<'a> {
    system: &'a str,
    workload: &'a str,
    stats: Option<&'a WorkloadReport>,
    findings: Vec<&'a FindingReport>,
}

impl Case<'_> {
    fn failing<'b>(&'b self, fail_on: &'b str) -> impl Iterator<Item = &'b FindingReport> + 'b {
        self.findings
            .iter()
            .copied()
            .filter(move |f| super::classify::fails(fail_on, f.status))
    }
    fn error(&self) -> Option<&str> {
        self.stats.and_then(|w| w.error.as_deref())
    }
    fn seconds(&self) -> f64 {
        self.stats.map_or(0.0, |w| w.seconds)
    }
}

/// The report's test cases grouped by system, both in the order they first appear.
fn suites(report: &HuntReport) -> Vec<(&str, Vec<Case<'_>>)> {
    let mut suites: Vec<(&str, Vec<Case>)> = Vec::new();
    for w in &report.workloads {
        let s = suite_of(&mut suites, &w.system);
        suites[s].1.push(Case {
            system: &w.system,
            workload: &w.workload,
            stats: Some(w),
            findings: Vec::new(),
        });
    }
    for f in &report.findings {
        let s = suite_of(&mut suites, &f.system);
        let cases = &mut suites[s].1;
        let c = match cases.iter().position(|c| c.workload == f.workload) {
            Some(c) => c,
            None => {
                cases.push(Case {
                    system: &f.system,
                    workload: &f.workload,
                    stats: None,
                    findings: Vec::new(),
                });
                cases.len() - 1
            }
        };
        cases[c].findings.push(f);
    }
    suites
}

fn suite_of<'a>(suites: &mut Vec<(&'a str, Vec<Case<'a>>)>, system: &'a str) -> usize {
    match suites.iter().position(|(s, _)| *s == system) {
        Some(i) => i,
        None => {
            suites.push((system, Vec::new()));
            suites.len() - 1
        }
    }
}

/// The XML text. A test case counts once: as an error when its workload could not run, else
/// as a failure when a finding fails it.
pub fn render(report: &HuntReport) -> String {
    let suites = suites(report);
    let fail_on = report.fail_on.as_str();
    let (tests, failures, errors) = tally(suites.iter().flat_map(|(_, c)| c), fail_on);
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"flymc hunt\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{}\">",
        time(report.seconds)
    );
    for (system, cases) in &suites {
        let (tests, failures, errors) = tally(cases.iter(), fail_on);
        let seconds: f64 = cases.iter().map(Case::seconds).sum();
        let _ = writeln!(
            x,
            "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{}\" timestamp=\"{}\">",
            attr(system),
            time(seconds),
            attr(&report.started)
        );
        properties(&mut x, report);
        for case in cases {
            testcase(&mut x, case, fail_on);
        }
        x.push_str("  </testsuite>\n");
    }
    x.push_str("</testsuites>\n");
    x
}

/// Test cases, failed ones and errors among `cases`.
fn tally<'a>(cases: impl Iterator<Item = &'a Case<'a>>, fail_on: &str) -> (usize, usize, usize) {
    let (mut tests, mut failures, mut errors) = (0, 0, 0);
    for c in cases {
        tests += 1;
        if c.error().is_some() {
            errors += 1;
        } else if c.failing(fail_on).next().is_some() {
            failures += 1;
        }
    }
    (tests, failures, errors)
}

/// The hunt's settings, so a test report shows what the hunt was asked to do.
fn properties(x: &mut String, report: &HuntReport) {
    let mut props = vec![
        ("flymc.version", report.flymc_version.clone()),
        ("hunt.budget", report.budget.clone()),
        ("hunt.fail_on", report.fail_on.clone()),
    ];
    if let Some((k, n)) = report.shard {
        props.push(("hunt.shard", format!("{k}/{n}")));
    }
    x.push_str("    <properties>\n");
    for (name, value) in props {
        let _ = writeln!(
            x,
            "      <property name=\"{name}\" value=\"{}\"/>",
            attr(&value)
        );
    }
    x.push_str("    </properties>\n");
}

fn testcase(x: &mut String, case: &Case, fail_on: &str) {
    let _ = writeln!(
        x,
        "    <testcase classname=\"{}\" name=\"{}\" time=\"{}\">",
        attr(case.system),
        attr(case.workload),
        time(case.seconds())
    );
    if let Some(e) = case.error() {
        let _ = writeln!(
            x,
            "      <error type=\"setup\" message=\"{}\">{}</error>",
            attr(&format!("could not run: {}", first_line(e))),
            text(e)
        );
    }
    for f in case.failing(fail_on) {
        let _ = writeln!(
            x,
            "      <failure type=\"{}\" message=\"{}\">{}</failure>",
            f.status.as_str(),
            attr(&format!("{}: {}", f.signature.property, f.message)),
            text(&details(f))
        );
    }
    let _ = writeln!(
        x,
        "      <system-out>{}</system-out>",
        text(&out(case, fail_on))
    );
    x.push_str("    </testcase>\n");
}

/// A finding's status, id, path file and how to replay it, one per line.
fn details(f: &FindingReport) -> String {
    let mut d = format!(
        "status: {}\nfinding: {}\nproperty: {} ({})\nviolated after step {} of {}\npath file: {}\nreplay: {}\nfound by: {} seed {}\nfirst seen: {}\n",
        f.status.as_str(),
        f.id,
        f.signature.property,
        f.kind,
        f.step,
        f.steps,
        f.path_file.display(),
        f.replay,
        f.strategy,
        f.seed,
        f.first_seen,
    );
    if let Some(l) = &f.location {
        let _ = writeln!(d, "defined at: {}:{}", l.file, l.line);
    }
    d
}

/// The workload's numbers, then the findings that do not fail the hunt (known, fixed).
fn out(case: &Case, fail_on: &str) -> String {
    let mut o = String::new();
    if let Some(w) = case.stats {
        let seeds: Vec<String> = w.seeds.iter().map(u64::to_string).collect();
        let _ = writeln!(
            o,
            "{} / {} with {} (seeds {}): {} paths, {} events, {} unique states, {:.1} s ({:.0} paths/h){}",
            w.system,
            w.workload,
            w.strategy,
            seeds.join(","),
            w.paths,
            w.events,
            w.unique_states,
            w.seconds,
            w.paths_per_hour,
            if w.exhausted { ", exhausted" } else { "" }
        );
    } else {
        let _ = writeln!(
            o,
            "{} / {}: not explored by this hunt; its findings were replayed from the corpus",
            case.system, case.workload
        );
    }
    for f in case
        .findings
        .iter()
        .filter(|f| !super::classify::fails(fail_on, f.status))
    {
        let _ = write!(
            o,
            "\n{} finding {}: {}: {}\n{}",
            f.status.as_str(),
            f.id,
            f.signature.property,
            f.message,
            details(f)
        );
    }
    o
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// Seconds with at most three decimals, as Surefire writes them (the schema's `SUREFIRE_TIME`).
fn time(seconds: f64) -> String {
    let s = if seconds.is_finite() && seconds > 0.0 {
        seconds
    } else {
        0.0
    };
    format!("{s:.3}")
}

/// `s` as character data: markup escaped, and the characters XML 1.0 cannot hold at all (most
/// control characters, from a node's log line) written out as `\u{..}`.
fn text(s: &str) -> String {
    escape(s, false)
}

/// `s` as a double-quoted attribute value; line breaks and tabs as character references, which
/// attribute normalisation would otherwise turn into spaces.
fn attr(s: &str) -> String {
    escape(s, true)
}

fn escape(s: &str, attribute: bool) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' if attribute => o.push_str("&quot;"),
            '\n' if attribute => o.push_str("&#10;"),
            '\r' => o.push_str("&#13;"),
            '\t' if attribute => o.push_str("&#9;"),
            '\t' | '\n' => o.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {
                let _ = write!(o, "\\u{{{:x}}}", c as u32);
            }
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hunt::report::Status;

    #[test]
    fn fail_on_decides_which_findings_fail() {
        use Status::*;
        let failing = |on| {
            [New, Regressed, Known, Fixed]
                .into_iter()
                .filter(|s| crate::hunt::classify::fails(on, *s))
                .collect::<Vec<_>>()
        };
        assert_eq!(failing("new"), [New, Regressed]);
        assert_eq!(failing("regressed"), [Regressed]);
        assert_eq!(failing("any"), [New, Regressed, Known]);
    }

    #[test]
    fn escaping_keeps_markup_and_control_characters_out() {
        assert_eq!(text("a<b & c>d \"q\"\n"), "a&lt;b &amp; c&gt;d \"q\"\n");
        assert_eq!(attr("a\"b\nc\td"), "a&quot;b&#10;c&#9;d");
        assert_eq!(text("esc \u{1b}[31m"), "esc \\u{1b}[31m");
        assert_eq!(time(1.23456), "1.235");
        assert_eq!(time(f64::NAN), "0.000");
    }
}
