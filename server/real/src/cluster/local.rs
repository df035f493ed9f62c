//! Node processes on this machine: node `i` gets 127.0.k.(2+i), a free port, and
//! `<run dir>/n<i>` as its data directory under a fresh per-run directory, private to the user
//! and swept when its flymc is gone ([`super::rundirs`]).
//!
//! With [`LocalBackend::namespaces`], each node starts as the first process of a PID and time
//! namespace of its own, which lets CRIU dump it ([`Backend::dump`]) and restore it, even twice
//! from one image ([`Backend::restore`]). With [`LocalBackend::snapshots`] the backend also keeps
//! whole-cluster snapshots ([`Checkpoints`]): every live node's image, and a copy of the rest of
//! the run directory (crashed nodes' data, the hooks' resume pipes). A restore puts the run
//! directory back at its old path, so the restored processes find their files where they were.
//!
//! `k` is the backend's own loopback block, 127.0.k.0/24, held for the backend's life: no two
//! backends on this machine share one, whether of one flymc (`flymc run --jobs N`: one backend
//! per job) or of flymc processes side by side, so clusters never share an address, nor
//! therefore a port. That matters most with snapshots: a restore re-creates the snapshot's
//! listening ports and connections (address, port, peer address, peer port), which another
//! cluster on the same addresses may have taken while this one was down. The lowest free block
//! is taken; 127.0.0.x when nothing else runs.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use flymc_model::NodeId;

use super::procs;
use super::rundirs::{self, OwnedDir, Root};
use super::silence::Silence;
use super::{Backend, Checkpoints, ClusterError, ExitListener, NodeCommand, NodeSlot};
use crate::snapshot::{criu::cp, Criu, PendingSnapshot, Snapshot, SnapshotError, SnapshotStore};

/// How long a SIGKILLed process may take to disappear before that is an error.
const KILL_TIMEOUT: Duration = Duration::from_secs(10);

/// A loopback block 127.0.k.0/24, held machine-wide for as long as this value lives by a
/// socket bound to an abstract Unix name: one process cannot bind a name twice, so it also
/// keeps backends of this flymc apart, and the kernel frees the name however its holder exits,
/// so no lock file outlives a killed flymc.
struct Block {
    k: u8,
    _name: UnixListener,
}

impl Block {
    /// The lowest block no live backend on this machine holds.
    fn claim() -> Result<Block, ClusterError> {
        (0..=u8::MAX)
            .find_map(|k| Some(Block { k, _name: Block::bind(k)? }))
            .ok_or_else(|| {
                ClusterError(
                    "all 256 loopback blocks 127.0.k.0/24 are in use by flymc clusters on this machine: run fewer --jobs or fewer flymc at once".into(),
                )
            })
    }

    /// Block `k`'s machine-wide name, if no one holds it.
    fn bind(k: u8) -> Option<UnixListener> {
        let name = UnixAddr::from_abstract_name(Block::name(k).as_bytes()).ok()?;
        UnixListener::bind_addr(&name).ok()
    }

    fn name(k: u8) -> String {
        format!("flymc-loopback-127.0.{k}.0")
    }
}

pub struct LocalBackend {
    /// This backend's addresses, claimed by the first run.
    block: Option<Block>,
    /// Where run directories are created (default: [`Root::default_for_runs`]).
    base: Option<PathBuf>,
    keep_dirs: bool,
    /// Start each node in PID and time namespaces of its own (for snapshots).
    namespaces: bool,
    run_dir: Option<PathBuf>,
    /// The current run directory's lock, held while it is in use.
    owned: Option<OwnedDir>,
    slots: Vec<NodeSlot>,
    pids: HashMap<NodeId, u32>,
    /// Cluster snapshots, when asked for and CRIU works here.
    snaps: Option<Kept>,
    /// Crashed nodes' connections, kept open until their peers are told.
    silence: Silence,
}

/// The snapshots a backend keeps.
struct Kept {
    criu: Criu,
    store: SnapshotStore,
    /// The run each snapshot was taken in: its directory and slots.
    runs: HashMap<u64, (PathBuf, Vec<NodeSlot>)>,
}

/// Inside a snapshot's directory: the run directory without the live nodes' own files.
const REST: &str = "run";

impl Default for LocalBackend {
    fn default() -> Self {
        LocalBackend::new()
    }
}

impl LocalBackend {
    pub fn new() -> LocalBackend {
        LocalBackend {
            block: None,
            base: None,
            keep_dirs: false,
            namespaces: false,
            run_dir: None,
            owned: None,
            slots: Vec::new(),
            pids: HashMap::new(),
            snaps: None,
            silence: Silence::default(),
        }
    }

