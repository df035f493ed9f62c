//! Finding workload files: `workloads/<system>/<name>.toml`.

use std::path::{Path, PathBuf};

use flymc_model::{System, Workload, WorkloadError};

use crate::run::{CANNOT_RESTART_PROPERTY, EXITED_PROPERTY, HANG_PROPERTY};

#[derive(Debug, thiserror::Error)]
pub enum FindError {
    #[error("no workloads folder found; run flymc from the flymc checkout, or pass --workloads DIR (or set FLYMC_WORKLOADS)")]
    NoFolder,
    #[error("unknown workload `{name}` for {system}; valid workloads: {valid}")]
    Unknown {
        system: String,
        name: String,
        valid: String,
    },
    #[error("{file} is a workload for `{found}`, not for `{system}`; pass --system {found}")]
    WrongSystem {
        file: PathBuf,
        system: String,
        found: String,
    },
    #[error(
        "{file}: expect = \"{expect}\" names no property of {system}; its properties: {valid}"
    )]
    UnknownProperty {
        file: PathBuf,
        expect: String,
        system: String,
        valid: String,
    },
    #[error(transparent)]
    Workload(#[from] WorkloadError),
}

/// The workloads folder: explicit (the CLI's `--workloads`, or its `$FLYMC_WORKLOADS`), else
/// `workloads/` in the current directory or an ancestor, else next to the executable's
/// checkout, else the source tree.
pub fn folder(explicit: Option<&Path>) -> Result<PathBuf, FindError> {
    if let Some(p) = explicit {
        return Ok(p.into());
    }
    let mut starts: Vec<PathBuf> = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        starts.push(cwd);
    }
    if let Ok(exe) = std::env::current_exe() {
        starts.push(exe);
    }
    for start in &starts {
        for dir in start.ancestors() {
            let candidate = dir.join("workloads");
            if candidate.is_dir() {
                return Ok(candidate);
            }
        }
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workloads");
    if built.is_dir() {
        return Ok(built);
    }
    Err(FindError::NoFolder)
}

/// Workload names available for `system`, sorted.
pub fn names(folder: &Path, system: &str) -> Vec<String> {
    names_in(&folder.join(system))
}

/// The workload names in `dir` (its `*.toml` files), sorted.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            if p.extension()? != "toml" {
                return None;
            }
            Some(p.file_stem()?.to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    names
}

/// Every workload of `system`, by name: for checks that go over a system's whole folder.
pub fn all(folder: &Path, system: &str) -> Result<Vec<Workload>, FindError> {
    names(folder, system)
        .iter()
        .map(|name| load(folder, system, name))
        .collect()
}

/// Load a workload given by name (looked up for `system`) or by path to a `.toml` file.
pub fn load(folder: &Path, system: &str, name_or_path: &str) -> Result<Workload, FindError> {
    load_in(&folder.join(system), system, name_or_path)
}

/// [`load`], a name looked up in `dir` (which holds the workload files directly).
pub fn load_in(dir: &Path, system: &str, name_or_path: &str) -> Result<Workload, FindError> {
    let as_path = Path::new(name_or_path);
    let file = if name_or_path.ends_with(".toml") || as_path.components().count() > 1 {
        as_path.to_path_buf()
    } else {
        let file = dir.join(format!("{name_or_path}.toml"));
        if !file.is_file() {
            let valid = names_in(dir);
            return Err(FindError::Unknown {
                system: system.into(),
                name: name_or_path.into(),
                valid: if valid.is_empty() {
                    "(none)".into()
                } else {
                    valid.join(", ")
                },
            });
        }
        file
    };
    let w = Workload::load(&file)?;
    if w.system != system {
        return Err(FindError::WrongSystem {
            file,
            system: system.into(),
            found: w.system,
        });
    }
    Ok(w)
}

/// Refuse a workload whose `expect` names a property no run of it on `system` checks: a
/// misspelt name would otherwise wait silently for a violation that can never come.
pub fn check_expect(system: &dyn System, w: &Workload) -> Result<(), FindError> {
    let Some(expect) = &w.expect else {
        return Ok(());
    };
    let mut valid: Vec<String> = flymc_model::exceptions::run_properties(system, w)
        .iter()
        .map(|p| p.name().to_string())
        .collect();
    // What the executor reports of nodes that hang or exit, for every system.
    for name in [HANG_PROPERTY, EXITED_PROPERTY, CANNOT_RESTART_PROPERTY] {
        valid.push(name.into());
    }
    if valid.contains(expect) {
        return Ok(());
    }
    let mut seen = std::collections::HashSet::new();
    valid.retain(|n| seen.insert(n.clone()));
    Err(FindError::UnknownProperty {
        file: w.file.clone(),
        expect: expect.clone(),
        system: system.name().into(),
        valid: valid.join(", "),
    })
}
