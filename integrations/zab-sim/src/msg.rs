//! Every event of the twin, under the name the real integration gives it (hooks.toml,
//! system.toml): ZAB's packets by `Leader.getPacketType`, the hook's timers, the crash-point
//! writes `disk:<file>` with the fields `FlymcZk.written` / `FlymcZk.flushed` report, and the
//! workload's client `write`. Packets carry `conn`, the connection they travel on (the real
//! integration names it by the learner's port), and `zxid` as `QuorumPacket.getZxid`.

use flymc_model::NodeId;
use serde::Serialize;

use crate::state::Zxid;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind")]
pub enum Msg {
    /// Timer: `lookForLeader`'s finalizeWait ran out; the node decides (see `election`).
    #[serde(rename = "finalize")]
    Finalize,
    /// Timer: the connection to `peer` broke (it crashed).
    #[serde(rename = "disconnect")]
    Disconnect { peer: NodeId },
    /// Timer: the leader's tick finds it without a quorum (and its quorum waits time out).
    #[serde(rename = "tick")]
    Tick,
    /// Timer: a learner not yet synced gives up on its leader (its socket's initLimit read
    /// timeout); `conn` names the connection it was armed for.
    #[serde(rename = "read-timeout")]
    ReadTimeout { conn: u64 },
    /// Timer: a leader not yet established gives up waiting for a quorum
    /// (`getEpochToPropose`'s and `waitForEpochAck`'s initLimit); `round` names the
    /// leadership it was armed for.
    #[serde(rename = "epoch-wait")]
    EpochWait { round: u64 },
    /// Client: a znode create at this node (`FlymcZk.clientWrite`).
    #[serde(rename = "write")]
    Write,
    /// Crash point: `QuorumPeer.writeLongToFile("acceptedEpoch", value)`.
    #[serde(rename = "disk:acceptedEpoch")]
    AcceptedEpoch { value: u64 },
    /// Crash point: `QuorumPeer.writeLongToFile("currentEpoch", value)`.
    #[serde(rename = "disk:currentEpoch")]
    CurrentEpoch { value: u64 },
    /// Crash point: `ZooKeeperServer.takeSnapshot` of a tree whose last zxid is `value`.
    #[serde(rename = "disk:snapshot")]
    Snapshot { value: Zxid },
    /// Crash point: `SyncRequestProcessor.flush`, making the log durable up to `zxid`.
    #[serde(rename = "disk:txnlog")]
    TxnLog { zxid: Zxid },
    /// Learner -> leader: its acceptedEpoch as `zxid` (`Learner.registerWithLeader`).
    #[serde(rename = "FOLLOWERINFO")]
    FollowerInfo { conn: u64, zxid: Zxid },
    /// Leader -> learner: the new epoch as `zxid`.
    #[serde(rename = "LEADERINFO")]
    LeaderInfo { conn: u64, zxid: Zxid },
    /// Learner -> leader: its last logged zxid and its currentEpoch (`-1`: it had already
    /// accepted this epoch).
    #[serde(rename = "ACKEPOCH")]
    AckEpoch { conn: u64, zxid: Zxid, epoch: i64 },
    #[serde(rename = "DIFF")]
    Diff { conn: u64, zxid: Zxid },
    #[serde(rename = "TRUNC")]
    Trunc { conn: u64, zxid: Zxid },
    /// The leader's data tree follows (`serializeSnapshot`): `tree` stands for it.
    #[serde(rename = "SNAP")]
    Snap {
        conn: u64,
        zxid: Zxid,
        tree: Vec<Zxid>,
    },
    /// `origin`: the node whose client asked (the twin's stand-in for the session).
    #[serde(rename = "PROPOSAL")]
    Proposal {
        conn: u64,
        zxid: Zxid,
        origin: NodeId,
    },
    #[serde(rename = "COMMIT")]
    Commit { conn: u64, zxid: Zxid },
    #[serde(rename = "NEWLEADER")]
    NewLeader { conn: u64, zxid: Zxid },
    #[serde(rename = "ACK")]
    Ack { conn: u64, zxid: Zxid },
    #[serde(rename = "UPTODATE")]
    UpToDate { conn: u64 },
    /// Learner -> leader: a client write to propose (`origin` asked).
    #[serde(rename = "REQUEST")]
    Request { conn: u64, origin: NodeId },
    /// The sender closed the connection.
    #[serde(rename = "CLOSE")]
    Close { conn: u64 },
}

impl Msg {
    /// The connection a packet travels on; `None` for timers, writes and clients.
    pub fn conn(&self) -> Option<u64> {
        match self {
            Msg::FollowerInfo { conn, .. }
            | Msg::LeaderInfo { conn, .. }
            | Msg::AckEpoch { conn, .. }
            | Msg::Diff { conn, .. }
            | Msg::Trunc { conn, .. }
            | Msg::Snap { conn, .. }
            | Msg::Proposal { conn, .. }
            | Msg::Commit { conn, .. }
            | Msg::NewLeader { conn, .. }
            | Msg::Ack { conn, .. }
            | Msg::UpToDate { conn }
            | Msg::Request { conn, .. }
            | Msg::Close { conn } => Some(*conn),
            _ => None,
        }
    }

    /// A crash-point write or the client: run by other threads than the quorum thread, so a
    /// node blocked in a write still takes them.
    pub fn off_quorum_thread(&self) -> bool {
        matches!(
            self,
            Msg::AcceptedEpoch { .. }
                | Msg::CurrentEpoch { .. }
                | Msg::Snapshot { .. }
                | Msg::TxnLog { .. }
                | Msg::Write
        )
    }
}

/// Every event name, for `About::message_kinds`.
pub const KINDS: [&str; 23] = [
    "finalize",
    "disconnect",
    "tick",
    "read-timeout",
    "epoch-wait",
    "write",
    "disk:acceptedEpoch",
    "disk:currentEpoch",
    "disk:snapshot",
    "disk:txnlog",
    "FOLLOWERINFO",
    "LEADERINFO",
    "ACKEPOCH",
    "DIFF",
    "TRUNC",
    "SNAP",
    "PROPOSAL",
    "COMMIT",
    "NEWLEADER",
    "ACK",
    "UPTODATE",
    "REQUEST",
    "CLOSE",
];
