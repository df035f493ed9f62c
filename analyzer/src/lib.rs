//! flymc's static analyzer (FlyMC §4.1): from annotated Java and Rust sources to the guarded
//! read/update/send/disk sets that the `flymc` strategy's event independence consumes.
//!
//! ```no_run
//! use flymc_analyzer::{analyze, AnalyzeOptions, Lang};
//! let a = analyze(&AnalyzeOptions {
//!     lang: Lang::Java,
//!     sources: vec!["src/".into()],
//!     annotations: Some("annotations.toml".into()),
//!     system: "zookeeper".into(),
//! }).unwrap();
//! std::fs::write("sets.json", a.to_json()).unwrap();
//! eprintln!("{}", a.to_text());
//! ```
//!
//! The pipeline: a front end ([`java`] through tree-sitter-java, [`rust`] through syn) lowers the
//! sources to one intermediate form ([`ir`]); the annotations (in the sources, or a TOML side
//! file, [`spec`]) say what is node state, what is a message and where it is handled; [`exec`]
//! walks every handler path-sensitively, inlining calls into the analysed sources; [`build`]
//! turns the paths into the guarded entries of a sets file. See analyzer/README.md.

pub mod build;
pub mod exec;
pub mod ir;
pub mod java;
pub mod report;
pub mod rust;
pub mod spec;
pub mod sym;
pub mod unmatched;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use flymc_model::sets::RawSets;

pub use build::{HandlerReport, KindReport};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Lang {
    Java,
    #[cfg_attr(feature = "clap", value(alias = "rs"))]
    Rust,
}

impl std::str::FromStr for Lang {
    type Err = String;
    fn from_str(s: &str) -> Result<Lang, String> {
        match s.to_ascii_lowercase().as_str() {
            "java" => Ok(Lang::Java),
            "rust" | "rs" => Ok(Lang::Rust),
            o => Err(format!("unknown language `{o}`: use java or rust")),
        }
    }
}

#[derive(Clone, Debug)]
pub struct AnalyzeOptions {
    pub lang: Lang,
    /// Files or directories (searched recursively for `.java` / `.rs` files).
    pub sources: Vec<PathBuf>,
    /// A TOML side file naming node state, messages, handlers, crash paths, dictionaries.
    pub annotations: Option<PathBuf>,
    /// The `system` field of the sets file.
    pub system: String,
}

/// Something the analysis could not see: a file that did not parse (with its line and column),
/// an unreadable file inside a source directory, a limit the analysis hit, a handler's
/// conditions that could not become guards.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Gap {
    pub file: PathBuf,
    /// 1-based; 0 when the gap has no one place.
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for Gap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file.display(),
                self.line,
                self.column,
                self.message
            )
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error("cannot read {path}: {message}")]
    Read { path: String, message: String },
    #[error("{file}: {message}")]
    Annotation { file: String, message: String },
    #[error("no source files: {0}")]
    NoSources(String),
    #[error("nothing to analyse: {0}")]
    NoHandlers(String),
    #[error("--explain: {0}")]
    UnknownVariable(String),
    #[error(
        "internal error: the analyzer produced a sets file flymc rejects ({0}); please report it"
    )]
    Internal(String),
}

/// The result of an analysis.
#[derive(Clone, Debug)]
pub struct Analysis {
    sets: RawSets,
    gaps: Vec<Gap>,
    pub files: usize,
    pub handlers: Vec<HandlerReport>,
    pub kinds: BTreeMap<String, KindReport>,
    pub elapsed: Duration,
    /// Message kinds taken from another sets file (`keep_from`), and that file.
    pub kept: Vec<String>,
    pub kept_from: Option<String>,
}

impl Analysis {
    pub fn sets(&self) -> &RawSets {
        &self.sets
    }

    /// The sets file (pretty JSON, one entry per line), ending in a newline.
    pub fn to_json(&self) -> String {
        report::json(&self.sets)
    }

    /// The human-readable report (`flymc analyze --format text`).
    pub fn to_text(&self) -> String {
        report::text(self)
    }

    /// For each entry, where `var` entered each of its sets (`flymc analyze --explain VAR`).
    pub fn explain(&self, var: &str) -> Result<String, AnalyzeError> {
        report::explain(self, var)
    }

    pub fn gaps(&self) -> &[Gap] {
        &self.gaps
    }

    /// Complete the sets with what `file` (a sets file, e.g. a hand-written one) says about
    /// the message kinds this analysis did not produce: code it was not given or cannot see
    /// (`flymc analyze --keep FILE`). Their entries are copied, the node variables joined, and
    /// each crash and reboot entry's variables added to the analysed ones (sound for both).
    /// Returns the kinds kept; the text report names them.
    pub fn keep_from(&mut self, file: &Path) -> Result<Vec<String>, AnalyzeError> {
        let shown = file.display().to_string();
        let text = std::fs::read_to_string(file).map_err(|e| AnalyzeError::Read {
            path: shown.clone(),
            message: e.to_string(),
        })?;
        flymc_model::sets::SetsFile::parse(&shown, &text, &Default::default()).map_err(|e| {
            AnalyzeError::Annotation {
                file: shown.clone(),
                message: format!("not a sets file flymc accepts: {e}"),
            }
        })?;
        let other: RawSets = serde_json::from_str(&text).map_err(|e| AnalyzeError::Annotation {
            file: shown.clone(),
            message: format!("not a sets file: {e}"),
        })?;
        let mut kept = Vec::new();
        for (kind, m) in other.messages {
            if !self.sets.messages.contains_key(&kind) {
                self.sets.messages.insert(kind.clone(), m);
                kept.push(kind);
            }
        }
        self.sets.node_vars.extend(other.node_vars);
        self.sets.shared.extend(other.shared);
        for (mine, theirs) in [
            (&mut self.sets.crash, other.crash),
            (&mut self.sets.reboot, other.reboot),
        ] {
            for f in theirs {
                for e in mine.iter_mut() {
                    e.update.extend(f.update.iter().cloned());
                    e.peer_update.extend(f.peer_update.iter().cloned());
                }
            }
        }
        self.kept = kept.clone();
        self.kept_from = Some(shown);
        Ok(kept)
    }
}

