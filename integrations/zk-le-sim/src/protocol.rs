//! The per-node state machine: ZooKeeper 3.8.0 `FastLeaderElection.lookForLeader` (plus the
//! answers `WorkerReceiver` sends on its own), followed by a simplified ZAB discovery phase that
//! establishes the new leader's epoch.
//!
//! # Election (FLE)
//! One `notification` kind carrying `sid, leader, zxid, election_epoch, peer_epoch, state` like
//! `FastLeaderElection.Notification`.
//! - Every node starts LOOKING in round 1; its `start` timer (the process coming up) sends its
//!   first notifications.
//! - `lookForLeader` increments `logicalclock`, proposes the node itself
//!   `(sid, last_zxid, current_epoch)` and sends the proposal to every other node; its own copy is
//!   recorded at once (3.8.0 queues it with the others: recording it first is one of the orders).
//! - A LOOKING node receiving a LOOKING notification: a higher `election_epoch` moves it to that
//!   round (clear `recvset`, take the better of the notification's vote and its own initial vote,
//!   broadcast); a lower one is discarded, but the node answers the lagging sender with its own
//!   notification (`WorkerReceiver`); an equal one replaces the proposal if it wins
//!   `totalOrderPredicate` (then broadcast). The vote is recorded in `recvset`. When the proposal
//!   has a quorum there, the `finalize` timer (finalizeWait) is armed. A better vote or a new
//!   round before it fires voids it (3.8.0 leaves the wait on a better vote); a valid one
//!   decides if the proposal still has a quorum: LEADING if it proposes itself, FOLLOWING
//!   otherwise. A void one re-arms if the new proposal has a quorum.
//! - A LOOKING node receiving a FOLLOWING/LEADING notification: same round -> into `recvset`,
//!   decide if a quorum of it agrees and `checkLeader` holds; any round -> into `outofelection`,
//!   join if a quorum agrees on that leader, counting the node itself, and `checkLeader` holds.
//!   3.8.0 does not count itself there: it relies on the leader's initLimit timeout to end a
//!   stand-off between a lone leader that is not established and a LOOKING node.
//! - A FOLLOWING/LEADING node answers a LOOKING sender with its current vote.
//!
//! 3.8.0 also re-sends its notifications whenever nothing arrives for notTimeout. That timer runs
//! freely and would let a schedule restart elections forever, so it is replaced by answers that
//! repair what it repairs: a LOOKING node answers a same-round vote that loses to its own (once per
//! distinct vote), and a vote from a node that earlier answered it as FOLLOWING/LEADING (so it
//! never took our vote); and when a crashed node reboots, every peer re-sends its current
//! notification to it (`peer_up`, like `SendWorker` re-sending `lastMessageSent` on reconnect).
//!
//! # Leader establishment (simplified ZAB discovery)
//! A follower sends `follower_info{accepted_epoch}`; once a quorum (the leader included) has
//! connected, the leader proposes `max(acceptedEpoch) + 1`, writes it as its own acceptedEpoch
//! and sends `leader_info{epoch}`; a follower accepts a higher epoch (writes acceptedEpoch,
//! `ack_epoch{fresh: true}`), re-acknowledges an equal one without it counting (3.8.0's `-1`
//! ack) and ignores a lower one (an earlier connection's). The leader with a quorum of fresh acks
//! writes currentEpoch, is established and sends `new_leader{epoch}`, on which followers write
//! currentEpoch and are established too. At most one leader is established per epoch because a
//! node freshly accepts a given epoch at most once and quorums intersect. A leader that sees a
//! follower whose acceptedEpoch is above its proposal can never be established: it re-elects.
//!
//! Connections: a `follower_info` reaching a LOOKING node waits in `connecting` (the follower
//! keeps retrying) until that node leads (they become followers) or follows someone (refused). A
//! node that is not leading refuses (`disconnect`) a follower whose claim it receives unless it
//! still proposes itself with the very vote the follower decided on. Either side sends
//! `disconnect` when it leaves (socket closed); a follower then elects again, a leader drops the
//! follower and, below a quorum, elects again.
//!
//! # Crashes
//! The crashed node loses everything but currentEpoch, acceptedEpoch and its zxid, and what it
//! sent that is still in flight (its connections reset; the network drops what was sent to it).
//! Every other node gets a `peer_down{peer}` timer: a follower of the peer elects again, a leader
//! drops it and, with fewer than a quorum of followers (whether it lost one or never had them),
//! elects again (the initLimit timeout, taken only when a crash makes waiting pointless). A node
//! that decides to follow a crashed leader gets the same timer at once (its connection attempt
//! fails). Reboot: `logicalclock` restarts at 0, then `lookForLeader`, and peers get `peer_up`.
//!
//! The stand-ins for timeouts keep every schedule of a 3-node ensemble live (random schedules
//! with up to 6 crashes and reboots all end with a quorum following one leader); with more nodes
//! a lone leader can wait for followers that never come, so the system accepts 3 nodes only.

