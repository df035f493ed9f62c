//! Where run directories (node data and logs) and snapshot stores live, and how those a gone
//! flymc left behind are removed.
//!
//! Everything goes under one folder per user, `$TMPDIR/flymc-<uid>/` (`/tmp/flymc-<uid>/`;
//! snapshot stores under `/dev/shm/flymc-<uid>/` where that is a memory file system), or the
//! folder `$FLYMC_RUN_ROOT` names. The folder is made mode 0700, and one that exists is used
//! only if it is a real directory of this user that no one else may write to; each directory
//! in it is made 0700 too.
//!
//! Each directory holds a lock file, `flock`ed by the flymc process that owns it for as long as
//! it uses the directory. A directory is created under a temporary name, its lock taken, and
//! only then renamed to its real name, so no one ever sees a directory of a live flymc without
//! its lock held. The first directory a process creates in a folder sweeps that folder: every
//! directory whose lock it can take belongs to a flymc that is gone (SIGKILL, a crash, running
//! out of descriptors) and is removed, except those marked kept (`--keep-run-dirs`). A live
//! run's lock cannot be taken, so runs side by side never remove each other's directories.

use std::collections::HashSet;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use nix::fcntl::{Flock, FlockArg};

/// The environment variable naming the folder to use instead of `$TMPDIR/flymc-<uid>`.
pub const ROOT_ENV: &str = "FLYMC_RUN_ROOT";
/// In every directory: the lock its owner holds.
pub const LOCK: &str = ".flymc-owner";
/// In a directory kept on purpose (`--keep-run-dirs`): it is never swept.
pub const KEPT: &str = ".flymc-kept";
/// A directory being created: renamed to its real name once its lock is held.
const NEW: &str = ".flymc-new-";
/// A half-created directory (its creator died between creating and renaming it) is removed
/// once it is this old.
const NEW_GRACE: Duration = Duration::from_secs(600);
/// The names of directories a sweep looks at.
pub const RUN_PREFIX: &str = "run-";
pub const SNAPSHOTS_PREFIX: &str = "snapshots-";
/// CRIU's log and pidfile of one restore.
pub const CRIU_PREFIX: &str = "criu-";

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RunDirError(pub String);

/// A folder that holds run directories, checked before every use.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Root {
    path: PathBuf,
    /// flymc chose this folder (`flymc-<uid>` under a temporary directory): flymc may tighten
    /// its mode and remove it when it is empty. A folder the user named is only checked.
    ours: bool,
}

fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

impl Root {
    /// The settings' run root (`$FLYMC_RUN_ROOT` for the CLI), else `flymc-<uid>` in `base`.
    pub fn under(base: &Path) -> Root {
        match &crate::settings::settings().run_root {
            Some(p) => Root::named(p.clone()),
            None => Root {
                path: base.join(format!("flymc-{}", euid())),
                ours: true,
            },
        }
    }

    /// Where run directories go by default: `$FLYMC_RUN_ROOT`, else `$TMPDIR/flymc-<uid>`.
    pub fn default_for_runs() -> Root {
        Root::under(&std::env::temp_dir())
    }

    /// A folder the caller chose (`LocalBackend::in_dir`, `$FLYMC_RUN_ROOT`).
    pub fn named(path: impl Into<PathBuf>) -> Root {
        Root {
            path: path.into(),
            ours: false,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Create the folder if it is missing, and refuse it unless it is a directory of this user
    /// that no one else may write to.
    pub fn check(&self) -> Result<(), RunDirError> {
        let p = &self.path;
        let mut b = DirBuilder::new();
        b.mode(0o700).recursive(!self.ours);
        let mut attempts = 0;
        let m = loop {
            attempts += 1;
            match b.create(p) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(RunDirError(format!(
                        "cannot create the run folder {}: {e}",
                        p.display()
                    )))
                }
            }
            match fs::symlink_metadata(p) {
                Ok(m) => break m,
                // Another flymc removed the folder, empty, between the two ([`Root::tidy`]):
                // make it again.
                Err(e) if e.kind() == io::ErrorKind::NotFound && attempts < 5 => continue,
                Err(e) => {
                    return Err(RunDirError(format!(
                        "cannot use the run folder {}: {e}",
                        p.display()
                    )))
                }
            }
        };
        let fix = format!("remove it, or set {ROOT_ENV} to a folder of your own");
        if !m.file_type().is_dir() {
            return Err(RunDirError(format!(
                "refusing the run folder {}: it is not a directory (a symbolic link or a file); {fix}",
                p.display()
            )));
        }
        if m.uid() != euid() {
            return Err(RunDirError(format!(
                "refusing the run folder {}: it belongs to user {}, not to you (user {}); {fix}",
                p.display(),
                m.uid(),
                euid()
            )));
        }
        let mode = m.mode() & 0o7777;
        if mode & 0o022 != 0 {
            return Err(RunDirError(format!(
                "refusing the run folder {}: others may write to it (mode {mode:o}); `chmod 700` it, or set {ROOT_ENV} to a folder of your own",
                p.display()
            )));
        }
        if self.ours && mode & 0o077 != 0 {
            fs::set_permissions(p, fs::Permissions::from_mode(0o700))
                .map_err(|e| RunDirError(format!("cannot make {} private: {e}", p.display())))?;
        }
        Ok(())
    }

