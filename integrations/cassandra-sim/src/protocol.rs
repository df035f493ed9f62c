//! The simulated Cassandra 2.0 Paxos: one `system.paxos` row and one user-table row per replica,
//! and one CAS coordinator per node, following `/work/shared/benchmarks/cassandra-paxos.md`.
//!
//! Everything here is deterministic: ballots come from the shared [`Clock`] in the order rounds
//! start, maps are `BTreeMap`s, and replies are merged in arrival order.

use std::collections::BTreeMap;

use flymc_model::sim::{Outbox, Protocol};
use flymc_model::{NodeId, TargetError, Workload};
use serde::{Deserialize, Serialize};

/// A ballot is the timestamp of its time-UUID; 0 is the empty ballot (`minTimeUUID(0)`).
pub type Ballot = u64;

/// A user-table row: column -> (write timestamp, value). Per column the newest timestamp wins.
pub type Row = BTreeMap<String, (Ballot, String)>;

/// The replicas. Fixed: the rules file is about three replicas and quorums of two.
pub const REPLICAS: usize = 3;
/// Replies a quorum needs.
pub const QUORUM: u32 = 2;

/// Which of the 2.0.0 behaviours are switched on. Each flag is "the 2.0.0 code for this issue".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Switches {
    /// CASSANDRA-5925: `propose` stores the proposal without writing `in_progress_ballot`.
    /// Only matters with the 2.0.0 paxos row (`bug_6023`), whose loader throws on a row that
    /// exists but has no ballot.
    pub bug_5925: bool,
    /// CASSANDRA-6023: the 2.0.0 paxos row. The proposal has no ballot of its own and is
    /// reported as `(in_progress_ballot, proposal)`; a commit older than the promise keeps the
    /// proposal; the loader throws on a non-empty row without `in_progress_ballot`.
    /// Off: `promised`, `accepted` (with its ballot) and `mostRecentCommit` are kept apart and
    /// the loader tolerates a missing promise.
    pub bug_6023: bool,
    /// CASSANDRA-6013: the propose callback decides on the first two replies, and a failed
    /// client proposal retries (and may end in `applied = false`). Off: wait for all replies
    /// unless already successful; a partially accepted client proposal ends in a timeout.
    pub bug_6013: bool,
    /// CASS-5 (FlyMC Figure 14): the prepare callback never records each replica's most recent
    /// commit, so replicas that missed it are not repaired. Off: repair them and retry.
    pub bug_cass5: bool,
}

/// A client's CAS: `UPDATE ... SET <set> IF <cond>` (an empty `cond` always applies).
/// One `[[params.ops]]` entry.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpSpec {
    pub node: NodeId,
    pub set: BTreeMap<String, String>,
    /// Absent: the operation always applies.
    #[serde(rename = "if", default)]
    pub cond: BTreeMap<String, String>,
}

impl OpSpec {
    /// Does the CAS condition hold on `row` (values only)?
    pub fn applies(&self, row: &BTreeMap<String, String>) -> bool {
        self.cond.iter().all(|(c, v)| row.get(c) == Some(v))
    }
}

/// The protocol's configuration, parsed from the workload by the system.
#[derive(Clone, Debug)]
pub struct Config {
    pub sw: Switches,
    pub ops: Vec<OpSpec>,
    /// The row's initial values (written at timestamp 0 on every replica).
    pub row: BTreeMap<String, String>,
    /// Prepare rounds a coordinator starts for one operation before it gives up with a timeout
    /// (Cassandra's `cas_contention_timeout`); keeps contended runs finite.
    pub max_attempts: u32,
}

/// The value a ballot proposes: the columns a CAS writes, tagged with the operation it came
/// from (the tag is the checker's: it lets properties tell whose write was committed).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Update {
    pub op: usize,
    pub set: BTreeMap<String, String>,
}

/// Cassandra's `Commit`: a ballot and its update; `(0, None)` is the empty commit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Commit {
    pub ballot: Ballot,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update: Option<Update>,
}

impl Commit {
    fn new(ballot: Ballot, update: Update) -> Self {
        Commit {
            ballot,
            update: Some(update),
        }
    }
}

/// The `proposal` cell of `system.paxos`: its write timestamp (the accepted ballot, which the
/// fixed row also stores as `proposal_ballot`) and its value, or `None` for a tombstone.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ProposalCell {
    pub ts: Ballot,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Update>,
}