    /// Create run directories in the folder `base` (checked like the default one: this user's,
    /// writable by no one else).
    pub fn in_dir(mut self, base: impl Into<PathBuf>) -> LocalBackend {
        self.base = Some(base.into());
        self
    }

    /// Keep run directories (data and logs) after the run.
    pub fn keep_dirs(mut self, keep: bool) -> LocalBackend {
        self.keep_dirs = keep;
        self
    }

    /// Start each node as the first process of its own PID and time namespace (needs root), so
    /// that it can be dumped and restored. Off by default.
    pub fn namespaces(mut self, on: bool) -> LocalBackend {
        self.namespaces = on;
        self
    }

    /// Keep cluster snapshots ([`Backend::checkpoints`]); implies [`LocalBackend::namespaces`].
    /// Where CRIU is not usable (not built, or `criu check` fails) the backend runs without,
    /// and says so once per flymc process.
    pub fn snapshots(mut self, on: bool) -> LocalBackend {
        self.snaps = None;
        if !on {
            return self;
        }
        let store = usable_criu().and_then(|criu| {
            SnapshotStore::new(None)
                .map(|store| (criu, store))
                .map_err(|e| e.to_string())
        });
        match store {
            Ok((criu, store)) => {
                self.namespaces = true;
                self.snaps = Some(Kept {
                    criu,
                    store,
                    runs: HashMap::new(),
                });
            }
            Err(why) => {
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| {
                    eprintln!(
                        "notice: no cluster snapshots, every path re-executes its prefix: {why}"
                    )
                });
            }
        }
        self
    }

    /// The current run's directory.
    pub fn run_dir(&self) -> Option<&PathBuf> {
        self.run_dir.as_ref()
    }

    fn root(&self) -> Root {
        match &self.base {
            Some(b) => Root::named(b),
            None => Root::default_for_runs(),
        }
    }

    /// Take `dir` as the current run's directory: marked kept, or removed by a Ctrl-C.
    fn own(&mut self, dir: OwnedDir) -> Result<PathBuf, ClusterError> {
        let path = dir.path().to_path_buf();
        if self.keep_dirs {
            dir.mark_kept().map_err(|e| ClusterError(e.to_string()))?;
        } else {
            procs::register_dir(&path);
        }
        self.run_dir = Some(path.clone());
        self.owned = Some(dir);
        Ok(path)
    }
}

fn free_port(ip: Ipv4Addr) -> Result<u16, ClusterError> {
    let l = TcpListener::bind((ip, 0))
        .map_err(|e| ClusterError(format!("cannot find a free port on {ip}: {e}")))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| ClusterError(format!("cannot find a free port on {ip}: {e}")))
}