    /// Remove the folder if flymc chose it and it is empty (another flymc's directory in it,
    /// or one being created, keeps it).
    pub fn tidy(&self) {
        if self.ours {
            let _ = fs::remove_dir(&self.path);
        }
    }
}

/// A directory this process owns: its lock is held until it is removed or let go.
#[derive(Debug)]
pub struct OwnedDir {
    path: PathBuf,
    root: Root,
    lock: Option<Flock<File>>,
}

impl OwnedDir {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Mark the directory kept: no sweep removes it, also after this process is gone.
    pub fn mark_kept(&self) -> Result<(), RunDirError> {
        fs::write(self.path.join(KEPT), b"kept by --keep-run-dirs\n")
            .map_err(|e| RunDirError(format!("cannot mark {} as kept: {e}", self.path.display())))
    }

    /// Remove the directory (holding its lock to the end), and the folder if now empty.
    pub fn remove(mut self) {
        let _ = fs::remove_dir_all(&self.path);
        self.lock.take();
        self.root.tidy();
    }

    /// Let the directory go as it is (kept).
    pub fn release(mut self) {
        self.lock.take();
    }
}

/// Roots this process used, to tidy on the way out, and those already swept.
fn used() -> &'static Mutex<(HashSet<Root>, HashSet<PathBuf>)> {
    static USED: OnceLock<Mutex<(HashSet<Root>, HashSet<PathBuf>)>> = OnceLock::new();
    USED.get_or_init(Default::default)
}

/// Remove every folder this process used that flymc chose and that is now empty.
pub fn tidy_all() {
    let roots: Vec<Root> = used()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .0
        .iter()
        .cloned()
        .collect();
    for r in roots {
        r.tidy();
    }
}

/// A fresh directory `<prefix>XXXXXX` in `root`, owned by this process. The first one in a
/// folder sweeps it ([`sweep`]) and says how many it removed.
pub fn create(root: &Root, prefix: &str) -> Result<OwnedDir, RunDirError> {
    create_as(root, |tmp| {
        let suffix = tmp
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix(NEW))
            .unwrap_or("x")
            .to_string();
        root.path.join(format!("{prefix}{suffix}"))
    })
}

/// A fresh directory at `path` (in `root`), which must not exist: a run directory put back
/// where it was (a snapshot restore).
pub fn create_at(root: &Root, path: &Path) -> Result<OwnedDir, RunDirError> {
    create_as(root, |_| path.to_path_buf())
}

fn create_as(root: &Root, name: impl Fn(&Path) -> PathBuf) -> Result<OwnedDir, RunDirError> {
    let first = {
        let mut u = used().lock().unwrap_or_else(|p| p.into_inner());
        u.0.insert(root.clone());
        u.1.insert(root.path.clone())
    };
    let mut attempts = 0;
    loop {
        attempts += 1;
        root.check()?;
        if first && attempts == 1 {
            let removed = sweep(&root.path);
            if removed > 0 {
                tracing::info!(removed, root = %root.path.display(), "swept leftover run directories");
                eprintln!(
                    "flymc: removed {removed} leftover run director{} of flymc processes that are gone, from {}",
                    if removed == 1 { "y" } else { "ies" },
                    root.path.display()
                );
            }
        }
        match try_create(root, &name) {
            Ok(d) => return Ok(d),
            // Another flymc removed the (empty) folder in between: make it again.
            Err(e) if e.kind() == io::ErrorKind::NotFound && attempts < 5 => continue,
            Err(e) => {
                return Err(RunDirError(format!(
                    "cannot create a directory in {}: {e}",
                    root.path.display()
                )))
            }
        }
    }
}

fn try_create(root: &Root, name: &impl Fn(&Path) -> PathBuf) -> io::Result<OwnedDir> {
    let tmp = tempfile::Builder::new()
        .prefix(NEW)
        .permissions(fs::Permissions::from_mode(0o700))
        .tempdir_in(&root.path)?
        .keep();
    let locked = lock_and_name(root, &tmp, name);
    if locked.is_err() {
        let _ = fs::remove_dir_all(&tmp);
    }
    locked
}

/// Take the lock of the directory being created at `tmp`, then give it its real name.
fn lock_and_name(
    root: &Root,
    tmp: &Path,
    name: &impl Fn(&Path) -> PathBuf,
) -> io::Result<OwnedDir> {
    let mut f = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(tmp.join(LOCK))?;
    writeln!(f, "{}", std::process::id())?;
    let lock =
        Flock::lock(f, FlockArg::LockExclusiveNonblock).map_err(|(_, e)| io::Error::from(e))?;
    let path = name(tmp);
    if fs::symlink_metadata(&path).is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} exists", path.display()),
        ));
    }
    fs::rename(tmp, &path)?;
    Ok(OwnedDir {
        path,
        root: root.clone(),
        lock: Some(lock),
    })
}

