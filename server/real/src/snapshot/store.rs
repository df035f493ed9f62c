//! A bounded on-disk store of cluster snapshots: each entry holds every node's CRIU images and
//! file copies plus an opaque blob from the caller (the event server's state), under an opaque
//! key (a hash of the path prefix it was taken at).
//!
//! The store keeps its bytes under a cap, evicting the least recently used entries. An entry
//! being restored is shared ([`Arc<Snapshot>`]): evicting it only drops the store's reference,
//! and its files go when the last user lets go. Everything lives in one directory of the
//! user's private run folder ([`crate::cluster::rundirs`]), removed when the store is dropped
//! and by flymc's signal handler, and swept by a later flymc if this one is killed.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use flymc_model::NodeId;

use super::{NodeImage, SnapshotError};
use crate::cluster::procs;
use crate::cluster::rundirs::{self, OwnedDir, Root};

/// What an entry is found by: an opaque hash chosen by the caller.
pub type SnapshotKey = u128;

/// Below this much free space on the store's file system, no new snapshot is taken.
const DISK_RESERVE: u64 = 1 << 30;

pub struct SnapshotStore {
    dir: PathBuf,
    /// The directory's lock, held while the store lives.
    owned: Option<OwnedDir>,
    cap: u64,
    used: u64,
    next: u64,
    /// Logical clock of uses, for least-recently-used eviction.
    clock: u64,
    entries: HashMap<SnapshotKey, (Arc<Snapshot>, u64)>,
    evicted: u64,
}

/// A snapshot being taken: node images go into its directory, then [`SnapshotStore::insert`].
/// Dropped without being inserted, its directory is removed.
pub struct PendingSnapshot {
    dir: PathBuf,
    nodes: BTreeMap<NodeId, NodeImage>,
    kept: bool,
}

/// A stored cluster snapshot.
#[derive(Debug)]
pub struct Snapshot {
    key: SnapshotKey,
    dir: PathBuf,
    bytes: u64,
    nodes: BTreeMap<NodeId, NodeImage>,
    blob: Vec<u8>,
}

fn fail(what: &str, p: &Path, e: std::io::Error) -> SnapshotError {
    SnapshotError::Failed(format!("{what} {}: {e}", p.display()))
}

impl SnapshotStore {
    /// A store in a fresh directory of the user's run folder in
    /// [`SnapshotStore::default_base`] (`flymc-<uid>`, or `$FLYMC_RUN_ROOT`), capped at `cap`
    /// bytes (default: [`SnapshotStore::default_cap`]).
    pub fn new(cap: Option<u64>) -> Result<SnapshotStore, SnapshotError> {
        SnapshotStore::in_root(&Root::under(&SnapshotStore::default_base()), cap)
    }

    /// `$TMPDIR` when the user set it, else `/dev/shm` when it is there (a memory file system:
    /// dumps of JVMs write tens of MiB each, faster there than to the disk behind /tmp), else
    /// the system's temporary directory.
    pub fn default_base() -> PathBuf {
        let shm = Path::new("/dev/shm");
        if std::env::var_os("TMPDIR").is_none() && shm.is_dir() {
            let probe = tempfile::Builder::new()
                .prefix("flymc-probe-")
                .tempdir_in(shm);
            if probe.is_ok() {
                return shm.to_path_buf();
            }
        }
        std::env::temp_dir()
    }

    /// A store in a fresh directory in the folder `base` (checked like the user's run folder).
    pub fn in_dir(base: &Path, cap: Option<u64>) -> Result<SnapshotStore, SnapshotError> {
        SnapshotStore::in_root(&Root::named(base), cap)
    }

    fn in_root(root: &Root, cap: Option<u64>) -> Result<SnapshotStore, SnapshotError> {
        procs::install_cleanup_handler();
        let owned = rundirs::create(root, rundirs::SNAPSHOTS_PREFIX)
            .map_err(|e| SnapshotError::Failed(format!("cannot create a snapshot store: {e}")))?;
        let dir = owned.path().to_path_buf();
        procs::register_dir(&dir);
        let cap = cap.unwrap_or_else(|| SnapshotStore::default_cap(&dir));
        Ok(SnapshotStore {
            dir,
            owned: Some(owned),
            cap,
            used: 0,
            next: 0,
            clock: 0,
            entries: HashMap::new(),
            evicted: 0,
        })
    }

