//! `flymc-raftrs-node`: one node of a raft-rs cluster (TiKV's `raft` crate, 0.7) under flymc.
//! raft-rs is a library without I/O: the node drives its [`RawNode`] by hand, so every message
//! raft-rs wants to send goes out through flymc's hook (delivered when flymc chooses), every
//! write raft-rs asks to be synced is a crash point, and its clock never moves. Started by
//! flymc (`FLYMC_*` in the environment) as `flymc-raftrs-node --params JSON`.
//!
//! # Parameters
//! `--params` takes the workload's parameters object: `elections` (default 2: how often this
//! node's election timer may fire per incarnation), `election_timers` (node ids whose election
//! timer is armed at the start; absent or `null`: every node), `heartbeats` (default 0: how
//! often a leader's heartbeat timer may fire per incarnation) and `crash_points` (default
//! `true`: raft-rs's synced writes are crash points, see *Persistence*). Other keys (`writes`,
//! which flymc turns into client events) are ignored. Malformed JSON, or a known key with a
//! value of the wrong type, is one line on stderr and exit status 2.
//!
//! # Node state
//! Every node reports, after every event (and when ready): `term`, `voted_for` (the node it
//! voted for in `term`, or `null`), `role` (`follower`, `candidate`, `leader`,
//! `precandidate`), `leader` (the leader of `term` it knows, itself when leading, or `null`),
//! `log` (entries `{term, value}` in index order: `value` is the written number, `null` for a
//! leader's empty entry, `"config"` for a configuration change), `commit` (how many log
//! entries it knows committed), `applied` (the entries its state machine applied, in order),
//! and its own variables that decide its future: `elect` (its election timer is armed),
//! `elections_left`, `eligible` (it may arm an election timer at all), `down` (peers it was
//! told crashed, sorted), `queued` (client writes waiting for a leader); with `heartbeats > 0`
//! also `beat` (its heartbeat timer is armed) and `heartbeats_left`. Node ids are flymc's
//! (0-based); raft-rs's ids are 1-based (raft id = node + 1) and never appear in the state.
//! The hook adds `exceptions` when a handler caught an error.
//!
//! # Time
//! Nothing depends on the wall clock: [`RawNode::tick`] is never called, so raft-rs's
//! election and heartbeat timeouts (and its randomised election timeout) never elapse.
//! `check_quorum` and `pre_vote` are off (both read the tick-driven clock). An election is
//! the timer event `elect`, a leader's heartbeat the timer event `heartbeat`, both fired when
//! flymc enables them.
//!
//! # Timers (which events exist when)
//! A node *needs* an election when it is not the leader, knows no leader it was not told
//! crashed, and did not vote in its term for another node it was not told crashed. Its
//! election timer `elect` is armed while it needs an election, is *eligible* (listed in
//! `election_timers`, told of a crash, or rebooted) and has `elections` firings left in this
//! incarnation; firing it calls [`RawNode::campaign`] if the node still needs an election, and
//! does nothing otherwise. So an election timeout only fires where Raft's failure detector
//! would fire it, and every run is finite. A leader's heartbeat timer `heartbeat` (only with
//! `heartbeats > 0`) is armed while it leads and has firings left; firing it calls
//! [`RawNode::ping`]: a heartbeat to every follower, whose answer makes raft-rs send an append
//! to a follower that lags.
//!
//! # Events a node receives
//! - messages of raft-rs, one flymc message per raft-rs [`Message`]: `vote`, `vote-reply`,
//!   `append`, `append-reply`, `heartbeat-msg`, `heartbeat-reply`, `snapshot`, and the kinds
//!   this node's configuration never produces but would pass on: `prevote`, `prevote-reply`,
//!   `timeout-now`, `transfer-leader`, `read-index`, `read-index-reply`, `propose`,
//!   `raft-<n>` (any other type number). Payload `{"raft": HEX}`: the message's protobuf bytes
//!   in hex. Fields (for guards and readable paths): `term`, and as the type has them `index`,
//!   `log_term`, `commit`, `entries` (how many), `reject`;
//! - `forward {value}`: a client write handed on to the leader by the node that got it;
//! - timers `elect` and `heartbeat` (above);
//! - client events `write {value}`, `crashed {node}`, `rebooted {node}`.
//!
//! # Client writes
//! `write {value}`: a leader proposes it (the entry's data is the value in decimal); another
//! node keeps it queued and hands it to the leader it learns of (a `forward` message), like a
//! client that retries. A crash of node `c` is told to every live node as `crashed {node}`;
//! a leader then reports `c` unreachable to raft-rs (its progress goes back to probing). A
//! reboot is told as `rebooted {node}`: a leader reports it unreachable (what was in flight to
//! the old incarnation is lost) and pings at once, so the new incarnation learns what it
//! missed.
//!
//! # Persistence
//! The hard state (term, vote, commit) is `hardstate.json` and the log `log.json` (each
//! entry's protobuf bytes in hex) in `FLYMC_DATA_DIR`, each written whole (to a temporary file,
//! then renamed). Every [`Ready`] is handled in raft-rs's order: a leader's messages go out at
//! once; committed entries are applied; new entries and hard state are written; the messages
//! that must wait for the write (votes, append answers) go out; then [`RawNode::advance`] and
//! what it releases. A write raft-rs marks as needing a sync (new entries, a new term or vote)
//! is a crash point (disk event `persist`, fields `term`, `entries`): flymc may crash the node
//! before it. A write that only moves the commit index is no crash point (losing it is safe:
//! the leader tells the commit index again). A rebooted node loads both files into raft-rs's
//! `MemStorage` and starts as a follower in its persisted term with its vote and log; its
//! state machine is in memory, so it applies its committed entries again at startup.
//!
//! Every node starts with the same configuration (all nodes voters, at index 0), so the log
//! holds no configuration entry; this node never proposes configuration changes.
//!
//! # Where it differs from the openraft node (`integrations/raft/node`)
//! - raft-rs does no I/O and runs no tasks: after [`RawNode::step`] (or `campaign`, `propose`,
//!   `ping`) the node drains every Ready at once, so an event is processed when the handler
//!   returns. No idle detection, no logical clock, no seeded runtime are needed.
//! - Messages are one-way, as in raft-rs: a reply is raft-rs's own response message (e.g.
//!   `vote-reply`), not an answer tied to its request's event id, and a crash notice fails no
//!   call (a leader reports the peer unreachable instead).
//! - Synced writes are crash points (the openraft node writes through without them).
//! - The commit index is persisted, so a rebooted node applies its committed entries again at
//!   startup; the log starts with the first leader's empty entry, not a membership entry.
//! - A heartbeat is a raft-rs heartbeat message; a follower that lags gets its append in
//!   answer to its heartbeat reply.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use flymc_hook::{Delivery, EventId, Hook, HookError, Kind, Outgoing};
use protobuf::Message as _;
use raft::eraftpb::{Entry, EntryType, HardState, Message, MessageType};
use raft::storage::MemStorage;
use raft::{GetEntriesContext, RawNode, Ready, StateRole, Storage};
use serde::Deserialize;
use serde_json::{json, Map, Value};