/// Remove the directories in `root` whose owner is gone (their lock is free), except kept
/// ones; and directories half created more than ten minutes ago. Returns how many it removed.
pub fn sweep(root: &Path) -> usize {
    let Ok(entries) = fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let path = e.path();
        let Ok(m) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !m.file_type().is_dir() {
            continue;
        }
        let gone = if name.starts_with(NEW) {
            let old = m
                .modified()
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age > NEW_GRACE);
            old && owner_gone(&path, true)
        } else if [RUN_PREFIX, SNAPSHOTS_PREFIX, CRIU_PREFIX]
            .iter()
            .any(|p| name.starts_with(p))
        {
            owner_gone(&path, false)
        } else {
            false
        };
        if gone && fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Is `dir`'s owner gone (its lock free) and the directory not kept? A directory without a
/// lock file is not flymc's to judge, unless `missing_lock_is_gone` (a half-created one).
fn owner_gone(dir: &Path, missing_lock_is_gone: bool) -> bool {
    if dir.join(KEPT).exists() {
        return false;
    }
    let f = match File::open(dir.join(LOCK)) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return missing_lock_is_gone,
        Err(_) => return false,
    };
    match Flock::lock(f, FlockArg::LockExclusiveNonblock) {
        // Free: its owner is gone. Checked again for the mark: an owner marks its directory
        // kept while it still holds the lock.
        Ok(_held) => !dir.join(KEPT).exists(),
        // Held (EWOULDBLOCK): its owner lives.
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().mode() & 0o777
    }

    #[test]
    fn flymcs_creating_and_tidying_one_folder_at_once_never_fail() {
        // Each removal tidies the shared folder away when it is empty, right when another
        // thread may be between making it and using it.
        let base = tempfile::tempdir().unwrap();
        let root = Root {
            path: base.path().join("flymc-race"),
            ours: true,
        };
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..300 {
                        create(&root, RUN_PREFIX)
                            .unwrap_or_else(|e| panic!("{e}"))
                            .remove();
                    }
                });
            }
        });
    }

    #[test]
    fn directories_are_private_and_locked_while_owned() {
        let base = tempfile::tempdir().unwrap();
        let root = Root::named(base.path().join("runs"));
        let d = create(&root, RUN_PREFIX).unwrap();
        assert_eq!(mode(root.path()), 0o700);
        assert_eq!(mode(d.path()), 0o700);
        assert!(d
            .path()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with(RUN_PREFIX));
        // Owned: no sweep removes it.
        assert_eq!(sweep(root.path()), 0);
        assert!(d.path().is_dir());
        let p = d.path().to_path_buf();
        d.remove();
        assert!(!p.exists());
    }

    #[test]
    fn a_sweep_removes_what_a_gone_owner_left_but_not_what_it_kept() {
        let base = tempfile::tempdir().unwrap();
        let root = Root::named(base.path());
        let (a, b, c) = (
            create(&root, RUN_PREFIX).unwrap(),
            create(&root, SNAPSHOTS_PREFIX).unwrap(),
            create(&root, CRIU_PREFIX).unwrap(),
        );
        let kept = create(&root, RUN_PREFIX).unwrap();
        kept.mark_kept().unwrap();
        let (pa, pb, pc, pk) = (
            a.path().to_path_buf(),
            b.path().to_path_buf(),
            c.path().to_path_buf(),
            kept.path().to_path_buf(),
        );
        // Their owner "dies": the locks go, the directories stay.
        a.release();
        b.release();
        c.release();
        kept.release();
        // Not flymc's: no lock file.
        fs::create_dir(base.path().join("run-foreign")).unwrap();
        assert_eq!(sweep(root.path()), 3);
        assert!(!pa.exists() && !pb.exists() && !pc.exists());
        assert!(pk.is_dir() && base.path().join("run-foreign").is_dir());
    }

    #[test]
    fn a_folder_of_someone_else_or_writable_by_others_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let open = base.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        let e = Root::named(&open).check().unwrap_err().to_string();
        assert!(e.contains("others may write to it (mode 777)"), "{e}");
        let link = base.path().join("link");
        std::os::unix::fs::symlink(base.path(), &link).unwrap();
        let e = Root::named(&link).check().unwrap_err().to_string();
        assert!(e.contains("not a directory"), "{e}");
        if euid() == 0 {
            let theirs = base.path().join("theirs");
            fs::create_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(12345), None).unwrap();
            let e = Root::named(&theirs).check().unwrap_err().to_string();
            assert!(e.contains("belongs to user 12345"), "{e}");
        }
        // flymc's own folder is tightened to 0700.
        let ours = Root {
            path: base.path().join("flymc-x"),
            ours: true,
        };
        fs::create_dir(ours.path()).unwrap();
        fs::set_permissions(ours.path(), fs::Permissions::from_mode(0o755)).unwrap();
        ours.check().unwrap();
        assert_eq!(mode(ours.path()), 0o700);
    }
}
