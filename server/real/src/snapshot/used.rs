//! The files a node's processes only read (jars, a JVM's class-data archive, shared libraries),
//! remembered by identity at a dump and checked before a restore.
//!
//! CRIU reopens a mapped or open file by its path and checks little more than its size. A
//! `flymc setup` run since the dump replaces the jars and the class-data archive (by rename:
//! running nodes keep the old files), and a restored JVM would map the new archive's bytes in
//! place of the classes it had mapped: it crashed in `SymbolTable::lookup_shared`, and the path
//! reported a node that exited on its own. Such a snapshot is refused instead, and the path
//! re-executes. Files a node writes (its data directory, its log, the JVM's perf data) are not
//! checked: flymc copies the node's own files with the snapshot, and the rest are the node's.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What tells a file apart from one put at its path later.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

impl Identity {
    fn of(path: &Path) -> Option<Identity> {
        let m = fs::metadata(path).ok()?;
        Some(Identity {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        })
    }
}

/// The read-only files of one node's process tree, as they were at its dump.
#[derive(Clone, Debug, Default)]
pub struct UsedFiles(BTreeMap<PathBuf, Identity>);

impl UsedFiles {
    /// The regular files that the processes of the tree rooted at `pid` map without writing
    /// through the mapping, or hold open read-only; none under `own` (what the snapshot copies).
    pub fn of_tree(pid: u32, own: &[PathBuf]) -> UsedFiles {
        let mut paths = BTreeSet::new();
        for p in tree(pid) {
            let proc = PathBuf::from(format!("/proc/{p}"));
            if let Ok(maps) = fs::read_to_string(proc.join("maps")) {
                paths.extend(maps.lines().filter_map(read_only_mapping));
            }
            paths.extend(read_only_fds(&proc));
        }
        let files = paths
            .into_iter()
            .filter(|p| !own.iter().any(|o| p.starts_with(o)))
            .filter(|p| !["/proc", "/sys", "/dev"].iter().any(|s| p.starts_with(s)))
            .filter_map(|p| Some((p.clone(), Identity::of(&p)?)))
            .collect();
        UsedFiles(files)
    }

    /// The first file that is gone or another file now, said in a few words.
    pub fn changed(&self) -> Option<String> {
        self.0
            .iter()
            .find_map(|(path, was)| match Identity::of(path) {
                None => Some(format!("{} is gone", path.display())),
                Some(now) if now != *was => Some(format!("{} was replaced", path.display())),
                Some(_) => None,
            })
    }
}

/// `pid` and its descendants, from the parents in `/proc/*/stat`.
pub(crate) fn tree(pid: u32) -> Vec<u32> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(parent) = fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|s| parent_of(&s))
        {
            children.entry(parent).or_default().push(p);
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        out.extend(children.get(&out[i]).into_iter().flatten());
        i += 1;
    }
    out
}

/// The parent pid in a `/proc/PID/stat` line: the field after the state, which follows the
/// command name's closing parenthesis (a name may hold spaces and parentheses itself).
fn parent_of(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The file of a `/proc/PID/maps` line, unless it is written through the mapping (shared and
/// writable), deleted, or not a file.
fn read_only_mapping(line: &str) -> Option<PathBuf> {
    let mut f = line.splitn(6, char::is_whitespace);
    let perms = f.nth(1)?;
    let path = f.nth(3)?.trim_start();
    if !path.starts_with('/') || path.ends_with(" (deleted)") {
        return None;
    }
    let shared_writable = perms.as_bytes().get(1) == Some(&b'w') && perms.ends_with('s');
    (!shared_writable).then(|| PathBuf::from(path))
}

/// Regular files the process holds open read-only (flags in `/proc/PID/fdinfo`).
fn read_only_fds(proc: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(proc.join("fd"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let Ok(target) = fs::read_link(entry.path()) else {
            continue;
        };
        if !target.is_absolute() || target.to_string_lossy().ends_with(" (deleted)") {
            continue;
        }
        let info = fs::read_to_string(proc.join("fdinfo").join(entry.file_name()));
        let flags = info.ok().and_then(|i| {
            i.lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        });
        if flags.is_some_and(|f| f & libc::O_ACCMODE as u32 == libc::O_RDONLY as u32)
            && target.is_file()
        {
            out.push(target);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_name_the_files_read_through_them() {
        let ro = "7f00-7f10 r--p 00000000 fd:01 1234                       /usr/lib/jvm/lib/server/classes.jsa";
        assert_eq!(
            read_only_mapping(ro),
            Some(PathBuf::from("/usr/lib/jvm/lib/server/classes.jsa"))
        );
        let spaced = "7f00-7f10 r-xp 00000000 fd:01 1234   /opt/a dir/lib x.so";
        assert_eq!(
            read_only_mapping(spaced),
            Some(PathBuf::from("/opt/a dir/lib x.so"))
        );
        let perf = "7f00-7f10 rw-s 00000000 fd:01 99     /tmp/hsperfdata_root/1";
        assert_eq!(read_only_mapping(perf), None, "written through the mapping");
        assert_eq!(read_only_mapping("7f00-7f10 rw-p 00000000 00:00 0 "), None);
        assert_eq!(
            read_only_mapping("7f00-7f10 rw-p 00000000 00:00 0   [heap]"),
            None
        );
        assert_eq!(
            read_only_mapping("7f00-7f10 r--p 00000000 fd:01 7   /tmp/x.jsa (deleted)"),
            None
        );
    }

    #[test]
    fn a_parent_is_read_past_a_command_name_with_parentheses() {
        assert_eq!(parent_of("42 (java (x) y) S 7 42 42 0 -1"), Some(7));
        assert_eq!(parent_of("garbage"), None);
    }

    #[test]
    fn a_file_replaced_by_rename_is_told_apart_and_a_kept_one_is_not() {
        let d = tempfile::tempdir().unwrap();
        let (jar, other) = (d.path().join("hook.jar"), d.path().join("hook.jar.tmp"));
        fs::write(&jar, b"one").unwrap();
        // This test process holds the jar open read-only, as a JVM holds its class path.
        let _open = fs::File::open(&jar).unwrap();
        let used = UsedFiles::of_tree(std::process::id(), &[]);
        assert!(used.0.contains_key(&jar), "{used:?}");
        assert_eq!(used.changed(), None);
        // Same size, same name, another file: what `flymc setup` leaves behind.
        fs::write(&other, b"two").unwrap();
        fs::rename(&other, &jar).unwrap();
        let why = used.changed().expect("a replaced file is seen");
        assert!(why.contains("hook.jar was replaced"), "{why}");
        // Files under the node's own directories are the snapshot's to copy, not to check.
        let own = UsedFiles::of_tree(std::process::id(), &[d.path().to_path_buf()]);
        assert!(!own.0.contains_key(&jar));
    }
}