/// What a client was finally told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// `applied = true`.
    Applied,
    /// `applied = false`: the condition did not hold.
    NotApplied,
    /// A timeout: the write may or may not have happened.
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct OpResult {
    pub op: usize,
    pub outcome: Outcome,
}

/// Where a node's coordinator is in the current CAS.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    #[default]
    Idle,
    Prepare,
    Propose,
    Commit,
}

/// The part of a promise the coordinator keeps until the quorum's second reply arrives.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Promise {
    pub in_progress: Commit,
    pub most_recent: Commit,
    pub data: Row,
}

/// One node: a replica (persistent state) and a coordinator (volatile state).
///
/// Serialised flat: every field is a state variable of the global state.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Node {
    // --- replica, persistent: the system.paxos row ---
    /// `in_progress_ballot` (called `promised` once CASSANDRA-6023 is fixed); `None` = no cell.
    pub in_progress_ballot: Option<Ballot>,
    /// The `proposal` cell (`accepted` once 6023 is fixed; its `ts` is then `proposal_ballot`).
    pub proposal: Option<ProposalCell>,
    /// `(most_recent_commit_at, most_recent_commit)`.
    pub most_recent_commit: Option<Commit>,
    // --- replica, persistent: the user table's row ---
    pub data: Row,
    // --- observations for the properties (no effect on behaviour) ---
    /// Operations whose write this replica's data has applied through a commit (sorted).
    pub committed: Vec<usize>,
    /// Handler invocations that threw (an exception in the real code; no reply was sent).
    pub failures: u32,
    /// What each client of this node was told (survives crashes: it is the client's record).
    pub results: Vec<OpResult>,
    // --- coordinator: static ---
    /// The operations the workload sends to this node (sorted).
    pub ops: Vec<usize>,
    // --- coordinator, volatile (lost on a crash) ---
    /// Client requests received while another CAS was running here, oldest first.
    pub queue: Vec<usize>,
    /// The operation this node coordinates now.
    pub op: Option<usize>,
    pub phase: Phase,
    /// The current round's ballot (0 when idle).
    pub ballot: Ballot,
    /// Prepare rounds started for `op`.
    pub attempts: u32,
    /// The first promise of the current round, and who sent it (a node reference).
    pub first_from: Option<NodeId>,
    pub first_reply: Option<Promise>,
    /// The value being proposed or committed in the current round.
    pub value: Option<Update>,
    /// Whether `value` is a replayed in-progress proposal (then the round starts over after
    /// its commit) rather than the client's own.
    pub replay: bool,
    /// Reply counters of the propose and commit callbacks.
    pub accepts: u32,
    pub rejects: u32,
    pub acks: u32,
}

impl Node {
    fn new(ops: Vec<usize>, row: &BTreeMap<String, String>) -> Self {
        Node {
            in_progress_ballot: None,
            proposal: None,
            most_recent_commit: None,
            data: row
                .iter()
                .map(|(c, v)| (c.clone(), (0, v.clone())))
                .collect(),
            committed: Vec::new(),
            failures: 0,
            results: Vec::new(),
            ops,
            queue: Vec::new(),
            op: None,
            phase: Phase::Idle,
            ballot: 0,
            attempts: 0,
            first_from: None,
            first_reply: None,
            value: None,
            replay: false,
            accepts: 0,
            rejects: 0,
            acks: 0,
        }
    }

    /// Forget the current round (keeps `op` and `attempts`).
    fn clear_round(&mut self) {
        self.phase = Phase::Idle;
        self.ballot = 0;
        self.first_from = None;
        self.first_reply = None;
        self.value = None;
        self.replay = false;
        self.accepts = 0;
        self.rejects = 0;
        self.acks = 0;
    }
}