const PROGRAM: &str = "flymc-raftrs-node";
const HARD_STATE_FILE: &str = "hardstate.json";
const LOG_FILE: &str = "log.json";

// ---------------------------------------------------------------------------------------------
// Parameters.

/// The workload parameters this node reads; others are ignored.
#[derive(Debug, Default, Deserialize)]
struct RawParams {
    elections: Option<u32>,
    election_timers: Option<Vec<usize>>,
    heartbeats: Option<u32>,
    crash_points: Option<bool>,
}

#[derive(Clone, Debug, PartialEq)]
struct Params {
    elections: u32,
    /// `None`: every node's.
    election_timers: Option<Vec<usize>>,
    heartbeats: u32,
    crash_points: bool,
}

fn parse_params(text: &str) -> Result<Params, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("--params: {e}"))?;
    if !v.is_object() {
        return Err("--params: expected a JSON object of workload parameters".into());
    }
    let raw: RawParams = serde_json::from_value(v).map_err(|e| format!("--params: {e}"))?;
    Ok(Params {
        elections: raw.elections.unwrap_or(2),
        election_timers: raw.election_timers,
        heartbeats: raw.heartbeats.unwrap_or(0),
        crash_points: raw.crash_points.unwrap_or(true),
    })
}

fn args() -> Result<Params, String> {
    let mut params = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        if a == "--params" {
            params = Some(it.next().ok_or("--params needs a JSON object")?);
        } else if let Some(v) = a.strip_prefix("--params=") {
            params = Some(v.to_string());
        } else {
            return Err(format!(
                "unknown argument `{a}` (usage: {PROGRAM} --params JSON)"
            ));
        }
    }
    parse_params(params.as_deref().unwrap_or("{}"))
}