use flymc_model::sim::{Outbox, Protocol};
use flymc_model::{NodeId, TargetError, Workload};
use serde::Serialize;

/// `QuorumPeer.ServerState` (observers are not modelled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ServerState {
    Looking,
    Following,
    Leading,
}

/// Which `totalOrderPredicate` the nodes run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// 3.8.0: epoch, then zxid, then server id.
    Fixed,
    /// Before ZOOKEEPER-1419: the id tie-break ignores the epoch, so the order is not total.
    Zk1419,
}

impl Variant {
    pub const NAMES: [&'static str; 2] = ["fixed", "zookeeper-1419"];

    pub fn parse(s: &str) -> Option<Variant> {
        match s {
            "fixed" => Some(Variant::Fixed),
            "zookeeper-1419" => Some(Variant::Zk1419),
            _ => None,
        }
    }

    /// `FastLeaderElection.totalOrderPredicate`: does the vote `new` beat `cur`?
    /// Votes are `(leader id, zxid, peer epoch)`.
    pub fn beats(self, new: (NodeId, u64, u64), cur: (NodeId, u64, u64)) -> bool {
        let (new_id, new_zxid, new_epoch) = new;
        let (cur_id, cur_zxid, cur_epoch) = cur;
        match self {
            Variant::Fixed => {
                new_epoch > cur_epoch
                    || (new_epoch == cur_epoch
                        && (new_zxid > cur_zxid || (new_zxid == cur_zxid && new_id > cur_id)))
            }
            Variant::Zk1419 => {
                new_epoch > cur_epoch
                    || (new_epoch == cur_epoch && new_zxid > cur_zxid)
                    || (new_zxid == cur_zxid && new_id > cur_id)
            }
        }
    }
}

/// A vote as kept in `recvset` / `outofelection` (`FastLeaderElection.Vote`), one per sender.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Vote {
    pub sid: NodeId,
    pub leader: NodeId,
    pub zxid: u64,
    pub election_epoch: u64,
    pub peer_epoch: u64,
    pub state: ServerState,
}

impl Vote {
    /// `Vote.equals`, as `getVoteTracker` uses it: when either side is LOOKING the whole vote
    /// must match, otherwise the leader and its epoch.
    fn agrees(&self, other: &Vote) -> bool {
        if self.state == ServerState::Looking || other.state == ServerState::Looking {
            self.leader == other.leader
                && self.zxid == other.zxid
                && self.election_epoch == other.election_epoch
                && self.peer_epoch == other.peer_epoch
        } else {
            self.leader == other.leader && self.peer_epoch == other.peer_epoch
        }
    }
}

/// The `finalize` timer of a LOOKING node (at most one is pending).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinalizeWait {
    /// No timer pending.
    Idle,
    /// Pending, and the proposal has not changed since it was armed: when it fires the node
    /// decides if the proposal still has a quorum.
    Waiting,
    /// Pending, but a better vote (or a new round) came since: it decides nothing.
    Stale,
}

impl FinalizeWait {
    fn void(&mut self) {
        if *self == FinalizeWait::Waiting {
            *self = FinalizeWait::Stale;
        }
    }
}

