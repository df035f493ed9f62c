//! The Raft state machine of one node, its messages, and its handlers.
//!
//! See the crate documentation for the modelling choices (which timers exist, when they are
//! armed, how split votes end, and the bug switch).

use flymc_model::sim::{Outbox, Protocol};
use flymc_model::{NodeId, TargetError, Workload};
use serde::{Deserialize, Serialize, Serializer};

use crate::config::{Config, Variant};

/// Cluster size. The commit rule (leader plus any one peer) and the split-vote rule rely on it.
pub const NODES: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Follower,
    /// Asking for pre-votes (Raft thesis §9.6) before it increments its term.
    PreCandidate,
    Candidate,
    Leader,
}

/// A log entry; `value` is `null` for the no-op a leader appends when it is elected.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Entry {
    pub term: u64,
    pub value: Option<u64>,
}

/// One node's state. Persistent across crash and reboot: `current_term`, `voted_for`, `log`.
/// Everything else is volatile and reset by a crash.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct RaftNode {
    pub current_term: u64,
    /// The node this one voted for in `current_term`.
    pub voted_for: Option<NodeId>,
    pub log: Vec<Entry>,
    pub role: Role,
    /// The leader of `current_term` as far as this node knows (itself when leading).
    pub leader: Option<NodeId>,
    pub commit_index: u64,
    /// The state machine: the entries applied so far, index `i` holding log index `i + 1`.
    pub applied: Vec<Entry>,
    /// Pre-candidate and candidate bookkeeping: the nodes that granted this node's pre-vote or
    /// vote request in the current round (itself included).
    pub votes: Vec<NodeId>,
    /// Leader bookkeeping: the next log index to send to each peer. Serialised as a multiset of
    /// node ids (peer `p` appears `next_index[p]` times, empty when not leading) so that the
    /// checker's symmetry reduction, which renames node ids inside id arrays, renames it soundly.
    #[serde(serialize_with = "as_multiset")]
    pub next_index: Vec<u64>,
    /// Leader bookkeeping: the peers with an append_entries carrying entries still awaiting
    /// its reply. A leader keeps at most one such request in flight per peer (raft-rs's probe
    /// state, async-raft's replication stream), so a follower never sees two of them out of
    /// order, and what arrives meanwhile goes out with the reply.
    pub inflight: Vec<NodeId>,
    /// Candidate bookkeeping: the peers that refused this candidacy.
    pub refused: Vec<NodeId>,
    /// Candidate bookkeeping: some refusal was not from a rival (a node that voted for itself
    /// in this term).
    pub non_rival: bool,
    /// Candidate bookkeeping: some rival's log outranks this node's (see the split-vote rule).
    pub outranked: bool,
    /// Persistent boot count (0 at start, +1 at every reboot).
    pub incarnation: u32,
    /// Peers this node has noticed crash (and not yet noticed reboot).
    pub down: Vec<NodeId>,
    /// For each peer, the latest incarnation whose crash or reboot this node has noticed.
    /// Serialised as a multiset like `next_index`.
    #[serde(serialize_with = "as_multiset32")]
    pub seen: Vec<u32>,
    /// For each peer, its term when this node last noticed it crash (0: never). Requests a
    /// peer sent as leader or candidate in a term up to that one come from a dead incarnation
    /// and are ignored. Serialised as a multiset like `next_index`.
    #[serde(serialize_with = "as_multiset")]
    pub fallen: Vec<u64>,
    /// The candidate this node granted its vote to in its current term, until it notices that
    /// candidate crash: while set, its own timers and other pre-candidates wait for it.
    pub deferring_to: Option<NodeId>,
}

fn as_multiset<S: Serializer>(next: &[u64], s: S) -> Result<S::Ok, S::Error> {
    let ids: Vec<NodeId> = next
        .iter()
        .enumerate()
        .flat_map(|(p, &k)| std::iter::repeat_n(p, k as usize))
        .collect();
    ids.serialize(s)
}

