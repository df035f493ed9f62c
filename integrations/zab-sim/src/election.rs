//! Leader election, coarse: one `finalize` step per node decides what
//! `FastLeaderElection.lookForLeader` would decide once the votes of the live nodes reached it.
//!
//! Why this grain loses nothing the safety properties read: FLE's own messages change no
//! durable state and no ZAB state; what a schedule of notifications can make a node decide is
//! (a) to follow a leader a quorum already follows (`outofelection`), or (b) to follow the best
//! vote among the nodes taking part (`totalOrderPredicate` over (currentEpoch, last zxid,
//! sid)), when a quorum of them would adopt it. Both outcomes are offered here, at the
//! moment the node's finalizeWait ends (`finalize`, the real timer), reading the other nodes'
//! votes from the shared environment instead of from delivered notifications. What is not
//! offered: two of three LOOKING nodes electing the better of the two while the third's
//! better vote is still on its way (the twin lets the third's vote count); and the
//! re-sending on notTimeout, which only repeats votes. Crash-recovery bugs such as
//! ZOOKEEPER-4643 are about which node wins on which disk, which both rules decide exactly.

use flymc_model::NodeId;

use crate::msg::Msg;
use crate::net::{Ctx, Vote};
use crate::state::{make_zxid, Blocked, Follow, Lead, Node, ServerState, ZabState};

