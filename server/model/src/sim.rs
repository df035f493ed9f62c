//! In-memory, deterministic targets: a [`Protocol`] (a state machine per node) plus a network.
//!
//! A protocol writes typed handlers; [`SimTarget`] turns their outputs into [`Event`]s with
//! stable identities, keeps the in-flight set, drops messages to crashed nodes, and reports
//! global states. Simulated targets are benchmark fixtures for the strategies; real systems go
//! through the event server instead.

use std::fmt::Debug;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::event::{Event, EventId, EventKind, NodeId};
use crate::state::{GlobalState, NodeView};
use crate::target::{Target, TargetError};
use crate::workload::Workload;

/// Messages, timers and client requests a handler produces.
pub struct Outbox<M> {
    from: Option<NodeId>,
    items: Vec<(EventKind, Option<NodeId>, NodeId, M)>,
}

impl<M> Outbox<M> {
    fn new(from: Option<NodeId>) -> Self {
        Outbox {
            from,
            items: Vec::new(),
        }
    }

    /// Send `msg` from the node being handled to `to` (to itself too: the checker orders that
    /// delivery like any other).
    pub fn send(&mut self, to: NodeId, msg: M) {
        self.items.push((EventKind::Message, self.from, to, msg));
    }

    /// Send `msg` as if `from` sent it to `to`: for a protocol that keeps a connection's later
    /// messages back until the earlier one is delivered (TCP's order), and releases the next
    /// one when the receiver takes the previous.
    pub fn send_as(&mut self, from: NodeId, to: NodeId, msg: M) {
        self.items.push((EventKind::Message, Some(from), to, msg));
    }

    /// Arm a timer at `node`; it fires when the checker enables it.
    pub fn timer(&mut self, node: NodeId, msg: M) {
        self.items.push((EventKind::Timeout, None, node, msg));
    }

    /// A client request arriving at `node` (used by `init` for the workload's operations).
    pub fn client(&mut self, node: NodeId, msg: M) {
        self.items.push((EventKind::Client, None, node, msg));
    }
}

/// A protocol simulated in memory.
///
/// `Msg` must serialise to a JSON object tagged with `"kind"` (use
/// `#[serde(tag = "kind", rename_all = "snake_case")]`): the tag becomes the event's name and the
/// other keys its fields. `Node` must serialise to a JSON object holding every variable that
/// decides the node's behaviour.
pub trait Protocol: Send + Sync + 'static {
    type Node: Clone + Serialize + Send;
    type Msg: Clone + Serialize + Send + Debug;
    /// State of the environment rather than of any node, e.g. the clock that hands out Cassandra
    /// ballots in the order prepares start. Part of the global state; use `()` when there is none.
    type Env: Clone + Serialize + Send + Default;

    /// Initial node states and initial events (client requests, first timers).
    fn init(
        &self,
        workload: &Workload,
        env: &mut Self::Env,
        out: &mut Outbox<Self::Msg>,
    ) -> Result<Vec<Self::Node>, TargetError>;

    /// Process one delivered message, timer or client request at node `id`.
    fn handle(
        &self,
        id: NodeId,
        node: &mut Self::Node,
        env: &mut Self::Env,
        from: Option<NodeId>,
        msg: Self::Msg,
        out: &mut Outbox<Self::Msg>,
    );

    /// `id` crashed: drop its volatile state (its inbound messages are already gone). May arm
    /// timers at other nodes that notice the crash.
    fn crash(
        &self,
        id: NodeId,
        node: &mut Self::Node,
        env: &mut Self::Env,
        out: &mut Outbox<Self::Msg>,
    );

    /// `id` reboots from its persisted state.
    fn reboot(
        &self,
        id: NodeId,
        node: &mut Self::Node,
        env: &mut Self::Env,
        out: &mut Outbox<Self::Msg>,
    );

    /// Why crashed node `id` would not start from what it has on disk (the real process
    /// exits during startup), or `None`. Asked before [`Protocol::reboot`]; a refusing node
    /// stays down and the reboot ends the run as the real node's exit would.
    fn refuses_start(&self, _id: NodeId, _node: &Self::Node) -> Option<String> {
        None
    }
}

#[derive(Clone)]
struct Pending<M> {
    event: Event,
    msg: M,
}

/// A [`Target`] running a [`Protocol`] in memory.
pub struct SimTarget<P: Protocol> {
    /// Shared by forks: a protocol is its configuration, never its state.
    protocol: std::sync::Arc<P>,
    nodes: Vec<P::Node>,
    env: P::Env,
    alive: Vec<bool>,
    pending: Vec<Pending<P::Msg>>,
    crashes: Vec<u32>,
    reboots: Vec<u32>,
}