impl Backend for LocalBackend {
    fn name(&self) -> &'static str {
        "local"
    }

    fn prepare(&mut self, nodes: usize) -> Result<Vec<NodeSlot>, ClusterError> {
        self.stop()?;
        if nodes > 250 {
            return Err(ClusterError(format!(
                "{nodes} nodes do not fit on 127.0.k.2..127.0.k.251"
            )));
        }
        if self.block.is_none() {
            self.block = Some(Block::claim()?);
        }
        let k = self.block.as_ref().map_or(0, |b| b.k);
        let created = rundirs::create(&self.root(), rundirs::RUN_PREFIX)
            .map_err(|e| ClusterError(format!("cannot create a run directory: {e}")))?;
        let dir = self.own(created)?;
        self.slots = (0..nodes)
            .map(|node| {
                let ip = Ipv4Addr::new(127, 0, k, 2 + node as u8);
                let data_dir = dir.join(format!("n{node}"));
                std::fs::create_dir(&data_dir).map_err(|e| {
                    ClusterError(format!("cannot create {}: {e}", data_dir.display()))
                })?;
                Ok(NodeSlot {
                    node,
                    addr: SocketAddr::from((ip, free_port(ip)?)),
                    data_dir,
                    log: dir.join(format!("n{node}.log")),
                })
            })
            .collect::<Result<_, ClusterError>>()?;
        Ok(self.slots.clone())
    }

    fn launch(
        &mut self,
        slot: &NodeSlot,
        incarnation: u32,
        cmd: &NodeCommand,
        on_exit: ExitListener,
    ) -> Result<u32, ClusterError> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&slot.log)
            .map_err(|e| ClusterError(format!("cannot open {}: {e}", slot.log.display())))?;
        let err = log
            .try_clone()
            .map_err(|e| ClusterError(format!("cannot open {}: {e}", slot.log.display())))?;
        let mut c = Command::new(&cmd.program);
        c.args(&cmd.args)
            .envs(cmd.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&slot.data_dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err);
        let node = slot.node;
        let on_exit: procs::OnExit = Box::new(move |how| on_exit(node, incarnation, how));
        let spawned = if self.namespaces {
            procs::spawn_in_namespaces(c, on_exit)
        } else {
            procs::spawn(c, on_exit)
        };
        let pid = spawned.map_err(|e| {
            ClusterError(format!(
                "cannot start node n{node}'s program {}: {e}",
                cmd.program.display()
            ))
        })?;
        self.pids.insert(node, pid);
        Ok(pid)
    }

    fn kill(&mut self, node: NodeId) -> Result<(), ClusterError> {
        let Some(pid) = self.pids.remove(&node) else {
            return Ok(());
        };
        let others: Vec<(NodeId, u32)> = self.pids.iter().map(|(n, p)| (*n, *p)).collect();
        match self.silence.hold(node, pid, &others) {
            Ok(n) => tracing::debug!("n{node} crashes silently: {n} connections held"),
            // The crash still happens, only loud: its peers may see it before flymc says so.
            Err(e) => tracing::warn!(
                "n{node}'s crash tells its peers at once: cannot hold its connections: {e}"
            ),
        }
        procs::kill_and_wait(&[pid], KILL_TIMEOUT)
            .map_err(|e| ClusterError(format!("cannot kill node n{node}: {e}")))
    }

    fn crash_noticed(&mut self, node: NodeId, by: NodeId) {
        let n = self.silence.release(node, by);
        tracing::debug!("n{by} told of n{node}'s crash: {n} held connections closed");
    }

    fn stop(&mut self) -> Result<(), ClusterError> {
        let pids: Vec<u32> = self.pids.drain().map(|(_, p)| p).collect();
        let killed = procs::kill_and_wait(&pids, KILL_TIMEOUT)
            .map_err(|e| ClusterError(format!("cannot stop the cluster: {e}")));
        // After the kill: no live peer hears these resets.
        self.silence.reset_all();
        if let Some(dir) = self.run_dir.take() {
            let owned = self.owned.take();
            match self.keep_dirs {
                true => {
                    tracing::debug!("kept the run directory {}", dir.display());
                    if let Some(o) = owned {
                        o.release();
                    }
                }
                false => match owned {
                    Some(o) => o.remove(),
                    None => {
                        let _ = std::fs::remove_dir_all(&dir);
                    }
                },
            }
            procs::unregister_dir(&dir);
        }
        self.slots.clear();
        killed
    }

    fn pids(&self) -> Vec<(NodeId, u32)> {
        let mut v: Vec<(NodeId, u32)> = self.pids.iter().map(|(n, p)| (*n, *p)).collect();
        v.sort_unstable();
        v
    }

    fn dump(
        &mut self,
        node: NodeId,
        criu: &Criu,
        into: &mut PendingSnapshot,
    ) -> Result<(), ClusterError> {
        self.dump_nodes(criu, into, &[node])
    }

    fn restore(
        &mut self,
        slot: &NodeSlot,
        incarnation: u32,
        criu: &Criu,
        from: &Snapshot,
        on_exit: ExitListener,
    ) -> Result<u32, ClusterError> {
        let node = slot.node;
        if self.pids.contains_key(&node) {
            return Err(ClusterError(format!(
                "node n{node} is running: kill it before restoring it"
            )));
        }
        if self.slots.get(node) != Some(slot) {
            return Err(ClusterError(format!(
                "node n{node}'s slot is not the one of this run: restore into the run the snapshot was taken in"
            )));
        }
        let pid = restore_node(criu, from, node, incarnation, on_exit)?;
        self.pids.insert(node, pid);
        Ok(pid)
    }

    fn checkpoints(&mut self) -> Option<&mut dyn Checkpoints> {
        if self.snaps.is_some() {
            Some(self)
        } else {
            None
        }
    }
}

/// Start a copy of node `node` from its image in `snap` (its files put back first), reporting
/// its exit as incarnation `incarnation`.
fn restore_node(
    criu: &Criu,
    snap: &Snapshot,
    node: NodeId,
    incarnation: u32,
    on_exit: ExitListener,
) -> Result<u32, ClusterError> {
    let image = snap
        .node(node)
        .ok_or_else(|| ClusterError(format!("the snapshot has no image of node n{node}")))?;
    criu.restore(image, Box::new(move |how| on_exit(node, incarnation, how)))
        .map_err(|e| ClusterError(format!("cannot restore node n{node}: {e}")))
}

