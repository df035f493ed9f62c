//! `flymc shrink PATH`: delta debugging over a violating path (issue 19, deliverable 4).
//! Being written.

use std::path::{Path, PathBuf};

use anyhow::Result;

#[derive(clap::Args)]
pub struct ShrinkArgs {
    /// A violating path file written by `flymc run` or `flymc hunt`.
    pub file: PathBuf,
    /// Where real nodes run.
    #[arg(long, default_value = "local", value_parser = ["local", "docker"])]
    pub backend: String,
}

pub fn run(args: &ShrinkArgs, folder: Option<&Path>) -> Result<u8> {
    let _ = folder;
    anyhow::bail!("`flymc shrink {}` is not built yet", args.file.display())
}
