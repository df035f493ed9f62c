//! ZAB's broadcast: client writes, PROPOSAL, ACK, COMMIT, and the sync thread that makes
//! logged transactions durable (`SyncRequestProcessor`) before they are acknowledged.

use flymc_model::NodeId;

use crate::msg::Msg;
use crate::net::Ctx;
use crate::state::{make_zxid, Blocked, Node, ServerState, Txn, ZabState, Zxid};

impl Ctx<'_> {
    fn serving(node: &Node) -> bool {
        match node.state {
            ServerState::Leading => node.lead.as_ref().is_some_and(|l| l.quorum_formed),
            ServerState::Following => node.follow.as_ref().is_some_and(|f| f.uptodate),
            ServerState::Looking => false,
        }
    }

    /// The workload's client writes here (`FlymcZk.clientWrite`): at once when the node
    /// serves, else once it does.
    pub fn on_client_write(&mut self, node: &mut Node) {
        node.pending_writes += 1;
        self.serve_pending(node);
    }

    pub fn serve_pending(&mut self, node: &mut Node) {
        if !Self::serving(node) {
            return;
        }
        for _ in 0..std::mem::take(&mut node.pending_writes) {
            let me = self.me;
            match (node.state, node.leader, node.follow.as_ref()) {
                (ServerState::Leading, _, _) => self.propose(node, me),
                // `FollowerRequestProcessor` -> `Learner.request`.
                (_, Some(leader), Some(f)) => {
                    let conn = f.conn;
                    self.send(leader, Msg::Request { conn, origin: me });
                }
                _ => {}
            }
        }
    }

    /// `LearnerHandler.run`, REQUEST: the leader proposes it.
    pub fn on_request(&mut self, node: &mut Node, from: NodeId, conn: u64, origin: NodeId) {
        if self.learner_conn(node, from) == Some(conn) && Self::serving(node) {
            self.propose(node, origin);
        }
    }

    fn learner_conn(&self, node: &Node, sid: NodeId) -> Option<u64> {
        let lead = node.lead.as_ref()?;
        lead.learners.iter().find(|l| l.sid == sid).map(|l| l.conn)
    }

    /// `Leader.propose`: to every forwarding learner, and into the leader's own log.
    fn propose(&mut self, node: &mut Node, origin: NodeId) {
        let lead = node.lead.as_mut().expect("leading");
        lead.counter += 1;
        let zxid = make_zxid(lead.epoch.expect("proposed"), lead.counter);
        let t = Txn { zxid, origin };
        lead.outstanding.push((t, Vec::new()));
        let to = lead.conns(|l| l.forwarding);
        for (sid, conn) in to {
            self.send(sid, Msg::Proposal { conn, zxid, origin });
        }
        self.log_request(node, t);
    }

    /// ACK at the leader: of NEWLEADER (`waitForNewLeaderAck`; a quorum starts the server
    /// and every synced learner gets UPTODATE), else of a proposal (`processAck`).
    pub fn on_ack(&mut self, node: &mut Node, from: NodeId, conn: u64, zxid: Zxid) {
        let quorum = self.quorum();
        let Some(lead) = node.lead.as_mut() else {
            return;
        };
        let newleader = lead.epoch.map(|e| make_zxid(e, 0)) == Some(zxid);
        let Some(l) = lead.learner_mut(from, conn) else {
            return;
        };
        if !newleader || l.synced {
            self.process_ack(node, from, zxid);
            return;
        }
        l.synced = true;
        if lead.quorum_formed {
            self.send(from, Msg::UpToDate { conn });
            return;
        }
        if !lead.newleader_acks.contains(&from) {
            lead.newleader_acks.push(from);
        }
        if lead.newleader_acks.len() < quorum {
            return;
        }
        lead.quorum_formed = true;
        node.zab_state = ZabState::Broadcast;
        let synced = lead.conns(|l| l.synced);
        for (sid, conn) in synced {
            self.send(sid, Msg::UpToDate { conn });
        }
        self.serve_pending(node);
    }

    /// `Leader.processAck` / `tryToCommit`: proposals commit in zxid order once a quorum
    /// acked each; COMMIT goes to the forwarding learners and the leader applies it.
    fn process_ack(&mut self, node: &mut Node, sid: NodeId, zxid: Zxid) {
        let quorum = self.quorum();
        if zxid & 0xffff_ffff == 0 {
            return;
        }
        let Some(lead) = node.lead.as_mut() else {
            return;
        };
        if let Some((_, acks)) = lead.outstanding.iter_mut().find(|(t, _)| t.zxid == zxid) {
            if !acks.contains(&sid) {
                acks.push(sid);
            }
        }
        let mut committed = Vec::new();
        while lead
            .outstanding
            .first()
            .is_some_and(|(_, a)| a.len() >= quorum)
        {
            committed.push(lead.outstanding.remove(0).0);
        }
        let to = lead.conns(|l| l.forwarding);
        for t in committed {
            for &(sid, conn) in &to {
                self.send(sid, Msg::Commit { conn, zxid: t.zxid });
            }
            node.apply_committed(t);
        }
    }

    /// PROPOSAL at a learner: during the sync into `packetsNotCommitted`, after UPTODATE
    /// logged (`Follower.processPacket` -> `FollowerZooKeeperServer.logRequest`).
    pub fn on_proposal(&mut self, node: &mut Node, t: Txn) {
        if node.follow.as_ref().is_some_and(|f| f.uptodate) {
            node.pending_txns.push(t);
            self.log_request(node, t);
        } else {
            self.sync_proposal(node, t);
        }
    }

    /// COMMIT at a learner.
    pub fn on_commit(&mut self, node: &mut Node, zxid: Zxid) {
        if node.follow.as_ref().is_some_and(|f| f.uptodate) {
            self.learner_commit(node, zxid);
        } else {
            self.sync_commit(node, zxid);
        }
    }

    /// `FollowerZooKeeperServer.commit`: the first pending transaction, if it is this one,
    /// goes to the commit processor and is applied.
    pub fn learner_commit(&mut self, node: &mut Node, zxid: Zxid) {
        if node.pending_txns.first().is_some_and(|t| t.zxid == zxid) {
            let t = node.pending_txns.remove(0);
            node.apply_committed(t);
        }
    }

    /// `SyncRequestProcessor.processRequest` + `ZKDatabase.append`: in the log's buffer; a
    /// `disk:txnlog` flush is pending from now on.
    pub fn log_request(&mut self, node: &mut Node, t: Txn) {
        node.unflushed.push(t);
        if !node.flushing {
            node.flushing = true;
            self.timer(Msg::TxnLog { zxid: t.zxid });
        }
    }

    /// `SyncRequestProcessor.flush`: the log is durable up to `zxid`; each flushed proposal
    /// is acknowledged (`SendAckRequestProcessor` on a learner, `AckRequestProcessor` on the
    /// leader), and a thread waiting for the flush goes on.
    pub fn on_flush(&mut self, node: &mut Node, zxid: Zxid) {
        node.flushing = false;
        let n = node.unflushed.iter().take_while(|t| t.zxid <= zxid).count();
        let done: Vec<Txn> = node.unflushed.drain(..n).collect();
        node.disk.txnlog.extend(done.iter().map(|t| t.zxid));
        if let Some(last) = node.unflushed.last() {
            node.flushing = true;
            let zxid = last.zxid;
            self.timer(Msg::TxnLog { zxid });
        }
        let me = self.me;
        for t in &done {
            match (node.state, node.leader, node.follow.as_ref()) {
                (ServerState::Leading, _, _) => self.process_ack(node, me, t.zxid),
                (ServerState::Following, Some(leader), Some(f)) => {
                    let conn = f.conn;
                    self.send(leader, Msg::Ack { conn, zxid: t.zxid });
                }
                _ => {}
            }
        }
        if !node.unflushed.is_empty() {
            return;
        }
        match node.blocked {
            Some(Blocked::LearnerSyncFlush) => {
                node.blocked = None;
                self.learner_sync_flushed(node);
            }
            Some(Blocked::ShutdownFlush) => {
                node.blocked = None;
                self.enter_election(node);
            }
            _ => {}
        }
    }
}
