//! `flymc debug PATH`: an interactive debugger over a path (MaceMC's Mdb; issue 19,
//! deliverable 6). Being written.

use std::path::{Path, PathBuf};

use anyhow::Result;

#[derive(clap::Args)]
pub struct DebugArgs {
    /// A path file written by `flymc run` or `flymc hunt`.
    pub file: PathBuf,
    /// Read commands from FILE instead of the terminal (tests, CI).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Where real nodes run.
    #[arg(long, default_value = "local", value_parser = ["local", "docker"])]
    pub backend: String,
}

pub fn run(args: &DebugArgs, folder: Option<&Path>) -> Result<u8> {
    let _ = folder;
    anyhow::bail!("`flymc debug {}` is not built yet", args.file.display())
}
