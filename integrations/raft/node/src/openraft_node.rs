//! `flymc-raft-node`: one node of an openraft 0.9 cluster under flymc. Its `RaftNetwork` is
//! flymc's hook (every AppendEntries, Vote and InstallSnapshot request and every reply is an
//! event flymc delivers when it chooses), its log and vote are kept in memory and written
//! through to the node's data directory (a reboot starts on the same term, vote and log), its
//! state machine is an in-memory list of applied entries. Started by flymc (FLYMC_* in the
//! environment); see the `flymc-raft` crate for the timers and the state it reports.
//!
//! Time: openraft runs on [`FlymcRuntime`], tokio with a clock that only moves when an event
//! is delivered (by more than any timeout, so leases never decide anything flymc did not
//! choose) and sleeps and timeouts that never end by themselves. Its tick, heartbeats and
//! elections are off; the glue triggers elections and heartbeats when flymc enables them.

mod glue;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;
use std::io::Cursor;
use std::ops::{Add, AddAssign, RangeBounds, Sub, SubAssign};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage, RaftStateMachine, Snapshot};
use openraft::{
    AsyncRuntime, BasicNode, Entry as RaftEntry, EntryPayload, LogId, OptionalSend, RaftLogReader,
    RaftSnapshotBuilder, ServerState, SnapshotMeta, StorageError, StoredMembership, Vote,
};
use serde_json::{json, Value};

use glue::{Entry, Observed, RaftLib, Role, Rpc};

const PROGRAM: &str = "flymc-raft-node";

openraft::declare_raft_types!(
    pub Tc:
        D = u64,
        R = u64,
        NodeId = u64,
        Node = BasicNode,
        Entry = RaftEntry<Tc>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = FlymcRuntime,
);

type Raft = openraft::Raft<Tc>;

// ---------------------------------------------------------------------------------------------
// The runtime: tokio tasks and channels, a logical clock, no wall-clock timers.

/// The logical clock in nanoseconds. It starts far from 0 so that openraft may subtract its
/// timeouts from `now` without going below zero.
static CLOCK: AtomicU64 = AtomicU64::new(1 << 50);

/// How far the clock moves per delivered event: more than every configured timeout.
const STEP: Duration = Duration::from_secs(3600);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LogicalInstant(u64);

impl openraft::Instant for LogicalInstant {
    fn now() -> Self {
        LogicalInstant(CLOCK.load(Ordering::SeqCst))
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Add<Duration> for LogicalInstant {
    type Output = LogicalInstant;
    fn add(self, d: Duration) -> LogicalInstant {
        LogicalInstant(self.0.saturating_add(nanos(d)))
    }
}

impl AddAssign<Duration> for LogicalInstant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for LogicalInstant {
    type Output = LogicalInstant;
    fn sub(self, d: Duration) -> LogicalInstant {
        LogicalInstant(self.0.saturating_sub(nanos(d)))
    }
}

impl SubAssign<Duration> for LogicalInstant {
    fn sub_assign(&mut self, d: Duration) {
        *self = *self - d;
    }
}

impl Sub<LogicalInstant> for LogicalInstant {
    type Output = Duration;
    fn sub(self, o: LogicalInstant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(o.0))
    }
}

/// A timeout that never elapses (openraft's RPC timeouts are flymc's business).
#[derive(Debug)]
pub struct NeverElapsed;

impl std::fmt::Display for NeverElapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("timeouts never elapse under flymc")
    }
}

type NoTimeout<R, T> = futures::future::Map<T, fn(R) -> Result<R, NeverElapsed>>;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct FlymcRuntime;

impl AsyncRuntime for FlymcRuntime {
    type JoinError = tokio::task::JoinError;
    type JoinHandle<T: OptionalSend + 'static> = tokio::task::JoinHandle<T>;
    type Sleep = std::future::Pending<()>;
    type Instant = LogicalInstant;
    type TimeoutError = NeverElapsed;
    type Timeout<R, T: Future<Output = R> + OptionalSend> = NoTimeout<R, T>;
    type ThreadLocalRng = rand::rngs::ThreadRng;
    type OneshotSender<T: OptionalSend> = openraft::async_runtime::TokioOneShotSender<T>;
    type OneshotReceiver<T: OptionalSend> = tokio::sync::oneshot::Receiver<T>;
    type OneshotReceiverError = tokio::sync::oneshot::error::RecvError;

    fn spawn<T>(future: T) -> Self::JoinHandle<T::Output>
    where
        T: Future + OptionalSend + 'static,
        T::Output: OptionalSend + 'static,
    {
        tokio::spawn(future)
    }