/// One node. Every field decides future behaviour; all of it is the checker's state.
#[derive(Clone, Debug, Serialize)]
pub struct Node {
    /// The server id (constant; here so guards can compare `m.sid == n.sid`).
    pub sid: NodeId,
    // --- persistent (survive a crash) ---
    /// The `currentEpoch` file.
    pub current_epoch: u64,
    /// The `acceptedEpoch` file.
    pub accepted_epoch: u64,
    /// Last logged zxid (no transactions are modelled, so it never changes).
    pub last_zxid: u64,
    // --- volatile: election ---
    pub state: ServerState,
    /// FLE's `logicalclock` (the election epoch / round).
    pub logicalclock: u64,
    pub proposed_leader: NodeId,
    pub proposed_zxid: u64,
    pub proposed_epoch: u64,
    /// Votes received in this round, sorted by sender.
    pub recvset: Vec<Vote>,
    /// Votes of FOLLOWING/LEADING nodes seen while LOOKING, sorted by sender.
    pub outofelection: Vec<Vote>,
    /// The finalizeWait after the proposal reached a quorum.
    pub finalize: FinalizeWait,
    // --- volatile: ZAB discovery ---
    /// LOOKING: `(follower, acceptedEpoch)` of nodes already trying to connect to this node as
    /// their leader (they keep retrying until it leads or follows someone), sorted.
    pub connecting: Vec<(NodeId, u64)>,
    /// The leader followed (itself when LEADING); `None` while LOOKING.
    pub leader: Option<NodeId>,
    /// Leader: nodes whose `follower_info` arrived, sorted.
    pub followers: Vec<NodeId>,
    /// Leader: highest acceptedEpoch among itself and its connected followers before proposing.
    pub max_accepted: u64,
    /// Leader: the epoch proposed in `leader_info`.
    pub new_epoch: Option<u64>,
    /// Leader: `(follower, fresh)` for each `ack_epoch` of `new_epoch`, sorted.
    pub epoch_acks: Vec<(NodeId, bool)>,
    /// Leader: a quorum freshly acknowledged `new_epoch`; follower: `new_leader` arrived.
    pub established: bool,
}

impl Node {
    pub(crate) fn new(sid: NodeId, current_epoch: u64, last_zxid: u64) -> Node {
        let mut n = Node {
            sid,
            current_epoch,
            accepted_epoch: current_epoch,
            last_zxid,
            state: ServerState::Looking,
            logicalclock: 0,
            proposed_leader: sid,
            proposed_zxid: last_zxid,
            proposed_epoch: current_epoch,
            recvset: Vec::new(),
            outofelection: Vec::new(),
            finalize: FinalizeWait::Idle,
            connecting: Vec::new(),
            leader: None,
            followers: Vec::new(),
            max_accepted: 0,
            new_epoch: None,
            epoch_acks: Vec::new(),
            established: false,
        };
        n.forget_volatile();
        n
    }

    /// Back to the state of a freshly started process (keeps the persistent fields).
    fn forget_volatile(&mut self) {
        self.state = ServerState::Looking;
        self.logicalclock = 0;
        self.propose_self();
        self.recvset.clear();
        self.outofelection.clear();
        self.finalize = FinalizeWait::Idle; // a crash drops the pending timer
        self.connecting.clear();
        self.forget_zab();
    }

    fn forget_zab(&mut self) {
        self.leader = None;
        self.followers.clear();
        self.max_accepted = 0;
        self.new_epoch = None;
        self.epoch_acks.clear();
        self.established = false;
    }

    fn propose_self(&mut self) {
        self.proposed_leader = self.sid;
        self.proposed_zxid = self.last_zxid;
        self.proposed_epoch = self.current_epoch;
    }

    fn proposal(&self) -> (NodeId, u64, u64) {
        (
            self.proposed_leader,
            self.proposed_zxid,
            self.proposed_epoch,
        )
    }

    /// The node's own vote as it would go out now (`getVote` / `getCurrentVote`).
    fn notification(&self) -> Msg {
        Msg::Notification {
            seq: 0,
            sid: self.sid,
            leader: self.proposed_leader,
            zxid: self.proposed_zxid,
            election_epoch: self.logicalclock,
            peer_epoch: self.proposed_epoch,
            state: self.state,
        }
    }

    fn proposal_vote(&self) -> Vote {
        Vote {
            sid: self.sid,
            leader: self.proposed_leader,
            zxid: self.proposed_zxid,
            election_epoch: self.logicalclock,
            peer_epoch: self.proposed_epoch,
            state: ServerState::Looking,
        }
    }
}

