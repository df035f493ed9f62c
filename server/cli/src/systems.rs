//! The systems flymc knows, by name: the one table. Everything else in flymc reaches a system
//! only through the [`System`] trait.

use flymc_model::System;
use flymc_raft::{Flavor, RaftSystem};
use std::path::{Path, PathBuf};

use flymc_real::system_file::{self, FileSystem, SystemFile};
use flymc_real::{BackendKind, RealOptions};
use flymc_zookeeper::ZookeeperSystem;

/// Every system, in the order `flymc systems` lists them, real ones built for `options`.
pub fn all_with(options: &RealOptions) -> Vec<Box<dyn System>> {
    vec![
        Box::new(flymc_cassandra_sim::CassandraSimSystem),
        Box::new(flymc_raft_sim::RaftSimSystem),
        Box::new(flymc_zk_le_sim::ZkLeSimSystem),
        Box::new(flymc_zab_sim::ZabSimSystem),
        Box::new(RaftSystem::new(Flavor::OpenRaft).options(*options)),
        Box::new(RaftSystem::new(Flavor::AsyncRaft).options(*options)),
        Box::new(ZookeeperSystem::new(*options)),
    ]
}

/// Every system with the default options (local processes, a free port).
pub fn all() -> Vec<Box<dyn System>> {
    all_with(&RealOptions::default())
}

/// The built-in systems, then the user's: `systems/*/system.toml` under the current folder.
pub fn listed() -> Vec<Box<dyn System>> {
    listed_with_errors().0
}

/// A user's system file that does not load, and why.
pub type LeftOut = (PathBuf, FindSystemError);

/// [`listed`], and the user's system files that do not load (they are left out).
pub fn listed_with_errors() -> (Vec<Box<dyn System>>, Vec<LeftOut>) {
    let mut out = all();
    let mut errors = Vec::new();
    for (file, loaded) in user_files(&RealOptions::default()) {
        match loaded {
            Ok(s) if out.iter().all(|b| b.name() != s.name()) => out.push(s),
            Ok(_) => {}
            Err(e) => errors.push((file, e)),
        }
    }
    (out, errors)
}

/// A system file found under the current folder, loaded or why not.
pub type UserFile = (PathBuf, Result<Box<dyn System>, FindSystemError>);

/// `systems/*/system.toml` under the current folder, each loaded for `options` or why not.
fn user_files(options: &RealOptions) -> Vec<UserFile> {
    let cwd = std::env::current_dir().unwrap_or_default();
    system_file::discover(&cwd)
        .into_iter()
        .map(|f| {
            let s = from_file(&f, options);
            (f, s)
        })
        .collect()
}

/// The system a `system.toml` describes, for `options`.
pub fn from_file(file: &Path, options: &RealOptions) -> Result<Box<dyn System>, FindSystemError> {
    let file = if file.is_dir() {
        file.join(system_file::FILE_NAME)
    } else {
        file.to_path_buf()
    };
    let sf = SystemFile::load(&file)?;
    Ok(match sf.rust.as_deref() {
        None => Box::new(FileSystem::new(sf, *options)),
        Some("raft") => Box::new(RaftSystem::from_disk(sf).options(*options)),
        Some("zookeeper") => Box::new(ZookeeperSystem::from_disk(sf, *options)),
        Some(other) => return Err(FindSystemError::Rust(file.clone(), other.into())),
    })
}

/// Whether `--system` names a file (or a folder holding `system.toml`) rather than a name.
fn is_file_arg(name: &str) -> bool {
    name.ends_with(".toml") || name.contains('/')
}

/// The system to re-execute a path file on: `given` (the user's `--system NAME|FILE`), else
/// the path's system by name, as `--system NAME` finds it: a built-in system, or one under
/// `./systems/`. A path file is data, so the system file it records is never run on its word:
/// it is only checked against what the name finds, and a difference is refused with a line
/// saying to pass `--system FILE` (docs/SECURITY.md).
pub fn for_path(
    path: &flymc_core::pathfile::PathFile,
    options: &RealOptions,
    given: Option<&str>,
) -> Result<Box<dyn System>, FindSystemError> {
    let recorded = path.workload.system_file.as_deref();
    let untrusted = |found: Option<PathBuf>| FindSystemError::NotLookedUp {
        system: path.system.clone(),
        recorded: recorded.map(Path::to_path_buf),
        found,
    };
    let system = match given {
        Some(g) => find_with(g, options)?,
        None => find_with(&path.system, options).map_err(|e| match e {
            FindSystemError::Unknown(_) => untrusted(None),
            other => other,
        })?,
    };
    if system.name() != path.system {
        return Err(FindSystemError::OtherSystem {
            given: given.unwrap_or_default().into(),
            found: system.name().into(),
            system: path.system.clone(),
        });
    }
    // A built-in system is the built-in whatever file the path names; a user's is used only
    // when it is the file the path was recorded with, or the one the user named.
    if let (None, Some(recorded), Some(file)) = (given, recorded, system.about().file.clone()) {
        if !same_file(recorded, &file) {
            return Err(untrusted(Some(file)));
        }
    }
    Ok(system)
}