/// Messages, and the client request (`cas`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Msg {
    /// A client's CAS arriving at its coordinator.
    Cas {
        op: usize,
    },
    Prepare {
        ballot: Ballot,
    },
    /// `promised`, the in-progress proposal (2.0.0: `(in_progress_ballot, proposal)`; fixed:
    /// `accepted` with its own ballot), the most recent commit, and the replica's data row at
    /// the time of the promise (what the quorum read returns from this replica).
    PrepareResponse {
        ballot: Ballot,
        promised: bool,
        in_progress: Commit,
        most_recent: Commit,
        data: Row,
    },
    Propose {
        ballot: Ballot,
        update: Update,
    },
    ProposeResponse {
        ballot: Ballot,
        accepted: bool,
    },
    /// `ack = false` for the fire-and-forget commits that repair replicas missing the most
    /// recent commit (`sendCommit`); the replica then sends no response.
    Commit {
        ballot: Ballot,
        update: Update,
        ack: bool,
    },
    CommitResponse {
        ballot: Ballot,
    },
}

/// Messages a handler sends, in order: `(to, message)`. [`Protocol::handle`] forwards them to
/// the framework's outbox; tests call [`Cassandra::step`] directly.
#[derive(Debug, Default)]
pub struct Sends(pub Vec<(NodeId, Msg)>);

impl Sends {
    fn send(&mut self, to: NodeId, msg: Msg) {
        self.0.push((to, msg));
    }
}

/// The environment: the clock that hands out ballots in the order prepare rounds start.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Clock {
    pub ballot: Ballot,
}

impl Clock {
    fn next(&mut self) -> Ballot {
        self.ballot += 1;
        self.ballot
    }
}

/// The replica's view of its paxos row after `loadPaxosState`.
struct Loaded {
    promised: Ballot,
    in_progress: Commit,
    most_recent: Commit,
}

/// Record what `op`'s client was told, keeping `results` sorted by operation.
fn record(n: &mut Node, op: usize, outcome: Outcome) {
    let i = n.results.partition_point(|r| r.op < op);
    n.results.insert(i, OpResult { op, outcome });
}

/// Write a cell with newest-timestamp-wins; on a tie a tombstone wins, as in Cassandra.
fn write_proposal(cell: &mut Option<ProposalCell>, ts: Ballot, value: Option<Update>) {
    let wins = match cell {
        None => true,
        Some(c) => ts > c.ts || (ts == c.ts && value.is_none()),
    };
    if wins {
        *cell = Some(ProposalCell { ts, value });
    }
}

fn write_ballot(cell: &mut Option<Ballot>, b: Ballot) {
    if cell.is_none_or(|c| b > c) {
        *cell = Some(b);
    }
}

fn write_commit(cell: &mut Option<Commit>, c: Commit) {
    if cell.as_ref().is_none_or(|m| c.ballot > m.ballot) {
        *cell = Some(c);
    }
}

/// Apply `set` to `row` at timestamp `ts`, newest timestamp winning per column.
pub fn apply_row(row: &mut Row, ts: Ballot, set: &BTreeMap<String, String>) {
    for (c, v) in set {
        if row.get(c).is_none_or(|(t, _)| *t < ts) {
            row.insert(c.clone(), (ts, v.clone()));
        }
    }
}

/// Merge rows as a read does: per column the newest timestamp wins.
pub fn merge_rows<'a>(rows: impl IntoIterator<Item = &'a Row>) -> Row {
    let mut out = Row::new();
    for r in rows {
        for (c, (ts, v)) in r {
            if out.get(c).is_none_or(|(t, _)| t < ts) {
                out.insert(c.clone(), (*ts, v.clone()));
            }
        }
    }
    out
}

/// The values of a row, without timestamps.
pub fn values(row: &Row) -> BTreeMap<String, String> {
    row.iter()
        .map(|(c, (_, v))| (c.clone(), v.clone()))
        .collect()
}

/// The protocol; see the crate documentation for the modelling choices.
#[derive(Clone, Debug)]
pub struct Cassandra {
    pub cfg: Config,
}

impl Cassandra {
    /// The initial nodes and the client requests (`(coordinator, cas)`, in operation order).
    pub fn initial(&self) -> (Vec<Node>, Vec<(NodeId, Msg)>) {
        let nodes = (0..REPLICAS)
            .map(|i| {
                let ops = (0..self.cfg.ops.len())
                    .filter(|&o| self.cfg.ops[o].node == i)
                    .collect();
                Node::new(ops, &self.cfg.row)
            })
            .collect();
        let requests = (0..self.cfg.ops.len())
            .map(|op| (self.cfg.ops[op].node, Msg::Cas { op }))
            .collect();
        (nodes, requests)
    }

    // ------------------------------------------------------------------ replica