/// Everything that travels: FLE notifications, ZAB discovery messages, and timers.
///
/// Messages carry `seq`, their position on their connection (see [`Env`]).
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Msg {
    /// Timer: the node's process starts and sends its first notifications.
    Start,
    /// `FastLeaderElection.Notification`.
    Notification {
        seq: u64,
        sid: NodeId,
        leader: NodeId,
        zxid: u64,
        election_epoch: u64,
        peer_epoch: u64,
        state: ServerState,
    },
    /// Timer: finalizeWait expired.
    Finalize,
    /// Timer: the connections to `peer` broke (it crashed).
    PeerDown { peer: NodeId },
    /// Timer: `peer` (rebooted) connected again; the sender re-sends its last notification
    /// (`SendWorker` re-sends `lastMessageSent` after a reconnect).
    PeerUp { peer: NodeId },
    /// Follower -> leader: FOLLOWERINFO.
    FollowerInfo { seq: u64, accepted_epoch: u64 },
    /// Leader -> follower: LEADERINFO with the proposed epoch.
    LeaderInfo { seq: u64, epoch: u64 },
    /// Follower -> leader: ACKEPOCH; `fresh` is false for 3.8.0's `-1` (already accepted).
    AckEpoch { seq: u64, epoch: u64, fresh: bool },
    /// Leader -> follower: NEWLEADER, the epoch is established.
    NewLeader { seq: u64, epoch: u64 },
    /// The follower-leader connection closed, or was refused.
    Disconnect { seq: u64 },
}

impl Msg {
    /// The connection a message travels on and its position there; `None` for timers.
    fn wire(&mut self) -> Option<(Port, &mut u64)> {
        match self {
            Msg::Start | Msg::Finalize | Msg::PeerDown { .. } | Msg::PeerUp { .. } => None,
            Msg::Notification { seq, .. } => Some((Port::Election, seq)),
            Msg::FollowerInfo { seq, .. }
            | Msg::LeaderInfo { seq, .. }
            | Msg::AckEpoch { seq, .. }
            | Msg::NewLeader { seq, .. }
            | Msg::Disconnect { seq } => Some((Port::Quorum, seq)),
        }
    }
}

#[derive(Clone, Copy)]
enum Port {
    Election,
    Quorum,
}

/// The environment: which nodes are up (the failure detector's ground truth, a function of the
/// nodes' `alive` flags), and the connections between nodes.
///
/// ZooKeeper talks over TCP, one connection per pair of nodes for elections and one per
/// follower for ZAB, and its election send queues hold a single message that a newer one
/// replaces. So on a connection a node never sees an older message after a newer one. The
/// checker may deliver pending messages in any order; a message overtaken by a newer one on the
/// same connection is therefore dropped when it arrives, as if the newer one had replaced it.
/// `[from][to] = [seq of the last message sent, seq of the newest message delivered]`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Env {
    pub alive: Vec<bool>,
    pub election: Vec<Vec<[u64; 2]>>,
    pub quorum: Vec<Vec<[u64; 2]>>,
}

impl Env {
    fn port(&mut self, port: Port) -> &mut Vec<Vec<[u64; 2]>> {
        match port {
            Port::Election => &mut self.election,
            Port::Quorum => &mut self.quorum,
        }
    }
}

/// The simulated ensemble.
#[derive(Clone, Debug)]
pub struct ZkLe {
    pub variant: Variant,
    pub nodes: usize,
    /// Initial currentEpoch (= acceptedEpoch) of each node.
    pub epochs: Vec<u64>,
    /// Last logged zxid of each node.
    pub zxids: Vec<u64>,
}

/// What a handler works with besides its node.
struct Ctx<'a> {
    p: &'a ZkLe,
    env: &'a mut Env,
    out: &'a mut Outbox<Msg>,
    me: NodeId,
}

