//! `flymc-asyncraft-node`: one node of an async-raft 0.6.1 cluster under flymc, the last
//! release of openraft's predecessor, with its known bug: a follower takes the leader's commit
//! index before checking that its log matches the leader's, so a heartbeat from a new leader
//! makes it apply its own divergent entries (fixed in openraft 0.6.3). Its `RaftNetwork` is
//! flymc's hook, its log and hard state are kept in memory and written through to the node's
//! data directory, its state machine is an in-memory list of applied entries.
//!
//! Time: async-raft uses tokio's clock directly, so the node runs on a paused tokio clock whose
//! automatic advance is switched off (a blocking task that never ends keeps it off); only the
//! glue moves it. Every delivered event moves it by [`STEP`], just past the election timeout
//! minimum so that async-raft's "heard from a leader recently" vote refusal never depends on
//! how fast flymc was; an election timeout moves it past every election deadline, a heartbeat
//! by one heartbeat interval. The election deadline is drawn from
//! [`ELECTION_MIN`]..[`ELECTION_MAX`], so the steps of a run (milliseconds) reach one only with
//! a probability below 1e-9.

mod glue;

use std::collections::{BTreeMap, HashSet};
use std::io::Cursor;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_raft::async_trait::async_trait;
use async_raft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, ClientWriteRequest, Entry as RaftEntry,
    EntryPayload, InstallSnapshotRequest, InstallSnapshotResponse, MembershipConfig, VoteRequest,
    VoteResponse,
};
use async_raft::storage::{CurrentSnapshotData, HardState, InitialState};
use async_raft::{AppData, AppDataResponse, NodeId, RaftNetwork, RaftStorage, State};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use glue::{Entry, Observed, RaftLib, Role, Rpc};

const PROGRAM: &str = "flymc-asyncraft-node";

const ELECTION_MIN: u64 = 10;
const ELECTION_MAX: u64 = 1 << 40;
/// Also async-raft's timeout for an AppendEntries request.
const HEARTBEAT: u64 = 1 << 41;
/// Per delivered event: past the election timeout minimum.
const STEP: Duration = Duration::from_millis(ELECTION_MIN + 1);
/// An election timeout: past a rebooted node's first deadline (30 s more) and every other.
const ELECTION_TIMEOUT: Duration = Duration::from_millis(30_000 + ELECTION_MAX + 1);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Write {
    pub value: u64,
}

impl AppData for Write {}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Applied;

impl AppDataResponse for Applied {}

type Raft = async_raft::Raft<Write, Applied, Net, Store>;

// ---------------------------------------------------------------------------------------------
// Storage.

#[derive(Default)]
struct Disk {
    dir: PathBuf,
    hs: Option<HardState>,
    log: BTreeMap<u64, RaftEntry<Write>>,
    /// The state machine (volatile): what was applied at each index, and through which index.
    applied: BTreeMap<u64, Entry>,
    /// The term of the entry last written at each index, kept when the log is truncated
    /// (volatile): async-raft applies from entries it holds in memory, so it may apply an
    /// index its log no longer has; what it applied there is the entry last written there.
    written: BTreeMap<u64, u64>,
}

impl Disk {
    fn load(dir: PathBuf) -> Result<Disk, String> {
        let read = |name: &str| -> Result<Option<Vec<u8>>, String> {
            match std::fs::read(dir.join(name)) {
                Ok(b) => Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(format!("{}: {e}", dir.join(name).display())),
            }
        };
        let hs = match read("hard_state.json")? {
            Some(b) => serde_json::from_slice(&b).map_err(|e| format!("hard_state.json: {e}"))?,
            None => None,
        };
        let entries: Vec<RaftEntry<Write>> = match read("log.json")? {
            Some(b) => serde_json::from_slice(&b).map_err(|e| format!("log.json: {e}"))?,
            None => Vec::new(),
        };
        Ok(Disk {
            hs,
            log: entries.iter().map(|e| (e.index, e.clone())).collect(),
            written: entries.iter().map(|e| (e.index, e.term)).collect(),
            applied: BTreeMap::new(),
            dir,
        })
    }

