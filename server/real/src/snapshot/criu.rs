//! The CRIU binary `flymc setup criu` built: check it, dump one node's process tree, restore it.
//!
//! A dump leaves the node running (`--leave-running`), keeps its established TCP connections
//! (`--tcp-established`; loopback peers restore fine) and does not lock the network (nothing
//! else must stop). Not locking it means a segment in flight between two nodes at the dump can be
//! acknowledged to a side already dumped and so be lost on restore: flymc dumps only quiescent
//! nodes, whose intercepted traffic is held in the hook, not in the socket. The node's data
//! directory and log are copied by a post-dump action script, which CRIU runs while the processes are still frozen: CRIU restores files open for writing
//! only at their dump-time size, so these copies go back in place before the restore. A restore
//! starts the tree next to CRIU (`--restore-sibling`), that is as a child of flymc's spawner
//! thread, where it is reaped, killed and reported like a node flymc launched.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::kdat;
use super::used::UsedFiles;
use super::{cache_dir, SnapshotError};
use crate::cluster::procs;
use crate::cluster::rundirs::{self, Root};

/// The CRIU binary, usable (see [`Criu::usable`]) or not yet checked.
#[derive(Clone, Debug)]
pub struct Criu {
    bin: PathBuf,
}

/// One node's checkpoint: CRIU's images and the copies of the node's files.
#[derive(Clone, Debug)]
pub struct NodeImage {
    dir: PathBuf,
    /// The copied paths, as they were named when dumped; copy `k` is `dir/files/k`.
    copies: Vec<PathBuf>,
    /// The files the node only read, which a restore needs unchanged.
    used: UsedFiles,
}

fn failed<T>(m: impl Into<String>) -> Result<T, SnapshotError> {
    Err(SnapshotError::Failed(m.into()))
}

impl Criu {
    /// Where `flymc setup criu` installs CRIU.
    pub fn path() -> PathBuf {
        cache_dir().join("criu").join("criu")
    }

    /// The binary `flymc setup criu` built (not yet checked).
    pub fn find() -> Result<Criu, SnapshotError> {
        let bin = Criu::path();
        if bin.is_file() {
            Ok(Criu { bin })
        } else {
            Err(SnapshotError::NotBuilt(bin))
        }
    }

