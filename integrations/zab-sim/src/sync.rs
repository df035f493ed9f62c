//! ZAB's synchronisation: the leader's `LearnerHandler.syncFollower` (DIFF, TRUNC, SNAP, then
//! NEWLEADER) and the learner's `Learner.syncWithLeader` up to UPTODATE, with 3.8.0's order at
//! NEWLEADER (currentEpoch written, then the transactions logged, then the ACK) or the fixed
//! one (logged and flushed, then currentEpoch, then the ACK).

use flymc_model::NodeId;

use crate::msg::Msg;
use crate::net::Ctx;
use crate::protocol::Variant;
use crate::state::{make_zxid, Blocked, Node, Txn, ZabState, Zxid};

/// The origin of a transaction a leader re-sends while syncing: no client waits for it there.
pub const NOBODY: NodeId = NodeId::MAX;

fn new_epoch_zxid(z: Zxid) -> bool {
    z & 0xffff_ffff == 0
}

impl Ctx<'_> {
    /// `LearnerHandler.syncFollower` and the packets `LearnerHandler.run` queues after it.
    /// The committed log is `ZKDatabase.committedLog`; a learner below it gets a SNAP: the
    /// txn-log path (`getProposalsFromTxnLog`) gives up when the log files (preallocated to
    /// 64 MB) outweigh `snapSizeFactor` times the snapshot, as they always do here.
    pub fn sync_follower(&mut self, node: &mut Node, sid: NodeId) {
        let last = node.last_zxid();
        let (min, max) = match (node.committed_log.first(), node.committed_log.last()) {
            (Some(&a), Some(&b)) => (a, b),
            _ => (last, last),
        };
        let lead = node.lead.as_mut().expect("leading");
        let epoch = lead.epoch.expect("proposed");
        let Some(l) = lead.learners.iter_mut().find(|l| l.sid == sid) else {
            return;
        };
        if l.forwarding {
            return;
        }
        let (conn, p) = (l.conn, l.last_zxid.unwrap_or(0));
        l.forwarding = true;
        let mut packets = Vec::new();
        let current;
        if p == last {
            packets.push(Msg::Diff { conn, zxid: p });
            current = p;
        } else if p > max && !new_epoch_zxid(p) {
            packets.push(Msg::Trunc { conn, zxid: max });
            current = max;
        } else {
            let diff = (min <= p && p <= max)
                .then(|| queue_committed_proposals(&node.committed_log, conn, p, max, &mut packets))
                .flatten();
            current = match diff {
                Some(queued) => queued,
                None => {
                    packets.clear();
                    packets.push(Msg::Snap {
                        conn,
                        zxid: last,
                        tree: node.log.clone(),
                    });
                    last
                }
            };
        }
        // `Leader.startForwarding`: the proposals not yet committed follow.
        for (t, _) in &lead.outstanding {
            if t.zxid > current {
                packets.push(Msg::Proposal {
                    conn,
                    zxid: t.zxid,
                    origin: t.origin,
                });
            }
        }
        packets.push(Msg::NewLeader {
            conn,
            zxid: make_zxid(epoch, 0),
        });
        for m in packets {
            self.send(sid, m);
        }
    }

    /// DIFF, TRUNC or SNAP arrives: `syncWithLeader` starts its loop.
    pub fn on_sync_start(&mut self, node: &mut Node, msg: &Msg) {
        let f = node.follow.as_mut().expect("following");
        if f.syncing {
            return;
        }
        f.syncing = true;
        node.zab_state = ZabState::Synchronization;
        match msg {
            Msg::Diff { .. } => {
                f.snapshot_needed = false;
                f.write_to_txn_log = true;
            }
            Msg::Snap { tree, .. } => {
                // `ZKDatabase.deserializeSnapshot` clears the database first.
                f.snapshot_needed = true;
                f.write_to_txn_log = false;
                node.log = tree.clone();
                node.committed_log.clear();
            }
            Msg::Trunc { zxid, .. } => {
                // `ZKDatabase.truncateLog`: clear, `FileTxnLog.truncate`, `loadDataBase`.
                f.snapshot_needed = true;
                f.write_to_txn_log = false;
                node.disk.truncate(*zxid);
                node.unflushed.retain(|t| t.zxid <= *zxid);
                let (tree, replayed) = node.disk.restore();
                node.log = tree;
                node.committed_log = replayed;
            }
            _ => {}
        }
    }

    /// PROPOSAL during the sync: into `packetsNotCommitted`.
    pub fn sync_proposal(&mut self, node: &mut Node, t: Txn) {
        if let Some(f) = node.follow.as_mut() {
            f.not_committed.push(t);
        }
    }

    /// COMMIT during the sync: applied at once before NEWLEADER when a snapshot will be taken
    /// (`zk.processTxn`, which does not add to the committed log), else kept for UPTODATE.
    pub fn sync_commit(&mut self, node: &mut Node, zxid: Zxid) {
        let Some(f) = node.follow.as_mut() else {
            return;
        };
        if f.write_to_txn_log {
            f.committed.push(zxid);
        } else if f.not_committed.first().is_some_and(|t| t.zxid == zxid) {
            f.not_committed.remove(0);
            node.log.push(zxid);
        }
    }

    /// NEWLEADER: the snapshot if the sync needs one, then the variant's order.
    pub fn on_new_leader(&mut self, node: &mut Node) {
        let f = node.follow.as_ref().expect("following");
        if !f.syncing || f.newleader_acked {
            return;
        }
        if f.snapshot_needed {
            let value = node.last_zxid();
            self.block(node, Blocked::LearnerSnapshot, Msg::Snapshot { value });
        } else {
            self.new_leader_after_snapshot(node);
        }
    }

    pub fn learner_snapshot_written(&mut self, node: &mut Node) {
        node.disk.snapshot = node.log.clone();
        self.new_leader_after_snapshot(node);
    }

    fn new_leader_after_snapshot(&mut self, node: &mut Node) {
        let epoch = node.follow.as_ref().and_then(|f| f.new_epoch).unwrap_or(0);
        match self.p.variant {
            // 3.8.0: `self.setCurrentEpoch(newEpoch)` comes first.
            Variant::V380 => self.block(
                node,
                Blocked::LearnerCurrentEpoch { epoch },
                Msg::CurrentEpoch { value: epoch },
            ),
            // PR 2028: log and flush `packetsNotCommitted`, then currentEpoch.
            Variant::Fixed => {
                self.log_not_committed(node);
                if node.unflushed.is_empty() {
                    self.block(
                        node,
                        Blocked::LearnerCurrentEpoch { epoch },
                        Msg::CurrentEpoch { value: epoch },
                    );
                } else {
                    node.blocked = Some(Blocked::LearnerSyncFlush);
                }
            }
        }
    }

    /// The fixed order's flush is done: now currentEpoch.
    pub fn learner_sync_flushed(&mut self, node: &mut Node) {
        let epoch = node.follow.as_ref().and_then(|f| f.new_epoch).unwrap_or(0);
        self.block(
            node,
            Blocked::LearnerCurrentEpoch { epoch },
            Msg::CurrentEpoch { value: epoch },
        );
    }

    /// currentEpoch is on disk: 3.8.0 logs `packetsNotCommitted` now (its flush comes later,
    /// on the sync thread) and acknowledges NEWLEADER at once.
    pub fn learner_current_epoch_written(&mut self, node: &mut Node, epoch: u64) {
        node.disk.current_epoch = epoch;
        node.current_epoch = epoch;
        if self.p.variant == Variant::V380 {
            self.log_not_committed(node);
        }
        let (Some(leader), Some(f)) = (node.leader, node.follow.as_mut()) else {
            return;
        };
        f.write_to_txn_log = true;
        f.newleader_acked = true;
        let conn = f.conn;
        self.send(
            leader,
            Msg::Ack {
                conn,
                zxid: make_zxid(epoch, 0),
            },
        );
    }

    /// `FollowerZooKeeperServer.logRequest` for each of `packetsNotCommitted`.
    fn log_not_committed(&mut self, node: &mut Node) {
        let txns = match node.follow.as_mut() {
            Some(f) => std::mem::take(&mut f.not_committed),
            None => return,
        };
        for t in txns {
            node.pending_txns.push(t);
            self.log_request(node, t);
        }
    }

    /// UPTODATE: the learner serves (BROADCAST); what came after NEWLEADER is logged, what was
    /// committed is committed (`fzk.commit`).
    pub fn on_uptodate(&mut self, node: &mut Node) {
        let Some(f) = node.follow.as_mut() else {
            return;
        };
        if !f.newleader_acked || f.uptodate {
            return;
        }
        f.uptodate = true;
        let conn = f.conn;
        let epoch = f.new_epoch.unwrap_or(0);
        let committed = std::mem::take(&mut f.committed);
        if let Some(leader) = node.leader {
            self.send(
                leader,
                Msg::Ack {
                    conn,
                    zxid: make_zxid(epoch, 0),
                },
            );
        }
        node.established = true;
        node.zab_state = ZabState::Broadcast;
        self.log_not_committed(node);
        for z in committed {
            self.learner_commit(node, z);
        }
        self.serve_pending(node);
    }
}

