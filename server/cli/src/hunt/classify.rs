//! A finding's status against the corpus the hunt started from, and the corpus after it.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use flymc_core::pathfile::PathFile;

use super::corpus::{Corpus, Entry, State};
use super::report::{FindingReport, Status};

/// What this hunt knows of one finding: its corpus entry, whether exploration found it, and
/// what replaying its corpus path said.
pub struct Seen<'a> {
    pub entry: Option<&'a Entry>,
    pub found: bool,
    /// `Some(true)`: the corpus path still violates; `Some(false)`: it no longer does.
    pub still_violates: Option<bool>,
}

/// `None` when there is nothing to say (a corpus finding this hunt neither replayed nor found).
pub fn status(seen: &Seen) -> Option<Status> {
    let violating = seen.found || seen.still_violates == Some(true);
    Some(match seen.entry {
        None if seen.found => Status::New,
        None => return None,
        Some(e) if violating && e.state == State::Fixed => Status::Regressed,
        Some(_) if violating => Status::Known,
        Some(_) if seen.still_violates == Some(false) => Status::Fixed,
        Some(_) => return None,
    })
}

/// The first of two verdicts on one finding from two shards, by precedence: a shard that found
/// it new or regressed wins over one that only replayed it.
pub fn join(a: Status, b: Status) -> Status {
    a.min(b)
}

/// Fold `findings` into `corpus`: new ones added with their path, regressed ones reopened,
/// fixed ones closed, and every one that was seen dated.
pub fn fold(corpus: &mut Corpus, findings: &[FindingReport], now: &str) -> Result<()> {
    for f in findings {
        let old = corpus.entries.get(&f.id).cloned();
        let mut entry = old.clone().unwrap_or_else(|| Entry {
            id: f.id.clone(),
            signature: f.signature.clone(),
            system: f.system.clone(),
            workload: f.workload.clone(),
            kind: f.kind.clone(),
            message: f.message.clone(),
            state: State::Open,
            first_seen: now.into(),
            last_seen: now.into(),
            fixed_since: None,
            strategy: f.strategy.clone(),
            seed: f.seed,
        });
        match f.status {
            Status::New | Status::Regressed | Status::Known => {
                entry.state = State::Open;
                entry.fixed_since = None;
                entry.last_seen = now.into();
            }
            Status::Fixed => {
                entry.state = State::Fixed;
                entry.fixed_since.get_or_insert_with(|| now.into());
            }
        }
        // A new or regressed finding brings the path that shows it today.
        let path = matches!(f.status, Status::New | Status::Regressed).then_some(&*f.path_file);
        corpus.put(entry, path)?;
    }
    Ok(())
}

/// The report of one finding, from the path that shows it (copied to `out/findings/`).
pub fn report(
    id: &str,
    status: Status,
    path: &PathFile,
    file: &Path,
    first_seen: &str,
) -> Option<FindingReport> {
    let v = path.violation.as_ref()?;
    Some(FindingReport {
        id: id.into(),
        status,
        signature: super::signature::of(path)?,
        system: path.system.clone(),
        workload: path.workload.name.clone(),
        kind: format!("{:?}", v.kind).to_lowercase(),
        message: v.message.clone(),
        path_file: file.to_path_buf(),
        replay: format!("flymc replay {}", file.display()),
        steps: path.events.len(),
        step: v.step,
        strategy: path.strategy.clone(),
        seed: path.seed,
        first_seen: first_seen.into(),
        location: None,
    })
}

/// Findings in report order: new, regressed, known, fixed; then by system, workload, id.
pub fn sort(findings: &mut [FindingReport]) {
    findings.sort_by(|a, b| {
        (a.status, &a.system, &a.workload, &a.id).cmp(&(b.status, &b.system, &b.workload, &b.id))
    });
}

/// Does a finding of this status fail the hunt under `fail_on`: `new` fails new and regressed
/// ones (a regression is a bug that is back), `regressed` only regressions, `any` every finding
/// still violating. The exit code and the JUnit failures follow this one rule.
pub fn fails(fail_on: &str, status: Status) -> bool {
    match status {
        Status::Regressed => true,
        Status::New => fail_on != "regressed",
        Status::Known => fail_on == "any",
        Status::Fixed => false,
    }
}

/// Findings that make the exit code 1 under `fail_on`.
pub fn failing(findings: &[FindingReport], fail_on: &str) -> usize {
    findings.iter().filter(|f| fails(fail_on, f.status)).count()
}

/// Findings by id.
pub type ById = BTreeMap<String, FindingReport>;