impl Ctx<'_> {
    fn quorum(&self) -> usize {
        self.p.nodes / 2 + 1
    }

    /// Send on the connection to `to`, numbering the message.
    fn send(&mut self, to: NodeId, mut msg: Msg) {
        let me = self.me;
        if let Some((port, seq)) = msg.wire() {
            let chan = &mut self.env.port(port)[me][to];
            chan[0] += 1;
            *seq = chan[0];
        }
        self.out.send(to, msg);
    }

    fn timer(&mut self, msg: Msg) {
        self.out.timer(self.me, msg);
    }

    /// `sendNotifications`: the proposal to every other node. The copy to itself is taken
    /// at once (3.8.0 queues it like the others; taking it first is one of the orders the
    /// checker could pick, and it saves a third of the events).
    fn broadcast(&mut self, node: &mut Node) {
        for to in (0..self.p.nodes).filter(|&to| to != node.sid) {
            self.send(to, node.notification());
        }
        let own = node.proposal_vote();
        put_vote(&mut node.recvset, own);
        self.maybe_finalize(node);
    }

    /// Arm the finalizeWait once the proposal has a quorum in `recvset`.
    fn maybe_finalize(&mut self, node: &mut Node) {
        if node.finalize == FinalizeWait::Idle && self.proposal_has_quorum(node) {
            node.finalize = FinalizeWait::Waiting;
            self.timer(Msg::Finalize);
        }
    }

    /// `lookForLeader` from the top: a new round, voting for itself.
    fn look_for_leader(&mut self, node: &mut Node) {
        debug_assert!(node.connecting.is_empty());
        node.forget_zab();
        node.state = ServerState::Looking;
        node.logicalclock += 1;
        node.propose_self();
        node.recvset.clear();
        node.outofelection.clear();
        node.finalize.void();
        self.broadcast(node);
    }

    /// Leave LEADING: close every follower connection, then elect again.
    fn stop_leading(&mut self, node: &mut Node) {
        let mut peers: Vec<NodeId> = node.followers.clone();
        peers.extend(node.epoch_acks.iter().map(|&(f, _)| f));
        peers.sort_unstable();
        peers.dedup();
        for f in peers {
            self.send(f, Msg::Disconnect { seq: 0 });
        }
        self.look_for_leader(node);
    }

    fn proposal_has_quorum(&self, node: &Node) -> bool {
        let v = node.proposal_vote();
        node.recvset.iter().filter(|r| r.agrees(&v)).count() >= self.quorum()
    }

    /// `FastLeaderElection.checkLeader`.
    fn check_leader(node: &Node, votes: &[Vote], leader: NodeId, election_epoch: u64) -> bool {
        if leader != node.sid {
            votes
                .iter()
                .any(|v| v.sid == leader && v.state == ServerState::Leading)
        } else {
            node.logicalclock == election_epoch
        }
    }

    /// Leave the election following (or leading) `leader` (`setPeerState` + `leaveInstance`).
    fn decide(&mut self, node: &mut Node, leader: NodeId) {
        let connecting = std::mem::take(&mut node.connecting);
        node.recvset.clear();
        node.outofelection.clear();
        node.finalize.void();
        node.forget_zab();
        node.leader = Some(leader);
        if leader == node.sid {
            node.state = ServerState::Leading;
            node.max_accepted = node.accepted_epoch;
            for (f, accepted_epoch) in connecting {
                insert_sorted(&mut node.followers, f);
                node.max_accepted = node.max_accepted.max(accepted_epoch);
            }
            self.maybe_propose_epoch(node);
        } else {
            for (f, _) in connecting {
                // This node will not lead: their connection attempts fail.
                self.send(f, Msg::Disconnect { seq: 0 });
            }
            node.state = ServerState::Following;
            let accepted_epoch = node.accepted_epoch;
            self.send(
                leader,
                Msg::FollowerInfo {
                    seq: 0,
                    accepted_epoch,
                },
            );
            if !self.env.alive.get(leader).copied().unwrap_or(false) {
                // The connection attempt fails at once.
                self.timer(Msg::PeerDown { peer: leader });
            }
        }
    }

    /// Leader: with a quorum connected, propose `max(acceptedEpoch) + 1`.
    fn maybe_propose_epoch(&mut self, node: &mut Node) {
        if node.new_epoch.is_some() || node.followers.len() + 1 < self.quorum() {
            return;
        }
        let epoch = node.max_accepted + 1;
        node.accepted_epoch = epoch;
        node.new_epoch = Some(epoch);
        for &f in &node.followers {
            self.send(f, Msg::LeaderInfo { seq: 0, epoch });
        }
    }

    fn on_notification(&mut self, node: &mut Node, n: Vote) {
        if node.state != ServerState::Looking {
            if n.state != ServerState::Looking || n.sid == node.sid {
                return;
            }
            // WorkerReceiver: tell a LOOKING peer whom we follow.
            self.send(n.sid, node.notification());
            return;
        }
        let variant = self.p.variant;
        let nv = (n.leader, n.zxid, n.peer_epoch);
        if n.state == ServerState::Looking {
            if n.election_epoch > node.logicalclock {
                node.logicalclock = n.election_epoch;
                node.recvset.clear();
                node.finalize.void();
                let init = (node.sid, node.last_zxid, node.current_epoch);
                if variant.beats(nv, init) {
                    (
                        node.proposed_leader,
                        node.proposed_zxid,
                        node.proposed_epoch,
                    ) = nv;
                } else {
                    node.propose_self();
                }
                self.broadcast(node);
            } else if n.election_epoch < node.logicalclock {
                // Discarded by lookForLeader; WorkerReceiver answers the lagging peer.
                if n.sid != node.sid {
                    self.send(n.sid, node.notification());
                }
                return;
            } else if variant.beats(nv, node.proposal()) {
                // A better vote during finalizeWait: the wait is over without a decision.
                node.finalize.void();
                (
                    node.proposed_leader,
                    node.proposed_zxid,
                    node.proposed_epoch,
                ) = nv;
                self.broadcast(node);
            } else if n.sid != node.sid {
                // The sender may lack our vote: it votes worse (our vote may still be on its
                // way, or it reached the sender while that was FOLLOWING or LEADING), or it
                // told us it was FOLLOWING or LEADING when our vote reached it (the claim kept
                // in `outofelection`). 3.8.0 repairs that by re-sending on notTimeout;
                // answering at once does it without a free-running timer. Once per vote: a
                // vote we already recorded from the sender is not answered again.
                let told_us = node.outofelection.iter().position(|v| v.sid == n.sid);
                let worse = nv != node.proposal()
                    && node.recvset.iter().find(|v| v.sid == n.sid) != Some(&n);
                if let Some(i) = told_us {
                    node.outofelection.remove(i); // it is LOOKING in our round now
                }
                if worse || told_us.is_some() {
                    self.send(n.sid, node.notification());
                }
            }
            put_vote(&mut node.recvset, n);
            self.maybe_finalize(node);
            return;
        }
        // The sender is FOLLOWING or LEADING.
        if n.election_epoch == node.logicalclock {
            put_vote(&mut node.recvset, n.clone());
            let agreeing = node.recvset.iter().filter(|v| v.agrees(&n)).count();
            if agreeing >= self.quorum()
                && Self::check_leader(node, &node.recvset, n.leader, n.election_epoch)
            {
                self.adopt_and_decide(node, &n);
                return;
            }
        }
        put_vote(&mut node.outofelection, n.clone());
        // Counting this node itself (see the module docs).
        let agreeing = node.outofelection.iter().filter(|v| v.agrees(&n)).count()
            + usize::from(n.leader != node.sid);
        if agreeing >= self.quorum()
            && Self::check_leader(node, &node.outofelection, n.leader, n.election_epoch)
        {
            node.logicalclock = n.election_epoch;
            self.adopt_and_decide(node, &n);
            return;
        }
        if n.state == ServerState::Following
            && n.leader == node.sid
            && !(node.proposed_leader == node.sid && n.agrees(&node.proposal_vote()))
        {
            // The sender follows this node, which is not leading and will not lead the vote
            // the sender decided on: its connection attempt times out.
            node.connecting.retain(|&(f, _)| f != n.sid);
            self.send(n.sid, Msg::Disconnect { seq: 0 });
        }
    }

    fn adopt_and_decide(&mut self, node: &mut Node, n: &Vote) {
        node.proposed_leader = n.leader;
        node.proposed_zxid = n.zxid;
        node.proposed_epoch = n.peer_epoch;
        self.decide(node, n.leader);
    }

    fn on_peer_down(&mut self, node: &mut Node, peer: NodeId) {
        match node.state {
            ServerState::Following if node.leader == Some(peer) => {
                // Close our end: if `peer` already came back and we follow it again, it
                // learns that we left.
                self.send(peer, Msg::Disconnect { seq: 0 });
                self.look_for_leader(node);
            }
            ServerState::Looking => node.connecting.retain(|&(f, _)| f != peer),
            ServerState::Leading => {
                let known = node.followers.contains(&peer);
                node.followers.retain(|&f| f != peer);
                node.epoch_acks.retain(|&(f, _)| f != peer);
                if known {
                    // Close our end too: if `peer` already came back and reconnected, that
                    // connection is the one that breaks, and it reconnects.
                    self.send(peer, Msg::Disconnect { seq: 0 });
                }
                if node.followers.len() + 1 < self.quorum() {
                    // Lost its quorum, or (not established yet) gives up waiting for one: the
                    // initLimit timeout, taken when a crash makes waiting pointless.
                    self.stop_leading(node);
                }
            }
            ServerState::Following => {}
        }
    }

    /// The connection with `peer` closed (or was refused).
    fn on_disconnect(&mut self, node: &mut Node, peer: NodeId) {
        match node.state {
            ServerState::Following if node.leader == Some(peer) => self.look_for_leader(node),
            ServerState::Following => {}
            ServerState::Looking => node.connecting.retain(|&(f, _)| f != peer),
            ServerState::Leading => {
                if node.followers.contains(&peer) {
                    node.followers.retain(|&f| f != peer);
                    node.epoch_acks.retain(|&(f, _)| f != peer);
                    if node.followers.len() + 1 < self.quorum() {
                        self.stop_leading(node);
                    }
                }
            }
        }
    }

    fn on_follower_info(&mut self, node: &mut Node, f: NodeId, accepted_epoch: u64) {
        match node.state {
            ServerState::Looking => {
                // The follower decided first and keeps retrying its connection.
                match node.connecting.binary_search_by_key(&f, |&(s, _)| s) {
                    Ok(i) => node.connecting[i].1 = accepted_epoch,
                    Err(i) => node.connecting.insert(i, (f, accepted_epoch)),
                }
                return;
            }
            ServerState::Following => {
                // It follows someone else: nobody listens on its quorum port.
                self.send(f, Msg::Disconnect { seq: 0 });
                return;
            }
            ServerState::Leading => {}
        }
        match node.new_epoch {
            Some(e) if accepted_epoch > e => {
                // A newer epoch exists: this leader can never be established.
                self.stop_leading(node);
            }
            Some(epoch) => {
                insert_sorted(&mut node.followers, f);
                self.send(f, Msg::LeaderInfo { seq: 0, epoch });
            }
            None => {
                insert_sorted(&mut node.followers, f);
                node.max_accepted = node.max_accepted.max(accepted_epoch);
                self.maybe_propose_epoch(node);
            }
        }
    }

    fn on_leader_info(&mut self, node: &mut Node, l: NodeId, epoch: u64) {
        if node.state != ServerState::Following || node.leader != Some(l) {
            return;
        }
        if epoch > node.accepted_epoch {
            node.accepted_epoch = epoch;
            self.send(
                l,
                Msg::AckEpoch {
                    seq: 0,
                    epoch,
                    fresh: true,
                },
            );
        } else if epoch == node.accepted_epoch {
            self.send(
                l,
                Msg::AckEpoch {
                    seq: 0,
                    epoch,
                    fresh: false,
                },
            );
        }
        // A lower epoch comes from an earlier connection to this leader: ignored.
    }

    fn on_ack_epoch(&mut self, node: &mut Node, f: NodeId, epoch: u64, fresh: bool) {
        if node.state != ServerState::Leading || node.new_epoch != Some(epoch) {
            return;
        }
        insert_sorted(&mut node.followers, f);
        match node.epoch_acks.binary_search_by_key(&f, |&(s, _)| s) {
            Ok(i) => node.epoch_acks[i].1 |= fresh,
            Err(i) => node.epoch_acks.insert(i, (f, fresh)),
        }
        if node.established {
            self.send(f, Msg::NewLeader { seq: 0, epoch });
        } else if node.epoch_acks.iter().filter(|a| a.1).count() + 1 >= self.quorum() {
            node.established = true;
            node.current_epoch = epoch;
            for (a, _) in node.epoch_acks.clone() {
                self.send(a, Msg::NewLeader { seq: 0, epoch });
            }
        }
    }
}

