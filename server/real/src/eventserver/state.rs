//! What the event server knows about the current run, free of I/O: nodes, events and their
//! identities, enable orders, quiescence. The HTTP layer and [`crate::RealTarget`] both
//! work through it under one lock.

use std::collections::{BTreeMap, HashMap, VecDeque};

use flymc_model::{Event, EventId, EventKind, GlobalState, NodeId, NodeView};
use serde::Serialize;
use serde_json::{Map, Value};

use super::protocol::{
    self as wire, CancelReply, CancelRequest, DoneReply, DoneRequest, EventsReply, EventsRequest,
    Kind, Order, PausedReply, PausedRequest, PollRequest, RegisterReply, RegisterRequest,
    ResumedReply, ResumedRequest, WireEvent, PROTOCOL_VERSION,
};

/// A rejected request: the HTTP status, a stable code and a reason for people.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerError {
    pub status: u16,
    pub code: &'static str,
    pub reason: String,
}

impl ServerError {
    pub fn new(status: u16, code: &'static str, reason: impl Into<String>) -> ServerError {
        ServerError {
            status,
            code,
            reason: reason.into(),
        }
    }
}

/// A client request of the workload: an event flymc itself creates at the start of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClientRequest {
    pub to: NodeId,
    pub name: String,
    pub fields: Map<String, Value>,
    pub payload: Value,
}

/// Counters for diagnostics, benchmarks and tests.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ServerStats {
    pub requests: u64,
    /// Rejected requests by error code.
    pub rejected: BTreeMap<String, u64>,
    pub events_reported: u64,
    pub orders: u64,
    /// Events reported after the event that caused them was reported done: the node's hook
    /// reports too late, and quiescence cannot see such events coming.
    pub late_events: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Pending,
    Enabled,
    Done,
    /// Sent to a crashed node, or pending at a node when it crashed.
    Dropped,
}

#[derive(Clone)]
struct Record {
    event: Event,
    wire_kind: Kind,
    payload: Value,
    status: Status,
    /// Deterministic position among pending events: (generation of the parent, origin, to,
    /// kind, name, seq).
    sort: (u64, usize, NodeId, EventKind, String, u32),
    /// FIFO channel (sender, destination, name) and the report order within the run.
    channel: Option<(NodeId, NodeId, String)>,
    order: u64,
    /// A peer-failure timer: (peer, the peer's incarnation when it was reported).
    peer: Option<(NodeId, u32)>,
}

/// Where a node's process is in its life, as the event server sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Life {
    /// Down since the start of the run, never started: its first process is incarnation 0.
    Unstarted,
    /// Crashed by flymc: its next reboot starts the next incarnation.
    Crashed,
    /// Its process started and has not registered with the event server yet.
    Started,
    /// Registered, and has not reported ready yet.
    Registered,
    /// Reported ready: its startup is done.
    Ready,
}

impl Life {
    /// A process runs (or is about to): requests from it count.
    fn alive(self) -> bool {
        !matches!(self, Life::Unstarted | Life::Crashed)
    }

    fn registered(self) -> bool {
        matches!(self, Life::Registered | Life::Ready)
    }
}

#[derive(Clone)]
struct NodeState {
    incarnation: u32,
    life: Life,
    pid: Option<u32>,
    vars: Map<String, Value>,
    /// The parent of events reported during startup: none at first, the reboot after one.
    boot_parent: Option<EventId>,
    orders: Vec<Order>,
    last_enabled: Option<EventId>,
    /// Enabled here and not yet done, oldest first.
    outstanding: VecDeque<EventId>,
    /// A crash point the node is parked at: its other events wait until it is enabled.
    parked: Option<EventId>,
    /// The process ended without being crashed by flymc.
    exited: Option<String>,
    /// Its hook can pause for a checkpoint (it said so when it registered).
    pausable: bool,
    /// Its hook reports its state after a pause (`/v1/resumed`); an older one does not.
    resumes: bool,
    /// Its other events may be enabled while it is parked at a crash point (its hook said so:
    /// its threads go on meanwhile).
    threads: bool,
    /// A pause asked of it (its number), and whether the hook has paused.
    pause: Option<(u64, bool)>,
    /// The state its hook reported on going on after the latest pause (`/v1/resumed`), until
    /// flymc has compared it with the state recorded before the pause.
    resumed: Option<Map<String, Value>>,
}

impl NodeState {
    fn fresh(incarnation: u32, boot_parent: Option<EventId>) -> NodeState {
        NodeState {
            incarnation,
            life: Life::Started,
            pid: None,
            vars: Map::new(),
            boot_parent,
            orders: Vec::new(),
            last_enabled: None,
            outstanding: VecDeque::new(),
            parked: None,
            exited: None,
            pausable: false,
            resumes: false,
            threads: false,
            pause: None,
            resumed: None,
        }
    }

    fn busy(&self) -> bool {
        self.life.alive() && (self.life != Life::Ready || !self.outstanding.is_empty())
    }
}

/// Why the cluster is not quiet.
#[derive(Clone, Debug, PartialEq)]
pub enum Unquiet {
    Busy(NodeId),
    /// The node's process ended on its own: how, and whether it had reported ready.
    Exited(NodeId, String, bool),
}

/// One run's state. A fresh token per run makes requests of earlier runs fail with 401.
#[derive(Clone, Default)]
pub struct RunState {
    /// Counts runs, so news about a process of an earlier run is ignored.
    run: u64,
    token: String,
    nodes: Vec<NodeState>,
    events: HashMap<EventId, Record>,
    /// Generation (index of the enable, crash or reboot) of every action of this run.
    gens: HashMap<EventId, u64>,
    actions: u64,
    /// Counts reports, for the order of FIFO channels.
    reports: u64,
    /// Counts pauses asked for (checkpoints).
    pauses: u64,
    /// Connections messages travel on (a payload's `conn`), by their two ends (lower node
    /// first) and name: the incarnations of those ends when the connection was first used.
    conns: HashMap<(NodeId, NodeId, String), (u32, u32)>,
    pub stats: ServerStats,
}

/// A run's state as it was at a checkpoint, to go on from later ([`RunState::resume`]).
#[derive(Clone)]
pub struct SavedRun(RunState);

impl SavedRun {
    /// The token the run's processes carry.
    pub fn token(&self) -> &str {
        &self.0.token
    }

    /// Which nodes were alive, with their incarnations.
    pub fn alive(&self) -> Vec<Option<u32>> {
        self.0
            .nodes
            .iter()
            .map(|s| s.life.alive().then_some(s.incarnation))
            .collect()
    }
}

/// What the nodes a pause let go reported on going on ([`RunState::resumed_states`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResumeCheck {
    /// Nodes that have not reported yet.
    pub waiting: Vec<NodeId>,
    /// Nodes whose (older) hook does not report after a pause: not checked.
    pub unchecked: Vec<NodeId>,
    pub differs: Vec<Differs>,
}

