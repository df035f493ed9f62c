//! ZAB's discovery: FOLLOWERINFO, LEADERINFO, ACKEPOCH; acceptedEpoch written on both sides,
//! the leader's currentEpoch once a quorum acknowledged the epoch.

use flymc_model::NodeId;

use crate::msg::Msg;
use crate::net::Ctx;
use crate::state::{make_zxid, Blocked, Learner, Node, ServerState, ZabState, Zxid};

impl Ctx<'_> {
    /// `Leader.lead` after `loadData`'s snapshot: the leader's own `getEpochToPropose`, and
    /// the learners that connected while it was still electing (they kept retrying).
    pub fn start_leading(&mut self, node: &mut Node) {
        node.disk.snapshot = node.log.clone();
        let me = self.me;
        let accepted = node.accepted_epoch;
        for (f, conn, acc) in std::mem::take(&mut node.connecting) {
            if self.alive(f) {
                self.add_learner(node, f, conn, acc);
                let lead = node.lead.as_mut().expect("leading");
                lead.connecting.push((f, acc));
            }
        }
        self.epoch_to_propose(node, me, accepted);
    }

    /// A learner connects (`LearnerHandler.run` reads FOLLOWERINFO).
    pub fn on_follower_info(&mut self, node: &mut Node, from: NodeId, conn: u64, zxid: Zxid) {
        let acc = zxid >> 32;
        match node.state {
            ServerState::Looking => {
                node.connecting.retain(|c| c.0 != from);
                node.connecting.push((from, conn, acc));
                node.connecting.sort();
            }
            // Nobody listens on a follower's quorum port.
            ServerState::Following => self.send(from, Msg::Close { conn }),
            ServerState::Leading => {
                self.add_learner(node, from, conn, acc);
                self.epoch_to_propose(node, from, acc);
            }
        }
    }

    fn add_learner(&mut self, node: &mut Node, sid: NodeId, conn: u64, accepted: u64) {
        let lead = node.lead.as_mut().expect("leading");
        lead.learners.retain(|l| l.sid != sid);
        lead.learners.push(Learner {
            sid,
            conn,
            accepted,
            last_zxid: None,
            forwarding: false,
            synced: false,
        });
        lead.learners.sort_by_key(|l| l.sid);
    }

    /// `Leader.getEpochToPropose`: once the leader and a quorum connected, the epoch is one
    /// past every acceptedEpoch they reported, and the leader writes it as its acceptedEpoch.
    fn epoch_to_propose(&mut self, node: &mut Node, sid: NodeId, accepted: u64) {
        let quorum = self.quorum();
        let me = self.me;
        let lead = node.lead.as_mut().expect("leading");
        if let Some(e) = lead.epoch {
            if let Some(l) = lead.learners.iter().find(|l| l.sid == sid) {
                let conn = l.conn;
                self.send(
                    sid,
                    Msg::LeaderInfo {
                        conn,
                        zxid: make_zxid(e, 0),
                    },
                );
            }
            return;
        }
        lead.connecting.retain(|c| c.0 != sid);
        lead.connecting.push((sid, accepted));
        lead.connecting.sort();
        lead.connecting.dedup_by_key(|c| c.0);
        if lead.connecting.iter().any(|c| c.0 == me) && lead.connecting.len() >= quorum {
            let epoch = lead.connecting.iter().map(|c| c.1).max().unwrap_or(0) + 1;
            self.block(
                node,
                Blocked::LeaderAcceptedEpoch { epoch },
                Msg::AcceptedEpoch { value: epoch },
            );
        }
    }

    /// acceptedEpoch is on disk: LEADERINFO to every learner, then the leader's own
    /// `waitForEpochAck`.
    pub fn leader_accepted_epoch_written(&mut self, node: &mut Node, epoch: u64) {
        node.disk.accepted_epoch = epoch;
        node.accepted_epoch = epoch;
        let lead = node.lead.as_mut().expect("leading");
        lead.epoch = Some(epoch);
        let learners: Vec<(NodeId, u64)> = lead.learners.iter().map(|l| (l.sid, l.conn)).collect();
        for (sid, conn) in learners {
            self.send(
                sid,
                Msg::LeaderInfo {
                    conn,
                    zxid: make_zxid(epoch, 0),
                },
            );
        }
        let me = self.me;
        lead.electing.push(me);
        self.check_epoch_quorum(node);
    }

    /// The learner's side of LEADERINFO (`Learner.registerWithLeader`).
    pub fn on_leader_info(&mut self, node: &mut Node, from: NodeId, conn: u64, zxid: Zxid) {
        if !self.following(node, from, conn) {
            return;
        }
        let epoch = zxid >> 32;
        node.follow.as_mut().expect("following").new_epoch = Some(epoch);
        if epoch > node.accepted_epoch {
            self.block(
                node,
                Blocked::LearnerAcceptedEpoch { epoch },
                Msg::AcceptedEpoch { value: epoch },
            );
        } else if epoch == node.accepted_epoch {
            let zxid = node.last_zxid();
            self.send(
                from,
                Msg::AckEpoch {
                    conn,
                    zxid,
                    epoch: -1,
                },
            );
        } else {
            // "Leaders epoch, e is less than accepted epoch, a": the learner gives up on it.
            self.send(from, Msg::Close { conn });
            self.stop(node);
        }
    }

    /// acceptedEpoch is on disk: ACKEPOCH with the learner's currentEpoch and last zxid.
    pub fn learner_accepted_epoch_written(&mut self, node: &mut Node, epoch: u64) {
        node.disk.accepted_epoch = epoch;
        node.accepted_epoch = epoch;
        let (Some(leader), Some(f)) = (node.leader, node.follow.as_ref()) else {
            return;
        };
        let conn = f.conn;
        let zxid = node.last_zxid();
        let epoch = node.current_epoch as i64;
        self.send(leader, Msg::AckEpoch { conn, zxid, epoch });
    }

    /// `LearnerHandler.run` -> `Leader.waitForEpochAck`: a learner more recent than the leader
    /// ends its handler; the others count, and once the election finished each is synced.
    pub fn on_ack_epoch(
        &mut self,
        node: &mut Node,
        from: NodeId,
        conn: u64,
        zxid: Zxid,
        epoch: i64,
    ) {
        let Some(lead) = node.lead.as_mut() else {
            return;
        };
        let Some(l) = lead.learner_mut(from, conn) else {
            return;
        };
        l.last_zxid = Some(zxid);
        if lead.election_finished {
            if node.established {
                self.sync_follower(node, from);
            }
            return;
        }
        if epoch >= 0 {
            if (epoch as u64, zxid) > lead.summary {
                // "Follower is ahead of the leader": the handler ends.
                self.drop_learner(node, from, true);
                return;
            }
            if !lead.electing.contains(&from) {
                lead.electing.push(from);
            }
        }
        self.check_epoch_quorum(node);
    }

    fn check_epoch_quorum(&mut self, node: &mut Node) {
        let quorum = self.quorum();
        let me = self.me;
        let lead = node.lead.as_mut().expect("leading");
        if lead.election_finished || !lead.electing.contains(&me) || lead.electing.len() < quorum {
            return;
        }
        lead.election_finished = true;
        let epoch = lead.epoch.expect("proposed");
        self.block(
            node,
            Blocked::LeaderCurrentEpoch { epoch },
            Msg::CurrentEpoch { value: epoch },
        );
    }

    /// `Leader.lead`: currentEpoch is on disk; the leader is established (SYNCHRONIZATION),
    /// acknowledges its own NEWLEADER, and every learner waiting in `waitForEpochAck` is
    /// synced.
    pub fn leader_current_epoch_written(&mut self, node: &mut Node, epoch: u64) {
        node.disk.current_epoch = epoch;
        node.current_epoch = epoch;
        node.established = true;
        node.zab_state = ZabState::Synchronization;
        let me = self.me;
        let lead = node.lead.as_mut().expect("leading");
        lead.newleader_acks.push(me);
        let waiting: Vec<NodeId> = lead
            .learners
            .iter()
            .filter(|l| l.last_zxid.is_some())
            .map(|l| l.sid)
            .collect();
        for sid in waiting {
            self.sync_follower(node, sid);
        }
    }

    /// Whether a packet comes from the leader this node follows, on its current connection.
    pub fn following(&self, node: &Node, from: NodeId, conn: u64) -> bool {
        node.state == ServerState::Following
            && node.leader == Some(from)
            && node.follow.as_ref().is_some_and(|f| f.conn == conn)
    }

    /// The leader's handler for `sid` ends (`LearnerHandler.shutdown`), closing the socket if
    /// `close`; without a quorum of learners the leader's tick will notice.
    pub fn drop_learner(&mut self, node: &mut Node, sid: NodeId, close: bool) {
        let Some(lead) = node.lead.as_mut() else {
            return;
        };
        if let Some(i) = lead.learners.iter().position(|l| l.sid == sid) {
            let l = lead.learners.remove(i);
            if close {
                self.send(sid, Msg::Close { conn: l.conn });
            }
        }
        self.check_quorum(node);
    }

    /// Arm the `tick` that steps down a leader without a quorum (`Leader.lead`'s loop, and the
    /// epoch/ack waits' initLimit timeouts before it serves).
    pub fn check_quorum(&mut self, node: &mut Node) {
        let quorum = self.quorum();
        let Some(lead) = node.lead.as_mut() else {
            return;
        };
        if lead.learners.len() + 1 < quorum && !lead.tick {
            lead.tick = true;
            self.timer(Msg::Tick);
        }
    }

    /// The tick: a leader that still has no quorum of (synced, once serving) learners steps
    /// down, closing its learners' connections.
    pub fn on_tick(&mut self, node: &mut Node) {
        let quorum = self.quorum();
        let Some(lead) = node.lead.as_mut() else {
            return;
        };
        lead.tick = false;
        let serving = lead.quorum_formed;
        let counted = lead
            .learners
            .iter()
            .filter(|l| !serving || l.synced)
            .count();
        if counted + 1 >= quorum {
            return;
        }
        self.step_down(node);
    }

    /// The leader gives up: its learners' connections close, it looks for a leader again.
    pub fn step_down(&mut self, node: &mut Node) {
        if let Some(lead) = node.lead.as_ref() {
            for (sid, conn) in lead.conns(|_| true) {
                self.send(sid, Msg::Close { conn });
            }
        }
        self.stop(node);
    }
}