/// Insert or replace the vote of `v.sid`, keeping the list sorted by sender.
fn put_vote(set: &mut Vec<Vote>, v: Vote) {
    match set.binary_search_by_key(&v.sid, |x| x.sid) {
        Ok(i) => set[i] = v,
        Err(i) => set.insert(i, v),
    }
}

fn insert_sorted(list: &mut Vec<NodeId>, x: NodeId) {
    if let Err(i) = list.binary_search(&x) {
        list.insert(i, x);
    }
}

impl Protocol for ZkLe {
    type Node = Node;
    type Msg = Msg;
    type Env = Env;

    fn init(
        &self,
        workload: &Workload,
        env: &mut Env,
        out: &mut Outbox<Msg>,
    ) -> Result<Vec<Node>, TargetError> {
        if workload.nodes != self.nodes {
            return Err(TargetError::Workload(format!(
                "the target was built for {} nodes but the workload has {}",
                self.nodes, workload.nodes
            )));
        }
        let n = self.nodes;
        *env = Env {
            alive: vec![true; n],
            election: vec![vec![[0, 0]; n]; n],
            quorum: vec![vec![[0, 0]; n]; n],
        };
        let nodes = (0..n)
            .map(|i| {
                let mut node = Node::new(i, self.epochs[i], self.zxids[i]);
                // Inside lookForLeader already; `start` sends the first notifications.
                node.logicalclock = 1;
                node
            })
            .collect();
        for i in 0..n {
            out.timer(i, Msg::Start);
        }
        Ok(nodes)
    }

