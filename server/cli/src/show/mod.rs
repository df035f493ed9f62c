//! `flymc show PATH`: a path file as a sequence diagram, in text, as an SVG element, or as a
//! self-contained HTML page. The event descriptions are read into rows once ([`diagram`]);
//! [`text`](fn@text), [`svg`](fn@svg) and [`html`](fn@html) each draw those rows; [`markup`]
//! holds what the HTML drawings (and the hunt report) share.

pub mod diagram;
mod html;
pub mod markup;
mod svg;
mod text;

use std::path::PathBuf;

use anyhow::{Context, Result};
use flymc_core::pathfile::PathFile;
use flymc_core::run::Ending;

pub use html::html;
pub use svg::svg;
pub use text::text;

#[derive(clap::Args)]
pub struct ShowArgs {
    /// A path file written by `flymc run` or `flymc hunt`.
    pub file: PathBuf,
    /// What to draw it as.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the drawing to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `--format`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Svg,
    Html,
}

pub fn run(args: &ShowArgs) -> Result<u8> {
    let path = PathFile::load(&args.file)?;
    let drawing = match args.format {
        Format::Svg => {
            let mut s = svg(&path);
            s.push('\n');
            s
        }
        Format::Html => html(&path),
        Format::Text => text(&path),
    };
    match &args.out {
        Some(file) => flymc_core::outfile::write_atomically(file, drawing.as_bytes())
            .with_context(|| format!("cannot write {}", file.display()))?,
        None => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            // A closed pipe (`flymc show F | head`) is not an error worth a message.
            let _ = out.write_all(drawing.as_bytes()).and_then(|()| out.flush());
        }
    }
    Ok(0)
}

/// Why the run ended, for people.
fn ending_text(e: &Ending) -> String {
    match e {
        Ending::Quiescent => "nothing left to enable".into(),
        Ending::EventLimit => "the event limit".into(),
        Ending::Violation => "a violation".into(),
        Ending::Diverged { step, missing } => {
            format!("diverged at step {step} (event {missing} was not enabled)")
        }
        Ending::SleepBlocked => "every event left was asleep".into(),
        Ending::Hang { step } => format!("a node did not settle after step {step}"),
        Ending::Exited { step } => format!("a node exited after step {step}"),
    }
}