/// Copy every entry of directory `from` into `to` (which exists), except those in `skip` and
/// the run directory's own lock and mark (each directory has its own).
fn copy_entries(from: &Path, to: &Path, skip: &[&PathBuf]) -> Result<(), String> {
    let entries = std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))?;
    for entry in entries {
        let path = entry
            .map_err(|e| format!("{}: {e}", from.display()))?
            .path();
        let name = path.file_name().expect("a directory entry has a name");
        if skip.contains(&&path) || name == rundirs::LOCK || name == rundirs::KEPT {
            continue;
        }
        cp(&path, &to.join(name)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A scoped thread's result; a panic in it is a bug, passed on.
fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// Can this flymc take cluster snapshots: is CRIU built and does `criu check` pass? If not,
/// why (one line saying what to do).
pub fn snapshots_usable() -> Result<(), String> {
    usable_criu().map(|_| ())
}

/// `criu check` once per flymc process: it takes a while and the answer does not change.
fn usable_criu() -> Result<Criu, String> {
    static CHECKED: OnceLock<Result<Criu, String>> = OnceLock::new();
    CHECKED.get_or_init(Criu::usable).clone()
}

impl Checkpoints for LocalBackend {
    fn dump(&mut self, key: u64, nodes: &[NodeId]) -> Result<bool, ClusterError> {
        let Some(mut kept) = self.snaps.take() else {
            return Ok(false);
        };
        let r = self.dump_run(&mut kept, key, nodes);
        self.snaps = Some(kept);
        r
    }

    fn restore(
        &mut self,
        key: u64,
        nodes: &[(NodeId, u32)],
        on_exit: ExitListener,
    ) -> Result<Option<Vec<NodeSlot>>, ClusterError> {
        let Some(mut kept) = self.snaps.take() else {
            return Ok(None);
        };
        let r = self.restore_run(&mut kept, key, nodes, on_exit);
        self.snaps = Some(kept);
        r
    }

    fn discard(&mut self, key: u64) {
        if let Some(kept) = self.snaps.as_mut() {
            kept.store.remove(u128::from(key));
        }
    }
}

impl LocalBackend {
    fn dump_run(
        &mut self,
        kept: &mut Kept,
        key: u64,
        live: &[NodeId],
    ) -> Result<bool, ClusterError> {
        let Some(dir) = self.run_dir.clone() else {
            return Err(ClusterError("no run to snapshot".into()));
        };
        let mut pending = match kept.store.begin() {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("no snapshot: {e}");
                return Ok(false);
            }
        };
        self.dump_nodes(&kept.criu, &mut pending, live)?;
        // The rest of the run directory: crashed nodes' data and logs, the resume pipes.
        // Nothing writes there now (the live nodes are paused, the others dead).
        let own: Vec<&PathBuf> = live
            .iter()
            .filter_map(|&n| self.slots.get(n))
            .flat_map(|s| [&s.data_dir, &s.log])
            .collect();
        let rest = pending.dir().join(REST);
        std::fs::create_dir(&rest)
            .map_err(|e| ClusterError(format!("cannot create {}: {e}", rest.display())))?;
        copy_entries(&dir, &rest, &own)
            .map_err(|e| ClusterError(format!("cannot snapshot the run: {e}")))?;
        match kept.store.insert(u128::from(key), pending, Vec::new()) {
            Ok(_) => {
                kept.runs.insert(key, (dir, self.slots.clone()));
                Ok(true)
            }
            Err(e @ SnapshotError::TooBig { .. }) => {
                tracing::warn!("no snapshot: {e}");
                Ok(false)
            }
            Err(e) => Err(ClusterError(format!("cannot keep a snapshot: {e}"))),
        }
    }

    fn restore_run(
        &mut self,
        kept: &mut Kept,
        key: u64,
        live: &[(NodeId, u32)],
        on_exit: ExitListener,
    ) -> Result<Option<Vec<NodeSlot>>, ClusterError> {
        let (Some(snap), Some((dir, slots))) = (
            kept.store.get(u128::from(key)),
            kept.runs.get(&key).cloned(),
        ) else {
            kept.runs.remove(&key);
            return Ok(None);
        };
        self.stop()?;
        let io = |e: std::io::Error| ClusterError(format!("cannot restore {}: {e}", dir.display()));
        if dir.exists() {
            // Kept by --keep-dirs: the restored run takes its place.
            std::fs::remove_dir_all(&dir).map_err(io)?;
        }
        let created = rundirs::create_at(&self.root(), &dir)
            .map_err(|e| ClusterError(format!("cannot restore {}: {e}", dir.display())))?;
        self.own(created)?;
        self.slots = slots.clone();
        copy_entries(&snap.dir().join(REST), &dir, &[])
            .map_err(|e| ClusterError(format!("cannot restore the run: {e}")))?;
        // One CRIU per node at once: each node has namespaces, files and ports of its own.
        let restored: Vec<Result<u32, ClusterError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = live
                .iter()
                .map(|&(n, incarnation)| {
                    let (criu, snap, on_exit) = (&kept.criu, &snap, on_exit.clone());
                    scope.spawn(move || restore_node(criu, snap, n, incarnation, on_exit))
                })
                .collect();
            handles.into_iter().map(join).collect()
        });
        let mut failed = None;
        for (&(n, _), r) in live.iter().zip(restored) {
            match r {
                Ok(pid) => {
                    self.pids.insert(n, pid);
                }
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        match failed {
            // The caller stops the run, killing the nodes that did come back.
            Some(e) => Err(e),
            None => Ok(Some(slots)),
        }
    }

    /// Dump the running nodes `live` into `pending`, one CRIU per node at once (the nodes are
    /// paused, and each dump copies only its own node's files).
    fn dump_nodes(
        &self,
        criu: &Criu,
        pending: &mut PendingSnapshot,
        live: &[NodeId],
    ) -> Result<(), ClusterError> {
        if !self.namespaces {
            return Err(ClusterError(
                "the nodes were not started in namespaces of their own: cannot snapshot them"
                    .into(),
            ));
        }
        let mut jobs = Vec::new();
        for &n in live {
            let (Some(pid), Some(slot)) = (self.pids.get(&n), self.slots.get(n)) else {
                return Err(ClusterError(format!("node n{n} is not running")));
            };
            let copies = [slot.data_dir.clone(), slot.log.clone()];
            jobs.push((n, *pid, pending.node_dir(n), copies));
        }
        let dumped: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = jobs
                .iter()
                .map(|(n, pid, dir, copies)| {
                    scope.spawn(move || {
                        criu.dump(*pid, dir, copies)
                            .map(|image| (*n, image))
                            .map_err(|e| ClusterError(format!("cannot snapshot node n{n}: {e}")))
                    })
                })
                .collect();
            handles.into_iter().map(join).collect()
        });
        for d in dumped {
            let (n, image) = d?;
            pending.add(n, image);
        }
        Ok(())
    }
}