/// `LearnerHandler.queueCommittedProposals`: DIFF (or TRUNC to the last common zxid when the
/// learner's last zxid is from an epoch the leader does not have), then PROPOSAL and COMMIT
/// for every committed transaction past the learner's. Returns the last zxid queued, or
/// `None` when no DIFF or TRUNC fits (the learner's last zxid is of an epoch the leader's
/// next transaction is not): then `syncFollower` sends a SNAP.
fn queue_committed_proposals(
    log: &[Zxid],
    conn: u64,
    peer_last: Zxid,
    max: Zxid,
    packets: &mut Vec<Msg>,
) -> Option<Zxid> {
    let mut need_op = true;
    let mut queued = peer_last;
    let mut prev: Option<Zxid> = None;
    for &z in log {
        if z < peer_last {
            prev = Some(z);
            continue;
        }
        if need_op {
            if z == peer_last {
                packets.push(Msg::Diff { conn, zxid: max });
                need_op = false;
                continue;
            }
            if new_epoch_zxid(peer_last) {
                packets.push(Msg::Diff { conn, zxid: max });
                need_op = false;
            } else if z > peer_last {
                if (z >> 32) != (peer_last >> 32) {
                    return None;
                }
                packets.push(Msg::Trunc {
                    conn,
                    zxid: prev.unwrap_or(0),
                });
                need_op = false;
            }
        }
        if z <= queued {
            continue;
        }
        packets.push(Msg::Proposal {
            conn,
            zxid: z,
            origin: NOBODY,
        });
        packets.push(Msg::Commit { conn, zxid: z });
        queued = z;
    }
    if need_op && new_epoch_zxid(peer_last) {
        packets.push(Msg::Diff { conn, zxid: max });
        need_op = false;
    }
    (!need_op).then_some(queued)
}