impl<P: Protocol> SimTarget<P> {
    pub fn new(protocol: P) -> Self {
        SimTarget {
            protocol: std::sync::Arc::new(protocol),
            nodes: Vec::new(),
            env: P::Env::default(),
            alive: Vec::new(),
            pending: Vec::new(),
            crashes: Vec::new(),
            reboots: Vec::new(),
        }
    }

    fn absorb(&mut self, parent: Option<EventId>, out: Outbox<P::Msg>) {
        for (seq, (kind, from, to, msg)) in out.items.into_iter().enumerate() {
            if to >= self.nodes.len() {
                // A protocol bug, not user input: surface it loudly in tests.
                debug_assert!(
                    false,
                    "protocol addressed node {to} of {}",
                    self.nodes.len()
                );
                continue;
            }
            if !self.alive[to] {
                continue; // sent to a crashed node: lost, as on a real network
            }
            let (name, fields) = split_msg(&msg);
            let id = EventId::derive(parent, seq as u32, kind, &name, from, to);
            let event = Event {
                id,
                kind,
                name,
                from,
                to,
                fields,
                parent,
                delay_ms: None,
            };
            self.pending.push(Pending { event, msg });
        }
    }
}

impl<P: Protocol> SimTarget<P> {
    /// `node` is down at the start: as crashed before anything happened (its state is what
    /// the protocol keeps over a crash; the others notice as they would a crash), but no
    /// crash was spent, so its first reboot is its `0`th.
    fn put_down(&mut self, node: NodeId) {
        self.alive[node] = false;
        self.pending.retain(|p| p.event.to != node);
        let mut out = Outbox::new(None);
        self.protocol
            .crash(node, &mut self.nodes[node], &mut self.env, &mut out);
        self.absorb(Some(EventId::down(node)), out);
    }
}

fn split_msg<M: Serialize>(msg: &M) -> (String, Map<String, Value>) {
    match serde_json::to_value(msg) {
        Ok(Value::Object(mut m)) => {
            let name = match m.remove("kind") {
                Some(Value::String(s)) => s,
                _ => "message".into(),
            };
            (name, m)
        }
        Ok(Value::String(s)) => (s, Map::new()),
        _ => ("message".into(), Map::new()),
    }
}

impl<P: Protocol> Target for SimTarget<P> {
    fn start(&mut self, workload: &Workload) -> Result<(), TargetError> {
        let mut out = Outbox::new(None);
        self.env = P::Env::default();
        self.nodes = self.protocol.init(workload, &mut self.env, &mut out)?;
        let n = self.nodes.len();
        self.alive = vec![true; n];
        self.crashes = vec![0; n];
        self.reboots = vec![0; n];
        self.pending.clear();
        self.absorb(None, out);
        for &node in workload.down.iter().filter(|&&d| d < n) {
            self.put_down(node);
        }
        Ok(())
    }

    fn pending(&self) -> Vec<Event> {
        self.pending.iter().map(|p| p.event.clone()).collect()
    }

    fn enable(&mut self, id: EventId) -> Result<(), TargetError> {
        let pos = self
            .pending
            .iter()
            .position(|p| p.event.id == id)
            .ok_or(TargetError::NotPending(id))?;
        let Pending { event, msg } = self.pending.remove(pos);
        let to = event.to;
        let mut out = Outbox::new(Some(to));
        self.protocol.handle(
            to,
            &mut self.nodes[to],
            &mut self.env,
            event.from,
            msg,
            &mut out,
        );
        self.absorb(Some(id), out);
        Ok(())
    }

    fn settle(&mut self) -> Result<GlobalState, TargetError> {
        let views = self
            .nodes
            .iter()
            .zip(&self.alive)
            .map(|(n, &alive)| NodeView {
                alive,
                vars: match serde_json::to_value(n) {
                    Ok(Value::Object(m)) => m,
                    _ => Map::new(),
                },
            })
            .collect();
        let pending: Vec<Event> = self.pending.iter().map(|p| p.event.clone()).collect();
        let mut state = GlobalState::new(views, &pending);
        state.env = serde_json::to_value(&self.env).unwrap_or(Value::Null);
        Ok(state)
    }

    fn crash(&mut self, node: NodeId) -> Result<(), TargetError> {
        if node >= self.nodes.len() || !self.alive[node] {
            return Err(TargetError::BadNode(node, "crash needs a live node".into()));
        }
        self.alive[node] = false;
        self.pending.retain(|p| p.event.to != node);
        let parent = EventId::crash(node, self.crashes[node]);
        self.crashes[node] += 1;
        let mut out = Outbox::new(None);
        self.protocol
            .crash(node, &mut self.nodes[node], &mut self.env, &mut out);
        self.absorb(Some(parent), out);
        Ok(())
    }