    /// The binary at `bin` (not yet checked).
    pub fn at(bin: impl Into<PathBuf>) -> Criu {
        Criu { bin: bin.into() }
    }

    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// The version CRIU reports ("4.1.1").
    pub fn version(&self) -> Result<String, SnapshotError> {
        let out = Command::new(&self.bin)
            .arg("--version")
            .output()
            .map_err(|e| SnapshotError::Unusable(format!("{}: {e}", self.bin.display())))?;
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("Version:").map(|v| v.trim().to_string()))
            .ok_or_else(|| {
                SnapshotError::Unusable(format!("{} --version says no version", self.bin.display()))
            })
    }

    /// `criu check`: can CRIU checkpoint and restore on this kernel, as this user?
    pub fn check(&self) -> Result<(), SnapshotError> {
        let out = Command::new(&self.bin)
            .arg("check")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| SnapshotError::Unusable(format!("{}: {e}", self.bin.display())))?;
        if out.status.success() {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&out.stderr).to_string()
            + &String::from_utf8_lossy(&out.stdout);
        let why = first_error(&text).unwrap_or_else(|| out.status.to_string());
        // SAFETY: plain syscall.
        let root = unsafe { libc::geteuid() } == 0;
        Err(SnapshotError::Unusable(format!(
            "`{} check` fails: {why}{}",
            self.bin.display(),
            if root { "" } else { " (CRIU needs root)" }
        )))
    }

    /// The built CRIU if it passes `criu check`; otherwise the one line that says why not (the
    /// caller falls back to re-executing prefixes).
    pub fn usable() -> Result<Criu, String> {
        let criu = Criu::find().map_err(|e| e.to_string())?;
        // First, so that the check below already reads the cache instead of probing again.
        if let Err(why) = kdat::install(&criu.bin) {
            tracing::debug!("CRIU will probe the kernel at every run: {why}");
        }
        criu.check().map_err(|e| e.to_string())?;
        Ok(criu)
    }

    /// Checkpoint the process tree rooted at `pid` (the first process of its own PID namespace)
    /// into `dir` (created; must not exist), leaving it running, and copy each of `copy` (files
    /// or directories; a missing one is remembered as missing) while it is frozen.
    pub fn dump(&self, pid: u32, dir: &Path, copy: &[PathBuf]) -> Result<NodeImage, SnapshotError> {
        let io_fail = |what: &Path, e: io::Error| {
            SnapshotError::Failed(format!("cannot create {}: {e}", what.display()))
        };
        let images = dir.join("criu");
        let files = dir.join("files");
        fs::create_dir_all(&images).map_err(|e| io_fail(&images, e))?;
        fs::create_dir(&files).map_err(|e| io_fail(&files, e))?;
        let script = dir.join("post-dump.sh");
        fs::write(&script, post_dump_script(copy, &files)).map_err(|e| io_fail(&script, e))?;
        set_mode(&script, 0o755).map_err(|e| io_fail(&script, e))?;
        // The node rests (flymc dumps quiescent nodes): its files are the ones it will need.
        let used = UsedFiles::of_tree(pid, copy);
        let mut c = Command::new(&self.bin);
        c.arg("dump")
            .args(["-t", &pid.to_string(), "-D"])
            .arg(&images)
            .args(["-o", "dump.log"])
            .args(["--leave-running", "--tcp-established"])
            .args(["--network-lock", "skip", "--action-script"])
            .arg(&script);
        self.run(
            c,
            &images.join("dump.log"),
            &format!("criu dump of pid {pid}"),
        )?;
        Ok(NodeImage {
            dir: dir.to_path_buf(),
            copies: copy.to_vec(),
            used,
        })
    }

    /// Put `image`'s copied files back in place and restore its process tree in fresh
    /// namespaces, as flymc's child. Returns the restored root's pid; `on_exit` is told how it
    /// ended, as for a launched node.
    pub fn restore(
        &self,
        image: &NodeImage,
        on_exit: Box<dyn FnOnce(String) + Send>,
    ) -> Result<u32, SnapshotError> {
        if let Some(why) = image.used.changed() {
            return failed(format!(
                "{why} since the snapshot (did `flymc setup` run?): the restored node would read another file's bytes"
            ));
        }
        image.put_back()?;
        // CRIU's log and pidfile: private to this restore (an image may be restored again).
        // In the per-user folder, locked: a flymc killed mid-restore leaves it to the next
        // run's sweep.
        let work = rundirs::create(&Root::default_for_runs(), rundirs::CRIU_PREFIX)
            .map_err(|e| SnapshotError::Failed(format!("CRIU's work directory: {}", e.0)))?;
        procs::register_dir(work.path());
        let pidfile = work.path().join("pid");
        let mut c = Command::new(&self.bin);
        c.arg("restore")
            .arg("-D")
            .arg(image.dir.join("criu"))
            .arg("-W")
            .arg(work.path())
            .args(["-o", "restore.log", "--pidfile"])
            .arg(&pidfile)
            .args([
                "--restore-detached",
                "--restore-sibling",
                "--tcp-established",
            ]);
        let restored = self
            .run(
                c,
                &work.path().join("restore.log"),
                &format!("criu restore of {}", image.dir.display()),
            )
            .and_then(|()| {
                fs::read_to_string(&pidfile)
                    .ok()
                    .and_then(|t| t.trim().parse::<u32>().ok())
                    .ok_or_else(|| {
                        SnapshotError::Failed(format!(
                            "criu restore of {} wrote no pid",
                            image.dir.display()
                        ))
                    })
            });
        procs::unregister_dir(work.path());
        work.remove();
        let pid = restored?;
        procs::adopt(pid, on_exit)
            .map_err(|e| SnapshotError::Failed(format!("restored pid {pid}: {e}")))?;
        Ok(pid)
    }

    /// Run CRIU as a registered process (Ctrl-C kills it); on failure, the first error of its
    /// log.
    fn run(&self, mut c: Command, log: &Path, what: &str) -> Result<(), SnapshotError> {
        c.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let how = procs::run(c).map_err(|e| {
            SnapshotError::Failed(format!("cannot run {}: {e}", self.bin.display()))
        })?;
        if how == "exit status 0" {
            return Ok(());
        }
        let text = fs::read_to_string(log).unwrap_or_default();
        let why = first_error(&text).unwrap_or_else(|| format!("no error in {}", log.display()));
        failed(format!("{what} failed ({how}): {why}"))
    }
}