// ---------------------------------------------------------------------------------------------
// Bytes, entries and messages.

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(|| format!("not hex at {i}"))
        })
        .collect()
}

/// An entry as the node reports it: `{term, value}`.
fn report_entry(e: &Entry) -> Value {
    let value = match e.get_entry_type() {
        EntryType::EntryNormal if e.data.is_empty() => Value::Null,
        EntryType::EntryNormal => match std::str::from_utf8(&e.data)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
        {
            Some(v) => json!(v),
            None => json!(hex(&e.data)),
        },
        EntryType::EntryConfChange | EntryType::EntryConfChangeV2 => json!("config"),
    };
    json!({ "term": e.term, "value": value })
}

/// The flymc event name of a raft-rs message type.
fn message_name(t: MessageType) -> String {
    match t {
        MessageType::MsgAppend => "append".into(),
        MessageType::MsgAppendResponse => "append-reply".into(),
        MessageType::MsgRequestVote => "vote".into(),
        MessageType::MsgRequestVoteResponse => "vote-reply".into(),
        MessageType::MsgRequestPreVote => "prevote".into(),
        MessageType::MsgRequestPreVoteResponse => "prevote-reply".into(),
        MessageType::MsgSnapshot => "snapshot".into(),
        MessageType::MsgHeartbeat => "heartbeat-msg".into(),
        MessageType::MsgHeartbeatResponse => "heartbeat-reply".into(),
        MessageType::MsgTimeoutNow => "timeout-now".into(),
        MessageType::MsgTransferLeader => "transfer-leader".into(),
        MessageType::MsgReadIndex => "read-index".into(),
        MessageType::MsgReadIndexResp => "read-index-reply".into(),
        MessageType::MsgPropose => "propose".into(),
        other => format!("raft-{}", other as i32),
    }
}

/// The fields flymc sees of a raft-rs message (for guards and for people reading paths).
fn message_fields(m: &Message) -> Map<String, Value> {
    let mut f = Map::new();
    f.insert("term".into(), json!(m.term));
    let t = m.get_msg_type();
    let mut put = |k: &str, v: Value| {
        f.insert(k.into(), v);
    };
    match t {
        MessageType::MsgAppend => {
            put("index", json!(m.index));
            put("log_term", json!(m.log_term));
            put("entries", json!(m.entries.len()));
            put("commit", json!(m.commit));
        }
        MessageType::MsgAppendResponse => {
            put("index", json!(m.index));
            put("reject", json!(m.reject));
        }
        MessageType::MsgRequestVote | MessageType::MsgRequestPreVote => {
            put("index", json!(m.index));
            put("log_term", json!(m.log_term));
        }
        MessageType::MsgRequestVoteResponse | MessageType::MsgRequestPreVoteResponse => {
            put("reject", json!(m.reject));
        }
        MessageType::MsgHeartbeat => put("commit", json!(m.commit)),
        MessageType::MsgSnapshot => {
            put("index", json!(m.get_snapshot().get_metadata().index));
        }
        _ => {}
    }
    f
}

// ---------------------------------------------------------------------------------------------
// The data directory.

/// The hard state as stored (JSON, so people can read it).
#[derive(serde::Serialize, Deserialize)]
struct StoredHardState {
    term: u64,
    vote: u64,
    commit: u64,
}

/// Write a file whole and atomically (a crash never leaves half of it).
fn write_file(dir: &Path, name: &str, v: &impl serde::Serialize) -> Result<(), String> {
    let tmp = dir.join(format!("{name}.tmp"));
    let bytes = serde_json::to_vec(v).map_err(|e| format!("{name}: {e}"))?;
    std::fs::write(&tmp, bytes).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, dir.join(name)).map_err(|e| format!("{}: {e}", dir.join(name).display()))
}