    /// `SystemKeyspace.loadPaxosState`; `None` when it throws.
    fn load(&self, n: &Node) -> Option<Loaded> {
        let most_recent = n.most_recent_commit.clone().unwrap_or_default();
        let live = n.proposal.as_ref().and_then(|c| c.value.clone());
        if self.cfg.sw.bug_6023 {
            let exists =
                n.in_progress_ballot.is_some() || live.is_some() || n.most_recent_commit.is_some();
            if !exists {
                return Some(Loaded {
                    promised: 0,
                    in_progress: Commit::default(),
                    most_recent,
                });
            }
            // row.getUUID("in_progress_ballot") on a row without it: NullPointerException.
            let ballot = n.in_progress_ballot?;
            Some(Loaded {
                promised: ballot,
                in_progress: Commit {
                    ballot,
                    update: live,
                },
                most_recent,
            })
        } else {
            let in_progress = match (&n.proposal, live) {
                (Some(c), Some(u)) => Commit::new(c.ts, u),
                _ => Commit::default(),
            };
            Some(Loaded {
                promised: n.in_progress_ballot.unwrap_or(0),
                in_progress,
                most_recent,
            })
        }
    }

    fn on_prepare(&self, n: &mut Node, from: NodeId, ballot: Ballot, out: &mut Sends) {
        let Some(st) = self.load(n) else {
            n.failures += 1;
            return;
        };
        let promised = ballot > st.promised;
        let data = if promised {
            write_ballot(&mut n.in_progress_ballot, ballot);
            n.data.clone()
        } else {
            Row::new()
        };
        out.send(
            from,
            Msg::PrepareResponse {
                ballot,
                promised,
                in_progress: st.in_progress,
                most_recent: st.most_recent,
                data,
            },
        );
    }

    fn on_propose(
        &self,
        n: &mut Node,
        from: NodeId,
        ballot: Ballot,
        update: Update,
        out: &mut Sends,
    ) {
        let Some(st) = self.load(n) else {
            n.failures += 1;
            return;
        };
        let accepted = ballot >= st.promised;
        if accepted {
            write_proposal(&mut n.proposal, ballot, Some(update));
            if self.cfg.sw.bug_6023 && !self.cfg.sw.bug_5925 {
                write_ballot(&mut n.in_progress_ballot, ballot);
            }
        }
        out.send(from, Msg::ProposeResponse { ballot, accepted });
    }

    fn on_commit(
        &self,
        n: &mut Node,
        from: NodeId,
        ballot: Ballot,
        update: Update,
        ack: bool,
        out: &mut Sends,
    ) {
        // The mutation is applied before the paxos row is loaded.
        apply_row(&mut n.data, ballot, &update.set);
        if let Err(i) = n.committed.binary_search(&update.op) {
            n.committed.insert(i, update.op);
        }
        let Some(st) = self.load(n) else {
            n.failures += 1;
            return;
        };
        if self.cfg.sw.bug_6023 && st.promised > ballot {
            // preserveCql: keep in_progress_ballot and the proposal.
            write_commit(&mut n.most_recent_commit, Commit::new(ballot, update));
        } else {
            // eraseCql (2.0.0), or the fixed commit (clears the accepted proposal only).
            write_proposal(&mut n.proposal, ballot, None);
            if self.cfg.sw.bug_6023 {
                write_ballot(&mut n.in_progress_ballot, ballot);
            }
            write_commit(&mut n.most_recent_commit, Commit::new(ballot, update));
        }
        if ack {
            out.send(from, Msg::CommitResponse { ballot });
        }
    }

    /// Process one delivered message or client request at a node (the body of
    /// [`Protocol::handle`]).
    pub fn step(
        &self,
        _id: NodeId,
        n: &mut Node,
        env: &mut Clock,
        from: Option<NodeId>,
        msg: Msg,
        out: &mut Sends,
    ) {
        // Replies go back to the sender; only client requests come from no node.
        let from = from.unwrap_or(0);
        match msg {
            Msg::Cas { op } => {
                if n.op.is_none() {
                    self.start_op(n, env, op, out);
                } else {
                    n.queue.push(op);
                }
            }
            Msg::Prepare { ballot } => self.on_prepare(n, from, ballot, out),
            Msg::PrepareResponse {
                ballot,
                promised,
                in_progress,
                most_recent,
                data,
            } => {
                let reply = Promise {
                    in_progress,
                    most_recent,
                    data,
                };
                self.on_prepare_response(n, env, from, ballot, promised, reply, out)
            }
            Msg::Propose { ballot, update } => self.on_propose(n, from, ballot, update, out),
            Msg::ProposeResponse { ballot, accepted } => {
                self.on_propose_response(n, env, ballot, accepted, out)
            }
            Msg::Commit {
                ballot,
                update,
                ack,
            } => self.on_commit(n, from, ballot, update, ack, out),
            Msg::CommitResponse { ballot } => self.on_commit_response(n, env, ballot, out),
        }
    }