/// A node whose state after a pause is not the one it reported before it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Differs {
    pub node: NodeId,
    pub recorded: Map<String, Value>,
    pub resumed: Map<String, Value>,
}

/// Wire ids and model ids are the same 64 bits.
fn m(id: wire::EventId) -> EventId {
    EventId(id.0)
}

fn w(id: EventId) -> wire::EventId {
    wire::EventId(id.0)
}

fn model_kind(k: Kind) -> EventKind {
    match k {
        Kind::Message => EventKind::Message,
        Kind::Timeout | Kind::Disk => EventKind::Timeout,
        Kind::Client => EventKind::Client,
    }
}

/// Event names in the model: a crash-point write `state` is the timer-like event `disk:state`
/// until the model has an event kind of its own for disk writes.
fn model_name(k: Kind, name: &str) -> String {
    match k {
        Kind::Disk => format!("{}{name}", flymc_model::event::WRITE_PREFIX),
        _ => name.to_string(),
    }
}

impl RunState {
    pub fn run(&self) -> u64 {
        self.run
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Start a run of `nodes` nodes (all starting up) with the workload's client requests.
    pub fn begin(&mut self, token: String, nodes: usize, clients: &[ClientRequest]) {
        let stats = std::mem::take(&mut self.stats);
        *self = RunState {
            run: self.run + 1,
            token,
            nodes: (0..nodes).map(|_| NodeState::fresh(0, None)).collect(),
            stats,
            ..RunState::default()
        };
        let mut counts: HashMap<(NodeId, &str), u32> = HashMap::new();
        for c in clients {
            let seq = counts.entry((c.to, c.name.as_str())).or_insert(0);
            let id = EventId::derive(None, *seq, EventKind::Client, &c.name, None, c.to);
            let event = Event {
                id,
                kind: EventKind::Client,
                name: c.name.clone(),
                from: None,
                to: c.to,
                fields: c.fields.clone(),
                parent: None,
                delay_ms: None,
            };
            self.events.insert(
                id,
                Record {
                    sort: (0, 0, c.to, EventKind::Client, c.name.clone(), *seq),
                    event,
                    wire_kind: Kind::Client,
                    payload: c.payload.clone(),
                    channel: None,
                    order: 0,
                    peer: None,
                    status: if c.to < nodes {
                        Status::Pending
                    } else {
                        Status::Dropped
                    },
                },
            );
            *seq += 1;
        }
    }

    /// End the run: every later request fails with 401.
    pub fn end(&mut self) {
        self.token = String::new();
    }

    pub fn check_token(&self, token: Option<&str>) -> Result<(), ServerError> {
        match token {
            _ if self.token.is_empty() => Err(ServerError::new(
                401,
                "bad-token",
                "no run is in progress (it ended): this node process is a leftover",
            )),
            None => Err(ServerError::new(
                401,
                "bad-token",
                format!("missing {} header", wire::TOKEN_HEADER),
            )),
            Some(t) if t != self.token => Err(ServerError::new(
                401,
                "bad-token",
                "wrong token: it belongs to another run or another server",
            )),
            Some(_) => Ok(()),
        }
    }

    fn member(&mut self, node: usize, incarnation: u32) -> Result<&mut NodeState, ServerError> {
        let n = self.nodes.len();
        let s = self.nodes.get_mut(node).ok_or_else(|| {
            ServerError::new(
                404,
                "unknown-node",
                format!(
                    "node {node} does not exist; this cluster has nodes 0..{}",
                    n.max(1) - 1
                ),
            )
        })?;
        if !s.life.alive() {
            return Err(ServerError::new(
                409,
                "stale",
                format!("node n{node} is crashed: this request comes from a killed process"),
            ));
        }
        if s.incarnation != incarnation {
            return Err(ServerError::new(
                409,
                "stale",
                format!(
                    "node n{node} is at incarnation {}, this process is incarnation {incarnation}",
                    s.incarnation
                ),
            ));
        }
        Ok(s)
    }

    fn registered(&mut self, node: usize, incarnation: u32) -> Result<&mut NodeState, ServerError> {
        let s = self.member(node, incarnation)?;
        if !s.life.registered() {
            return Err(ServerError::new(
                409,
                "conflict",
                format!(
                    "node n{node} has not registered: POST /v{PROTOCOL_VERSION}/register first"
                ),
            ));
        }
        Ok(s)
    }

    pub fn register(&mut self, r: &RegisterRequest) -> Result<RegisterReply, ServerError> {
        if r.protocol != PROTOCOL_VERSION {
            return Err(ServerError::new(
                426,
                "protocol-version",
                format!(
                    "this hook speaks protocol {}, flymc speaks {PROTOCOL_VERSION}: update the hook",
                    r.protocol
                ),
            ));
        }
        let nodes = self.nodes.len();
        let s = self.member(r.node, r.incarnation)?;
        if s.life == Life::Started {
            s.life = Life::Registered;
        }
        s.pid = r.pid;
        s.pausable = r.pausable;
        s.resumes = r.resumes;
        s.threads = r.threads;
        Ok(RegisterReply {
            protocol: PROTOCOL_VERSION,
            node: r.node,
            incarnation: r.incarnation,
            nodes,
        })
    }

    pub fn intercept(&mut self, r: &EventsRequest) -> Result<EventsReply, ServerError> {
        let n = self.nodes.len();
        let node = r.node;
        let s = self.registered(node, r.incarnation)?;
        let boot_parent = s.boot_parent;
        let front = s.outstanding.front().copied();
        let ready = s.life == Life::Ready;
        // Validate every event first, so a rejected request changes nothing.
        let mut new = Vec::with_capacity(r.events.len());
        for (i, e) in r.events.iter().enumerate() {
            let at = |m: String| format!("events[{i}]: {m}");
            if e.kind == Kind::Client {
                return Err(ServerError::new(
                    400,
                    "malformed",
                    at("hooks cannot report client events".into()),
                ));
            }
            if e.to >= n {
                return Err(ServerError::new(
                    404,
                    "unknown-node",
                    at(format!(
                        "destination node {} does not exist; this cluster has nodes 0..{}",
                        e.to,
                        n - 1
                    )),
                ));
            }
            if e.kind != Kind::Message && e.to != node {
                return Err(ServerError::new(
                    400,
                    "malformed",
                    at(format!(
                        "a {:?} event belongs to the node that reports it (n{node}), not n{}",
                        e.kind, e.to
                    )),
                ));
            }
            let parent = match e.parent.map(m) {
                None => boot_parent,
                Some(p) => match self.events.get(&p) {
                    None => {
                        return Err(ServerError::new(
                            404,
                            "unknown-event",
                            at(format!("parent {p} is not an event of this run")),
                        ))
                    }
                    Some(rec)
                        if rec.event.to != node
                            || !matches!(rec.status, Status::Enabled | Status::Done) =>
                    {
                        return Err(ServerError::new(
                            409,
                            "conflict",
                            at(format!("parent {p} was not processed by node n{node}")),
                        ))
                    }
                    Some(_) => Some(p),
                },
            };
            let kind = model_kind(e.kind);
            let name = model_name(e.kind, &e.name);
            let from = (e.kind == Kind::Message).then_some(node);
            let id = EventId::derive(parent, e.seq, kind, &name, from, e.to);
            let event = Event {
                id,
                kind,
                name,
                from,
                to: e.to,
                fields: e.fields.clone(),
                parent,
                // Only a timer waits.
                delay_ms: e.delay_ms.filter(|_| kind == EventKind::Timeout),
            };
            if let Some(old) = self.events.get(&id) {
                if old.event != event || old.payload != e.payload {
                    return Err(ServerError::new(
                        409,
                        "conflict",
                        at(format!(
                            "event {id} ({} seq {}) was already reported with other content: sequence numbers must count per parent, kind, name and destination",
                            e.name, e.seq
                        )),
                    ));
                }
            }
            if let Some(p) = e.peer {
                if e.kind != Kind::Timeout || p >= n {
                    return Err(ServerError::new(
                        400,
                        "malformed",
                        at(format!(
                            "`peer` {p} must name a node 0..{} of a timeout",
                            n - 1
                        )),
                    ));
                }
            }
            let late = ready && (parent != front || front.is_none());
            let channel = e.channel.clone().map(|c| (node, e.to, c));
            let peer = e.peer.map(|p| (p, self.nodes[p].incarnation));
            new.push((event, e.kind, e.payload.clone(), e.seq, late, channel, peer));
        }
        let mut ids = Vec::with_capacity(new.len());
        for (event, wire_kind, payload, seq, late, channel, peer) in new {
            let id = event.id;
            ids.push(w(id));
            if self.events.contains_key(&id) {
                continue; // a retried report
            }
            self.stats.events_reported += 1;
            if late {
                self.stats.late_events += 1;
                tracing::warn!(
                    "node n{node} reported {} after its cause was done; report events before done",
                    event.describe()
                );
            }
            let gen = event
                .parent
                .and_then(|p| self.gens.get(&p).copied())
                .unwrap_or(0);
            let alive = self.alive(event.to) && !self.on_dead_connection(&event, &payload);
            if wire_kind == Kind::Disk && alive {
                self.nodes[node].parked = Some(id);
            }
            self.reports += 1;
            self.events.insert(
                id,
                Record {
                    sort: (gen, 1 + node, event.to, event.kind, event.name.clone(), seq),
                    event,
                    wire_kind,
                    payload,
                    channel,
                    order: self.reports,
                    peer,
                    status: if alive {
                        Status::Pending
                    } else {
                        Status::Dropped
                    },
                },
            );
        }
        Ok(EventsReply { ids })
    }

    pub fn done(&mut self, r: &DoneRequest) -> Result<DoneReply, ServerError> {
        let s = self.registered(r.node, r.incarnation)?;
        let Some(id) = r.event.map(m) else {
            let fresh = s.life != Life::Ready;
            s.life = Life::Ready;
            s.vars = r.state.clone();
            return Ok(DoneReply { fresh });
        };
        let front = s.outstanding.front().copied();
        if front == Some(id) {
            s.outstanding.pop_front();
            s.vars = r.state.clone();
            if let Some(rec) = self.events.get_mut(&id) {
                rec.status = Status::Done;
            }
            return Ok(DoneReply { fresh: true });
        }
        match self.events.get(&id) {
            None => Err(ServerError::new(
                404,
                "unknown-event",
                format!("event {id} is not an event of this run"),
            )),
            Some(rec) if rec.status == Status::Done && rec.event.to == r.node => {
                Ok(DoneReply { fresh: false })
            }
            Some(_) => Err(ServerError::new(
                409,
                "conflict",
                match front {
                    Some(f) => format!(
                        "done for {id}, but the oldest event enabled at n{} and not done is {f}",
                        r.node
                    ),
                    None => format!("done for {id}, but no event is enabled at n{}", r.node),
                },
            )),
        }
    }

    /// Withdraw timers the node armed and that have not been enabled.
    pub fn cancel(&mut self, r: &CancelRequest) -> Result<CancelReply, ServerError> {
        self.registered(r.node, r.incarnation)?;
        for id in r.ids.iter().copied().map(m) {
            match self.events.get(&id) {
                None => {
                    return Err(ServerError::new(
                        404,
                        "unknown-event",
                        format!("event {id} is not an event of this run"),
                    ))
                }
                Some(rec) if rec.wire_kind != Kind::Timeout || rec.event.to != r.node => {
                    return Err(ServerError::new(
                        409,
                        "conflict",
                        format!("event {id} is not a timer of node n{}", r.node),
                    ))
                }
                Some(_) => {}
            }
        }
        let mut cancelled = Vec::new();
        for id in r.ids.iter().copied().map(m) {
            if let Some(rec) = self.events.get_mut(&id) {
                if rec.status == Status::Pending {
                    rec.status = Status::Dropped;
                    cancelled.push(w(id));
                }
            }
        }
        Ok(CancelReply { cancelled })
    }

    /// Orders for a poll, validating it, and a pause asked of the node; nothing when the hook
    /// has every order and no pause is asked.
    pub fn poll(&mut self, r: &PollRequest) -> Result<(Vec<Order>, Option<u64>), ServerError> {
        let s = self.registered(r.node, r.incarnation)?;
        let from = (r.after as usize).min(s.orders.len());
        let pause = match s.pause {
            Some((n, false)) => Some(n),
            _ => None,
        };
        Ok((s.orders[from..].to_vec(), pause))
    }

    /// The hook paused as asked: it has no connection to the server until it is resumed.
    pub fn paused(&mut self, r: &PausedRequest) -> Result<PausedReply, ServerError> {
        let s = self.registered(r.node, r.incarnation)?;
        match s.pause {
            Some((n, _)) if n == r.pause => {
                s.pause = Some((n, true));
                Ok(PausedReply {})
            }
            _ => Err(ServerError::new(
                409,
                "conflict",
                format!("node n{} was not asked for pause {}", r.node, r.pause),
            )),
        }
    }

    /// The hook went on after a pause and reports its state as it finds it: kept for
    /// [`RunState::resumed_states`] to compare with what it reported before the pause.
    pub fn resumed(&mut self, r: &ResumedRequest) -> Result<ResumedReply, ServerError> {
        let pauses = self.pauses;
        let s = self.registered(r.node, r.incarnation)?;
        if r.pause == 0 || r.pause > pauses {
            return Err(ServerError::new(
                409,
                "conflict",
                format!("node n{} was never asked for pause {}", r.node, r.pause),
            ));
        }
        s.resumed = Some(r.state.clone());
        Ok(ResumedReply {})
    }

    /// Of `nodes`, those that have not reported their state after resuming yet, and for the
    /// others whether it differs from the state recorded before the pause: `(node, recorded,
    /// resumed)` for each that differs. A node that exited is an error.
    pub fn resumed_states(&self, nodes: &[NodeId]) -> Result<ResumeCheck, Unquiet> {
        let mut check = ResumeCheck::default();
        for &n in nodes {
            let s = &self.nodes[n];
            if let Some(how) = &s.exited {
                return Err(Unquiet::Exited(n, how.clone(), s.life == Life::Ready));
            }
            match &s.resumed {
                None if !s.resumes => check.unchecked.push(n),
                None => check.waiting.push(n),
                Some(state) if *state != s.vars => check.differs.push(Differs {
                    node: n,
                    recorded: s.vars.clone(),
                    resumed: state.clone(),
                }),
                Some(_) => {}
            }
        }
        Ok(check)
    }

    /// Ask every live node to pause (before a checkpoint); the nodes that will be asked. Fails,
    /// asking nothing, when a live node's hook cannot pause or the cluster is not quiet.
    pub fn ask_pause(&mut self) -> Result<Vec<NodeId>, String> {
        self.quiet()
            .map_err(|u| format!("the cluster is not quiet: {u:?}"))?;
        if let Some(i) = self
            .nodes
            .iter()
            .position(|s| s.life.alive() && !s.pausable)
        {
            return Err(format!(
                "node n{i}'s hook cannot pause for a checkpoint (it did not register as pausable)"
            ));
        }
        self.pauses += 1;
        let n = self.pauses;
        let mut asked = Vec::new();
        for (i, s) in self.nodes.iter_mut().enumerate() {
            s.resumed = None;
            if s.life.alive() {
                s.pause = Some((n, false));
                asked.push(i);
            }
        }
        Ok(asked)
    }

    /// Every node asked to pause has paused.
    pub fn all_paused(&self) -> bool {
        self.nodes
            .iter()
            .all(|s| !s.life.alive() || s.pause.is_none_or(|(_, p)| p))
    }

    /// The nodes that have paused.
    pub fn paused_nodes(&self) -> Vec<NodeId> {
        (0..self.nodes.len())
            .filter(|&i| matches!(self.nodes[i].pause, Some((_, true))))
            .collect()
    }

    /// The nodes are resumed (or killed): no pause is pending any more.
    pub fn end_pause(&mut self) {
        for s in &mut self.nodes {
            s.pause = None;
        }
    }

    /// This run as it is now, without its counters, to resume from later.
    pub fn save(&self) -> SavedRun {
        let mut saved = self.clone();
        saved.stats = ServerStats::default();
        saved.end_pause();
        for s in &mut saved.nodes {
            s.pid = None;
            s.resumed = None;
        }
        SavedRun(saved)
    }

    /// Go on from `saved` as a new run: its processes (restored from the same checkpoint) carry
    /// its token, and news about processes of earlier runs is ignored as after [`RunState::begin`].
    pub fn resume(&mut self, saved: &SavedRun) {
        let stats = std::mem::take(&mut self.stats);
        let run = self.run + 1;
        *self = saved.0.clone();
        self.run = run;
        self.stats = stats;
    }

    fn pending_visible(&self, rec: &Record) -> bool {
        let to = &self.nodes[rec.event.to];
        rec.status == Status::Pending
            && (to.threads || to.parked.is_none_or(|p| p == rec.event.id))
            && rec.peer.is_none_or(|(p, inc)| {
                let s = &self.nodes[p];
                !s.life.alive() || s.incarnation != inc
            })
            && rec.channel.as_ref().is_none_or(|c| {
                // Only the oldest undelivered message of a channel.
                !self.events.values().any(|o| {
                    o.status == Status::Pending
                        && o.order < rec.order
                        && o.channel.as_ref() == Some(c)
                })
            })
    }

    /// Events the checker may enable, in a deterministic order.
    pub fn pending(&self) -> Vec<Event> {
        let mut recs: Vec<&Record> = self
            .events
            .values()
            .filter(|r| self.pending_visible(r))
            .collect();
        recs.sort_by(|a, b| a.sort.cmp(&b.sort).then(a.event.id.cmp(&b.event.id)));
        recs.into_iter().map(|r| r.event.clone()).collect()
    }

    /// The node whose crash enabling `id` tells its node of: a peer-failure timer's peer, or
    /// the node of a `crashed` notice ([`RunState::notice`]; workload requests have no parent).
    pub fn crash_news(&self, id: EventId) -> Option<NodeId> {
        let rec = self.events.get(&id)?;
        if let Some((peer, _)) = rec.peer {
            return Some(peer);
        }
        let e = &rec.event;
        if rec.wire_kind != Kind::Client || e.name != "crashed" || e.parent.is_none() {
            return None;
        }
        e.fields.get("node")?.as_u64().map(|n| n as NodeId)
    }

    /// Enable a pending event: queue its order at its node. Returns the node.
    pub fn enable(&mut self, id: EventId) -> Option<NodeId> {
        let rec = self.events.get(&id)?;
        if !self.pending_visible(rec) || !self.nodes[rec.event.to].life.alive() {
            return None;
        }
        let node = rec.event.to;
        let order_event = WireEvent {
            id: w(id),
            kind: rec.wire_kind,
            name: match (rec.wire_kind, rec.event.written()) {
                (Kind::Disk, Some(written)) => written.to_string(),
                _ => rec.event.name.clone(),
            },
            from: rec.event.from,
            to: node,
            fields: rec.event.fields.clone(),
            payload: rec.payload.clone(),
            parent: rec.event.parent.map(w),
        };
        self.events.get_mut(&id)?.status = Status::Enabled;
        self.gens.insert(id, self.actions);
        self.actions += 1;
        self.stats.orders += 1;
        let s = &mut self.nodes[node];
        s.orders.push(Order {
            seq: s.orders.len() as u64 + 1,
            previous: s.last_enabled.map(w),
            event: order_event,
        });
        s.last_enabled = Some(id);
        s.outstanding.push_back(id);
        if s.parked == Some(id) {
            s.parked = None;
        }
        Some(node)
    }

    /// Whether message `e` travels on a connection (its payload's `conn`) that its receiver's
    /// earlier process held: that connection died with the process, so the message is lost
    /// (the sender learns of it as its reader's disconnect), not handed to the new process,
    /// where no thread would ever read it. A connection first used by other incarnations of
    /// its ends than the sender's current one is a new connection that reuses the name (a
    /// port the kernel handed out again).
    fn on_dead_connection(&mut self, e: &Event, payload: &Value) -> bool {
        let (Some(from), Some(conn)) = (e.from, payload.get("conn").and_then(Value::as_str)) else {
            return false;
        };
        let (a, b) = (from.min(e.to), from.max(e.to));
        let now = (self.nodes[a].incarnation, self.nodes[b].incarnation);
        let first = *self
            .conns
            .entry((a, b, conn.to_string()))
            .and_modify(|seen| {
                let sender_then = if from == a { seen.0 } else { seen.1 };
                if sender_then != self.nodes[from].incarnation {
                    *seen = now;
                }
            })
            .or_insert(now);
        let receiver_then = if e.to == a { first.0 } else { first.1 };
        receiver_then != self.nodes[e.to].incarnation
    }

    /// `node` was crashed (its `nth` crash): drop what was in flight to it.
    pub fn crash(&mut self, node: NodeId, nth: u32) {
        let s = &mut self.nodes[node];
        // A node down since the start stays unstarted: its first process is still incarnation 0.
        if s.life.alive() {
            s.life = Life::Crashed;
        }
        s.outstanding.clear();
        s.parked = None;
        for rec in self.events.values_mut() {
            if rec.event.to == node && rec.status == Status::Pending {
                rec.status = Status::Dropped;
            }
        }
        self.gens.insert(EventId::crash(node, nth), self.actions);
        self.actions += 1;
    }

    /// Drop the messages `node` sent that are still pending: the crash that just happened
    /// lost them before they left the node (see [`crate::RealConfig::crash_loses_outbound`]).
    pub fn lose_outbound(&mut self, node: NodeId) {
        for rec in self.events.values_mut() {
            if rec.event.from == Some(node) && rec.status == Status::Pending {
                rec.status = Status::Dropped;
            }
        }
    }

    /// Tell every live node other than `about` that `cause` (a crash or reboot of `about`)
    /// happened: a client event `name {node: about}` at each, caused by `cause`, so its
    /// identity is the same in every re-run. Systems whose nodes would learn this from their
    /// failure detector or a reconnecting peer ask for it ([`crate::RealConfig::notices`]).
    pub fn notice(&mut self, cause: EventId, name: &str, about: NodeId) {
        let gen = self.gens.get(&cause).copied().unwrap_or(0);
        for to in 0..self.nodes.len() {
            if to == about || !self.nodes[to].life.alive() {
                continue;
            }
            let id = EventId::derive(Some(cause), 0, EventKind::Client, name, None, to);
            let mut fields = Map::new();
            fields.insert("node".into(), Value::from(about));
            let event = Event {
                id,
                kind: EventKind::Client,
                name: name.to_string(),
                from: None,
                to,
                fields,
                parent: Some(cause),
                delay_ms: None,
            };
            self.reports += 1;
            self.events.insert(
                id,
                Record {
                    sort: (gen, 0, to, EventKind::Client, name.to_string(), 0),
                    event,
                    wire_kind: Kind::Client,
                    payload: Value::Null,
                    status: Status::Pending,
                    // A notice travels on no message channel and is no peer-failure timer.
                    channel: None,
                    order: self.reports,
                    peer: None,
                },
            );
        }
    }

    /// `node` is down at the start of this run (a workload's `[faults] down`): it has no
    /// process, what was pending at it (its client requests) is lost, and its first reboot
    /// starts its first process, incarnation 0.
    pub fn down(&mut self, node: NodeId) {
        self.nodes[node].life = Life::Unstarted;
        for rec in self.events.values_mut() {
            if rec.event.to == node && rec.status == Status::Pending {
                rec.status = Status::Dropped;
            }
        }
    }

    /// `node` is being rebooted (its `nth` reboot) as a new incarnation; returns it. A node
    /// down since the start gets its first, 0; its startup events are the reboot's either way,
    /// so their identities are the same in every re-run.
    pub fn reboot(&mut self, node: NodeId, nth: u32) -> u32 {
        let id = EventId::reboot(node, nth);
        let s = &mut self.nodes[node];
        let vars = std::mem::take(&mut s.vars);
        let incarnation = if s.life == Life::Unstarted {
            0
        } else {
            s.incarnation + 1
        };
        *s = NodeState::fresh(incarnation, Some(id));
        s.vars = vars;
        self.gens.insert(id, self.actions);
        self.actions += 1;
        s.incarnation
    }

    pub fn alive(&self, node: NodeId) -> bool {
        self.nodes.get(node).is_some_and(|s| s.life.alive())
    }

    pub fn incarnation(&self, node: NodeId) -> u32 {
        self.nodes.get(node).map_or(0, |s| s.incarnation)
    }

    pub fn pid(&self, node: NodeId) -> Option<u32> {
        self.nodes.get(node).and_then(|s| s.pid)
    }

    /// The process of `node`'s `incarnation` in run `run` ended without flymc crashing it.
    pub fn exited(&mut self, run: u64, node: NodeId, incarnation: u32, status: String) {
        if run != self.run || self.token.is_empty() {
            return;
        }
        if let Some(s) = self.nodes.get_mut(node) {
            if s.life.alive() && s.incarnation == incarnation {
                s.exited = Some(status);
            }
        }
    }

    /// `Ok` when every live node has finished what it was given.
    pub fn quiet(&self) -> Result<(), Unquiet> {
        for (i, s) in self.nodes.iter().enumerate() {
            if let (true, Some(why)) = (s.life.alive(), &s.exited) {
                return Err(Unquiet::Exited(i, why.clone(), s.life == Life::Ready));
            }
        }
        match self.nodes.iter().position(NodeState::busy) {
            Some(i) => Err(Unquiet::Busy(i)),
            None => Ok(()),
        }
    }

    /// What the busy node is doing, for hang reports.
    pub fn busy_with(&self, node: NodeId) -> String {
        let s = &self.nodes[node];
        if !s.life.registered() {
            "never registered with the event server".into()
        } else if s.life != Life::Ready {
            "registered but never reported ready".into()
        } else if let Some(id) = s.outstanding.front() {
            let what = self
                .events
                .get(id)
                .map_or(id.to_string(), |r| r.event.describe());
            format!("never reported done for {what}")
        } else {
            "busy".into()
        }
    }

    /// The global state: every node's last reported variables and the events in flight.
    pub fn snapshot(&self) -> GlobalState {
        let views = self
            .nodes
            .iter()
            .map(|s| NodeView {
                alive: s.life.alive(),
                vars: s.vars.clone(),
            })
            .collect();
        let in_flight: Vec<Event> = self
            .events
            .values()
            .filter(|r| r.status == Status::Pending)
            .map(|r| r.event.clone())
            .collect();
        GlobalState::new(views, &in_flight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reg(st: &mut RunState, node: usize) {
        st.register(&RegisterRequest {
            protocol: PROTOCOL_VERSION,
            node,
            incarnation: st.incarnation(node),
            pid: None,
            pausable: true,
            resumes: true,
            threads: false,
        })
        .unwrap();
    }

    fn done(
        st: &mut RunState,
        node: usize,
        event: Option<EventId>,
        state: Value,
    ) -> Result<DoneReply, ServerError> {
        st.done(&DoneRequest {
            node,
            incarnation: st.incarnation(node),
            event: event.map(w),
            state: state.as_object().unwrap().clone(),
        })
    }

    fn intercept(
        parent: Option<EventId>,
        seq: u32,
        kind: Kind,
        name: &str,
        to: usize,
    ) -> wire::Intercept {
        wire::Intercept {
            parent: parent.map(w),
            seq,
            kind,
            name: name.into(),
            to,
            fields: Map::new(),
            payload: json!("p"),
            channel: None,
            peer: None,
            delay_ms: None,
        }
    }

    /// `node` reports one event.
    fn report(
        st: &mut RunState,
        node: usize,
        event: wire::Intercept,
    ) -> Result<EventId, ServerError> {
        let r = st.intercept(&EventsRequest {
            node,
            incarnation: st.incarnation(node),
            events: vec![event],
        })?;
        Ok(m(r.ids[0]))
    }

    fn send(
        st: &mut RunState,
        node: usize,
        parent: Option<EventId>,
        seq: u32,
        kind: Kind,
        name: &str,
        to: usize,
    ) -> Result<EventId, ServerError> {
        report(st, node, intercept(parent, seq, kind, name, to))
    }

    fn booted(nodes: usize) -> RunState {
        let mut st = RunState::default();
        st.begin("t".into(), nodes, &[]);
        for n in 0..nodes {
            reg(&mut st, n);
        }
        st
    }

    #[test]
    fn a_run_resumed_from_a_pause_goes_on_with_the_same_events_and_token_as_a_new_run() {
        let mut st = booted(2);
        let a = send(&mut st, 0, None, 0, Kind::Message, "a", 1).unwrap();
        assert!(st.ask_pause().is_err(), "nodes still starting up");
        for n in 0..2 {
            done(&mut st, n, None, json!({})).unwrap();
        }
        assert_eq!(st.ask_pause().unwrap(), vec![0, 1]);
        let poll = |node| PollRequest {
            node,
            incarnation: 0,
            after: 0,
            wait_ms: None,
        };
        assert_eq!(st.poll(&poll(1)).unwrap(), (Vec::new(), Some(1)));
        assert!(!st.all_paused());
        for node in 0..2 {
            st.paused(&PausedRequest {
                node,
                incarnation: 0,
                pause: 1,
            })
            .unwrap();
        }
        assert!(st.all_paused());
        let saved = st.save();
        st.end_pause();
        assert_eq!(st.poll(&poll(1)).unwrap(), (Vec::new(), None));
        // The original run goes on...
        st.enable(a).unwrap();
        done(&mut st, 1, Some(a), json!({"got": 1})).unwrap();
        let (run, pending) = (st.run(), st.pending());
        // ...and a copy restored later starts where the pause was, as a run of its own.
        st.resume(&saved);
        assert_eq!(st.run(), run + 1);
        assert_eq!(st.token(), "t");
        assert_eq!(
            st.pending().iter().map(|e| e.id).collect::<Vec<_>>(),
            vec![a]
        );
        assert_ne!(st.pending(), pending);
        assert!(st.quiet().is_ok());
        assert_eq!(st.poll(&poll(1)).unwrap(), (Vec::new(), None));
        assert_eq!(st.enable(a), Some(1));
    }

    #[test]
    fn nodes_going_on_after_a_pause_are_checked_against_their_recorded_states() {
        let mut st = booted(2);
        for n in 0..2 {
            done(&mut st, n, None, json!({"zxid": n})).unwrap();
        }
        let resumed = |st: &mut RunState, node: usize, pause: u64, state: Value| {
            st.resumed(&ResumedRequest {
                node,
                incarnation: 0,
                pause,
                state: state.as_object().unwrap().clone(),
            })
        };
        assert_eq!(
            resumed(&mut st, 0, 1, json!({})).unwrap_err().code,
            "conflict",
            "no pause was asked yet"
        );
        st.ask_pause().unwrap();
        for node in 0..2 {
            st.paused(&PausedRequest {
                node,
                incarnation: 0,
                pause: 1,
            })
            .unwrap();
        }
        let saved = st.save();
        st.end_pause();
        // The originals: both unchanged once both have said so.
        resumed(&mut st, 0, 1, json!({"zxid": 0})).unwrap();
        let check = st.resumed_states(&[0, 1]).unwrap();
        assert_eq!((check.waiting, check.differs), (vec![1], Vec::new()));
        resumed(&mut st, 1, 1, json!({"zxid": 1})).unwrap();
        assert_eq!(st.resumed_states(&[0, 1]).unwrap(), ResumeCheck::default());
        // A copy restored later whose node 1 is not the one snapshotted.
        st.resume(&saved);
        assert_eq!(st.resumed_states(&[0, 1]).unwrap().waiting, vec![0, 1]);
        resumed(&mut st, 0, 1, json!({"zxid": 0})).unwrap();
        resumed(&mut st, 1, 1, json!({"zxid": 0})).unwrap();
        let differs = st.resumed_states(&[0, 1]).unwrap().differs;
        assert_eq!(
            differs,
            vec![Differs {
                node: 1,
                recorded: json!({"zxid": 1}).as_object().unwrap().clone(),
                resumed: json!({"zxid": 0}).as_object().unwrap().clone(),
            }]
        );
    }

    #[test]
    fn a_node_that_cannot_pause_refuses_the_checkpoint() {
        let mut st = RunState::default();
        st.begin("t".into(), 1, &[]);
        st.register(&RegisterRequest {
            protocol: PROTOCOL_VERSION,
            node: 0,
            incarnation: 0,
            pid: None,
            pausable: false,
            resumes: false,
            threads: false,
        })
        .unwrap();
        done(&mut st, 0, None, json!({})).unwrap();
        let why = st.ask_pause().unwrap_err();
        assert!(why.contains("cannot pause"), "{why}");
        assert!(st.all_paused(), "nothing asked");
    }

    #[test]
    fn events_reported_after_their_cause_is_done_are_counted_late_over_the_server_s_life() {
        let mut st = booted(2);
        send(&mut st, 0, None, 0, Kind::Message, "a", 1).unwrap();
        assert_eq!(st.stats.late_events, 0, "reported while starting up");
        done(&mut st, 0, None, json!({})).unwrap();
        // Startup is done and no event is in progress: nothing can have caused this one.
        send(&mut st, 0, None, 1, Kind::Message, "a", 1).unwrap();
        assert_eq!(st.stats.late_events, 1);
        // A retried report of it is not counted again.
        send(&mut st, 0, None, 1, Kind::Message, "a", 1).unwrap();
        assert_eq!(st.stats.late_events, 1);
        // The count survives the next run (a real target takes its own run's share by difference).
        st.begin("t2".into(), 2, &[]);
        assert_eq!(st.stats.late_events, 1);
    }

    #[test]
    fn a_timer_keeps_its_reported_duration_out_of_its_identity_and_the_state() {
        let mut st = booted(1);
        let waiting = |kind, name, delay_ms| wire::Intercept {
            delay_ms,
            ..intercept(None, 0, kind, name, 0)
        };
        let t = report(&mut st, 0, waiting(Kind::Timeout, "poll", Some(400))).unwrap();
        let msg = report(&mut st, 0, waiting(Kind::Message, "a", Some(5))).unwrap();
        assert_eq!(
            t,
            EventId::derive(None, 0, EventKind::Timeout, "poll", None, 0)
        );
        done(&mut st, 0, None, json!({})).unwrap();
        let delay = |id| {
            st.pending()
                .into_iter()
                .find(|e| e.id == id)
                .unwrap()
                .delay_ms
        };
        assert_eq!(delay(t), Some(400));
        assert_eq!(delay(msg), None, "only a timer waits");
        let seen = serde_json::to_string(&st.snapshot()).unwrap();
        assert!(!seen.contains("400"), "{seen}");
    }

    #[test]
    fn ids_are_derived_from_causal_position_and_pending_is_sorted() {
        let mut st = booted(2);
        let b = send(&mut st, 1, None, 0, Kind::Message, "b", 0).unwrap();
        let a = send(&mut st, 0, None, 0, Kind::Message, "a", 1).unwrap();
        assert_eq!(
            a,
            EventId::derive(None, 0, EventKind::Message, "a", Some(0), 1)
        );
        assert_eq!(st.quiet(), Err(Unquiet::Busy(0)));
        done(&mut st, 0, None, json!({"x": 0})).unwrap();
        done(&mut st, 1, None, json!({"x": 0})).unwrap();
        assert_eq!(st.quiet(), Ok(()));
        let p: Vec<EventId> = st.pending().iter().map(|e| e.id).collect();
        assert_eq!(p, vec![a, b], "node order, not arrival order");
        // A retried report gives the same id and no duplicate.
        assert_eq!(send(&mut st, 0, None, 0, Kind::Message, "a", 1).unwrap(), a);
        assert_eq!(st.pending().len(), 2);
    }

    #[test]
    fn enable_orders_chain_previous_and_done_must_follow_them() {
        let mut st = booted(2);
        done(&mut st, 0, None, json!({})).unwrap();
        let a = send(&mut st, 0, None, 0, Kind::Message, "a", 1).unwrap();
        let b = send(&mut st, 0, None, 1, Kind::Message, "a", 1).unwrap();
        done(&mut st, 1, None, json!({})).unwrap();
        assert_eq!(st.enable(a), Some(1));
        assert_eq!(st.enable(a), None, "not pending any more");
        assert_eq!(st.enable(b), Some(1));
        let poll = PollRequest {
            node: 1,
            incarnation: 0,
            after: 0,
            wait_ms: None,
        };
        let (orders, pause) = st.poll(&poll).unwrap();
        assert_eq!(pause, None);
        assert_eq!(orders.len(), 2);
        assert_eq!((orders[0].previous, orders[1].previous), (None, Some(w(a))));
        assert_eq!(orders[1].event.payload, json!("p"));
        let e = done(&mut st, 1, Some(b), json!({})).unwrap_err();
        assert_eq!((e.status, e.code), (409, "conflict"));
        assert!(done(&mut st, 1, Some(a), json!({"n": 1})).unwrap().fresh);
        assert!(
            !done(&mut st, 1, Some(a), json!({"n": 1})).unwrap().fresh,
            "a retry"
        );
        assert_eq!(st.quiet(), Err(Unquiet::Busy(1)));
        done(&mut st, 1, Some(b), json!({"n": 2})).unwrap();
        assert_eq!(st.quiet(), Ok(()));
        assert_eq!(st.snapshot().var(1, "n"), Some(&json!(2)));
        let e = done(&mut st, 1, Some(EventId(7)), json!({})).unwrap_err();
        assert_eq!((e.status, e.code), (404, "unknown-event"));
    }

    #[test]
    fn bad_requests_are_refused_and_change_nothing() {
        let mut st = booted(2);
        let e = send(&mut st, 0, Some(EventId(9)), 0, Kind::Message, "a", 1).unwrap_err();
        assert_eq!(e.code, "unknown-event");
        let e = send(&mut st, 0, None, 0, Kind::Message, "a", 5).unwrap_err();
        assert_eq!(e.code, "unknown-node");
        let e = send(&mut st, 0, None, 0, Kind::Timeout, "t", 1).unwrap_err();
        assert_eq!(e.code, "malformed");
        let e = send(&mut st, 7, None, 0, Kind::Message, "a", 1);
        assert!(e.is_err());
        assert!(st.pending().is_empty());
        let e = st
            .register(&RegisterRequest {
                protocol: 0,
                node: 0,
                incarnation: 0,
                pid: None,
                pausable: false,
                resumes: false,
                threads: false,
            })
            .unwrap_err();
        assert_eq!((e.status, e.code), (426, "protocol-version"));
        assert!(st.check_token(Some("t")).is_ok());
        assert_eq!(st.check_token(Some("u")).unwrap_err().status, 401);
        assert_eq!(st.check_token(None).unwrap_err().status, 401);
        st.end();
        assert_eq!(st.check_token(Some("t")).unwrap_err().status, 401);
    }

    #[test]
    fn crash_drops_inbound_events_and_reboot_starts_a_new_incarnation() {
        let mut st = booted(2);
        done(&mut st, 0, None, json!({"v": 1})).unwrap();
        done(&mut st, 1, None, json!({})).unwrap();
        send(&mut st, 0, None, 0, Kind::Message, "a", 1).unwrap();
        let back = send(&mut st, 1, None, 0, Kind::Message, "b", 0).unwrap();
        st.crash(1, 0);
        assert_eq!(
            st.pending().iter().map(|e| e.id).collect::<Vec<_>>(),
            vec![back]
        );
        let e = send(&mut st, 1, None, 1, Kind::Message, "c", 0).unwrap_err();
        assert_eq!(e.code, "stale");
        assert_eq!(st.quiet(), Ok(()));
        assert!(!st.snapshot().nodes[1].alive);
        let inc = st.reboot(1, 0);
        assert_eq!(inc, 1);
        assert_eq!(st.quiet(), Err(Unquiet::Busy(1)));
        reg(&mut st, 1);
        let t = send(&mut st, 1, None, 0, Kind::Timeout, "tick", 1).unwrap();
        let want = EventId::derive(
            Some(EventId::reboot(1, 0)),
            0,
            EventKind::Timeout,
            "tick",
            None,
            1,
        );
        assert_eq!(t, want, "startup events of a reboot descend from it");
        done(&mut st, 1, None, json!({})).unwrap();
        assert_eq!(st.quiet(), Ok(()));
    }

    /// What lets the backend close a crashed node's held connections to a peer: the peer's
    /// `crashed` notice names the crashed node; an ordinary message names none.
    #[test]
    fn a_crashed_notice_is_news_of_that_crash_and_a_message_is_not() {
        let mut st = booted(3);
        for n in 0..3 {
            done(&mut st, n, None, json!({})).unwrap();
        }
        let m = send(&mut st, 0, None, 0, Kind::Message, "a", 1).unwrap();
        st.crash(2, 0);
        st.notice(EventId::crash(2, 0), "crashed", 2);
        let news: Vec<(NodeId, Option<NodeId>)> = st
            .pending()
            .iter()
            .filter(|e| e.name == "crashed")
            .map(|e| (e.to, st.crash_news(e.id)))
            .collect();
        assert_eq!(news, vec![(0, Some(2)), (1, Some(2))]);
        assert_eq!(st.crash_news(m), None);
    }

    /// ZooKeeper's leader answered FOLLOWERINFO with LEADERINFO after the learner crashed and
    /// rebooted: the packet travels on the dead process's connection, so it is lost; a new
    /// connection of the new process that reuses the name carries messages again.
    #[test]
    fn messages_on_a_connection_of_a_rebooted_receivers_old_process_are_lost() {
        let mut st = booted(2);
        done(&mut st, 0, None, json!({})).unwrap();
        done(&mut st, 1, None, json!({})).unwrap();
        let on = |seq: u32, name: &str, to: usize, conn: &str| {
            let mut i = intercept(None, seq, Kind::Message, name, to);
            i.payload = json!({"conn": conn, "data": name});
            i
        };
        report(&mut st, 1, on(0, "FOLLOWERINFO", 0, "35136")).unwrap();
        let first = report(&mut st, 0, on(0, "LEADERINFO", 1, "35136")).unwrap();
        assert!(st.pending().iter().any(|e| e.id == first));
        st.crash(1, 0);
        st.reboot(1, 0);
        reg(&mut st, 1);
        done(&mut st, 1, None, json!({})).unwrap();
        let lost = report(&mut st, 0, on(1, "LEADERINFO", 1, "35136")).unwrap();
        let fle = report(&mut st, 0, intercept(None, 2, Kind::Message, "vote", 1)).unwrap();
        let pending: Vec<EventId> = st.pending().iter().map(|e| e.id).collect();
        assert!(!pending.contains(&lost), "{pending:?}");
        assert!(
            pending.contains(&fle),
            "messages on no connection still arrive"
        );
        report(&mut st, 1, on(1, "FOLLOWERINFO", 0, "35136")).unwrap();
        let again = report(&mut st, 0, on(2, "LEADERINFO", 1, "35136")).unwrap();
        assert!(st.pending().iter().any(|e| e.id == again));
    }

    #[test]
    fn timers_can_be_cancelled_until_they_fire() {
        let mut st = booted(2);
        let t = send(&mut st, 0, None, 0, Kind::Timeout, "t", 0).unwrap();
        let u = send(&mut st, 0, None, 1, Kind::Timeout, "t", 0).unwrap();
        let m = send(&mut st, 0, None, 0, Kind::Message, "m", 1).unwrap();
        done(&mut st, 0, None, json!({})).unwrap();
        done(&mut st, 1, None, json!({})).unwrap();
        st.enable(u).unwrap();
        let cancel = |st: &mut RunState, ids: Vec<EventId>| {
            st.cancel(&CancelRequest {
                node: 0,
                incarnation: 0,
                ids: ids.into_iter().map(w).collect(),
            })
        };
        let e = cancel(&mut st, vec![m]).unwrap_err();
        assert_eq!(e.code, "conflict", "a message is not a timer");
        let e = cancel(&mut st, vec![EventId(3)]).unwrap_err();
        assert_eq!(e.code, "unknown-event");
        let r = cancel(&mut st, vec![t, u]).unwrap();
        assert_eq!(r.cancelled, vec![w(t)], "u already fired");
        assert_eq!(
            st.pending().iter().map(|e| e.id).collect::<Vec<_>>(),
            vec![m]
        );
    }

    #[test]
    fn a_node_parked_at_a_crash_point_offers_only_that_write() {
        let mut st = booted(2);
        done(&mut st, 0, None, json!({})).unwrap();
        done(&mut st, 1, None, json!({})).unwrap();
        let m = send(&mut st, 1, None, 0, Kind::Message, "m", 0).unwrap();
        let t = send(&mut st, 0, None, 0, Kind::Timeout, "t", 0).unwrap();
        st.enable(t).unwrap();
        let d = send(&mut st, 0, Some(t), 0, Kind::Disk, "log", 0).unwrap();
        done(&mut st, 0, Some(t), json!({})).unwrap();
        let p: Vec<EventId> = st.pending().iter().map(|e| e.id).collect();
        assert_eq!(p, vec![d]);
        assert_eq!(st.pending()[0].name, "disk:log");
        assert_eq!(
            st.snapshot().network.len(),
            2,
            "the held message is still in flight"
        );
        st.enable(d).unwrap();
        assert_eq!(
            st.poll(&PollRequest {
                node: 0,
                incarnation: 0,
                after: 1,
                wait_ms: None
            })
            .unwrap()
            .0[0]
                .event
                .name,
            "log"
        );
        done(&mut st, 0, Some(d), json!({})).unwrap();
        assert_eq!(
            st.pending().iter().map(|e| e.id).collect::<Vec<_>>(),
            vec![m]
        );
    }

    #[test]
    fn a_node_with_threads_offers_its_other_events_while_parked_in_either_order() {
        let mut st = booted(2);
        st.register(&RegisterRequest {
            protocol: PROTOCOL_VERSION,
            node: 0,
            incarnation: 0,
            pid: None,
            pausable: false,
            resumes: false,
            threads: true,
        })
        .unwrap();
        done(&mut st, 0, None, json!({})).unwrap();
        done(&mut st, 1, None, json!({})).unwrap();
        let m = send(&mut st, 1, None, 0, Kind::Message, "m", 0).unwrap();
        let t = send(&mut st, 0, None, 0, Kind::Timeout, "t", 0).unwrap();
        st.enable(t).unwrap();
        let d = send(&mut st, 0, Some(t), 0, Kind::Disk, "log", 0).unwrap();
        done(&mut st, 0, Some(t), json!({})).unwrap();
        let mut p: Vec<EventId> = st.pending().iter().map(|e| e.id).collect();
        p.sort();
        let mut both = vec![m, d];
        both.sort();
        assert_eq!(
            p, both,
            "one thread waits to write, another may receive first"
        );
        // The message first: its order follows the timer; the write's follows the message.
        st.enable(m).unwrap();
        st.enable(d).unwrap();
        let orders = st
            .poll(&PollRequest {
                node: 0,
                incarnation: 0,
                after: 1,
                wait_ms: None,
            })
            .unwrap()
            .0;
        let names: Vec<&str> = orders.iter().map(|o| o.event.name.as_str()).collect();
        assert_eq!(names, ["m", "log"]);
        assert_eq!(orders[1].previous, Some(w(m)));
    }
}