impl Drop for LocalBackend {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::*;

    fn ips(slots: &[NodeSlot]) -> Vec<IpAddr> {
        slots.iter().map(|s| s.addr.ip()).collect()
    }

    #[test]
    fn backends_side_by_side_share_no_address_and_no_directory() {
        let base = tempfile::tempdir().unwrap();
        let mut a = LocalBackend::new().in_dir(base.path());
        let mut b = LocalBackend::new().in_dir(base.path());
        let (sa, sb) = (a.prepare(3).unwrap(), b.prepare(3).unwrap());
        let block = |s: &[NodeSlot]| match s[0].addr.ip() {
            IpAddr::V4(ip) => ip.octets()[2],
            IpAddr::V6(_) => unreachable!("loopback v4"),
        };
        assert_ne!(block(&sa), block(&sb));
        assert!(ips(&sa).iter().all(|ip| !ips(&sb).contains(ip)));
        assert!(sa
            .iter()
            .all(|x| sb.iter().all(|y| x.data_dir != y.data_dir)));
        // A backend keeps its block across runs.
        let again = a.prepare(3).unwrap();
        assert_eq!(ips(&again), ips(&sa));
        // A new backend never takes a live one's block.
        drop(b);
        let mut c = LocalBackend::new().in_dir(base.path());
        assert_ne!(block(&c.prepare(3).unwrap()), block(&sa));
    }

    #[test]
    fn a_block_another_process_holds_is_not_claimed() {
        // Another flymc holds the lowest block no one on this machine holds (binding its name
        // is exactly what that process did): this process must not take it too.
        let (k, _other) = (0..=u8::MAX)
            .find_map(|k| Some((k, Block::bind(k)?)))
            .unwrap();
        let base = tempfile::tempdir().unwrap();
        let mut backend = LocalBackend::new().in_dir(base.path());
        let got = backend.prepare(1).unwrap()[0].addr.ip();
        assert_ne!(got, IpAddr::from([127, 0, k, 2]), "took block {k}");
    }
}