    /// A quarter of the machine's memory (6 GiB on 24 GiB: room for the clusters themselves,
    /// and for the page cache that makes restores fast, or for the store itself where the
    /// temporary directory is a tmpfs), and at most half the free space where `dir` lies.
    pub fn default_cap(dir: &Path) -> u64 {
        (total_memory() / 4).min(free_space(dir) / 2)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// Bytes the stored entries take on disk.
    pub fn used(&self) -> u64 {
        self.used
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries evicted so far to stay under the cap.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    pub fn contains(&self, key: SnapshotKey) -> bool {
        self.entries.contains_key(&key)
    }

    /// Start a snapshot (refused when the disk is nearly full).
    pub fn begin(&mut self) -> Result<PendingSnapshot, SnapshotError> {
        let free = free_space(&self.dir);
        if free < DISK_RESERVE {
            return Err(SnapshotError::Failed(format!(
                "only {} MiB free in {}: no more snapshots",
                free >> 20,
                self.dir.display()
            )));
        }
        self.next += 1;
        let dir = self.dir.join(format!("s{}", self.next));
        fs::create_dir(&dir).map_err(|e| fail("cannot create", &dir, e))?;
        Ok(PendingSnapshot {
            dir,
            nodes: BTreeMap::new(),
            kept: false,
        })
    }

    /// Store `pending` with the caller's `blob` under `key` (replacing an entry with that key),
    /// evicting the least recently used entries to stay under the cap.
    pub fn insert(
        &mut self,
        key: SnapshotKey,
        mut pending: PendingSnapshot,
        blob: Vec<u8>,
    ) -> Result<Arc<Snapshot>, SnapshotError> {
        let bytes = disk_usage(&pending.dir) + blob.len() as u64;
        if bytes > self.cap {
            return Err(SnapshotError::TooBig {
                size: bytes,
                cap: self.cap,
            });
        }
        self.remove(key);
        while self.used + bytes > self.cap {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| *k)
            else {
                break;
            };
            self.remove(oldest);
            self.evicted += 1;
        }
        pending.kept = true;
        let snap = Arc::new(Snapshot {
            key,
            dir: pending.dir.clone(),
            bytes,
            nodes: std::mem::take(&mut pending.nodes),
            blob,
        });
        self.clock += 1;
        self.entries.insert(key, (snap.clone(), self.clock));
        self.used += bytes;
        Ok(snap)
    }

    /// The entry under `key`, now the most recently used.
    pub fn get(&mut self, key: SnapshotKey) -> Option<Arc<Snapshot>> {
        self.clock += 1;
        let (snap, used) = self.entries.get_mut(&key)?;
        *used = self.clock;
        Some(snap.clone())
    }

    /// Drop the entry under `key` (its files go once no one restores from it).
    pub fn remove(&mut self, key: SnapshotKey) {
        if let Some((snap, _)) = self.entries.remove(&key) {
            self.used -= snap.bytes;
        }
    }
}

impl Drop for SnapshotStore {
    fn drop(&mut self) {
        self.entries.clear();
        match self.owned.take() {
            Some(o) => o.remove(),
            None => {
                let _ = fs::remove_dir_all(&self.dir);
            }
        }
        procs::unregister_dir(&self.dir);
    }
}

impl PendingSnapshot {
    /// Where this snapshot's files go.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where node `node`'s image goes ([`super::Criu::dump`] into it, then
    /// [`PendingSnapshot::add`]).
    pub fn node_dir(&self, node: NodeId) -> PathBuf {
        self.dir.join(format!("n{node}"))
    }

    /// Node `node`'s image, dumped into [`PendingSnapshot::node_dir`].
    pub fn add(&mut self, node: NodeId, image: NodeImage) {
        self.nodes.insert(node, image);
    }

    /// The nodes dumped so far.
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.nodes.keys().copied()
    }
}