fn ext(lang: Lang) -> &'static str {
    match lang {
        Lang::Java => "java",
        Lang::Rust => "rs",
    }
}

/// The source files named by `sources`; unreadable entries inside directories become gaps.
fn source_files(opts: &AnalyzeOptions, gaps: &mut Vec<Gap>) -> Result<Vec<PathBuf>, AnalyzeError> {
    let mut files = Vec::new();
    for s in &opts.sources {
        let meta = std::fs::metadata(s).map_err(|e| AnalyzeError::Read {
            path: s.display().to_string(),
            message: e.to_string(),
        })?;
        if meta.is_dir() {
            for entry in walkdir::WalkDir::new(s).sort_by_file_name() {
                match entry {
                    Ok(e) => {
                        if e.file_type().is_file()
                            && e.path().extension().is_some_and(|x| x == ext(opts.lang))
                        {
                            files.push(e.path().to_path_buf());
                        }
                    }
                    Err(e) => gaps.push(Gap {
                        file: e.path().map(Path::to_path_buf).unwrap_or_else(|| s.clone()),
                        line: 0,
                        column: 0,
                        message: format!("not read: {e}"),
                    }),
                }
            }
        } else {
            files.push(s.clone());
        }
    }
    if files.is_empty() {
        return Err(AnalyzeError::NoSources(format!(
            "no .{} files under {}",
            ext(opts.lang),
            opts.sources
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(files)
}

/// Parse the sources into one program.
pub fn load(
    opts: &AnalyzeOptions,
    gaps: &mut Vec<Gap>,
    wrappers: &std::collections::BTreeSet<String>,
) -> Result<(ir::Program, usize), AnalyzeError> {
    let files = source_files(opts, gaps)?;
    let mut prog = ir::Program::default();
    let mut next_id = 0usize;
    let explicit: Vec<&PathBuf> = opts.sources.iter().filter(|p| p.is_file()).collect();
    for f in &files {
        let text = match std::fs::read(f) {
            Ok(b) => match String::from_utf8(b) {
                Ok(t) => t,
                Err(e) => {
                    let b = e.into_bytes();
                    String::from_utf8_lossy(&b).into_owned()
                }
            },
            Err(e) => {
                if explicit.contains(&f) {
                    return Err(AnalyzeError::Read {
                        path: f.display().to_string(),
                        message: e.to_string(),
                    });
                }
                gaps.push(Gap {
                    file: f.clone(),
                    line: 0,
                    column: 0,
                    message: format!("not read: {e}"),
                });
                continue;
            }
        };
        let res = match opts.lang {
            Lang::Java => java::parse_file(f, &text, &mut prog, &mut next_id),
            Lang::Rust => rust::parse_file(f, &text, &mut prog, &mut next_id, wrappers),
        };
        match res {
            Ok(g) => gaps.extend(g),
            Err(message) => gaps.push(Gap {
                file: f.clone(),
                line: 0,
                column: 0,
                message,
            }),
        }
    }
    Ok((prog, files.len()))
}

/// Analyse the sources.
pub fn analyze(opts: &AnalyzeOptions) -> Result<Analysis, AnalyzeError> {
    let start = Instant::now();
    let mut gaps = Vec::new();
    let side = match &opts.annotations {
        Some(p) => Some(spec::read_side_file(p)?),
        None => None,
    };
    let wrappers = side
        .as_ref()
        .map(|s| s.wrappers.iter().cloned().collect())
        .unwrap_or_default();
    let (prog, files) = load(opts, &mut gaps, &wrappers)?;
    let mut sp = spec::from_source(&prog, side.as_ref().is_none_or(|s| s.defaults));
    if let (Some(side), Some(path)) = (&side, &opts.annotations) {
        sp = spec::merge(sp, spec::from_side_file(side, &prog, path)?);
    }
    let out = build::run(&prog, &sp, &opts.system, opts.annotations.as_deref())?;
    gaps.extend(out.gaps);
    gaps.sort();
    gaps.dedup();
    let text = report::json(&out.sets);
    flymc_model::sets::SetsFile::parse("analyzer output", &text, &Default::default())
        .map_err(|e| AnalyzeError::Internal(e.to_string()))?;
    Ok(Analysis {
        sets: out.sets,
        gaps,
        files,
        handlers: out.handlers,
        kinds: out.kinds,
        elapsed: start.elapsed(),
        kept: Vec::new(),
        kept_from: None,
    })
}
