//! The environment the nodes share: the quorum connections, kept in TCP's order, and what a
//! coarse election needs to know of every node (see `election`).

use std::collections::VecDeque;

use flymc_model::sim::Outbox;
use flymc_model::NodeId;
use serde::Serialize;

use crate::msg::Msg;
use crate::protocol::ZabSim;
use crate::state::{ServerState, Zxid};

/// A vote as `totalOrderPredicate` orders it: (peer epoch, zxid, server id).
pub type Vote = (u64, Zxid, NodeId);

#[derive(Clone, Debug, Default, Serialize)]
pub struct Env {
    pub peers: Vec<Peer>,
    /// The next connection id a learner takes (the real integration: its local port).
    pub next_conn: u64,
    /// `[from][to]`: one direction of the quorum connection between two nodes.
    pub chans: Vec<Vec<Chan>>,
}

/// What FLE's notifications would tell the others about one node.
#[derive(Clone, Debug, Serialize)]
pub struct Peer {
    pub alive: bool,
    pub state: ServerState,
    /// LOOKING and in `lookForLeader` (not still flushing on its way out of a role).
    pub ready: bool,
    /// Its own vote while LOOKING or LEADING; the vote it decided on while FOLLOWING.
    pub vote: Vote,
    pub leader: Option<NodeId>,
    /// A `finalize` timer is pending at it.
    pub finalize: bool,
    /// Its last `finalize` decided nothing: it waits for the others to change.
    pub waiting: bool,
}

/// One direction of a connection: the packet the checker may deliver now is in flight
/// (`busy`); the ones written after it wait here, in order.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Chan {
    pub busy: bool,
    pub backlog: VecDeque<Msg>,
}

/// What a handler at node `me` works with.
pub struct Ctx<'a> {
    pub p: &'a ZabSim,
    pub env: &'a mut Env,
    pub out: &'a mut Outbox<Msg>,
    pub me: NodeId,
}

impl Ctx<'_> {
    pub fn quorum(&self) -> usize {
        self.p.nodes / 2 + 1
    }

    /// Write a packet to `to`'s connection: the checker sees it once the ones before it on
    /// the connection were delivered.
    pub fn send(&mut self, to: NodeId, msg: Msg) {
        if !self.env.peers[to].alive {
            return; // its connections are gone with it
        }
        let c = &mut self.env.chans[self.me][to];
        if c.busy {
            c.backlog.push_back(msg);
        } else {
            c.busy = true;
            self.out.send(to, msg);
        }
    }

    /// A packet from `from` is being read: the next one on its connection may travel.
    pub fn delivered(&mut self, from: NodeId) {
        let c = &mut self.env.chans[from][self.me];
        match c.backlog.pop_front() {
            Some(m) => self.out.send_as(from, self.me, m),
            None => c.busy = false,
        }
    }

    pub fn timer(&mut self, msg: Msg) {
        self.out.timer(self.me, msg);
    }

    pub fn alive(&self, n: NodeId) -> bool {
        self.env.peers[n].alive
    }
}
