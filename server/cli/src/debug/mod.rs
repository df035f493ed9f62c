//! `flymc debug PATH`: an interactive debugger over a path (MaceMC's Mdb), re-executing it on
//! the real or simulated target. docs/DEBUG.md is the
//! user's guide.
//!
//! [`command`] reads a line into a command, [`session`] knows where in the path the user is
//! and what re-executing it showed, [`actions`] carries out each command, [`render`] writes
//! states and their differences, [`filter`] and [`live`] are `filter` and `diff`'s search for
//! a live run.

mod actions;
mod command;
mod filter;
mod live;
mod render;
mod session;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use flymc_core::pathfile::PathFile;

use crate::commands::options::PathSystemArgs;
use crate::systems;
use session::{Session, Source};

#[derive(clap::Args)]
pub struct DebugArgs {
    /// A path file written by `flymc run` or `flymc hunt`.
    pub file: PathBuf,
    /// Read commands from FILE instead of the terminal (tests, CI).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    #[command(flatten)]
    pub target: PathSystemArgs,
}

pub fn run(args: &DebugArgs, folder: Option<&Path>) -> Result<u8> {
    // Read the script first: a missing one is refused before a cluster starts.
    let script = match &args.script {
        Some(f) => Some(
            flymc_model::bounded::read_text(f, flymc_model::bounded::MAX_CONFIG_BYTES)
                .with_context(|| format!("cannot read the script {}", f.display()))?,
        ),
        None => None,
    };
    let path = PathFile::load(&args.file)?;
    let (system, workload) = args.target.resolve(&path, folder)?;
    systems::announce(system.as_ref());
    let mut s = Session::new(path, system, workload);
    println!("{}", actions::header(&s, &args.file));
    actions::moved(&mut s, 0, None);
    // A target that cannot even start (a system not set up) is the user's to fix.
    if let Source::Recorded(_, why) = s.state(0) {
        bail!("cannot re-execute the path: {why}");
    }
    match (script, &args.script) {
        (Some(text), Some(file)) => scripted(&mut s, &text, file),
        _ => interactive(&mut s),
    }
}

fn prompt(s: &Session) -> String {
    format!("(flymc-debug step {}/{})", s.at, s.last())
}

/// Each command echoed after the prompt, then carried out; a bad one ends the script.
fn scripted(s: &mut Session, text: &str, file: &Path) -> Result<u8> {
    for (i, line) in text.lines().enumerate() {
        let cmd = command::parse(line);
        if !matches!(cmd, Ok(None)) {
            println!("{} {}", prompt(s), line.trim());
        }
        let cmd = match cmd {
            Ok(Some(c)) => c,
            Ok(None) => continue,
            Err(e) => bail!("{}:{}: {e}", file.display(), i + 1),
        };
        match actions::handle(s, &cmd) {
            Ok(true) => return Ok(0),
            Ok(false) => {}
            Err(e) => bail!("{}:{}: {e}", file.display(), i + 1),
        }
    }
    Ok(0)
}

/// Lines from the terminal until `quit` or the end of input; a bad command gets a hint.
fn interactive(s: &mut Session) -> Result<u8> {
    let stdin = std::io::stdin();
    let mut line = String::new();
    loop {
        print!("{} ", prompt(s));
        std::io::stdout().flush()?;
        line.clear();
        if stdin.lock().read_line(&mut line)? == 0 {
            println!();
            return Ok(0);
        }
        let result = command::parse(&line).and_then(|c| match c {
            Some(c) => actions::handle(s, &c),
            None => Ok(false),
        });
        match result {
            Ok(true) => return Ok(0),
            Ok(false) => {}
            Err(e) => println!("{e} (`help` lists the commands)"),
        }
    }
}
