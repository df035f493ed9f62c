//! `flymc show PATH`: a path file as a sequence diagram (text, SVG or a self-contained HTML
//! page). Being written (issue 19, deliverable 5).

use std::path::PathBuf;

use anyhow::Result;

#[derive(clap::Args)]
pub struct ShowArgs {
    /// A path file written by `flymc run` or `flymc hunt`.
    pub file: PathBuf,
    /// What to draw it as.
    #[arg(long, default_value = "text", value_parser = ["text", "svg", "html"])]
    pub format: String,
}

pub fn run(args: &ShowArgs) -> Result<u8> {
    anyhow::bail!(
        "`flymc show {}` is not built yet",
        args.file.display()
    )
}