    /// Write a file whole and atomically (a crash never leaves half of it).
    fn write(&self, name: &str, v: &impl Serialize) -> anyhow::Result<()> {
        let tmp = self.dir.join(format!("{name}.tmp"));
        std::fs::write(&tmp, serde_json::to_vec(v)?)?;
        std::fs::rename(&tmp, self.dir.join(name))?;
        Ok(())
    }

    /// The term of what the state machine applies at `index`.
    fn applied_term(&self, index: u64) -> u64 {
        self.log
            .get(&index)
            .map(|e| e.term)
            .or_else(|| self.written.get(&index).copied())
            .unwrap_or(0)
    }

    fn save_log(&self) -> anyhow::Result<()> {
        let entries: Vec<&RaftEntry<Write>> = self.log.values().collect();
        self.write("log.json", &entries)
    }

    fn membership(&self, id: NodeId) -> MembershipConfig {
        self.log
            .values()
            .rev()
            .find_map(|e| match &e.payload {
                EntryPayload::ConfigChange(c) => Some(c.membership.clone()),
                _ => None,
            })
            .unwrap_or_else(|| MembershipConfig::new_initial(id))
    }
}

fn entry(e: &RaftEntry<Write>) -> Entry {
    Entry {
        term: e.term,
        value: match &e.payload {
            EntryPayload::Blank => Value::Null,
            EntryPayload::Normal(n) => json!(n.data.value),
            EntryPayload::ConfigChange(_) => json!("config"),
            EntryPayload::SnapshotPointer(_) => json!("snapshot"),
        },
    }
}

pub struct Store {
    id: NodeId,
    disk: Mutex<Disk>,
}

impl Store {
    fn disk(&self) -> std::sync::MutexGuard<'_, Disk> {
        self.disk.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[derive(Debug)]
pub struct NoShutdown;

impl std::fmt::Display for NoShutdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("storage failure")
    }
}

impl std::error::Error for NoShutdown {}

#[async_trait]
impl RaftStorage<Write, Applied> for Store {
    type Snapshot = Cursor<Vec<u8>>;
    type ShutdownError = NoShutdown;

    async fn get_membership_config(&self) -> anyhow::Result<MembershipConfig> {
        Ok(self.disk().membership(self.id))
    }

    async fn get_initial_state(&self) -> anyhow::Result<InitialState> {
        let d = self.disk();
        let Some(hs) = d.hs.clone() else {
            return Ok(InitialState::new_initial(self.id));
        };
        let (last_log_index, last_log_term) =
            d.log.values().last().map_or((0, 0), |e| (e.index, e.term));
        Ok(InitialState {
            last_log_index,
            last_log_term,
            // The state machine is volatile: a rebooted node applies its log again.
            last_applied_log: 0,
            hard_state: hs,
            membership: d.membership(self.id),
        })
    }

    async fn save_hard_state(&self, hs: &HardState) -> anyhow::Result<()> {
        let mut d = self.disk();
        d.hs = Some(hs.clone());
        d.write("hard_state.json", hs)
    }

    async fn get_log_entries(
        &self,
        start: u64,
        stop: u64,
    ) -> anyhow::Result<Vec<RaftEntry<Write>>> {
        if start >= stop {
            return Ok(Vec::new());
        }
        Ok(self
            .disk()
            .log
            .range(start..stop)
            .map(|(_, e)| e.clone())
            .collect())
    }

    async fn delete_logs_from(&self, start: u64, stop: Option<u64>) -> anyhow::Result<()> {
        let mut d = self.disk();
        match stop {
            Some(stop) => {
                let doomed: Vec<u64> = d.log.range(start..stop).map(|(i, _)| *i).collect();
                for i in doomed {
                    d.log.remove(&i);
                }
            }
            None => {
                d.log.split_off(&start);
            }
        }
        d.save_log()
    }

    async fn append_entry_to_log(&self, e: &RaftEntry<Write>) -> anyhow::Result<()> {
        let mut d = self.disk();
        d.log.insert(e.index, e.clone());
        d.written.insert(e.index, e.term);
        d.save_log()
    }