    fn sleep(_: Duration) -> Self::Sleep {
        std::future::pending()
    }

    fn sleep_until(_: Self::Instant) -> Self::Sleep {
        std::future::pending()
    }

    fn timeout<R, F: Future<Output = R> + OptionalSend>(_: Duration, f: F) -> Self::Timeout<R, F> {
        futures::FutureExt::map(f, Ok as fn(R) -> Result<R, NeverElapsed>)
    }

    fn timeout_at<R, F: Future<Output = R> + OptionalSend>(
        _: Self::Instant,
        f: F,
    ) -> Self::Timeout<R, F> {
        futures::FutureExt::map(f, Ok as fn(R) -> Result<R, NeverElapsed>)
    }

    fn is_panic(e: &Self::JoinError) -> bool {
        e.is_panic()
    }

    fn thread_rng() -> Self::ThreadLocalRng {
        rand::thread_rng()
    }

    fn oneshot<T: OptionalSend>() -> (Self::OneshotSender<T>, Self::OneshotReceiver<T>) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (openraft::async_runtime::TokioOneShotSender(tx), rx)
    }
}

// ---------------------------------------------------------------------------------------------
// Storage: log and vote written through to the data directory; an in-memory state machine.

fn io_err(e: impl std::fmt::Display) -> StorageError<u64> {
    StorageError::from_io_error(
        openraft::ErrorSubject::Store,
        openraft::ErrorVerb::Write,
        std::io::Error::other(e.to_string()),
    )
}

#[derive(Default)]
struct Disk {
    dir: PathBuf,
    vote: Option<Vote<u64>>,
    log: BTreeMap<u64, RaftEntry<Tc>>,
    /// Volatile: what openraft last said is committed.
    committed: Option<LogId<u64>>,
}

impl Disk {
    fn load(dir: PathBuf) -> Result<Disk, String> {
        let read = |name: &str| -> Result<Option<Value>, String> {
            match std::fs::read(dir.join(name)) {
                Ok(b) => serde_json::from_slice(&b)
                    .map(Some)
                    .map_err(|e| format!("{}: {e}", dir.join(name).display())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(format!("{}: {e}", dir.join(name).display())),
            }
        };
        let vote = match read("vote.json")? {
            Some(v) => serde_json::from_value(v).map_err(|e| format!("vote.json: {e}"))?,
            None => None,
        };
        let entries: Vec<RaftEntry<Tc>> = match read("log.json")? {
            Some(v) => serde_json::from_value(v).map_err(|e| format!("log.json: {e}"))?,
            None => Vec::new(),
        };
        Ok(Disk {
            vote,
            log: entries.into_iter().map(|e| (e.log_id.index, e)).collect(),
            committed: None,
            dir,
        })
    }

    /// Write a file whole and atomically (a crash never leaves half of it).
    fn write(&self, name: &str, v: &impl serde::Serialize) -> std::io::Result<()> {
        let tmp = self.dir.join(format!("{name}.tmp"));
        std::fs::write(&tmp, serde_json::to_vec(v)?)?;
        std::fs::rename(&tmp, self.dir.join(name))
    }

    fn save_log(&self) -> std::io::Result<()> {
        let entries: Vec<&RaftEntry<Tc>> = self.log.values().collect();
        self.write("log.json", &entries)
    }
}

#[derive(Clone)]
struct LogStore(Arc<Mutex<Disk>>);

impl LogStore {
    fn disk(&self) -> std::sync::MutexGuard<'_, Disk> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl RaftLogReader<Tc> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<RaftEntry<Tc>>, StorageError<u64>> {
        Ok(self
            .disk()
            .log
            .range(range)
            .map(|(_, e)| e.clone())
            .collect())
    }
}

