//! The twin as a [`Protocol`]: which rule each event runs, the writes a quorum thread waits
//! in, and what a crash keeps and a reboot reads.

use flymc_model::sim::{Outbox, Protocol};
use flymc_model::{NodeId, TargetError, Workload};

use crate::msg::Msg;
use crate::net::{Chan, Ctx, Env, Peer};
use crate::state::{epoch_of, Blocked, Node, ServerState, Txn};

/// The order of a learner's NEWLEADER steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// 3.8.0: currentEpoch, then the transactions logged (flushed later), then the ACK.
    V380,
    /// 3.8.5 / apache/zookeeper PR 2028: logged and flushed, then currentEpoch, then the ACK.
    Fixed,
}

impl Variant {
    pub const NAMES: [&'static str; 2] = ["3.8.0", "fixed"];

    pub fn parse(s: &str) -> Option<Variant> {
        match s {
            "3.8.0" => Some(Variant::V380),
            "fixed" => Some(Variant::Fixed),
            _ => None,
        }
    }
}

/// An ensemble of `nodes` ZooKeeper 3.8.0 servers.
#[derive(Clone, Debug)]
pub struct ZabSim {
    pub nodes: usize,
    pub variant: Variant,
    /// Each node's currentEpoch (= acceptedEpoch) on disk at the start.
    pub epochs: Vec<u64>,
    /// The node each client write of the workload goes to.
    pub clients: Vec<NodeId>,
}

impl ZabSim {
    fn ctx<'a>(&'a self, env: &'a mut Env, out: &'a mut Outbox<Msg>, me: NodeId) -> Ctx<'a> {
        Ctx {
            p: self,
            env,
            out,
            me,
        }
    }
}

impl Ctx<'_> {
    /// One event at a node whose quorum thread is free.
    fn dispatch(&mut self, node: &mut Node, from: Option<NodeId>, msg: Msg) {
        let from = from.unwrap_or(self.me);
        match msg {
            Msg::Finalize => self.on_finalize(node),
            Msg::Disconnect { peer } => self.on_disconnect(node, peer),
            Msg::Tick => self.on_tick(node),
            Msg::ReadTimeout { conn } => self.on_read_timeout(node, conn),
            Msg::EpochWait { round } => self.on_epoch_wait(node, round),
            Msg::Write => self.on_client_write(node),
            Msg::AcceptedEpoch { .. } | Msg::CurrentEpoch { .. } | Msg::Snapshot { .. } => {
                self.write_done(node)
            }
            Msg::TxnLog { zxid } => self.on_flush(node, zxid),
            Msg::FollowerInfo { conn, zxid } => self.on_follower_info(node, from, conn, zxid),
            Msg::LeaderInfo { conn, zxid } => self.on_leader_info(node, from, conn, zxid),
            Msg::AckEpoch { conn, zxid, epoch } => self.on_ack_epoch(node, from, conn, zxid, epoch),
            ref m @ (Msg::Diff { conn, .. } | Msg::Trunc { conn, .. } | Msg::Snap { conn, .. }) => {
                if self.following(node, from, conn) {
                    self.on_sync_start(node, m);
                }
            }
            Msg::Proposal { conn, zxid, origin } => {
                if self.following(node, from, conn) {
                    self.on_proposal(node, Txn { zxid, origin });
                }
            }
            Msg::Commit { conn, zxid } => {
                if self.following(node, from, conn) {
                    self.on_commit(node, zxid);
                }
            }
            Msg::NewLeader { conn, .. } => {
                if self.following(node, from, conn) {
                    self.on_new_leader(node);
                }
            }
            Msg::UpToDate { conn } => {
                if self.following(node, from, conn) {
                    self.on_uptodate(node);
                }
            }
            Msg::Ack { conn, zxid } => self.on_ack(node, from, conn, zxid),
            Msg::Request { conn, origin } => self.on_request(node, from, conn, origin),
            Msg::Close { conn } => self.on_close(node, from, conn),
        }
    }

    /// The write the quorum thread waited in is on disk: what the method does next.
    fn write_done(&mut self, node: &mut Node) {
        match node.blocked.take() {
            Some(Blocked::LeaderSnapshot) => self.start_leading(node),
            Some(Blocked::LeaderAcceptedEpoch { epoch }) => {
                self.leader_accepted_epoch_written(node, epoch)
            }
            Some(Blocked::LeaderCurrentEpoch { epoch }) => {
                self.leader_current_epoch_written(node, epoch)
            }
            Some(Blocked::LearnerAcceptedEpoch { epoch }) => {
                self.learner_accepted_epoch_written(node, epoch)
            }
            Some(Blocked::LearnerSnapshot) => self.learner_snapshot_written(node),
            Some(Blocked::LearnerCurrentEpoch { epoch }) => {
                self.learner_current_epoch_written(node, epoch)
            }
            other => node.blocked = other,
        }
    }

    /// The connection to a crashed `peer` broke.
    fn on_disconnect(&mut self, node: &mut Node, peer: NodeId) {
        match node.state {
            ServerState::Following if node.leader == Some(peer) => self.stop(node),
            ServerState::Leading => self.drop_learner(node, peer, false),
            ServerState::Looking => node.connecting.retain(|c| c.0 != peer),
            ServerState::Following => {}
        }
    }

    /// A learner that is not synced yet gives up on its leader (`Learner.readPacket`'s
    /// SocketTimeoutException in `followLeader`).
    fn on_read_timeout(&mut self, node: &mut Node, conn: u64) {
        let (Some(leader), Some(f)) = (node.leader, node.follow.as_ref()) else {
            return;
        };
        if node.state == ServerState::Following && f.conn == conn && !f.uptodate {
            self.send(leader, Msg::Close { conn });
            self.stop(node);
        }
    }

    /// A leader whose epoch no quorum acknowledged gives up (`Leader.lead`'s
    /// "Timeout while waiting for epoch"), closing its learners' connections.
    fn on_epoch_wait(&mut self, node: &mut Node, round: u64) {
        let Some(lead) = node.lead.as_ref() else {
            return;
        };
        if lead.round != round || lead.election_finished {
            return;
        }
        self.step_down(node);
    }

    /// The other end closed the connection `conn`.
    fn on_close(&mut self, node: &mut Node, from: NodeId, conn: u64) {
        match node.state {
            ServerState::Following if self.following(node, from, conn) => self.stop(node),
            ServerState::Leading => {
                let ours = node
                    .lead
                    .as_ref()
                    .is_some_and(|l| l.learners.iter().any(|l| l.sid == from && l.conn == conn));
                if ours {
                    self.drop_learner(node, from, false);
                }
            }
            ServerState::Looking => node.connecting.retain(|c| !(c.0 == from && c.1 == conn)),
            ServerState::Following => {}
        }
    }

    /// Events that waited for the quorum thread run, in order, until it blocks again.
    fn drain(&mut self, node: &mut Node) {
        while node.blocked.is_none() && !node.deferred.is_empty() {
            let (from, msg) = node.deferred.remove(0);
            self.dispatch(node, from, msg);
        }
    }
}