/// A path file's recorded parameters that choose the programs a system runs
/// ([`flymc_model::About::program_params`], e.g. ZooKeeper's `zookeeper_home`) are refused unless the user
/// trusts them on the command line (`--trust-params`): a path file never chooses what runs.
pub fn check_recorded_params(
    path: &flymc_core::pathfile::PathFile,
    system: &dyn System,
    trusted: bool,
) -> anyhow::Result<()> {
    for key in system.about().program_params.iter().filter(|_| !trusted) {
        if let Some(value) = path.workload.params.get(key) {
            anyhow::bail!(
                "this path file sets {key} = {}, which chooses the programs {} runs, and a path file does not choose what flymc runs: check that location, and if you trust it, run again with --trust-params",
                flymc_model::escape::line(&value.to_string()),
                system.name()
            );
        }
    }
    Ok(())
}

/// Whether two paths name one file (both resolved; a missing one is no match).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The line that says which system file a command runs programs from, printed before it
/// starts any (nothing for a built-in system).
pub fn announce(system: &dyn System) {
    if let Some(file) = system.about().file.clone() {
        let file = std::fs::canonicalize(&file).unwrap_or(file);
        println!("system file: {}", file.display());
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FindSystemError {
    #[error(transparent)]
    Unknown(#[from] UnknownSystem),
    #[error(transparent)]
    File(#[from] flymc_real::system_file::SystemFileError),
    #[error("{0}: rust = \"{1}\" names no Rust integration of this flymc; valid: zookeeper, raft")]
    Rust(PathBuf, String),
    #[error("{}", not_looked_up(.system, .recorded.as_deref(), .found.as_deref()))]
    NotLookedUp {
        system: String,
        recorded: Option<PathBuf>,
        found: Option<PathBuf>,
    },
    #[error("--system {given} describes `{found}`, but the path is for `{system}`; pass the system file of `{system}`")]
    OtherSystem {
        given: String,
        found: String,
        system: String,
    },
}

/// [`FindSystemError::NotLookedUp`]'s line.
fn not_looked_up(system: &str, recorded: Option<&Path>, found: Option<&Path>) -> String {
    let here = match found {
        Some(f) => format!("`--system {system}` finds {}", f.display()),
        None => format!("`{system}` is neither built in nor under ./systems/"),
    };
    match recorded {
        Some(r) => format!(
            "the path file says it ran on the system file {}, but {here}; a path file cannot choose what flymc runs: pass --system FILE with the system file you trust",
            r.display()
        ),
        None => format!("{here}; pass --system FILE with the system file of `{system}`"),
    }
}

/// What `flymc setup NAME` does for the systems that need one; a one-line error otherwise.
pub type SetupFn = fn(docker: bool, say: &mut dyn FnMut(&str)) -> Result<(), String>;

/// What `flymc setup` knows, with what it runs: the systems that need one, and `criu` (cluster
/// snapshots).
pub const SETUPS: &[(&str, SetupFn)] = &[
    (flymc_zookeeper::SYSTEM_NAME, |docker, say| {
        flymc_zookeeper::setup::setup(docker, say).map_err(|e| e.to_string())
    }),
    (CRIU, |docker, say| {
        if docker {
            return Err(
                "`flymc setup criu` has no --docker: CRIU snapshots local processes".into(),
            );
        }
        flymc_real::snapshot::setup::setup(say).map_err(|e| e.to_string())
    }),
];

/// The setup that is not a system: CRIU, for cluster snapshots.
pub const CRIU: &str = "criu";

/// A system by name, its nodes on the backend and event server address of `options`.
pub fn find_with(name: &str, options: &RealOptions) -> Result<Box<dyn System>, FindSystemError> {
    if is_file_arg(name) {
        return from_file(Path::new(name), options);
    }
    let mut systems = all_with(options);
    if systems.iter().all(|s| s.name() != name) {
        systems.extend(user_files(options).into_iter().filter_map(|(_, s)| s.ok()));
    }
    let s = pick(name, systems)?;
    if options.backend == BackendKind::Docker && !s.has(flymc_model::Feature::Docker) {
        let docker: Vec<String> = all()
            .iter()
            .filter(|s| s.has(flymc_model::Feature::Docker))
            .map(|s| s.name().to_string())
            .collect();
        return Err(FindSystemError::Unknown(UnknownSystem {
            name: format!("{name} on the docker backend"),
            valid: format!(
                "{} (simulated systems run in memory, the Raft node programs as local processes)",
                docker.join(", ")
            ),
        }));
    }
    Ok(s)
}

#[derive(Debug, thiserror::Error)]
#[error("unknown system `{name}`; valid systems: {valid}")]
pub struct UnknownSystem {
    pub name: String,
    pub valid: String,
}

pub fn find(name: &str) -> Result<Box<dyn System>, FindSystemError> {
    find_with(name, &RealOptions::default())
}

fn pick(name: &str, systems: Vec<Box<dyn System>>) -> Result<Box<dyn System>, UnknownSystem> {
    let valid = systems
        .iter()
        .map(|s| s.name())
        .collect::<Vec<_>>()
        .join(", ");
    systems
        .into_iter()
        .find(|s| s.name() == name)
        .ok_or_else(|| UnknownSystem {
            name: name.into(),
            valid,
        })
}

#[derive(Debug, thiserror::Error)]
pub enum SetsLoadError {
    #[error("cannot read sets file {0}: {1}")]
    Io(String, std::io::Error),
    #[error(transparent)]
    Invalid(#[from] flymc_model::sets::SetsError),
    #[error("cannot start {0} to learn its state variables: {1}")]
    Target(String, flymc_model::TargetError),
}

/// The sets file for a run: `file` if given, else the one the system ships; checked against the
/// variables the system declares (else those of its initial state) and the message kinds it
/// declares.
pub fn load_sets(
    system: &dyn System,
    workload: &flymc_model::Workload,
    file: Option<&std::path::Path>,
) -> Result<Option<flymc_model::sets::SetsFile>, SetsLoadError> {
    use flymc_model::sets::{Known, SetsFile};
    let (label, text) = match file {
        Some(f) => (
            f.display().to_string(),
            flymc_model::bounded::read_text(f, flymc_model::bounded::MAX_SETS_BYTES)
                .map_err(|e| SetsLoadError::Io(f.display().to_string(), e.into()))?,
        ),
        None => match system.about().sets.as_deref() {
            Some(t) => (
                format!("{} (built-in sets file)", system.name()),
                t.to_string(),
            ),
            None => return Ok(None),
        },
    };
    let about = system.about();
    let node_vars = match &about.vars {
        // Declared (every system file does): no cluster starts to learn them.
        Some(vars) => vars.iter().cloned().collect(),
        None => initial_vars(system, workload)?,
    };
    let known = Known {
        node_vars: Some(node_vars),
        message_kinds: about
            .message_kinds
            .as_ref()
            .map(|k| k.iter().cloned().collect()),
    };
    Ok(Some(SetsFile::parse(&label, &text, &known)?))
}

/// The variables of the initial state of a system that does not declare them (a simulation,
/// whose target starts in memory).
fn initial_vars(
    system: &dyn System,
    workload: &flymc_model::Workload,
) -> Result<std::collections::BTreeSet<String>, SetsLoadError> {
    let mut target = system
        .target(workload)
        .map_err(|e| SetsLoadError::Target(system.name().into(), e))?;
    let start = target.start(workload).and_then(|_| target.settle());
    let _ = target.stop();
    let initial = start.map_err(|e| SetsLoadError::Target(system.name().into(), e))?;
    Ok(initial
        .nodes
        .iter()
        .flat_map(|n| n.vars.keys().cloned())
        .collect())
}

/// Where `system`'s workload files are: its own folder for a file-described system, else
/// `<workloads folder>/<name>`.
pub fn workloads_dir(
    system: &dyn System,
    folder: Option<&Path>,
) -> Result<PathBuf, flymc_core::workloads::FindError> {
    match system.about().workloads_dir.clone() {
        Some(d) => Ok(d),
        None => Ok(flymc_core::workloads::folder(folder)?.join(system.name())),
    }
}