fn as_multiset32<S: Serializer>(counts: &[u32], s: S) -> Result<S::Ok, S::Error> {
    let wide: Vec<u64> = counts.iter().map(|&c| u64::from(c)).collect();
    as_multiset(&wide, s)
}

/// Messages, timers and client requests (the tag is the event name).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Msg {
    /// Pre-candidate -> peer: would you vote for me in `term` (its current term + 1)?
    PreVote {
        term: u64,
        last_log_index: u64,
        last_log_term: u64,
    },
    /// Peer -> pre-candidate, changing nothing at the peer. A grant echoes the request's
    /// term; a refusal is only sent to a pre-candidate behind the peer's term, with that term.
    PreVoteResponse { term: u64, granted: bool },
    /// Candidate -> peer.
    RequestVote {
        term: u64,
        last_log_index: u64,
        last_log_term: u64,
    },
    /// Peer -> candidate. `rival`: the responder voted for itself in this term (it is a
    /// competing candidate, or already the leader). The responder's last log position lets the
    /// candidate decide which of two split candidates retries.
    RequestVoteResponse {
        term: u64,
        granted: bool,
        rival: bool,
        last_log_index: u64,
        last_log_term: u64,
    },
    /// Leader -> follower.
    AppendEntries {
        term: u64,
        prev_log_index: u64,
        prev_log_term: u64,
        entries: Vec<Entry>,
        leader_commit: u64,
    },
    /// Follower -> leader. `index`: on success the follower's match index
    /// (prev_log_index + entries), on a log mismatch the prev_log_index it could not match,
    /// 0 when the request was rejected for its stale term. `commit_index`: the follower's.
    AppendEntriesResponse {
        term: u64,
        success: bool,
        index: u64,
        commit_index: u64,
    },
    /// Timer: start an election (pre-vote first) unless a live leader is known. `crashed`: the node whose crash
    /// armed this timer (`null` for the workload's initial timers and split-vote retries).
    ElectionTimeout {
        crashed: Option<NodeId>,
        /// The crashed node's term when it crashed (0 when `crashed` is null).
        crashed_term: u64,
        /// The crashed node's boot count when it crashed (0 when `crashed` is null).
        crashed_incarnation: u32,
    },
    /// Timer armed at every other node when `peer` reboots: a leader sends it append_entries,
    /// a (pre-)candidate waiting for its answer asks it again.
    Heartbeat { peer: NodeId, incarnation: u32 },
    /// Client request: append `value` (sent to the initial leader).
    Update { value: u64 },
}

impl Msg {
    /// An election timeout that no noticed crash caused.
    fn plain_election_timeout() -> Msg {
        Msg::ElectionTimeout {
            crashed: None,
            crashed_term: 0,
            crashed_incarnation: 0,
        }
    }
}

impl Msg {
    /// The term of a request sent as leader (append_entries) or (pre-)candidate.
    fn leader_or_candidate_term(&self) -> Option<u64> {
        match self {
            Msg::AppendEntries { term, .. }
            | Msg::RequestVote { term, .. }
            | Msg::PreVote { term, .. } => Some(*term),
            _ => None,
        }
    }
}

impl RaftNode {
    fn new() -> Self {
        RaftNode {
            current_term: 0,
            voted_for: None,
            log: Vec::new(),
            role: Role::Follower,
            leader: None,
            commit_index: 0,
            applied: Vec::new(),
            votes: Vec::new(),
            next_index: vec![0; NODES],
            inflight: Vec::new(),
            refused: Vec::new(),
            non_rival: false,
            outranked: false,
            incarnation: 0,
            down: Vec::new(),
            seen: vec![0; NODES],
            fallen: vec![0; NODES],
            deferring_to: None,
        }
    }

    pub fn last_index(&self) -> u64 {
        self.log.len() as u64
    }

    pub fn last_term(&self) -> u64 {
        self.log.last().map_or(0, |e| e.term)
    }

    /// Term of the entry at `index` (1-based); 0 for index 0; `None` past the end.
    fn term_at(&self, index: u64) -> Option<u64> {
        if index == 0 {
            Some(0)
        } else {
            self.log.get(index as usize - 1).map(|e| e.term)
        }
    }