    // -------------------------------------------------------------- coordinator

    fn start_op(&self, n: &mut Node, env: &mut Clock, op: usize, out: &mut Sends) {
        n.op = Some(op);
        n.attempts = 0;
        self.begin_round(n, env, out);
    }

    /// Start a prepare round with a fresh ballot, or give up with a timeout.
    fn begin_round(&self, n: &mut Node, env: &mut Clock, out: &mut Sends) {
        n.clear_round();
        if n.attempts >= self.cfg.max_attempts {
            self.finish(n, env, Outcome::Unknown, out);
            return;
        }
        n.attempts += 1;
        n.phase = Phase::Prepare;
        n.ballot = env.next();
        for r in 0..REPLICAS {
            out.send(r, Msg::Prepare { ballot: n.ballot });
        }
    }

    fn finish(&self, n: &mut Node, env: &mut Clock, outcome: Outcome, out: &mut Sends) {
        if let Some(op) = n.op.take() {
            record(n, op, outcome);
        }
        n.clear_round();
        n.attempts = 0;
        if !n.queue.is_empty() {
            let next = n.queue.remove(0);
            self.start_op(n, env, next, out);
        }
    }

    fn propose(&self, n: &mut Node, update: Update, replay: bool, out: &mut Sends) {
        n.phase = Phase::Propose;
        n.first_from = None;
        n.first_reply = None;
        n.accepts = 0;
        n.rejects = 0;
        n.replay = replay;
        n.value = Some(update.clone());
        for r in 0..REPLICAS {
            out.send(
                r,
                Msg::Propose {
                    ballot: n.ballot,
                    update: update.clone(),
                },
            );
        }
    }