impl NodeImage {
    /// The node's directory in a snapshot: CRIU's images in `criu/`, the copies in `files/`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The paths copied at the dump, which a restore puts back.
    pub fn copies(&self) -> &[PathBuf] {
        &self.copies
    }

    /// Replace each copied path with its dump-time copy (or remove it if it was missing then).
    fn put_back(&self) -> Result<(), SnapshotError> {
        for (k, orig) in self.copies.iter().enumerate() {
            let saved = self.dir.join("files").join(k.to_string());
            remove_any(orig).map_err(|e| {
                SnapshotError::Failed(format!("cannot replace {}: {e}", orig.display()))
            })?;
            if !saved.exists() {
                continue;
            }
            if !orig.parent().is_some_and(Path::is_dir) {
                return failed(format!(
                    "cannot put {} back: its directory is gone (restore into the run the snapshot was taken in)",
                    orig.display()
                ));
            }
            cp(&saved, orig)?;
        }
        Ok(())
    }
}

/// `cp -a`: keeps modes, times, symlinks, named pipes and holes (preallocated logs stay sparse).
pub(crate) fn cp(from: &Path, to: &Path) -> Result<(), SnapshotError> {
    let out = Command::new("cp")
        .args(["-a", "--reflink=auto", "--"])
        .arg(from)
        .arg(to)
        .output()
        .map_err(|e| SnapshotError::Failed(format!("cannot run cp: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        failed(format!(
            "cannot copy {} to {}: {}",
            from.display(),
            to.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn remove_any(p: &Path) -> io::Result<()> {
    let r = match fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(p),
        Ok(_) => fs::remove_file(p),
        Err(e) => Err(e),
    };
    match r {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        r => r,
    }
}

fn set_mode(p: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(mode))
}

/// CRIU runs the action script with `CRTOOLS_SCRIPT_ACTION` set; `post-dump` comes while the
/// dumped tasks are still frozen, before `--leave-running` lets them go on.
fn post_dump_script(copy: &[PathBuf], files: &Path) -> String {
    let mut s =
        String::from("#!/bin/sh\n[ \"$CRTOOLS_SCRIPT_ACTION\" = post-dump ] || exit 0\nset -e\n");
    for (k, p) in copy.iter().enumerate() {
        let (from, to) = (quote(p), quote(&files.join(k.to_string())));
        s += &format!("if [ -e {from} ]; then cp -a --reflink=auto -- {from} {to}; fi\n");
    }
    s
}

fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// CRIU's first "Error (...)" line, else the last non-empty line. CRIU logs a failure to raise
/// its own open-file limit as an error and goes on (without CAP_SYS_RESOURCE): not a reason.
fn first_error(text: &str) -> Option<String> {
    text.lines()
        .filter(|l| !l.contains("Can't setup RLIMIT_NOFILE"))
        .find(|l| l.starts_with("Error (") || l.contains(" Error ("))
        .or_else(|| text.lines().rev().find(|l| !l.trim().is_empty()))
        .map(|l| l.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_copies_only_on_post_dump_and_quotes_paths() {
        let s = post_dump_script(
            &[PathBuf::from("/r/n0"), PathBuf::from("/r/it's.log")],
            Path::new("/s/files"),
        );
        assert!(s.contains("[ \"$CRTOOLS_SCRIPT_ACTION\" = post-dump ] || exit 0"));
        assert!(s.contains("cp -a --reflink=auto -- '/r/n0' '/s/files/0'"));
        assert!(s.contains(r"'/r/it'\''s.log'"));
    }

    #[test]
    fn the_first_error_line_is_the_reason() {
        let log = "Error (criu/util.c:1533): rlimit: Can't setup RLIMIT_NOFILE for self\nError (criu/sk-inet.c:1): inet: Can't bind\nError (criu/cr-restore.c:2): later\n";
        assert_eq!(
            first_error(log).as_deref(),
            Some("Error (criu/sk-inet.c:1): inet: Can't bind")
        );
        assert_eq!(first_error("a\nb\n\n").as_deref(), Some("b"));
    }
}