    /// Drop candidate and leader bookkeeping.
    fn clear_bookkeeping(&mut self) {
        self.votes.clear();
        self.next_index = vec![0; NODES];
        self.inflight.clear();
        self.refused.clear();
        self.non_rival = false;
        self.outranked = false;
        self.deferring_to = None;
    }

    /// Adopt a newer term as a follower that has not voted and knows no leader.
    fn adopt_term(&mut self, term: u64) {
        self.current_term = term;
        self.voted_for = None;
        self.role = Role::Follower;
        self.leader = None;
        self.clear_bookkeeping();
    }

    /// Apply committed entries to the state machine.
    fn apply(&mut self) {
        let upto = (self.commit_index as usize).min(self.log.len());
        while self.applied.len() < upto {
            let e = self.log[self.applied.len()].clone();
            self.applied.push(e);
        }
    }

    /// The append_entries a leader sends `peer` now: everything from its next index on.
    fn append_entries_for(&self, peer: NodeId) -> Msg {
        let next = self.next_index[peer].max(1);
        let prev = next - 1;
        Msg::AppendEntries {
            term: self.current_term,
            prev_log_index: prev,
            prev_log_term: self.term_at(prev).unwrap_or(0),
            entries: self.log[(prev as usize).min(self.log.len())..].to_vec(),
            leader_commit: self.commit_index,
        }
    }

    /// Leader: send `peer` what it lacks unless a request to it is still in flight. A request
    /// with entries is answered, so it is marked in flight; an empty one (a commit notice, or a
    /// probe after a reboot) is only answered when it fails, so it is not.
    fn replicate(&mut self, peer: NodeId, out: &mut Fx) {
        if self.inflight.contains(&peer) {
            return;
        }
        let msg = self.append_entries_for(peer);
        if matches!(&msg, Msg::AppendEntries { entries, .. } if !entries.is_empty()) {
            self.inflight.push(peer);
            self.inflight.sort_unstable();
        }
        out.send(peer, msg);
    }

    /// Leader stickiness (Raft thesis §4.2.3): a node that leads, or that knows a live leader
    /// other than `from`, refuses (pre-)votes and does not adopt their term. (When the leader
    /// it knows asks, that leader has stepped down.)
    fn knows_leader_other_than(&self, from: NodeId) -> bool {
        self.role == Role::Leader || self.leader.is_some_and(|l| l != from)
    }

    /// A candidate whose every peer not known to be down has refused it.
    fn election_failed(&self, id: NodeId) -> bool {
        self.role == Role::Candidate
            && peers(id).all(|p| self.refused.contains(&p) || self.down.contains(&p))
    }

    /// A candidate still waiting for answers.
    fn election_pending(&self, id: NodeId) -> bool {
        self.role == Role::Candidate && !self.election_failed(id)
    }

    /// This node granted its vote in its current term to a candidate other than `from` that
    /// it has not noticed crash since: it lets that candidate win.
    fn defers_to_other_than(&self, from: NodeId) -> bool {
        self.deferring_to.is_some_and(|v| v != from)
    }

    /// Is a log ending at (`term`, `index`) at least as up to date as this node's?
    fn up_to_date(&self, term: u64, index: u64) -> bool {
        (term, index) >= (self.last_term(), self.last_index())
    }
}

fn peers(id: NodeId) -> impl Iterator<Item = NodeId> {
    (0..NODES).filter(move |&p| p != id)
}

/// The simulated protocol (one per target).
pub struct Raft {
    pub config: Config,
}