fn read_file<T: serde::de::DeserializeOwned>(dir: &Path, name: &str) -> Result<Option<T>, String> {
    let path = dir.join(name);
    match std::fs::read(&path) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// raft-rs's storage for this node: the configuration every node starts with, and what an
/// earlier incarnation left in `dir`.
fn load_storage(dir: &Path, nodes: usize) -> Result<MemStorage, String> {
    let voters: Vec<u64> = (1..=nodes as u64).collect();
    let store = MemStorage::new_with_conf_state((voters, Vec::<u64>::new()));
    let entries: Vec<String> = read_file(dir, LOG_FILE)?.unwrap_or_default();
    let entries = entries
        .iter()
        .map(|h| {
            let b = unhex(h)?;
            Entry::parse_from_bytes(&b).map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<Entry>, String>>()
        .map_err(|e| format!("{LOG_FILE}: {e}"))?;
    if !entries.is_empty() {
        store
            .wl()
            .append(&entries)
            .map_err(|e| format!("{LOG_FILE}: {e}"))?;
    }
    if let Some(hs) = read_file::<StoredHardState>(dir, HARD_STATE_FILE)? {
        store.wl().set_hardstate(HardState {
            term: hs.term,
            vote: hs.vote,
            commit: hs.commit,
            ..Default::default()
        });
    }
    Ok(store)
}

// ---------------------------------------------------------------------------------------------
// The node.

fn role_name(r: StateRole) -> &'static str {
    match r {
        StateRole::Follower => "follower",
        StateRole::Candidate => "candidate",
        StateRole::Leader => "leader",
        StateRole::PreCandidate => "precandidate",
    }
}

/// raft-rs id of a flymc node, and back.
fn raft_id(node: usize) -> u64 {
    node as u64 + 1
}

fn node_of(id: u64) -> Option<usize> {
    (id != raft::INVALID_ID).then(|| (id - 1) as usize)
}

struct Node {
    hook: Hook,
    raw: RawNode<MemStorage>,
    dir: PathBuf,
    me: usize,
    crash_points: bool,
    /// Startup is over: a synced write may be a crash point.
    started: bool,
    applied: Vec<Value>,
    elections_left: u32,
    eligible: bool,
    elect: Option<EventId>,
    /// Whether the workload gives leaders a heartbeat timer at all (its variables are
    /// reported only then).
    beats: bool,
    heartbeats_left: u32,
    beat: Option<EventId>,
    down: BTreeSet<usize>,
    /// Per peer: crash and reboot notices received. flymc may deliver a crash notice after
    /// the reboot notice that follows it (they are two events), so a peer is down when it has
    /// more crash notices than reboot notices, whatever their order.
    notices: HashMap<usize, (u32, u32)>,
    queued: Vec<u64>,
}

impl Node {
    fn role(&self) -> StateRole {
        self.raw.raft.state
    }

    fn leader(&self) -> Option<usize> {
        node_of(self.raw.raft.leader_id)
    }

    fn voted_for(&self) -> Option<usize> {
        node_of(self.raw.raft.vote)
    }

    fn live(&self, n: usize) -> bool {
        !self.down.contains(&n)
    }

    /// Not leading, no live leader known, no vote given in this term to another live node.
    fn needs_election(&self) -> bool {
        self.role() != StateRole::Leader
            && !self.leader().is_some_and(|l| l != self.me && self.live(l))
            && !self
                .voted_for()
                .is_some_and(|v| v != self.me && self.live(v))
    }

    fn log(&self) -> Vec<Entry> {
        let log = &self.raw.raft.raft_log;
        log.entries(log.first_index(), None, GetEntriesContext::empty(false))
            .unwrap_or_default()
    }

    fn state(&self) -> Value {
        let raft = &self.raw.raft;
        let mut m = Map::new();
        m.insert("term".into(), json!(raft.term));
        m.insert("voted_for".into(), json!(self.voted_for()));
        m.insert("role".into(), json!(role_name(raft.state)));
        m.insert("leader".into(), json!(self.leader()));
        let log: Vec<Value> = self.log().iter().map(report_entry).collect();
        m.insert("log".into(), json!(log));
        m.insert("commit".into(), json!(raft.raft_log.committed));
        m.insert("applied".into(), json!(self.applied));
        m.insert("elect".into(), json!(self.elect.is_some()));
        m.insert("elections_left".into(), json!(self.elections_left));
        m.insert("eligible".into(), json!(self.eligible));
        m.insert("down".into(), json!(self.down));
        m.insert("queued".into(), json!(self.queued));
        if self.beats {
            m.insert("beat".into(), json!(self.beat.is_some()));
            m.insert("heartbeats_left".into(), json!(self.heartbeats_left));
        }
        Value::Object(m)
    }

    /// Report raft-rs's outgoing messages (delivered when flymc enables them).
    async fn send(&self, msgs: Vec<Message>) -> Result<(), HookError> {
        let mut out = Vec::new();
        for m in msgs {
            let Some(to) = node_of(m.to).filter(|&n| n < self.hook.nodes()) else {
                self.hook.error(
                    "raft-bad-destination",
                    format!("message to raft id {}", m.to),
                );
                continue;
            };
            let bytes = match m.write_to_bytes() {
                Ok(b) => b,
                Err(e) => {
                    self.hook.error("raft-encode", e);
                    continue;
                }
            };
            let name = message_name(m.get_msg_type());
            out.push(
                Outgoing::message(to, &name)
                    .fields(Value::Object(message_fields(&m)))?
                    .payload(json!({ "raft": hex(&bytes) })),
            );
        }
        if !out.is_empty() {
            self.hook.report_all(out).await?;
        }
        Ok(())
    }

    fn apply(&mut self, entries: Vec<Entry>) {
        for e in entries {
            self.applied.push(report_entry(&e));
        }
    }

    fn save_log(&self) -> Result<(), String> {
        let store = self.raw.store();
        let (first, last) = (
            store.first_index().map_err(|e| e.to_string())?,
            store.last_index().map_err(|e| e.to_string())?,
        );
        let entries = store
            .entries(first, last + 1, None, GetEntriesContext::empty(false))
            .map_err(|e| e.to_string())?;
        let hexes = entries
            .iter()
            .map(|e| e.write_to_bytes().map(|b| hex(&b)))
            .collect::<Result<Vec<String>, _>>()
            .map_err(|e| e.to_string())?;
        write_file(&self.dir, LOG_FILE, &hexes)
    }

    fn save_hard_state(&self) -> Result<(), String> {
        let hs = self.raw.store().rl().hard_state().clone();
        let stored = StoredHardState {
            term: hs.term,
            vote: hs.vote,
            commit: hs.commit,
        };
        write_file(&self.dir, HARD_STATE_FILE, &stored)
    }

    /// A write to the data directory failed: the node cannot go on safely.
    fn disk_failed(&self, e: String) -> HookError {
        self.hook.error("disk-write", &e);
        HookError::Usage(format!("cannot write the data directory: {e}"))
    }

    /// Handle every Ready raft-rs has, in its order (see the crate docs, *Persistence*).
    async fn drain(&mut self) -> Result<(), HookError> {
        while self.raw.has_ready() {
            let mut rd: Ready = self.raw.ready();
            // A leader's appends may go out before its own write (raft thesis 10.2.1).
            self.send(rd.take_messages()).await?;
            if !rd.snapshot().is_empty() {
                let snap = rd.snapshot().clone();
                if let Err(e) = self.raw.mut_store().wl().apply_snapshot(snap) {
                    self.hook.error("raft-snapshot", e);
                }
            }
            let committed = rd.take_committed_entries();
            self.apply(committed);
            let entries = rd.entries().clone();
            let hs = rd.hs().cloned();
            if !entries.is_empty() || hs.is_some() {
                if rd.must_sync() && self.crash_points && self.started {
                    let fields = json!({
                        "term": hs.as_ref().map_or(self.raw.raft.term, |h| h.term),
                        "entries": entries.len(),
                    });
                    let state = self.state();
                    self.hook.crash_point("persist", fields, &state).await?;
                }
                if !entries.is_empty() {
                    let appended = self.raw.mut_store().wl().append(&entries);
                    if let Err(e) = appended {
                        return Err(self.disk_failed(e.to_string()));
                    }
                    self.save_log().map_err(|e| self.disk_failed(e))?;
                }
                if let Some(hs) = hs {
                    self.raw.mut_store().wl().set_hardstate(hs);
                    self.save_hard_state().map_err(|e| self.disk_failed(e))?;
                }
            }
            self.send(rd.take_persisted_messages()).await?;
            let mut light = self.raw.advance(rd);
            if let Some(commit) = light.commit_index() {
                self.raw
                    .mut_store()
                    .wl()
                    .mut_hard_state()
                    .set_commit(commit);
                self.save_hard_state().map_err(|e| self.disk_failed(e))?;
            }
            self.send(light.take_messages()).await?;
            let committed = light.take_committed_entries();
            self.apply(committed);
            self.raw.advance_apply();
        }
        Ok(())
    }

    fn report_unreachable(&mut self, n: usize) {
        if self.role() == StateRole::Leader {
            self.raw.report_unreachable(raft_id(n));
        }
    }

    fn propose(&mut self, value: u64) {
        if let Err(e) = self.raw.propose(Vec::new(), value.to_string().into_bytes()) {
            // A leader drops a proposal only while it transfers leadership, which this node
            // never asks for.
            self.hook
                .error("raft-proposal-dropped", format!("write {value}: {e}"));
        }
    }

    async fn handle(&mut self, d: Delivery) -> Result<(), HookError> {
        let node_field = |d: &Delivery| d.field_i64("node").map(|n| n as usize);
        match (d.kind, d.name.as_str()) {
            (Kind::Message, "forward") | (Kind::Client, "write") => {
                if let Some(v) = d.field_i64("value") {
                    self.queued.push(v as u64);
                }
            }
            (Kind::Message, name) => {
                let decoded = d
                    .payload
                    .get("raft")
                    .and_then(Value::as_str)
                    .ok_or_else(|| "no `raft` payload".to_string())
                    .and_then(unhex)
                    .and_then(|b| Message::parse_from_bytes(&b).map_err(|e| e.to_string()));
                match decoded {
                    Ok(m) => {
                        if let Err(e) = self.raw.step(m) {
                            self.hook
                                .error("raft-step", format!("{name} from {:?}: {e}", d.from));
                        }
                    }
                    Err(e) => self
                        .hook
                        .error("raft-decode", format!("{name} from {:?}: {e}", d.from)),
                }
            }
            (Kind::Timeout, "elect") => {
                self.elect = None;
                if self.eligible && self.elections_left > 0 && self.needs_election() {
                    self.elections_left -= 1;
                    if let Err(e) = self.raw.campaign() {
                        self.hook.error("raft-election", e);
                    }
                }
            }
            (Kind::Timeout, "heartbeat") => {
                self.beat = None;
                if self.heartbeats_left > 0 && self.role() == StateRole::Leader {
                    self.heartbeats_left -= 1;
                    self.raw.ping();
                }
            }
            (Kind::Client, "crashed") => {
                if let Some(n) = node_field(&d) {
                    let seen = self.notices.entry(n).or_default();
                    seen.0 += 1;
                    if seen.0 > seen.1 {
                        self.down.insert(n);
                        self.report_unreachable(n);
                    }
                    self.eligible = true;
                }
            }
            (Kind::Client, "rebooted") => {
                if let Some(n) = node_field(&d) {
                    let seen = self.notices.entry(n).or_default();
                    seen.1 += 1;
                    if seen.0 <= seen.1 {
                        self.down.remove(&n);
                    }
                    // What was in flight to the old incarnation is lost; a leader tells the new
                    // one at once what it missed.
                    if self.role() == StateRole::Leader {
                        self.report_unreachable(n);
                        self.raw.ping();
                    }
                }
            }
            (kind, name) => eprintln!("{PROGRAM}: n{}: ignoring {kind:?} `{name}`", self.me),
        }
        self.drain().await
    }

    /// After an event: hand queued writes on, arm or disarm the election timer and the
    /// leader's heartbeat timer.
    async fn after(&mut self) -> Result<(), HookError> {
        if !self.queued.is_empty() {
            if self.role() == StateRole::Leader {
                for v in std::mem::take(&mut self.queued) {
                    self.propose(v);
                }
                self.drain().await?;
            } else if let Some(l) = self.leader().filter(|&l| l != self.me && self.live(l)) {
                for v in std::mem::take(&mut self.queued) {
                    self.hook
                        .send(l, "forward", json!({ "value": v }), Value::Null)
                        .await?;
                }
            }
        }
        let want = self.eligible && self.elections_left > 0 && self.needs_election();
        arm(&self.hook, &mut self.elect, want, "elect").await?;
        let beat = self.heartbeats_left > 0 && self.role() == StateRole::Leader;
        arm(&self.hook, &mut self.beat, beat, "heartbeat").await?;
        Ok(())
    }

    async fn run(mut self) -> Result<(), HookError> {
        // A rebooted node applies its committed entries again (its state machine is memory).
        self.drain().await?;
        self.after().await?;
        self.started = true;
        self.hook.ready(&self.state()).await?;
        loop {
            let d = self.hook.next().await?;
            self.handle(d).await?;
            self.after().await?;
            self.hook.done(&self.state()).await?;
        }
    }
}

/// Arm timer `name` (held in `slot`) when `want`, cancel it when not. A cancelled timer that
/// already fired is on its way and finds nothing to do.
async fn arm(
    hook: &Hook,
    slot: &mut Option<EventId>,
    want: bool,
    name: &str,
) -> Result<(), HookError> {
    match (want, *slot) {
        (true, None) => *slot = Some(hook.timer(name, json!({})).await?),
        (false, Some(id)) => {
            hook.cancel(id).await?;
            *slot = None;
        }
        _ => {}
    }
    Ok(())
}

async fn start(params: Params) -> Result<(), String> {
    let hook = Hook::from_env().await.map_err(|e| e.to_string())?;
    let dir = hook
        .config()
        .data_dir
        .clone()
        .ok_or("FLYMC_DATA_DIR is not set: start this node under flymc")?;
    let me = hook.node();
    let nodes = hook.nodes();
    let store = load_storage(&dir, nodes)?;
    let config = raft::Config {
        id: raft_id(me),
        // Never reached: the node never ticks (see the crate docs, *Time*).
        election_tick: 10,
        heartbeat_tick: 1,
        check_quorum: false,
        pre_vote: false,
        // The state machine is memory: a restarted node applies from the start.
        applied: 0,
        max_size_per_msg: raft::NO_LIMIT,
        max_inflight_msgs: 256,
        ..Default::default()
    };
    config.validate().map_err(|e| format!("raft config: {e}"))?;
    let logger = slog::Logger::root(slog::Discard, slog::o!());
    let raw = RawNode::new(&config, store, &logger).map_err(|e| format!("raft-rs: {e}"))?;
    let eligible = params
        .election_timers
        .as_ref()
        .is_none_or(|t| t.contains(&me))
        // A rebooted node has lost its leader: its election timer runs as after a crash notice.
        || hook.incarnation() > 0;
    let node = Node {
        hook,
        raw,
        dir,
        me,
        crash_points: params.crash_points,
        started: false,
        applied: Vec::new(),
        elections_left: params.elections,
        eligible,
        elect: None,
        beats: params.heartbeats > 0,
        heartbeats_left: params.heartbeats,
        beat: None,
        down: BTreeSet::new(),
        notices: HashMap::new(),
        queued: Vec::new(),
    };
    node.run().await.map_err(|e| e.to_string())
}

fn main() {
    let params = match args() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{PROGRAM}: {e}");
            std::process::exit(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{PROGRAM}: tokio: {e}");
            std::process::exit(1);
        }
    };
    match rt.block_on(start(params)) {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("{PROGRAM}: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_default_and_ignore_unknown_keys() {
        let p = parse_params(r#"{"writes": [{"to": 0, "value": 1}], "speed": 3}"#).unwrap();
        assert_eq!(
            p,
            Params {
                elections: 2,
                election_timers: None,
                heartbeats: 0,
                crash_points: true
            }
        );
        let p = parse_params(r#"{"elections": 1, "election_timers": [0, 2], "heartbeats": 3}"#)
            .unwrap();
        assert_eq!(p.elections, 1);
        assert_eq!(p.election_timers, Some(vec![0, 2]));
        assert_eq!(p.heartbeats, 3);
        let p = parse_params(r#"{"election_timers": null}"#).unwrap();
        assert_eq!(p.election_timers, None);
    }

    #[test]
    fn bad_params_are_refused() {
        assert!(parse_params("{").is_err());
        assert!(parse_params("[1]").is_err());
        assert!(parse_params(r#"{"elections": "two"}"#).is_err());
    }

    #[test]
    fn hex_round_trips_and_entries_report_their_value() {
        let b = vec![0u8, 1, 0xab, 0xff];
        assert_eq!(unhex(&hex(&b)).unwrap(), b);
        assert!(unhex("abc").is_err());
        let mut e = Entry {
            term: 2,
            ..Default::default()
        };
        assert_eq!(report_entry(&e), json!({"term": 2, "value": null}));
        e.data = b"42".to_vec().into();
        assert_eq!(report_entry(&e), json!({"term": 2, "value": 42}));
        e.set_entry_type(EntryType::EntryConfChange);
        assert_eq!(report_entry(&e), json!({"term": 2, "value": "config"}));
    }
}