    fn reboot(&mut self, node: NodeId) -> Result<(), TargetError> {
        if node >= self.nodes.len() || self.alive[node] {
            return Err(TargetError::BadNode(
                node,
                "reboot needs a crashed node".into(),
            ));
        }
        if let Some(why) = self.protocol.refuses_start(node, &self.nodes[node]) {
            return Err(TargetError::Exited {
                node,
                status: "exit status 1".into(),
                restarting: true,
                log_tail: vec![why],
            });
        }
        self.alive[node] = true;
        let parent = EventId::reboot(node, self.reboots[node]);
        self.reboots[node] += 1;
        let mut out = Outbox::new(Some(node));
        self.protocol
            .reboot(node, &mut self.nodes[node], &mut self.env, &mut out);
        self.absorb(Some(parent), out);
        Ok(())
    }

    fn stop(&mut self) -> Result<(), TargetError> {
        self.pending.clear();
        Ok(())
    }

    fn fork(&self) -> Option<Box<dyn Target>> {
        Some(Box::new(SimTarget {
            protocol: self.protocol.clone(),
            nodes: self.nodes.clone(),
            env: self.env.clone(),
            alive: self.alive.clone(),
            pending: self.pending.clone(),
            crashes: self.crashes.clone(),
            reboots: self.reboots.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use std::path::Path;

    /// Each node counts pings; node 0 pings everyone once at start.
    struct Ping;
    #[derive(Clone, Serialize)]
    struct N {
        pings: u32,
    }
    #[derive(Clone, Debug, Serialize)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    enum M {
        Ping { n: u32 },
    }

    impl Protocol for Ping {
        type Node = N;
        type Msg = M;
        type Env = ();
        fn init(
            &self,
            w: &Workload,
            _e: &mut (),
            out: &mut Outbox<M>,
        ) -> Result<Vec<N>, TargetError> {
            for i in 0..w.nodes {
                out.client(i, M::Ping { n: 0 });
            }
            Ok(vec![N { pings: 0 }; w.nodes])
        }
        fn handle(
            &self,
            _id: NodeId,
            node: &mut N,
            _e: &mut (),
            _f: Option<NodeId>,
            _m: M,
            _o: &mut Outbox<M>,
        ) {
            node.pings += 1;
        }
        fn crash(&self, _id: NodeId, node: &mut N, _e: &mut (), _o: &mut Outbox<M>) {
            node.pings = 0;
        }
        fn reboot(&self, _id: NodeId, _n: &mut N, _e: &mut (), _o: &mut Outbox<M>) {}
    }

    fn workload() -> Workload {
        Workload::parse(
            Path::new("ping.toml"),
            "version = 1\nsystem = \"ping\"\nnodes = 2\nmax_events = 10\n",
        )
        .unwrap()
    }

    #[test]
    fn messages_become_events_with_names_and_fields() {
        let mut t = SimTarget::new(Ping);
        t.start(&workload()).unwrap();
        let p = t.pending();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].name, "ping");
        assert_eq!(p[0].fields["n"], 0);
        t.enable(p[1].id).unwrap();
        let s = t.settle().unwrap();
        assert_eq!(s.var(1, "pings").unwrap(), 1);
        assert_eq!(s.network.len(), 1);
        assert!(matches!(t.enable(p[1].id), Err(TargetError::NotPending(_))));
    }

    #[test]
    fn crash_drops_inbound_messages_and_ids_are_stable() {
        let mut a = SimTarget::new(Ping);
        let mut b = SimTarget::new(Ping);
        a.start(&workload()).unwrap();
        b.start(&workload()).unwrap();
        assert_eq!(a.pending(), b.pending());
        a.crash(0).unwrap();
        assert_eq!(a.pending().len(), 1);
        assert!(a.crash(0).is_err());
        a.reboot(0).unwrap();
        assert!(a.settle().unwrap().nodes[0].alive);
    }

    #[test]
    fn a_node_down_at_the_start_is_down_and_reboots_as_its_first_reboot() {
        let text = "version = 1\nsystem = \"ping\"\nnodes = 2\nmax_events = 10\n[faults]\nreboots = 1\ndown = [1]\n";
        let w = Workload::parse(Path::new("ping.toml"), text).unwrap();
        let mut t = SimTarget::new(Ping);
        t.start(&w).unwrap();
        // Its client request was lost with it.
        assert_eq!(t.pending().len(), 1);
        assert!(!t.settle().unwrap().nodes[1].alive);
        assert!(t.crash(1).is_err());
        t.reboot(1).unwrap();
        assert!(t.settle().unwrap().nodes[1].alive);
        assert_eq!(t.reboots[1], 1);
        assert_eq!(t.crashes[1], 0);
    }
}