    fn handle(
        &self,
        id: NodeId,
        node: &mut Node,
        env: &mut Env,
        from: Option<NodeId>,
        mut msg: Msg,
        out: &mut Outbox<Msg>,
    ) {
        debug_assert_eq!(id, node.sid);
        if let (Some(f), Some((port, &mut seq))) = (from, msg.wire()) {
            let chan = &mut env.port(port)[f][id];
            if seq <= chan[1] {
                return; // overtaken by a newer message on its connection, or its sender crashed
            }
            chan[1] = seq;
        }
        let mut cx = Ctx {
            p: self,
            env,
            out,
            me: id,
        };
        let from = from.unwrap_or(id);
        match msg {
            Msg::Start => {
                if node.state == ServerState::Looking {
                    cx.broadcast(node);
                }
            }
            Msg::Notification {
                seq: _,
                sid,
                leader,
                zxid,
                election_epoch,
                peer_epoch,
                state,
            } => {
                let n = Vote {
                    sid,
                    leader,
                    zxid,
                    election_epoch,
                    peer_epoch,
                    state,
                };
                cx.on_notification(node, n);
            }
            Msg::Finalize => {
                let valid = node.finalize == FinalizeWait::Waiting;
                node.finalize = FinalizeWait::Idle;
                if node.state == ServerState::Looking && cx.proposal_has_quorum(node) {
                    if valid {
                        let leader = node.proposed_leader;
                        cx.decide(node, leader);
                    } else {
                        // The proposal changed during the wait: wait again for this one.
                        node.finalize = FinalizeWait::Waiting;
                        cx.timer(Msg::Finalize);
                    }
                }
            }
            Msg::PeerDown { peer } => cx.on_peer_down(node, peer),
            Msg::PeerUp { peer } => cx.send(peer, node.notification()),
            Msg::FollowerInfo { accepted_epoch, .. } => {
                cx.on_follower_info(node, from, accepted_epoch)
            }
            Msg::LeaderInfo { epoch, .. } => cx.on_leader_info(node, from, epoch),
            Msg::AckEpoch { epoch, fresh, .. } => cx.on_ack_epoch(node, from, epoch, fresh),
            Msg::NewLeader { epoch, .. } => {
                if node.state == ServerState::Following
                    && node.leader == Some(from)
                    && epoch == node.accepted_epoch
                {
                    node.current_epoch = epoch;
                    node.established = true;
                }
            }
            Msg::Disconnect { .. } => cx.on_disconnect(node, from),
        }
    }

    fn crash(&self, id: NodeId, node: &mut Node, env: &mut Env, out: &mut Outbox<Msg>) {
        env.alive[id] = false;
        // Its connections reset: what it sent and is still in flight is lost.
        for chan in env.election[id].iter_mut().chain(env.quorum[id].iter_mut()) {
            chan[1] = chan[0];
        }
        node.forget_volatile();
        for p in (0..self.nodes).filter(|&p| p != id) {
            out.timer(p, Msg::PeerDown { peer: id });
        }
    }

    fn reboot(&self, id: NodeId, node: &mut Node, env: &mut Env, out: &mut Outbox<Msg>) {
        env.alive[id] = true;
        node.forget_volatile();
        for p in (0..self.nodes).filter(|&p| p != id) {
            out.timer(p, Msg::PeerUp { peer: id });
        }
        let mut cx = Ctx {
            p: self,
            env,
            out,
            me: id,
        };
        cx.look_for_leader(node);
    }
}