impl RaftLogStorage<Tc> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<Tc>, StorageError<u64>> {
        let last = self.disk().log.values().last().map(|e| e.log_id);
        Ok(LogState {
            last_purged_log_id: None,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> LogStore {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> Result<(), StorageError<u64>> {
        let mut d = self.disk();
        d.vote = Some(*vote);
        d.write("vote.json", &d.vote).map_err(io_err)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageError<u64>> {
        Ok(self.disk().vote)
    }

    async fn save_committed(&mut self, c: Option<LogId<u64>>) -> Result<(), StorageError<u64>> {
        self.disk().committed = c;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<u64>>, StorageError<u64>> {
        // Not persisted: a rebooted node learns the commit index from the leader again.
        Ok(None)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<Tc>,
    ) -> Result<(), StorageError<u64>>
    where
        I: IntoIterator<Item = RaftEntry<Tc>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let res = {
            let mut d = self.disk();
            for e in entries {
                d.log.insert(e.log_id.index, e);
            }
            d.save_log()
        };
        callback.log_io_completed(
            res.as_ref()
                .map(|_| ())
                .map_err(|e| std::io::Error::other(e.to_string())),
        );
        res.map_err(io_err)
    }

    async fn truncate(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        let mut d = self.disk();
        d.log.split_off(&log_id.index);
        d.save_log().map_err(io_err)
    }

    async fn purge(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        let mut d = self.disk();
        d.log = d.log.split_off(&(log_id.index + 1));
        d.save_log().map_err(io_err)
    }
}

#[derive(Default)]
struct Machine {
    last_applied: Option<LogId<u64>>,
    membership: StoredMembership<u64, BasicNode>,
    applied: Vec<Entry>,
}

#[derive(Clone, Default)]
struct StateMachine(Arc<Mutex<Machine>>);

impl StateMachine {
    fn m(&self) -> std::sync::MutexGuard<'_, Machine> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn entry(e: &RaftEntry<Tc>) -> Entry {
    Entry {
        term: e.log_id.leader_id.term,
        value: match &e.payload {
            EntryPayload::Blank => Value::Null,
            EntryPayload::Normal(v) => json!(v),
            EntryPayload::Membership(_) => json!("config"),
        },
    }
}

impl RaftSnapshotBuilder<Tc> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<Tc>, StorageError<u64>> {
        // The snapshot policy is `Never`; this is only reached if openraft is asked directly.
        Err(io_err("snapshots are not supported by this node"))
    }
}

impl RaftStateMachine<Tc> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<u64>>, StoredMembership<u64, BasicNode>), StorageError<u64>> {
        let m = self.m();
        Ok((m.last_applied, m.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<u64>, StorageError<u64>>
    where
        I: IntoIterator<Item = RaftEntry<Tc>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut m = self.m();
        let mut out = Vec::new();
        for e in entries {
            m.last_applied = Some(e.log_id);
            if let EntryPayload::Membership(mem) = &e.payload {
                m.membership = StoredMembership::new(Some(e.log_id), mem.clone());
            }
            m.applied.push(entry(&e));
            out.push(e.log_id.index);
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> StateMachine {
        self.clone()
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<u64>> {
        Err(io_err("snapshots are not supported by this node"))
    }

    async fn install_snapshot(
        &mut self,
        _: &SnapshotMeta<u64, BasicNode>,
        _: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<u64>> {
        Err(io_err("snapshots are not supported by this node"))
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<Tc>>, StorageError<u64>> {
        Ok(None)
    }
}

// ---------------------------------------------------------------------------------------------
// The network: the hook.

struct Net {
    rpc: Arc<Rpc>,
}

struct Conn {
    rpc: Arc<Rpc>,
    to: usize,
}

impl RaftNetworkFactory<Tc> for Net {
    type Network = Conn;
    async fn new_client(&mut self, target: u64, _: &BasicNode) -> Conn {
        Conn {
            rpc: self.rpc.clone(),
            to: target as usize,
        }
    }
}

fn net_err<E: std::error::Error>(e: glue::RpcFailed) -> RPCError<u64, BasicNode, E> {
    RPCError::Network(NetworkError::new(&e))
}

fn decode<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, glue::RpcFailed> {
    serde_json::from_value(v).map_err(|e| glue::RpcFailed(format!("undecodable reply: {e}")))
}

impl RaftNetwork<Tc> for Conn {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<Tc>,
        _: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        let fields = json!({
            "term": rpc.vote.leader_id.term,
            "entries": rpc.entries.len(),
            "prev_index": rpc.prev_log_id.map(|l| l.index),
            "commit_index": rpc.leader_commit.map(|l| l.index),
        });
        let v = self
            .rpc
            .call(self.to, "append", fields, &rpc)
            .await
            .map_err(net_err)?;
        decode(v).map_err(net_err)
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<Tc>,
        _: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<u64>,
        RPCError<u64, BasicNode, RaftError<u64, InstallSnapshotError>>,
    > {
        let fields = json!({ "term": rpc.vote.leader_id.term });
        let v = self
            .rpc
            .call(self.to, "snapshot", fields, &rpc)
            .await
            .map_err(net_err)?;
        decode(v).map_err(net_err)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        _: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        let fields = json!({
            "term": rpc.vote.leader_id.term,
            "last_index": rpc.last_log_id.map(|l| l.index),
        });
        let v = self
            .rpc
            .call(self.to, "vote", fields, &rpc)
            .await
            .map_err(net_err)?;
        decode(v).map_err(net_err)
    }
}

// ---------------------------------------------------------------------------------------------
// The node.

struct Node {
    raft: Raft,
    log: LogStore,
    sm: StateMachine,
    members: BTreeMap<u64, BasicNode>,
}

impl RaftLib for Node {
    fn observe(&self) -> Observed {
        let m = self.raft.metrics().borrow().clone();
        let d = self.log.disk();
        let role = match m.state {
            ServerState::Leader => Role::Leader,
            ServerState::Candidate => Role::Candidate,
            ServerState::Follower => Role::Follower,
            ServerState::Learner | ServerState::Shutdown => Role::Learner,
        };
        Observed {
            term: m.current_term,
            voted_for: m.vote.leader_id.voted_for().map(|n| n as usize),
            role,
            leader: m.current_leader.map(|n| n as usize),
            log: d.log.values().map(entry).collect(),
            commit: d.committed.map_or(0, |c| c.index + 1),
            applied: self.sm.m().applied.clone(),
        }
    }

    async fn request(&self, name: &str, body: Value) -> Result<Value, String> {
        match name {
            "vote" => glue::call(name, body, |r| self.raft.vote(r)).await,
            "append" => glue::call(name, body, |r| self.raft.append_entries(r)).await,
            "snapshot" => glue::call(name, body, |r| self.raft.install_snapshot(r)).await,
            other => Err(format!("unknown request `{other}`")),
        }
    }

    async fn elect(&self) {
        // A node that never joined a cluster (empty log) starts it: openraft's `initialize`
        // writes the membership and campaigns at once. Later elections are triggered.
        let pristine = self.log.disk().log.is_empty() && self.log.disk().vote.is_none();
        let res = if pristine {
            self.raft
                .initialize(self.members.clone())
                .await
                .map_err(|e| e.to_string())
        } else {
            self.raft.trigger().elect().await.map_err(|e| e.to_string())
        };
        if let Err(e) = res {
            tracing::warn!("election: {e}");
            flymc_hook::error("raft-election", &e);
        }
    }

    async fn heartbeat(&self) {
        if let Err(e) = self.raft.trigger().heartbeat().await {
            tracing::warn!("heartbeat: {e}");
            flymc_hook::error("raft-heartbeat", &e);
        }
    }

    fn propose(&self, value: u64) {
        let raft = self.raft.clone();
        tokio::spawn(async move {
            if let Err(e) = raft.client_write(value).await {
                tracing::warn!("write {value}: {e}");
            }
        });
    }

    async fn time_passes(&self) {
        CLOCK.fetch_add(nanos(STEP), Ordering::SeqCst);
    }
}

async fn run(args: glue::Args, idle: Arc<tokio::sync::Notify>) -> Result<(), String> {
    let hook = flymc_hook::Hook::from_env()
        .await
        .map_err(|e| e.to_string())?;
    let dir = hook
        .config()
        .data_dir
        .clone()
        .ok_or("FLYMC_DATA_DIR is not set: start this node under flymc")?;
    let me = hook.node() as u64;
    let members: BTreeMap<u64, BasicNode> = (0..hook.nodes() as u64)
        .map(|n| (n, BasicNode::default()))
        .collect();
    let config = openraft::Config {
        cluster_name: "flymc".into(),
        // Never reached on the logical clock; they only have to satisfy openraft's checks and
        // stay below the clock's step, so a lease always runs out between two events.
        heartbeat_interval: 1_000,
        election_timeout_min: 2_000,
        election_timeout_max: 3_000,
        enable_tick: false,
        enable_heartbeat: false,
        enable_elect: false,
        snapshot_policy: openraft::SnapshotPolicy::Never,
        ..Default::default()
    }
    .validate()
    .map_err(|e| format!("openraft config: {e}"))?;
    let log = LogStore(Arc::new(Mutex::new(Disk::load(dir)?)));
    let sm = StateMachine::default();
    let rpc = Rpc::new(hook.clone());
    let raft = Raft::new(
        me,
        Arc::new(config),
        Net { rpc: rpc.clone() },
        log.clone(),
        sm.clone(),
    )
    .await
    .map_err(|e| format!("openraft: {e}"))?;
    let node = Node {
        raft,
        log,
        sm,
        members,
    };
    glue::Driver::new(hook, idle, rpc, node, &args)
        .run()
        .await
        .map_err(|e| e.to_string())
}

fn main() {
    glue::main(PROGRAM, false, run)
}
