//! One node's state: its role, its memory and its disk. Everything here decides what the node
//! does next, so all of it is the checker's state; the variables the real integration reports
//! carry its names (`state`, `zabState`, `currentEpoch`, `acceptedEpoch`, `leader`,
//! `established`, `acked`, `log`).

use flymc_model::NodeId;
use serde::Serialize;

use crate::disk::Disk;
use crate::msg::Msg;

/// A transaction id: the epoch in the high 32 bits, a counter in the low ones
/// (`ZxidUtils.makeZxid`).
pub type Zxid = u64;

pub fn make_zxid(epoch: u64, counter: u64) -> Zxid {
    (epoch << 32) | counter
}

pub fn epoch_of(zxid: Zxid) -> u64 {
    zxid >> 32
}

/// `QuorumPeer.ServerState` (no observers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ServerState {
    Looking,
    Following,
    Leading,
}

/// `QuorumPeer.ZabState`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ZabState {
    Election,
    Discovery,
    Synchronization,
    Broadcast,
}

/// A transaction the node holds before it is applied: its zxid and the node whose client
/// asked for it (so that node acknowledges it on commit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Txn {
    pub zxid: Zxid,
    pub origin: NodeId,
}

/// The write the node's main thread is inside of, and what it does once the write is on disk.
/// While it is set the node's quorum thread takes no other event (they wait, in order).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "then", rename_all = "snake_case")]
pub enum Blocked {
    /// `Leader.lead` -> `ZooKeeperServer.loadData`'s snapshot, then `getEpochToPropose`.
    LeaderSnapshot,
    /// `Leader.getEpochToPropose` reached a quorum and writes acceptedEpoch.
    LeaderAcceptedEpoch { epoch: u64 },
    /// `Leader.lead` after `waitForEpochAck` writes currentEpoch.
    LeaderCurrentEpoch { epoch: u64 },
    /// `Learner.registerWithLeader` writes the leader's newer epoch as acceptedEpoch.
    LearnerAcceptedEpoch { epoch: u64 },
    /// `Learner.syncWithLeader`, NEWLEADER with `snapshotNeeded`: `takeSnapshot`.
    LearnerSnapshot,
    /// `Learner.syncWithLeader`, NEWLEADER: `setCurrentEpoch`.
    LearnerCurrentEpoch { epoch: u64 },
    /// The fixed ordering's NEWLEADER: the sync thread's flush of the logged transactions
    /// comes before currentEpoch (apache/zookeeper PR 2028).
    LearnerSyncFlush,
    /// Leaving a role (`ZooKeeperServer.shutdown` -> `SyncRequestProcessor.shutdown`): the
    /// sync thread flushes what is queued before the node looks for a leader again.
    ShutdownFlush,
}

/// A learner as its `LearnerHandler` on the leader sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Learner {
    pub sid: NodeId,
    pub conn: u64,
    /// Its acceptedEpoch, from FOLLOWERINFO.
    pub accepted: u64,
    /// Its ACKEPOCH's last zxid, once it arrived.
    pub last_zxid: Option<Zxid>,
    /// `syncFollower` ran: it is in `forwardingFollowers`.
    pub forwarding: bool,
    /// It acknowledged NEWLEADER (`LearnerHandler.synced`).
    pub synced: bool,
}

/// A leading node's `Leader` object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Lead {
    /// Which leadership this is (for its `epoch-wait` timer).
    pub round: u64,
    /// `StateSummary` of the leader when it started leading: (currentEpoch, last zxid).
    pub summary: (u64, Zxid),
    /// The epoch `getEpochToPropose` settled on (`waitingForNewEpoch` is false).
    pub epoch: Option<u64>,
    /// `connectingFollowers`: (sid, acceptedEpoch), the leader itself included once it asked.
    pub connecting: Vec<(NodeId, u64)>,
    /// `electingFollowers` (ACKEPOCHs counted), the leader included.
    pub electing: Vec<NodeId>,
    /// `electionFinished` (a quorum acked the epoch).
    pub election_finished: bool,
    /// NEWLEADER's ack set (`newLeaderProposal`), the leader included.
    pub newleader_acks: Vec<NodeId>,
    /// `quorumFormed`: a quorum acked NEWLEADER; the leader serves (BROADCAST).
    pub quorum_formed: bool,
    pub learners: Vec<Learner>,
    /// `outstandingProposals`, in zxid order, with the nodes that acked each.
    pub outstanding: Vec<(Txn, Vec<NodeId>)>,
    /// `lastProposed`'s counter.
    pub counter: u64,
    /// A `tick` timer is pending.
    pub tick: bool,
}

impl Lead {
    /// (sid, connection) of the learners `keep` selects.
    pub fn conns(&self, keep: impl Fn(&Learner) -> bool) -> Vec<(NodeId, u64)> {
        self.learners
            .iter()
            .filter(|l| keep(l))
            .map(|l| (l.sid, l.conn))
            .collect()
    }

    /// The handler of learner `sid` on connection `conn`.
    pub fn learner_mut(&mut self, sid: NodeId, conn: u64) -> Option<&mut Learner> {
        self.learners
            .iter_mut()
            .find(|l| l.sid == sid && l.conn == conn)
    }
}