    async fn replicate_to_log(&self, entries: &[RaftEntry<Write>]) -> anyhow::Result<()> {
        let mut d = self.disk();
        for e in entries {
            d.log.insert(e.index, e.clone());
            d.written.insert(e.index, e.term);
        }
        d.save_log()
    }

    async fn apply_entry_to_state_machine(
        &self,
        index: &u64,
        data: &Write,
    ) -> anyhow::Result<Applied> {
        let mut d = self.disk();
        let term = d.applied_term(*index);
        d.applied.insert(
            *index,
            Entry {
                term,
                value: json!(data.value),
            },
        );
        Ok(Applied)
    }

    async fn replicate_to_state_machine(&self, entries: &[(&u64, &Write)]) -> anyhow::Result<()> {
        let mut d = self.disk();
        for (index, data) in entries {
            let term = d.applied_term(**index);
            d.applied.insert(
                **index,
                Entry {
                    term,
                    value: json!(data.value),
                },
            );
        }
        Ok(())
    }

    async fn do_log_compaction(&self) -> anyhow::Result<CurrentSnapshotData<Self::Snapshot>> {
        anyhow::bail!("snapshots are not supported by this node")
    }

    async fn create_snapshot(&self) -> anyhow::Result<(String, Box<Self::Snapshot>)> {
        anyhow::bail!("snapshots are not supported by this node")
    }

    async fn finalize_snapshot_installation(
        &self,
        _: u64,
        _: u64,
        _: Option<u64>,
        _: String,
        _: Box<Self::Snapshot>,
    ) -> anyhow::Result<()> {
        anyhow::bail!("snapshots are not supported by this node")
    }

    async fn get_current_snapshot(
        &self,
    ) -> anyhow::Result<Option<CurrentSnapshotData<Self::Snapshot>>> {
        Ok(None)
    }
}

// ---------------------------------------------------------------------------------------------
// The network: the hook.

pub struct Net {
    rpc: Arc<Rpc>,
}

fn decode<T: serde::de::DeserializeOwned>(v: Value) -> anyhow::Result<T> {
    Ok(serde_json::from_value(v)?)
}

#[async_trait]
impl RaftNetwork<Write> for Net {
    async fn append_entries(
        &self,
        target: NodeId,
        rpc: AppendEntriesRequest<Write>,
    ) -> anyhow::Result<AppendEntriesResponse> {
        let fields = json!({
            "term": rpc.term,
            "entries": rpc.entries.len(),
            "prev_index": rpc.prev_log_index,
            "commit_index": rpc.leader_commit,
        });
        decode(
            self.rpc
                .call(target as usize, "append", fields, &rpc)
                .await?,
        )
    }

    async fn install_snapshot(
        &self,
        target: NodeId,
        rpc: InstallSnapshotRequest,
    ) -> anyhow::Result<InstallSnapshotResponse> {
        let fields = json!({ "term": rpc.term });
        decode(
            self.rpc
                .call(target as usize, "snapshot", fields, &rpc)
                .await?,
        )
    }

    async fn vote(&self, target: NodeId, rpc: VoteRequest) -> anyhow::Result<VoteResponse> {
        let fields = json!({ "term": rpc.term, "last_index": rpc.last_log_index });
        decode(self.rpc.call(target as usize, "vote", fields, &rpc).await?)
    }
}

// ---------------------------------------------------------------------------------------------
// The node.

struct Node {
    raft: Raft,
    store: Arc<Store>,
    members: HashSet<NodeId>,
    /// The applied entries reported so far, by log position: async-raft hands only data
    /// entries to the state machine, and moves past blank and config entries silently.
    applied: Mutex<Vec<Entry>>,
}