impl Raft {
    fn start_pre_vote(&self, id: NodeId, n: &mut RaftNode, out: &mut Fx) {
        n.role = Role::PreCandidate;
        n.clear_bookkeeping();
        n.votes = vec![id];
        for p in peers(id) {
            out.send(
                p,
                Msg::PreVote {
                    term: n.current_term + 1,
                    last_log_index: n.last_index(),
                    last_log_term: n.last_term(),
                },
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_pre_vote(
        &self,
        id: NodeId,
        n: &RaftNode,
        from: NodeId,
        term: u64,
        last_log_index: u64,
        last_log_term: u64,
        out: &mut Fx,
    ) {
        let theirs = (last_log_term, last_log_index);
        let mine = (n.last_term(), n.last_index());
        let free = !n.knows_leader_other_than(from) && !n.defers_to_other_than(from);
        let granted = term > n.current_term
            && free
            && theirs >= mine
            // A candidate still waiting for answers only steps aside for a node it could
            // never get a vote from (one with a strictly more up-to-date log).
            && (!n.election_pending(id) || theirs > mine);
        if granted {
            out.send(from, Msg::PreVoteResponse { term, granted });
            return;
        }
        if term <= n.current_term {
            // The pre-candidate is behind: tell it this node's term.
            out.send(
                from,
                Msg::PreVoteResponse {
                    term: n.current_term,
                    granted: false,
                },
            );
        }
        // Other refusals change nothing at the pre-candidate and are not sent. Hand-off: if
        // nobody leads and this node's log is more up to date than the pre-candidate's (which
        // then cannot win its vote), it runs itself.
        if free && !n.election_pending(id) && mine > theirs {
            out.timer(id, Msg::plain_election_timeout());
        }
    }

    fn on_pre_vote_response(
        &self,
        id: NodeId,
        n: &mut RaftNode,
        from: NodeId,
        term: u64,
        granted: bool,
        out: &mut Fx,
    ) {
        if !granted {
            if term > n.current_term {
                n.adopt_term(term); // refused for being behind
            }
            return;
        }
        if n.role != Role::PreCandidate || term != n.current_term + 1 {
            return;
        }
        if !n.votes.contains(&from) {
            n.votes.push(from);
            n.votes.sort_unstable();
        }
        if n.votes.len() * 2 > NODES {
            self.start_election(id, n, out);
        }
    }

    fn start_election(&self, id: NodeId, n: &mut RaftNode, out: &mut Fx) {
        n.current_term += 1;
        n.role = Role::Candidate;
        n.voted_for = Some(id);
        n.leader = None;
        n.clear_bookkeeping();
        n.votes = vec![id];
        for p in peers(id) {
            out.send(
                p,
                Msg::RequestVote {
                    term: n.current_term,
                    last_log_index: n.last_index(),
                    last_log_term: n.last_term(),
                },
            );
        }
    }

    fn become_leader(&self, id: NodeId, n: &mut RaftNode, out: &mut Fx) {
        n.role = Role::Leader;
        n.leader = Some(id);
        n.clear_bookkeeping();
        // The first append_entries carries the no-op (entries from the old last index on) ...
        for p in peers(id) {
            n.next_index[p] = n.last_index() + 1;
        }
        n.log.push(Entry {
            term: n.current_term,
            value: None,
        });
        for p in peers(id) {
            n.replicate(p, out);
        }
        // ... and next_index is then Raft's optimistic initial value, the leader's last index
        // + 1 (past the no-op), as if that request arrived; a peer that did not get it will
        // reject the next one and the leader backs off.
        for p in peers(id) {
            n.next_index[p] = n.last_index() + 1;
        }
    }

    fn on_election_timeout(
        &self,
        id: NodeId,
        n: &mut RaftNode,
        crashed: Option<NodeId>,
        crashed_term: u64,
        crashed_incarnation: u32,
        out: &mut Fx,
    ) {
        if let Some(c) = crashed {
            n.fallen[c] = n.fallen[c].max(crashed_term);
            // Notices of one peer's crash and reboot may arrive in either order.
            if crashed_incarnation >= n.seen[c] {
                n.seen[c] = crashed_incarnation;
                if !n.down.contains(&c) {
                    n.down.push(c);
                    n.down.sort_unstable();
                }
            }
            // A leader or candidate of a later term than the crash is a later incarnation.
            if n.current_term <= crashed_term {
                if n.leader == Some(c) {
                    n.leader = None; // noticed the leader's crash
                }
                if n.deferring_to == Some(c) {
                    n.deferring_to = None;
                }
            }
        }
        if n.role == Role::Leader || n.leader.is_some() {
            return; // a live leader is known
        }
        if n.defers_to_other_than(id) {
            return; // voted for a live candidate of this term: let it win
        }
        if n.election_pending(id) {
            return; // its own election is still open
        }
        if n.election_failed(id) && !n.non_rival && !n.outranked {
            // A split this node is to break: every live peer voted for itself in this term,
            // so nobody leads it and no pre-vote is needed.
            self.start_election(id, n, out);
            return;
        }
        self.start_pre_vote(id, n, out);
    }

    #[allow(clippy::too_many_arguments)]
    fn on_request_vote(
        &self,
        id: NodeId,
        n: &mut RaftNode,
        from: NodeId,
        term: u64,
        last_log_index: u64,
        last_log_term: u64,
        out: &mut Fx,
    ) {
        if n.knows_leader_other_than(from) {
            // Leader stickiness: refuse without adopting the term (the answer carries the
            // request's term so the candidate counts it).
            out.send(
                from,
                Msg::RequestVoteResponse {
                    term: term.max(n.current_term),
                    granted: false,
                    rival: false,
                    last_log_index: n.last_index(),
                    last_log_term: n.last_term(),
                },
            );
            return;
        }
        if term > n.current_term {
            n.adopt_term(term);
        }
        let log_ok = n.up_to_date(last_log_term, last_log_index);
        let granted = term == n.current_term
            && (n.voted_for.is_none() || n.voted_for == Some(from))
            && log_ok;
        if granted {
            n.voted_for = Some(from);
            n.deferring_to = Some(from);
        } else if !log_ok
            && term == n.current_term
            && n.leader.is_none()
            && n.deferring_to.is_none()
            && !n.election_pending(id)
        {
            // Hand-off: this node's log is more up to date than the candidate's, and nobody
            // leads the term it just joined; it runs itself (a candidate needs its vote or an
            // equally up-to-date one).
            out.timer(id, Msg::plain_election_timeout());
        }
        let rival = !granted && term == n.current_term && n.voted_for == Some(id);
        out.send(
            from,
            Msg::RequestVoteResponse {
                term: n.current_term,
                granted,
                rival,
                last_log_index: n.last_index(),
                last_log_term: n.last_term(),
            },
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn on_request_vote_response(
        &self,
        id: NodeId,
        n: &mut RaftNode,
        from: NodeId,
        term: u64,
        granted: bool,
        rival: bool,
        last_log_index: u64,
        last_log_term: u64,
        out: &mut Fx,
    ) {
        if term > n.current_term {
            n.adopt_term(term);
            return;
        }
        if n.role != Role::Candidate || term != n.current_term {
            return;
        }
        if granted {
            if !n.votes.contains(&from) {
                n.votes.push(from);
                n.votes.sort_unstable();
            }
            if n.votes.len() * 2 > NODES {
                self.become_leader(id, n, out);
            }
        } else if !n.refused.contains(&from) {
            n.refused.push(from);
            n.refused.sort_unstable();
            if rival {
                let mine = (n.last_term(), n.last_index());
                let theirs = (last_log_term, last_log_index);
                if !(mine > theirs || (mine == theirs && id < from)) {
                    n.outranked = true;
                }
            } else {
                n.non_rival = true;
            }
            // The election failed once every peer not known to be down has refused. Split vote
            // (all refused as rivals): nobody can win this term; exactly one candidate retries,
            // the one whose log outranks all rivals' (more up to date, the lower id on a tie),
            // so it can win their votes. Otherwise it retries with a pre-vote, which only
            // succeeds where no leader is known.
            if n.election_failed(id) && (n.non_rival || !n.outranked) {
                out.timer(id, Msg::plain_election_timeout());
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_append_entries(
        &self,
        n: &mut RaftNode,
        from: NodeId,
        term: u64,
        prev_log_index: u64,
        prev_log_term: u64,
        entries: Vec<Entry>,
        leader_commit: u64,
        out: &mut Fx,
    ) {
        if term < n.current_term {
            out.send(
                from,
                Msg::AppendEntriesResponse {
                    term: n.current_term,
                    success: false,
                    index: 0,
                    commit_index: n.commit_index,
                },
            );
            return;
        }
        if term > n.current_term {
            n.adopt_term(term);
        }
        n.role = Role::Follower;
        n.leader = Some(from);
        n.clear_bookkeeping();

        if self.config.variant == Variant::BugApplyBeforeMatch {
            // async-raft 0.6.1: commit and apply up to the leader's commit index, bounded by
            // the follower's OWN last index, before the log is checked against the leader's.
            let c = leader_commit.min(n.last_index());
            if c > n.commit_index {
                n.commit_index = c;
                n.apply();
            }
        }

        if n.term_at(prev_log_index) != Some(prev_log_term) {
            out.send(
                from,
                Msg::AppendEntriesResponse {
                    term: n.current_term,
                    success: false,
                    index: prev_log_index,
                    commit_index: n.commit_index,
                },
            );
            return;
        }
        let sent = entries.len() as u64;
        for (k, e) in entries.into_iter().enumerate() {
            let index = prev_log_index as usize + 1 + k; // 1-based
            match n.log.get(index - 1) {
                Some(old) if old.term == e.term => {}
                Some(_) => {
                    n.log.truncate(index - 1);
                    n.log.push(e);
                }
                None => n.log.push(e),
            }
        }
        // Raft's "index of the last new entry": the prefix this request vouches for.
        let verified = prev_log_index + sent;
        let c = leader_commit.min(verified);
        if c > n.commit_index {
            n.commit_index = c;
            n.apply();
        }
        // An empty request that matched tells the leader nothing new: no reply (keeps runs
        // minimal; a leader only sends one once the peer is caught up).
        if sent > 0 {
            out.send(
                from,
                Msg::AppendEntriesResponse {
                    term: n.current_term,
                    success: true,
                    index: verified,
                    commit_index: n.commit_index,
                },
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_append_entries_response(
        &self,
        id: NodeId,
        n: &mut RaftNode,
        from: NodeId,
        term: u64,
        success: bool,
        index: u64,
        commit_index: u64,
        out: &mut Fx,
    ) {
        if term > n.current_term {
            let was_leader = n.role == Role::Leader;
            n.adopt_term(term);
            if was_leader {
                // Deposed by a node of a newer term that did not elect this node: if that
                // term gets a leader, this timer finds it known; otherwise this node (whose
                // log is at least as up to date as its followers') runs again.
                out.timer(id, Msg::plain_election_timeout());
            }
            return;
        }
        if n.role != Role::Leader || term != n.current_term {
            return;
        }
        if success {
            n.inflight.retain(|&p| p != from);
            n.next_index[from] = n.next_index[from].max(index + 1);
            // Three nodes: the leader and this peer are a majority. Only entries of the
            // current term are committed by counting.
            if index > n.commit_index && n.term_at(index) == Some(n.current_term) {
                n.commit_index = index;
                n.apply();
            }
            if n.next_index[from] <= n.last_index() {
                // Entries appended while the request was in flight (they carry the commit
                // index too).
                n.replicate(from, out);
            } else if commit_index < n.commit_index {
                // Caught up but behind on the commit index: an empty request tells it.
                out.send(from, n.append_entries_for(from));
            }
        } else {
            // A refusal the leader already stepped back past (and resent after) changes
            // nothing.
            let back = n.next_index[from].min(index).max(1);
            if back != n.next_index[from] {
                n.next_index[from] = back;
                n.inflight.retain(|&p| p != from);
                n.replicate(from, out);
            }
        }
    }
}

/// What a handler asks for, in order; [`Raft`]'s `Protocol` impl hands it to the framework's
/// outbox. Kept separate so tests can drive the handlers on cloneable state.
#[derive(Default)]
pub(crate) struct Fx {
    pub(crate) items: Vec<(flymc_model::EventKind, NodeId, Msg)>,
}

impl Fx {
    fn send(&mut self, to: NodeId, msg: Msg) {
        self.items.push((flymc_model::EventKind::Message, to, msg));
    }
    fn timer(&mut self, node: NodeId, msg: Msg) {
        self.items
            .push((flymc_model::EventKind::Timeout, node, msg));
    }
    fn client(&mut self, node: NodeId, msg: Msg) {
        self.items.push((flymc_model::EventKind::Client, node, msg));
    }

    fn forward(self, out: &mut Outbox<Msg>) {
        for (kind, to, msg) in self.items {
            match kind {
                flymc_model::EventKind::Message => out.send(to, msg),
                flymc_model::EventKind::Client => out.client(to, msg),
                _ => out.timer(to, msg),
            }
        }
    }
}

impl Raft {
    /// Initial node states and events.
    pub(crate) fn init_fx(&self, out: &mut Fx) -> Vec<RaftNode> {
        let config = &self.config;
        let mut nodes = vec![RaftNode::new(); NODES];
        if let Some(l) = config.initial_leader {
            for (i, n) in nodes.iter_mut().enumerate() {
                n.current_term = 1;
                n.voted_for = Some(l);
                n.leader = Some(l);
                if i == l {
                    n.role = Role::Leader;
                    for p in peers(l) {
                        n.next_index[p] = 1;
                    }
                }
            }
            for value in 1..=config.updates {
                out.client(l, Msg::Update { value });
            }
        }
        for &t in &config.election_timers {
            out.timer(t, Msg::plain_election_timeout());
        }
        nodes
    }

    /// Process one delivered message, timer or client request at node `id`.
    pub(crate) fn handle_fx(
        &self,
        id: NodeId,
        n: &mut RaftNode,
        from: Option<NodeId>,
        msg: Msg,
        out: &mut Fx,
    ) {
        if let (Some(f), Some(term)) = (from, msg.leader_or_candidate_term()) {
            if term <= n.fallen[f] {
                // Sent by an incarnation of `f` this node has noticed crash: its leadership or
                // candidacy in that term died with it.
                return;
            }
        }
        match (msg, from) {
            (
                Msg::ElectionTimeout {
                    crashed,
                    crashed_term,
                    crashed_incarnation,
                },
                _,
            ) => self.on_election_timeout(id, n, crashed, crashed_term, crashed_incarnation, out),
            (
                Msg::PreVote {
                    term,
                    last_log_index,
                    last_log_term,
                },
                Some(f),
            ) => self.on_pre_vote(id, n, f, term, last_log_index, last_log_term, out),
            (Msg::PreVoteResponse { term, granted }, Some(f)) => {
                self.on_pre_vote_response(id, n, f, term, granted, out)
            }
            (Msg::Heartbeat { peer, incarnation }, _) => {
                if incarnation > n.seen[peer] {
                    n.seen[peer] = incarnation; // noticed the reboot
                    n.down.retain(|&d| d != peer);
                }
                if peer == id {
                    return;
                }
                // Whatever it was sent before is lost: a leader brings it up to date, a
                // candidate waiting for its answer asks again, and so does a pre-candidate.
                match n.role {
                    Role::Leader => {
                        n.inflight.retain(|&p| p != peer);
                        n.replicate(peer, out);
                    }
                    Role::Candidate if !n.refused.contains(&peer) && !n.votes.contains(&peer) => {
                        out.send(
                            peer,
                            Msg::RequestVote {
                                term: n.current_term,
                                last_log_index: n.last_index(),
                                last_log_term: n.last_term(),
                            },
                        )
                    }
                    Role::PreCandidate if !n.votes.contains(&peer) => out.send(
                        peer,
                        Msg::PreVote {
                            term: n.current_term + 1,
                            last_log_index: n.last_index(),
                            last_log_term: n.last_term(),
                        },
                    ),
                    _ => {}
                }
            }
            (Msg::Update { value }, _) => {
                if n.role == Role::Leader {
                    n.log.push(Entry {
                        term: n.current_term,
                        value: Some(value),
                    });
                    for p in peers(id) {
                        n.replicate(p, out);
                    }
                }
                // A non-leader drops the request (clients and redirects are not modelled).
            }
            (
                Msg::RequestVote {
                    term,
                    last_log_index,
                    last_log_term,
                },
                Some(f),
            ) => self.on_request_vote(id, n, f, term, last_log_index, last_log_term, out),
            (
                Msg::RequestVoteResponse {
                    term,
                    granted,
                    rival,
                    last_log_index,
                    last_log_term,
                },
                Some(f),
            ) => self.on_request_vote_response(
                id,
                n,
                f,
                term,
                granted,
                rival,
                last_log_index,
                last_log_term,
                out,
            ),
            (
                Msg::AppendEntries {
                    term,
                    prev_log_index,
                    prev_log_term,
                    entries,
                    leader_commit,
                },
                Some(f),
            ) => self.on_append_entries(
                n,
                f,
                term,
                prev_log_index,
                prev_log_term,
                entries,
                leader_commit,
                out,
            ),
            (
                Msg::AppendEntriesResponse {
                    term,
                    success,
                    index,
                    commit_index,
                },
                Some(f),
            ) => self.on_append_entries_response(id, n, f, term, success, index, commit_index, out),
            // Inter-node messages always have a sender.
            (_, None) => {}
        }
    }

    /// `id` crashed: drop volatile state; the others notice.
    pub(crate) fn crash_fx(&self, id: NodeId, n: &mut RaftNode, out: &mut Fx) {
        n.role = Role::Follower;
        n.leader = None;
        n.commit_index = 0;
        n.applied.clear();
        n.down.clear();
        n.seen = vec![0; NODES];
        n.fallen = vec![0; NODES];
        n.clear_bookkeeping();
        // The other nodes notice the crash (a lost connection) and arm an election timer; it
        // only starts an election where no live leader is known.
        for p in peers(id) {
            out.timer(
                p,
                Msg::ElectionTimeout {
                    crashed: Some(id),
                    crashed_term: n.current_term,
                    crashed_incarnation: n.incarnation,
                },
            );
        }
    }

    /// `id` rebooted (volatile state was reset at the crash). The others notice it is back;
    /// whichever of them leads sends it append_entries.
    pub(crate) fn reboot_fx(&self, id: NodeId, n: &mut RaftNode, out: &mut Fx) {
        n.incarnation += 1;
        for p in peers(id) {
            out.timer(
                p,
                Msg::Heartbeat {
                    peer: id,
                    incarnation: n.incarnation,
                },
            );
        }
    }
}

impl Protocol for Raft {
    type Node = RaftNode;
    type Msg = Msg;
    type Env = ();

    fn init(
        &self,
        workload: &Workload,
        _env: &mut (),
        out: &mut Outbox<Msg>,
    ) -> Result<Vec<RaftNode>, TargetError> {
        // The workload given to `start` is validated again; it is normally the one the target
        // was built from.
        let raft = Raft {
            config: Config::parse(workload)?,
        };
        let mut fx = Fx::default();
        let nodes = raft.init_fx(&mut fx);
        fx.forward(out);
        Ok(nodes)
    }

    fn handle(
        &self,
        id: NodeId,
        n: &mut RaftNode,
        _env: &mut (),
        from: Option<NodeId>,
        msg: Msg,
        out: &mut Outbox<Msg>,
    ) {
        let mut fx = Fx::default();
        self.handle_fx(id, n, from, msg, &mut fx);
        fx.forward(out);
    }

    fn crash(&self, id: NodeId, n: &mut RaftNode, _env: &mut (), out: &mut Outbox<Msg>) {
        let mut fx = Fx::default();
        self.crash_fx(id, n, &mut fx);
        fx.forward(out);
    }

    fn reboot(&self, id: NodeId, n: &mut RaftNode, _env: &mut (), out: &mut Outbox<Msg>) {
        let mut fx = Fx::default();
        self.reboot_fx(id, n, &mut fx);
        fx.forward(out);
    }
}