impl Protocol for ZabSim {
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
        let nodes: Vec<Node> = (0..n).map(|i| Node::new(i, self.epochs[i])).collect();
        *env = Env {
            peers: nodes
                .iter()
                .map(|node| Peer {
                    alive: true,
                    state: ServerState::Looking,
                    ready: true,
                    vote: node.vote(),
                    leader: None,
                    finalize: true,
                    waiting: false,
                })
                .collect(),
            next_conn: 1,
            chans: vec![vec![Chan::default(); n]; n],
        };
        for i in 0..n {
            out.timer(i, Msg::Finalize);
        }
        for &c in &self.clients {
            out.client(c, Msg::Write);
        }
        Ok(nodes)
    }

    fn handle(
        &self,
        id: NodeId,
        node: &mut Node,
        env: &mut Env,
        from: Option<NodeId>,
        msg: Msg,
        out: &mut Outbox<Msg>,
    ) {
        let mut cx = self.ctx(env, out, id);
        if let (Some(f), Some(_)) = (from, msg.conn()) {
            cx.delivered(f);
        }
        if node.blocked.is_some() && !msg.off_quorum_thread() {
            node.deferred.push((from, msg));
            return;
        }
        cx.dispatch(node, from, msg);
        cx.drain(node);
    }

    /// The process dies: memory is gone (what was logged but not flushed too), the disk
    /// stays; its peers' connections to it break (`disconnect`) where they had one.
    fn crash(&self, id: NodeId, node: &mut Node, env: &mut Env, out: &mut Outbox<Msg>) {
        node.forget_memory();
        env.peers[id].alive = false;
        env.peers[id].finalize = false;
        env.peers[id].waiting = false;
        for from in 0..self.nodes {
            env.chans[from][id] = Chan::default();
        }
        let mut cx = self.ctx(env, out, id);
        for p in (0..self.nodes).filter(|&p| p != id && cx.env.peers[p].alive) {
            let peer = &cx.env.peers[p];
            let connected = peer.state == ServerState::Leading
                || (peer.state == ServerState::Following && peer.leader == Some(id));
            if connected {
                cx.out.timer(p, Msg::Disconnect { peer: id });
            }
        }
        cx.wake_waiting();
    }

    /// `QuorumPeer.loadDataBase`: the epochs must not be older than the data (an epoch file
    /// written through `AtomicFileOutputStream` is whole or absent, so no `.tmp` is left to
    /// recover from), else "Unable to load database on disk" and the process exits.
    fn refuses_start(&self, _id: NodeId, node: &Node) -> Option<String> {
        let disk = &node.disk;
        let last = disk.restore().0.last().copied().unwrap_or(0);
        if epoch_of(last) > disk.current_epoch {
            return Some(format!(
                "Unable to load database on disk: The current epoch, {:#x}, is older than the last zxid, {last}",
                disk.current_epoch
            ));
        }
        (disk.accepted_epoch < disk.current_epoch).then(|| {
            format!(
                "Unable to load database on disk: The accepted epoch, {:#x} is less than the current epoch, {:#x}",
                disk.accepted_epoch, disk.current_epoch
            )
        })
    }

    /// The process starts again: `QuorumPeer.loadDataBase` -> `ZKDatabase.loadDataBase` ->
    /// `FileTxnSnapLog.restore` (snapshot, then the flushed log; the replayed transactions
    /// fill the committed log), the epochs from their files; then it looks for a leader.
    fn reboot(&self, id: NodeId, node: &mut Node, env: &mut Env, out: &mut Outbox<Msg>) {
        node.forget_memory();
        let (tree, replayed) = node.disk.restore();
        node.log = tree;
        node.committed_log = replayed;
        env.peers[id].alive = true;
        let mut cx = self.ctx(env, out, id);
        cx.enter_election(node);
    }
}