    fn commit(&self, n: &mut Node, out: &mut Sends) {
        n.phase = Phase::Commit;
        n.acks = 0;
        let update = n.value.clone().expect("a value is being committed");
        for r in 0..REPLICAS {
            out.send(
                r,
                Msg::Commit {
                    ballot: n.ballot,
                    update: update.clone(),
                    ack: true,
                },
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_prepare_response(
        &self,
        n: &mut Node,
        env: &mut Clock,
        from: NodeId,
        ballot: Ballot,
        promised: bool,
        reply: Promise,
        out: &mut Sends,
    ) {
        if n.phase != Phase::Prepare || ballot != n.ballot {
            return; // a reply the callback no longer waits for
        }
        if !promised {
            // Some replica promised a higher ballot: retry with a new one.
            self.begin_round(n, env, out);
            return;
        }
        let (Some(first_from), Some(first)) = (n.first_from, n.first_reply.take()) else {
            n.first_from = Some(from);
            n.first_reply = Some(reply);
            return;
        };
        let second = reply;
        // Merge keeping the strict maximum; on a tie the first reply wins.
        let in_progress = if second.in_progress.ballot > first.in_progress.ballot {
            second.in_progress.clone()
        } else {
            first.in_progress.clone()
        };
        let most_recent = if second.most_recent.ballot > first.most_recent.ballot {
            second.most_recent.clone()
        } else {
            first.most_recent.clone()
        };
        if let Some(u) = in_progress.update.clone() {
            if in_progress.ballot > most_recent.ballot {
                // Finish the in-progress round at our ballot, then start over.
                self.propose(n, u, true, out);
                return;
            }
        }
        if !self.cfg.sw.bug_cass5 {
            let missing: Vec<NodeId> = [(first_from, &first), (from, &second)]
                .into_iter()
                .filter(|(_, p)| p.most_recent.ballot != most_recent.ballot)
                .map(|(r, _)| r)
                .collect();
            if !missing.is_empty() {
                let update = most_recent
                    .update
                    .clone()
                    .expect("a newer commit has a value");
                for r in missing {
                    out.send(
                        r,
                        Msg::Commit {
                            ballot: most_recent.ballot,
                            update: update.clone(),
                            ack: false,
                        },
                    );
                }
                self.begin_round(n, env, out);
                return;
            }
        }
        // Read the row at quorum: the two promising replicas, newest timestamp per column.
        let read = values(&merge_rows([&first.data, &second.data]));
        let op = n.op.expect("a prepare round has an operation");
        let spec = &self.cfg.ops[op];
        if spec.applies(&read) {
            let update = Update {
                op,
                set: spec.set.clone(),
            };
            self.propose(n, update, false, out);
        } else {
            self.finish(n, env, Outcome::NotApplied, out);
        }
    }

    fn on_propose_response(
        &self,
        n: &mut Node,
        env: &mut Clock,
        ballot: Ballot,
        accepted: bool,
        out: &mut Sends,
    ) {
        if n.phase != Phase::Propose || ballot != n.ballot {
            return;
        }
        if accepted {
            n.accepts += 1;
        } else {
            n.rejects += 1;
        }
        let replies = n.accepts + n.rejects;
        if self.cfg.sw.bug_6013 {
            // 2.0.0: latch of two; success only if both replies accept.
            if replies < QUORUM {
                return;
            }
            if n.accepts >= QUORUM {
                self.commit(n, out);
            } else {
                self.begin_round(n, env, out);
            }
            return;
        }
        if n.accepts >= QUORUM {
            self.commit(n, out);
        } else if n.replay {
            // failFast: give up as soon as a quorum of accepts is out of reach.
            if (REPLICAS as u32 - replies) + n.accepts < QUORUM {
                self.begin_round(n, env, out);
            }
        } else if replies == REPLICAS as u32 {
            if n.accepts == 0 {
                self.begin_round(n, env, out); // fully refused: nothing stored anywhere
            } else {
                self.finish(n, env, Outcome::Unknown, out); // WriteTimeoutException
            }
        }
    }

    fn on_commit_response(&self, n: &mut Node, env: &mut Clock, ballot: Ballot, out: &mut Sends) {
        if n.phase != Phase::Commit || ballot != n.ballot {
            return;
        }
        n.acks += 1;
        if n.acks < QUORUM {
            return;
        }
        if n.replay {
            self.begin_round(n, env, out);
        } else {
            self.finish(n, env, Outcome::Applied, out);
        }
    }
}

impl Protocol for Cassandra {
    type Node = Node;
    type Msg = Msg;
    type Env = Clock;

    fn init(
        &self,
        workload: &Workload,
        _env: &mut Clock,
        out: &mut Outbox<Msg>,
    ) -> Result<Vec<Node>, TargetError> {
        if workload.nodes != REPLICAS {
            return Err(TargetError::Workload(format!(
                "cassandra-sim needs nodes = {REPLICAS}, but the workload has {}",
                workload.nodes
            )));
        }
        let (nodes, requests) = self.initial();
        for (node, msg) in requests {
            out.client(node, msg);
        }
        Ok(nodes)
    }

    fn handle(
        &self,
        id: NodeId,
        n: &mut Node,
        env: &mut Clock,
        from: Option<NodeId>,
        msg: Msg,
        out: &mut Outbox<Msg>,
    ) {
        let mut sends = Sends::default();
        self.step(id, n, env, from, msg, &mut sends);
        for (to, m) in sends.0 {
            out.send(to, m);
        }
    }

    /// The coordinator's state is volatile: its clients time out (outcome unknown), including
    /// those whose requests were queued or still in flight to it. The paxos row and the data
    /// are on disk and survive.
    fn crash(&self, _id: NodeId, n: &mut Node, _env: &mut Clock, _out: &mut Outbox<Msg>) {
        for op in n.ops.clone() {
            if !n.results.iter().any(|r| r.op == op) {
                record(n, op, Outcome::Unknown);
            }
        }
        n.op = None;
        n.queue.clear();
        n.attempts = 0;
        n.clear_round();
    }

    fn reboot(&self, _id: NodeId, _n: &mut Node, _env: &mut Clock, _out: &mut Outbox<Msg>) {}
}
