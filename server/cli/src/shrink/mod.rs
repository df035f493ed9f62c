//! `flymc shrink PATH`: delta debugging over a violating path.
//!
//! Re-executes simpler variants of the path on its target (real or simulated) and keeps the
//! simplest run that still violates the same property ([`procedure`]); writes that run, which
//! `flymc replay` reproduces, beside the original as `<stem>.shrunk.json`.
//!
//! Exit codes, as `flymc replay`'s: 1 the shrunk path was written and replays, reproducing the
//! violation; 2 an error a user can cause (no such file, a path without a violation, a workload
//! of another system, a path that no longer violates when re-executed), on one line; 3 no
//! shrunk path replays (the target did not repeat itself), nothing written. Ctrl-C stops it
//! between runs, with nothing written, and flymc exits as on any signal.

mod candidates;
mod ddmin;
mod procedure;
mod shape;
mod trial;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Result};
use flymc_core::pathfile::PathFile;
use flymc_core::plan::Plan;
use flymc_core::replay::{replay, ReplayOutcome};
use flymc_core::run::Run;
use flymc_model::{System, Workload};

use crate::commands::options::PathSystemArgs;
use crate::systems;
use procedure::Shrinker;
use shape::Shape;
use trial::{Halt, Trials};

#[derive(clap::Args)]
pub struct ShrinkArgs {
    /// A violating path file written by `flymc run` or `flymc hunt`.
    pub file: PathBuf,
    /// The most re-executions of candidates to make (the checks of the original and of the
    /// result come on top).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_runs: u64,
    #[command(flatten)]
    pub target: PathSystemArgs,
}

pub fn run(args: &ShrinkArgs, folder: Option<&Path>) -> Result<u8> {
    let began = Instant::now();
    let path = PathFile::load(&args.file)?;
    let Some(violation) = &path.violation else {
        bail!(
            "{} records no violation, so there is nothing to shrink; shrink a path that `flymc run` reported as a VIOLATION",
            args.file.display()
        );
    };
    let (system, workload) = args.target.resolve(&path, folder)?;
    println!(
        "shrinking {} ({} / {}, {} events, {} violated)",
        args.file.display(),
        path.system,
        path.workload.name,
        path.events.len(),
        violation.property
    );
    systems::announce(system.as_ref());
    let mut trials = Trials::new(
        system.as_ref(),
        &workload,
        &violation.property,
        args.max_runs as usize,
    );
    let original = reproduce(&path, &args.file, &mut trials)?;
    let log = |line: &str| eprintln!("{line}");
    let mut shrinker = Shrinker::new(&mut trials, original, &log);
    shrinker.shrink()?;
    let (changes, history) = (shrinker.changes, shrinker.history);
    let runs = trials.runs;
    let halt = trials.halt;
    if halt == Some(Halt::Interrupted) {
        // The nodes were killed under the last run, so nothing could be checked by a replay.
        println!("interrupted after {runs} re-executions; nothing written");
        return Ok(2);
    }

    let before = Shape::of(&history[0]);
    let out = shrunk_name(&args.file);
    let Some((kept, checks)) = first_that_replays(&path, system.as_ref(), &workload, &history)?
    else {
        println!(
            "no shrunk path replays, not even the original re-executed: {} does not repeat its runs; nothing written",
            path.system
        );
        return Ok(3);
    };
    let after = Shape::of(&history[kept]);
    kept_file(&path, &workload, &history[kept]).save(&out)?;
    for c in &changes[..kept] {
        println!(
            "  {} ({} -> {} events)",
            c.what, c.before.events, c.after.events
        );
    }
    if kept + 1 < history.len() {
        println!(
            "  (the {} later simplifications did not replay and were left out)",
            history.len() - 1 - kept
        );
    }
    println!("events: {} -> {}", before.events, after.events);
    println!(
        "faults dropped: {} ({} -> {})",
        before.faults.saturating_sub(after.faults),
        before.faults,
        after.faults
    );
    println!(
        "reorderings undone: {} ({} -> {} steps off the default order)",
        before.reorderings.saturating_sub(after.reorderings),
        before.reorderings,
        after.reorderings
    );
    println!(
        "client requests dropped: {} ({} -> {})",
        before.clients.saturating_sub(after.clients),
        before.clients,
        after.clients
    );
    let stopped = match halt {
        Some(Halt::Budget) => format!(", stopped at --max-runs {}", args.max_runs),
        Some(Halt::Interrupted) | None => String::new(),
    };
    println!(
        "re-executions: {} candidates + {} checks, {:.1} s{stopped}",
        runs,
        1 + checks,
        began.elapsed().as_secs_f64()
    );
    let v = history[kept]
        .violation
        .as_ref()
        .expect("every kept run violates");
    println!("shrunk path: {} ({})", out.display(), v);
    println!("replay it: flymc replay {}", out.display());
    Ok(1)
}

/// Re-execute the path as recorded; it must violate the same property again, since every
/// candidate is judged by that.
fn reproduce(path: &PathFile, file: &Path, trials: &mut Trials) -> Result<Run> {
    let plan = Plan::replay(path.event_ids());
    let Some(run) = trials.execute(&plan)? else {
        bail!("interrupted before {} was re-executed", file.display());
    };
    // The check of the original is not a candidate.
    trials.runs -= 1;
    if !trials.violates(&run) {
        let seen = run
            .violation
            .as_ref()
            .map_or("no violation".to_string(), |v| v.to_string());
        bail!(
            "{} does not violate {} when re-executed ({seen}); run `flymc replay {}` to see where it diverges",
            file.display(),
            path.violation.as_ref().map_or("", |v| &v.property),
            file.display()
        );
    }
    Ok(run)
}

/// The newest run of `history` whose path file replays as reproduced, with how many replays
/// that took; `None` if none does.
fn first_that_replays(
    path: &PathFile,
    system: &dyn System,
    workload: &Workload,
    history: &[Run],
) -> Result<Option<(usize, usize)>> {
    let mut checks = 0;
    for (i, run) in history.iter().enumerate().rev() {
        checks += 1;
        match replay(&kept_file(path, workload, run), system, workload)? {
            ReplayOutcome::Reproduced(_) => return Ok(Some((i, checks))),
            other => eprintln!(
                "shrink: the path of {} events does not replay ({}); trying the one before",
                run.steps.len(),
                outcome_word(&other)
            ),
        }
    }
    Ok(None)
}

fn outcome_word(o: &ReplayOutcome) -> &'static str {
    match o {
        ReplayOutcome::Reproduced(_) => "reproduced",
        ReplayOutcome::Matched => "no violation",
        ReplayOutcome::Diverged { .. } => "diverged",
        ReplayOutcome::ViolationDiffers { .. } => "another violation",
    }
}

fn kept_file(path: &PathFile, workload: &Workload, run: &Run) -> PathFile {
    PathFile::from_run(
        workload,
        &format!("{}+shrink", path.strategy),
        path.seed,
        path.path_number,
        run,
    )
}

/// `dir/stem.json` -> `dir/stem.shrunk.json`.
fn shrunk_name(file: &Path) -> PathBuf {
    let stem = file
        .file_stem()
        .map_or("path".into(), |s| s.to_string_lossy().into_owned());
    file.with_file_name(format!("{stem}.shrunk.json"))
}
