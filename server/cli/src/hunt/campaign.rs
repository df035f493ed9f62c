//! A hunt's campaign: what to explore, for how long, and where findings are kept, from a
//! `hunt.toml` file, from flags, or both (flags override the file's settings and add a target).
//!
//! ```toml
//! version = 1
//! budget = "30m"             # the whole hunt; or "500paths" per exploration; or both
//! corpus = "corpus"          # relative to this file
//! out = "hunt-out"
//! fail_on = "new"            # new | regressed | any
//! ignore = ["some-property"] # violations of these are not findings
//!
//! [[target]]
//! system = "raft-sim"
//! workloads = ["raft-bug"]   # default: every workload of the system
//! strategy = "random"        # default: dfs
//! seeds = 4                  # randomized strategies: seeds 0..4 (default 4)
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::budget::Budget;

/// The campaign file format version this flymc reads.
pub const VERSION: u64 = 1;
/// Seeds per workload for randomized strategies when neither file nor flags say.
pub const DEFAULT_SEEDS: u64 = 4;
/// The most seeds a target may ask for: each is an exploration of every workload, so more
/// would outlast any budget (and the hunt lists them all before it starts).
pub const MAX_SEEDS: u64 = 10_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u64,
    budget: Option<String>,
    corpus: Option<PathBuf>,
    out: Option<PathBuf>,
    fail_on: Option<String>,
    #[serde(default)]
    ignore: Vec<String>,
    #[serde(default, rename = "target")]
    targets: Vec<TargetFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetFile {
    system: String,
    #[serde(default)]
    workloads: Vec<String>,
    strategy: Option<String>,
    seeds: Option<u64>,
}

/// One system's part of a campaign.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub system: String,
    /// Empty: every workload of the system.
    pub workloads: Vec<String>,
    pub strategy: String,
    pub seeds: u64,
}