impl Drop for PendingSnapshot {
    fn drop(&mut self) {
        if !self.kept {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

impl Snapshot {
    pub fn key(&self) -> SnapshotKey {
        self.key
    }

    /// The snapshot's own directory: node images in `n<i>/`, and whatever else the caller put
    /// under [`PendingSnapshot::dir`].
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What the caller stored with the images.
    pub fn blob(&self) -> &[u8] {
        &self.blob
    }

    /// Bytes on disk, with the blob.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn node(&self, node: NodeId) -> Option<&NodeImage> {
        self.nodes.get(&node)
    }

    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.nodes.keys().copied()
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Bytes a directory tree takes on disk (allocated blocks: sparse files count what they hold).
fn disk_usage(p: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = fs::symlink_metadata(p) else {
        return 0;
    };
    let own = m.blocks() * 512;
    if !m.is_dir() {
        return own;
    }
    own + fs::read_dir(p)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| disk_usage(&e.path()))
        .sum::<u64>()
}

fn free_space(dir: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return 0;
    };
    // SAFETY: statvfs fills a zeroed struct from a NUL-terminated path.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return 0;
    }
    s.f_bavail as u64 * s.f_frsize as u64
}

fn total_memory() -> u64 {
    // SAFETY: sysinfo fills a zeroed struct.
    let mut s: libc::sysinfo = unsafe { std::mem::zeroed() };
    if unsafe { libc::sysinfo(&mut s) } != 0 {
        return 0;
    }
    s.totalram as u64 * s.mem_unit as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries of a store's directory, besides its lock.
    fn entries(dir: &Path) -> usize {
        fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name() != rundirs::LOCK)
            .count()
    }

    /// A pending snapshot holding `bytes` of real (non-sparse) data.
    fn pending(store: &mut SnapshotStore, bytes: usize) -> PendingSnapshot {
        let p = store.begin().unwrap();
        fs::write(p.dir().join("data"), vec![7u8; bytes]).unwrap();
        p
    }

    #[test]
    fn evicts_the_least_recently_used_entry_at_the_cap() {
        let base = tempfile::tempdir().unwrap();
        let mut store = SnapshotStore::in_dir(base.path(), Some(3 * 64 * 1024)).unwrap();
        let one = disk_usage(pending(&mut store, 56 * 1024).dir());
        assert!(one < 64 * 1024, "a 56 KiB entry takes {one} bytes");
        for key in 1..=3 {
            let p = pending(&mut store, 56 * 1024);
            store.insert(key, p, vec![key as u8]).unwrap();
        }
        assert_eq!(store.len(), 3);
        assert!(store.used() <= store.cap());
        // Key 1 becomes the most recent; inserting a fourth must evict key 2.
        assert_eq!(store.get(1).unwrap().blob(), &[1u8]);
        let p = pending(&mut store, 56 * 1024);
        let four = store.insert(4, p, vec![4]).unwrap();
        assert!(store.contains(1) && !store.contains(2) && store.contains(3));
        assert!(store.contains(4) && store.evicted() == 1);
        assert!(store.used() <= store.cap());
        // An entry in use survives its eviction until it is let go.
        let dir4 = four.dir.clone();
        for key in 5..=7 {
            let p = pending(&mut store, 56 * 1024);
            store.insert(key, p, vec![]).unwrap();
        }
        assert!(!store.contains(4) && dir4.is_dir());
        drop(four);
        assert!(!dir4.exists());
        // Only what is stored is on disk: three entries.
        assert_eq!(entries(store.dir()), 3);
    }

    #[test]
    fn refuses_an_entry_larger_than_the_cap_and_leaves_nothing() {
        let base = tempfile::tempdir().unwrap();
        let mut store = SnapshotStore::in_dir(base.path(), Some(16 * 1024)).unwrap();
        let p = pending(&mut store, 64 * 1024);
        let err = store.insert(9, p, vec![]).unwrap_err();
        assert!(matches!(err, SnapshotError::TooBig { .. }), "{err}");
        assert!(store.is_empty());
        assert_eq!(entries(store.dir()), 0);
        let dir = store.dir().to_path_buf();
        drop(store);
        assert!(!dir.exists());
        assert_eq!(fs::read_dir(base.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_default_cap_fits_memory_and_disk() {
        let base = tempfile::tempdir().unwrap();
        let cap = SnapshotStore::default_cap(base.path());
        assert!(cap > 0);
        assert!(cap <= total_memory() / 4);
        assert!(cap <= free_space(base.path()) / 2);
    }
}