impl Ctx<'_> {
    /// `QuorumPeer.run`'s LOOKING case begins: after `ZooKeeperServer.shutdown`'s
    /// `fastForwardDataBase` (or a reboot's `loadDataBase`) the node votes for itself.
    pub fn enter_election(&mut self, node: &mut Node) {
        let last = node.last_zxid();
        let forward: Vec<_> = node
            .disk
            .txnlog
            .iter()
            .copied()
            .filter(|&z| z > last)
            .collect();
        node.log.extend(&forward);
        node.committed_log.extend(&forward);
        node.state = ServerState::Looking;
        node.zab_state = ZabState::Election;
        let vote = node.vote();
        let me = self.me;
        let peer = &mut self.env.peers[me];
        peer.state = ServerState::Looking;
        peer.ready = true;
        peer.vote = vote;
        peer.leader = None;
        peer.waiting = false;
        if !peer.finalize {
            peer.finalize = true;
            self.timer(Msg::Finalize);
        }
        self.wake_waiting();
    }

    /// Nodes whose last `finalize` decided nothing look again: the votes changed.
    pub fn wake_waiting(&mut self) {
        for j in 0..self.p.nodes {
            let peer = &mut self.env.peers[j];
            if j != self.me && peer.alive && peer.waiting && !peer.finalize {
                peer.waiting = false;
                peer.finalize = true;
                self.out.timer(j, Msg::Finalize);
            }
        }
    }

    /// `lookForLeader` decides, or waits for the votes to change.
    pub fn on_finalize(&mut self, node: &mut Node) {
        let me = self.me;
        self.env.peers[me].finalize = false;
        if node.state != ServerState::Looking {
            return;
        }
        match self.decision() {
            Some((leader, vote)) => self.decide(node, leader, vote),
            None => self.env.peers[me].waiting = true,
        }
    }

    /// (a) a leader a quorum follows (the `outofelection` case), else (b) the best vote of
    /// the nodes in the election if a quorum would adopt it (LOOKING nodes adopt any better
    /// vote; FOLLOWING and LEADING ones keep theirs).
    fn decision(&self) -> Option<(NodeId, Vote)> {
        let peers = &self.env.peers;
        let live = || (0..self.p.nodes).filter(|&j| peers[j].alive);
        for l in live() {
            if peers[l].state != ServerState::Leading {
                continue;
            }
            let followers = live()
                .filter(|&f| peers[f].state == ServerState::Following && peers[f].leader == Some(l))
                .count();
            if followers + 1 >= self.quorum() {
                return Some((l, peers[l].vote));
            }
        }
        let taking_part =
            || live().filter(|&j| peers[j].state != ServerState::Looking || peers[j].ready);
        let best = taking_part().map(|j| peers[j].vote).max()?;
        // A follower whose leader is not leading gives up on it (its `connect-retry`s run
        // out) and looks again: it would adopt the best vote too.
        let adopts = |j: NodeId| match peers[j].state {
            ServerState::Looking => true,
            ServerState::Following => peers[j]
                .leader
                .is_none_or(|l| peers[l].state != ServerState::Leading),
            ServerState::Leading => false,
        };
        let support = taking_part()
            .filter(|&j| adopts(j) || peers[j].vote == best)
            .count();
        (support >= self.quorum()).then_some((best.2, best))
    }

    /// `lookForLeader` returns: LEADING (`Leader.lead` starts with `loadData`'s snapshot) or
    /// FOLLOWING (`Follower.followLeader` connects and sends FOLLOWERINFO).
    fn decide(&mut self, node: &mut Node, leader: NodeId, vote: Vote) {
        let me = self.me;
        node.leader = Some(leader);
        node.zab_state = ZabState::Discovery;
        let peer = &mut self.env.peers[me];
        peer.vote = vote;
        peer.leader = Some(leader);
        peer.waiting = false;
        if leader == me {
            node.state = ServerState::Leading;
            peer.state = ServerState::Leading;
            let round = self.env.next_conn;
            self.env.next_conn += 1;
            self.timer(Msg::EpochWait { round });
            node.lead = Some(Lead {
                round,
                summary: (node.current_epoch, node.last_zxid()),
                epoch: None,
                connecting: Vec::new(),
                electing: Vec::new(),
                election_finished: false,
                newleader_acks: Vec::new(),
                quorum_formed: false,
                learners: Vec::new(),
                outstanding: Vec::new(),
                counter: 0,
                tick: false,
            });
            let last = node.last_zxid();
            self.block(node, Blocked::LeaderSnapshot, Msg::Snapshot { value: last });
        } else {
            node.state = ServerState::Following;
            peer.state = ServerState::Following;
            let conn = self.env.next_conn;
            self.env.next_conn += 1;
            node.follow = Some(Follow {
                conn,
                new_epoch: None,
                syncing: false,
                snapshot_needed: false,
                write_to_txn_log: false,
                not_committed: Vec::new(),
                committed: Vec::new(),
                newleader_acked: false,
                uptodate: false,
            });
            let zxid = make_zxid(node.accepted_epoch, 0);
            self.send(leader, Msg::FollowerInfo { conn, zxid });
            self.timer(Msg::ReadTimeout { conn });
            if !self.alive(leader) {
                // Its connection attempts fail (`connect-retry`, then it gives up).
                self.timer(Msg::Disconnect { peer: leader });
            }
            // Learners that tried to connect to this node are refused.
            for (f, conn, _) in std::mem::take(&mut node.connecting) {
                self.send(f, Msg::Close { conn });
            }
        }
        self.wake_waiting();
    }

    /// Enter a write: the node's quorum thread waits in it until the `disk:*` event fires.
    pub fn block(&mut self, node: &mut Node, then: Blocked, write: Msg) {
        node.blocked = Some(then);
        self.timer(write);
    }

    /// The node leaves its role without crashing (`Follower.shutdown` / `Leader.shutdown`
    /// -> `ZooKeeperServer.shutdown`): the sync thread flushes what it queued, then the node
    /// looks for a leader again.
    pub fn stop(&mut self, node: &mut Node) {
        node.state = ServerState::Looking;
        node.zab_state = ZabState::Election;
        node.leader = None;
        node.established = false;
        node.lead = None;
        node.follow = None;
        node.pending_txns.clear();
        let me = self.me;
        let peer = &mut self.env.peers[me];
        peer.state = ServerState::Looking;
        peer.ready = false;
        peer.leader = None;
        if node.unflushed.is_empty() {
            self.enter_election(node);
        } else {
            // The pending `disk:txnlog` flush ends the shutdown.
            node.blocked = Some(Blocked::ShutdownFlush);
            self.wake_waiting();
        }
    }
}