/// A learner's `Learner.syncWithLeader` in progress, or its `Follower.followLeader` loop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Follow {
    pub conn: u64,
    /// The epoch of LEADERINFO (`newEpoch`), once it came.
    pub new_epoch: Option<u64>,
    /// DIFF/TRUNC/SNAP came: the sync loop runs.
    pub syncing: bool,
    pub snapshot_needed: bool,
    pub write_to_txn_log: bool,
    /// `packetsNotCommitted`.
    pub not_committed: Vec<Txn>,
    /// `packetsCommitted`.
    pub committed: Vec<Zxid>,
    /// NEWLEADER was acknowledged.
    pub newleader_acked: bool,
    /// UPTODATE came: `Follower.followLeader`'s broadcast loop.
    pub uptodate: bool,
}

/// One node.
#[derive(Clone, Debug, Serialize)]
pub struct Node {
    pub sid: NodeId,
    pub state: ServerState,
    #[serde(rename = "zabState")]
    pub zab_state: ZabState,
    /// In memory (`QuorumPeer.currentEpoch`): what was last written to its file.
    #[serde(rename = "currentEpoch")]
    pub current_epoch: u64,
    #[serde(rename = "acceptedEpoch")]
    pub accepted_epoch: u64,
    /// The node it follows or leads.
    pub leader: Option<NodeId>,
    /// Leading: past discovery (currentEpoch written); following: UPTODATE came.
    pub established: bool,
    /// Zxids this node's client saw acknowledged (the hook keeps them in the JVM: a crash
    /// forgets them; the property remembers).
    pub acked: Vec<Zxid>,
    /// The data tree, as the zxids applied to it (what the real hook reports as `log`).
    pub log: Vec<Zxid>,
    /// `ZKDatabase.committedLog`: what the leader can send as a DIFF.
    #[serde(rename = "committedLog")]
    pub committed_log: Vec<Zxid>,
    /// Logged but not flushed (`SyncRequestProcessor.toFlush`; `FileTxnLog.append` writes
    /// into a buffered stream, so an append is lost with the process until the flush).
    pub unflushed: Vec<Txn>,
    /// A `disk:txnlog` flush is pending.
    pub flushing: bool,
    /// `FollowerZooKeeperServer.pendingTxns`: logged, waiting for COMMIT.
    #[serde(rename = "pendingTxns")]
    pub pending_txns: Vec<Txn>,
    pub disk: Disk,
    pub blocked: Option<Blocked>,
    /// Events that arrived while `blocked`, in arrival order: (sender, event).
    pub deferred: Vec<(Option<NodeId>, Msg)>,
    /// Client writes waiting for the node to serve.
    #[serde(rename = "pendingWrites")]
    pub pending_writes: u32,
    /// LOOKING: followers whose FOLLOWERINFO came before this node decided
    /// (sid, conn, acceptedEpoch); they keep retrying until it leads.
    pub connecting: Vec<(NodeId, u64, u64)>,
    pub lead: Option<Lead>,
    pub follow: Option<Follow>,
}

impl Node {
    pub fn new(sid: NodeId, epoch: u64) -> Node {
        Node {
            sid,
            state: ServerState::Looking,
            zab_state: ZabState::Election,
            current_epoch: epoch,
            accepted_epoch: epoch,
            leader: None,
            established: false,
            acked: Vec::new(),
            log: Vec::new(),
            committed_log: Vec::new(),
            unflushed: Vec::new(),
            flushing: false,
            pending_txns: Vec::new(),
            disk: Disk::new(epoch),
            blocked: None,
            deferred: Vec::new(),
            pending_writes: 0,
            connecting: Vec::new(),
            lead: None,
            follow: None,
        }
    }

    /// `QuorumPeer.getLastLoggedZxid`: the data tree's last processed zxid.
    pub fn last_zxid(&self) -> Zxid {
        self.log.last().copied().unwrap_or(0)
    }

    /// The node's vote as FLE orders it (`totalOrderPredicate`): epoch, zxid, id.
    pub fn vote(&self) -> (u64, Zxid, NodeId) {
        (self.current_epoch, self.last_zxid(), self.sid)
    }

    /// Apply a committed transaction to the data tree (`FinalRequestProcessor` ->
    /// `ZooKeeperServer.processTxn`, which adds it to the committed log), acknowledging it to
    /// this node's client if it asked.
    pub fn apply_committed(&mut self, t: Txn) {
        if self.log.last().is_some_and(|&z| z >= t.zxid) {
            return;
        }
        self.log.push(t.zxid);
        self.committed_log.push(t.zxid);
        if t.origin == self.sid {
            self.acked.push(t.zxid);
        }
    }

    /// Everything but the disk, as a process that just started (`QuorumPeer` constructed).
    pub fn forget_memory(&mut self) {
        let disk = self.disk.clone();
        *self = Node::new(self.sid, 0);
        self.disk = disk;
        self.current_epoch = self.disk.current_epoch;
        self.accepted_epoch = self.disk.accepted_epoch;
    }
}
