//! CRIU's cache of the kernel's features, where CRIU will not keep it itself.
//!
//! Every CRIU run first probes what the kernel can do (a good part of each dump and restore:
//! docs/BENCHMARKS.md) unless it finds the answers in `/run/criu.kdat`. CRIU writes that
//! file only when `/run` is a tmpfs, which a reboot clears, so the answers are never those of
//! another kernel; on machines whose `/run` is an ordinary file system (this one's) it probes
//! every time. CRIU reads the file wherever it lies, so flymc has CRIU write it into a tmpfs
//! folder (mounted over `/run` in a private mount namespace, for one `criu check`) and installs
//! that fresh copy as `/run/criu.kdat`, once per flymc process: the answers are the running
//! kernel's, and a later kernel gets its own on flymc's next start.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use nix::sys::statfs::{statfs, TMPFS_MAGIC};

use crate::cluster::procs;

/// Where CRIU looks for its cache (CRIU's `KDAT_RUNDIR`).
const RUN: &str = "/run";
const NAME: &str = "criu.kdat";
/// A tmpfs every Linux machine has (flymc's snapshot store lives there too).
const SHM: &str = "/dev/shm";

/// Install a fresh cache of the kernel's features for `criu` at `/run/criu.kdat` when `/run`
/// is not a tmpfs (where it is, CRIU keeps its own). Returns why not, when it could not: then
/// CRIU goes on probing at every run, only slower.
pub fn install(criu: &Path) -> Result<(), String> {
    if statfs(RUN)
        .map_err(|e| format!("{RUN}: {e}"))?
        .filesystem_type()
        == TMPFS_MAGIC
    {
        return Ok(());
    }
    let dir = tempfile::Builder::new()
        .prefix("flymc-criu-kdat-")
        .tempdir_in(SHM)
        .map_err(|e| format!("a folder in {SHM}: {e}"))?;
    // Registered, so that a flymc killed meanwhile leaves neither the folder nor the check
    // behind (the janitor removes and kills what is registered).
    procs::register_dir(dir.path());
    let installed = check_into(criu, dir.path()).and_then(|cache| put(&cache));
    procs::unregister_dir(dir.path());
    installed
}

/// `criu check` with `dir` mounted over `/run`: the cache it writes there.
fn check_into(criu: &Path, dir: &Path) -> Result<std::path::PathBuf, String> {
    let errors = dir.join("check.err");
    let stderr = fs::File::create(&errors).map_err(|e| format!("{}: {e}", errors.display()))?;
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "--", "sh", "-c"])
        .arg(r#"mount --bind "$1" /run && exec "$2" check"#)
        .arg("sh")
        .arg(dir)
        .arg(criu)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    let how = procs::run(cmd).map_err(|e| format!("unshare: {e}"))?;
    let cache = dir.join(NAME);
    if how != "exit status 0" || !cache.is_file() {
        return Err(format!(
            "`criu check` under a tmpfs /run wrote no cache ({how}): {}",
            fs::read_to_string(&errors).unwrap_or_default().trim()
        ));
    }
    Ok(cache)
}

/// Install `cache` as CRIU's.
fn put(cache: &Path) -> Result<(), String> {
    // A rename, so a CRIU another flymc starts meanwhile reads the old answers or the new.
    let tmp = Path::new(RUN).join(format!(".{NAME}.flymc-{}", std::process::id()));
    let target = Path::new(RUN).join(NAME);
    fs::copy(cache, &tmp)
        .and_then(|_| fs::rename(&tmp, &target))
        .map_err(|e| {
            let _ = fs::remove_file(&tmp);
            format!("{}: {e}", target.display())
        })
}
