//! `flymc analyze`: write a sets file from annotated Java or Rust sources (FlyMC §4.1).

use std::path::PathBuf;

use anyhow::Result;
use flymc_analyzer::Lang;

#[derive(clap::Args)]
pub struct AnalyzeArgs {
    /// Source language.
    #[arg(long, value_enum)]
    pub lang: Lang,
    /// Source files or folders (searched recursively).
    #[arg(required = true)]
    pub sources: Vec<PathBuf>,
    /// A TOML side file annotating code you do not want to touch (see analyzer/README.md).
    #[arg(long, value_name = "FILE")]
    pub annotations: Option<PathBuf>,
    /// The system name written into the sets file.
    #[arg(long, default_value = "unnamed")]
    pub system: String,
    /// Where to write the sets file (JSON). The `--format` output goes to stdout either way,
    /// except `--format json` with `--out`, where the JSON goes only to the file.
    #[arg(long, value_name = "SETS.json")]
    pub out: Option<PathBuf>,
    /// What to print: the sets file as JSON, or a human-readable report.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Take the message kinds the analysis does not produce (code it was not given) from
    /// this sets file, e.g. a hand-written one; the report names them.
    #[arg(long, value_name = "SETS.json")]
    pub keep: Option<PathBuf>,
    /// Print, for every entry whose sets hold node variable VAR, which call or statement
    /// (file:line, method) put it in each set, instead of the report.
    #[arg(long, value_name = "VAR")]
    pub explain: Option<String>,
}

/// `--format`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

pub fn run(args: AnalyzeArgs) -> Result<u8> {
    let opts = flymc_analyzer::AnalyzeOptions {
        lang: args.lang,
        sources: args.sources,
        annotations: args.annotations,
        system: args.system,
    };
    let mut a = flymc_analyzer::analyze(&opts)?;
    if let Some(keep) = &args.keep {
        a.keep_from(keep)?;
    }
    for gap in a.gaps() {
        eprintln!("warning: {gap}");
    }
    match (&args.explain, args.format) {
        (Some(var), _) => print!("{}", a.explain(var)?),
        (None, Format::Json) if args.out.is_none() => print!("{}", a.to_json()),
        (None, Format::Json) => {}
        (None, Format::Text) => print!("{}", a.to_text()),
    }
    if let Some(out) = &args.out {
        flymc_core::outfile::write_atomically(out, a.to_json().as_bytes())
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out.display()))?;
        eprintln!(
            "wrote {} ({} gaps reported above)",
            out.display(),
            a.gaps().len()
        );
    }
    Ok(0)
}