#[derive(Clone, Debug)]
pub struct Campaign {
    pub targets: Vec<Target>,
    pub budget: Budget,
    pub budget_text: String,
    pub corpus: PathBuf,
    pub out: PathBuf,
    pub fail_on: String,
    pub ignore: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    #[error("cannot read the campaign file {0}: {1}")]
    Read(String, std::io::Error),
    #[error("{file}:{line}:{column}: {message}")]
    Parse {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{0}: version {1} is not one this flymc reads (it reads {VERSION}); update flymc or write `version = {VERSION}`")]
    Version(String, u64),
    #[error("{0}")]
    Budget(#[from] super::budget::BadBudget),
    #[error("fail_on `{0}` is not one of new, regressed, any")]
    FailOn(String),
    #[error("nothing to hunt: give a campaign file with [[target]] tables or --system NAME")]
    NoTarget,
    #[error("no budget: give `budget = \"30m\"` in the campaign file or --budget (a time like 120s, 30m, or a path count like 500paths)")]
    NoBudget,
    #[error("seeds = 0 for {0}: give at least one seed")]
    NoSeeds(String),
    #[error("seeds = {1} for {0}: a target may have at most {MAX_SEEDS} seeds")]
    TooManySeeds(String, u64),
}

/// What the command line says, over the file's settings.
#[derive(Default)]
pub struct Flags {
    pub system: Option<String>,
    pub workloads: Vec<String>,
    pub strategy: Option<String>,
    pub seeds: Option<u64>,
    pub budget: Option<String>,
    pub corpus: Option<PathBuf>,
    pub out: Option<PathBuf>,
    pub fail_on: Option<String>,
    pub ignore: Vec<String>,
}

impl Campaign {
    pub fn new(file: Option<&Path>, flags: Flags) -> Result<Campaign, CampaignError> {
        let (parsed, base) = match file {
            Some(f) => (
                Some(parse(f)?),
                f.parent().map(Path::to_path_buf).unwrap_or_default(),
            ),
            None => (None, PathBuf::new()),
        };
        let mut targets = Vec::new();
        let (mut budget, mut corpus, mut out, mut fail_on, mut ignore) =
            (None, None, None, None, Vec::new());
        if let Some(p) = parsed {
            budget = p.budget;
            corpus = p.corpus.map(|c| base.join(c));
            out = p.out.map(|o| base.join(o));
            fail_on = p.fail_on;
            ignore = p.ignore;
            for t in p.targets {
                targets.push(Target {
                    seeds: t.seeds.unwrap_or(DEFAULT_SEEDS),
                    system: t.system,
                    workloads: t.workloads,
                    strategy: t
                        .strategy
                        .unwrap_or_else(|| flymc_strategies::StrategyKind::Dfs.name().into()),
                });
            }
        }
        if let Some(system) = flags.system {
            targets.push(Target {
                system,
                workloads: flags.workloads,
                strategy: flags
                    .strategy
                    .unwrap_or_else(|| flymc_strategies::StrategyKind::Dfs.name().into()),
                seeds: flags.seeds.unwrap_or(DEFAULT_SEEDS),
            });
        } else if let Some(seeds) = flags.seeds {
            targets.iter_mut().for_each(|t| t.seeds = seeds);
        }
        if targets.is_empty() {
            return Err(CampaignError::NoTarget);
        }
        if let Some(t) = targets.iter().find(|t| t.seeds == 0) {
            return Err(CampaignError::NoSeeds(t.system.clone()));
        }
        if let Some(t) = targets.iter().find(|t| t.seeds > MAX_SEEDS) {
            return Err(CampaignError::TooManySeeds(t.system.clone(), t.seeds));
        }
        let budget_text = flags.budget.or(budget).ok_or(CampaignError::NoBudget)?;
        let fail_on = flags.fail_on.or(fail_on).unwrap_or_else(|| "new".into());
        if !["new", "regressed", "any"].contains(&fail_on.as_str()) {
            return Err(CampaignError::FailOn(fail_on));
        }
        ignore.extend(flags.ignore);
        Ok(Campaign {
            targets,
            budget: budget_text.parse()?,
            budget_text,
            corpus: flags
                .corpus
                .or(corpus)
                .unwrap_or_else(|| "flymc-corpus".into()),
            out: flags.out.or(out).unwrap_or_else(|| "flymc-hunt".into()),
            fail_on,
            ignore,
        })
    }
}

fn parse(file: &Path) -> Result<File, CampaignError> {
    let name = file.display().to_string();
    let text = flymc_model::bounded::read_text(file, flymc_model::bounded::MAX_CONFIG_BYTES)
        .map_err(|e| CampaignError::Read(name.clone(), e.into()))?;
    let parsed: File = toml::from_str(&text).map_err(|e| {
        let (line, column) = e
            .span()
            .map(|s| line_column(&text, s.start))
            .unwrap_or((1, 1));
        CampaignError::Parse {
            file: name.clone(),
            line,
            column,
            message: e.message().to_string(),
        }
    })?;
    if parsed.version != VERSION {
        return Err(CampaignError::Version(name, parsed.version));
    }
    Ok(parsed)
}

/// 1-based line and column of byte `at` in `text`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("hunt.toml");
        std::fs::write(&f, text).unwrap();
        (dir, f)
    }

    #[test]
    fn a_file_with_flags_on_top() {
        let (dir, f) = write(
            "version = 1\nbudget = \"30m\"\ncorpus = \"c\"\nignore = [\"p\"]\n\n[[target]]\nsystem = \"raft-sim\"\nworkloads = [\"raft-bug\"]\nstrategy = \"random\"\nseeds = 2\n",
        );
        let c = Campaign::new(
            Some(&f),
            Flags {
                budget: Some("100paths".into()),
                ignore: vec!["q".into()],
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(c.budget.paths, Some(100));
        assert_eq!(c.budget.time, None);
        assert_eq!(c.corpus, dir.path().join("c"));
        assert_eq!(c.ignore, ["p", "q"]);
        assert_eq!(c.targets[0].seeds, 2);
        assert_eq!(c.fail_on, "new");
    }

    #[test]
    fn errors_name_the_place() {
        let (_d, f) = write("version = 1\nbudget = \"1m\"\n[[target]]\nsystm = \"x\"\n");
        let e = Campaign::new(Some(&f), Flags::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("hunt.toml:4:1"), "{e}");
        assert!(e.contains("systm"), "{e}");
        let (_d, f) = write("version = 2\n");
        let e = Campaign::new(Some(&f), Flags::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("version 2"), "{e}");
        let e = Campaign::new(None, Flags::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--system"), "{e}");
        let e = Campaign::new(
            None,
            Flags {
                system: Some("x".into()),
                ..Default::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no budget"), "{e}");
    }
}