impl RaftLib for Node {
    fn observe(&self) -> Observed {
        let m = self.raft.metrics().borrow().clone();
        let d = self.store.disk();
        let role = match m.state {
            State::Leader => Role::Leader,
            State::Candidate => Role::Candidate,
            State::Follower => Role::Follower,
            State::NonVoter | State::Shutdown => Role::Learner,
        };
        let mut applied = self.applied.lock().unwrap_or_else(|p| p.into_inner());
        // A crash-free run only grows this; async-raft restarts `last_applied` only on reboot.
        applied.truncate(m.last_applied as usize);
        for index in applied.len() as u64 + 1..=m.last_applied {
            let e = match d.applied.get(&index) {
                Some(e) => e.clone(),
                None => d.log.get(&index).map(entry).unwrap_or(Entry {
                    term: 0,
                    value: json!("unknown"),
                }),
            };
            applied.push(e);
        }
        // async-raft reports its metrics only on some changes (a vote request of a higher
        // term moves the term without a report): the hard state it saved is the term.
        let term =
            d.hs.as_ref()
                .map_or(0, |h| h.current_term)
                .max(m.current_term);
        Observed {
            term,
            voted_for: d
                .hs
                .as_ref()
                .filter(|h| h.current_term == term)
                .and_then(|h| h.voted_for)
                .map(|n| n as usize),
            role,
            leader: m.current_leader.map(|n| n as usize),
            log: d.log.values().map(entry).collect(),
            // async-raft does not expose its commit index: what a node applied is what it took
            // as committed.
            commit: m.last_applied,
            applied: applied.clone(),
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
        // A node that never joined a cluster starts it: async-raft's `initialize` campaigns at
        // once. Later elections are the election deadline passing.
        let pristine = {
            let d = self.store.disk();
            d.log.is_empty() && d.hs.as_ref().is_none_or(|h| h.current_term == 0)
        };
        if pristine {
            if let Err(e) = self.raft.initialize(self.members.clone()).await {
                tracing::warn!("initialize: {e}");
                flymc_hook::error("raft-initialize", &e);
            }
        } else {
            tokio::time::advance(ELECTION_TIMEOUT).await;
        }
    }

    async fn heartbeat(&self) {
        tokio::time::advance(Duration::from_millis(HEARTBEAT)).await;
    }

    fn propose(&self, value: u64) {
        let raft = self.raft.clone();
        tokio::spawn(async move {
            if let Err(e) = raft
                .client_write(ClientWriteRequest::new(Write { value }))
                .await
            {
                tracing::warn!("write {value}: {e}");
            }
        });
    }

    async fn time_passes(&self) {
        tokio::time::advance(STEP).await;
    }
}

async fn run(args: glue::Args, idle: Arc<tokio::sync::Notify>) -> Result<(), String> {
    // Keep tokio from advancing the paused clock by itself when the node is idle: it does not
    // while a blocking task runs. This one parks its thread until the process ends.
    tokio::task::spawn_blocking(|| loop {
        std::thread::park();
    });
    let hook = flymc_hook::Hook::from_env()
        .await
        .map_err(|e| e.to_string())?;
    let dir = hook
        .config()
        .data_dir
        .clone()
        .ok_or("FLYMC_DATA_DIR is not set: start this node under flymc")?;
    let me = hook.node() as NodeId;
    let members: HashSet<NodeId> = (0..hook.nodes() as NodeId).collect();
    let config = async_raft::Config::build("flymc".into())
        .election_timeout_min(ELECTION_MIN)
        .election_timeout_max(ELECTION_MAX)
        .heartbeat_interval(HEARTBEAT)
        .validate()
        .map_err(|e| format!("async-raft config: {e}"))?;
    let store = Arc::new(Store {
        id: me,
        disk: Mutex::new(Disk::load(dir)?),
    });
    let rpc = Rpc::new(hook.clone());
    let raft = Raft::new(
        me,
        Arc::new(config),
        Arc::new(Net { rpc: rpc.clone() }),
        store.clone(),
    );
    let node = Node {
        raft,
        store,
        members,
        applied: Mutex::new(Vec::new()),
    };
    glue::Driver::new(hook, idle, rpc, node, &args)
        .run()
        .await
        .map_err(|e| e.to_string())
}

fn main() {
    glue::main(PROGRAM, true, run)
}
