//! The Rust hook: a node program links this crate to hand every inter-node message, timer and
//! crash-point disk write to flymc's event server, and to process an event only when flymc
//! enables it. The protocol is in `hooks/PROTOCOL.md`; [`protocol`] has its wire types.
//!
//! A node's life under flymc:
//!
//! ```no_run
//! use flymc_hook::{Hook, Kind};
//! use serde_json::json;
//!
//! # async fn node() -> Result<(), flymc_hook::HookError> {
//! let hook = Hook::from_env().await?; // FLYMC_SERVER, FLYMC_TOKEN, FLYMC_NODE, ...
//! let mut count = 0u64;
//! // Startup: arm timers, send first messages, then report the initial state.
//! hook.timer("tick", json!({})).await?;
//! hook.ready(&json!({ "count": count })).await?;
//! loop {
//!     // The next event flymc enabled for this node, in the order it enabled them.
//!     let d = hook.next().await?;
//!     match (d.kind, d.name.as_str()) {
//!         (Kind::Message, "ping") => {
//!             count += 1;
//!             // Sends are intercepted: they reach `to` only when flymc enables them.
//!             hook.send(d.from.unwrap(), "pong", json!({ "n": count }), json!(null)).await?;
//!         }
//!         _ => {}
//!     }
//!     // Everything this event caused has been reported; this is the state it led to.
//!     hook.done(&json!({ "count": count })).await?;
//! }
//! # }
//! ```
//!
//! Rules that keep paths replayable: report every event an enabled event causes *before*
//! calling [`Hook::done`] for it; never let wall-clock time decide anything (timers are
//! [`Hook::timer`] events flymc enables); report in [`Hook::done`] every variable that decides
//! the node's future behaviour.
//!
//! What the node caught: a panic of any of its threads (the hook installs a panic hook when it
//! connects, chaining the one before) and an error a handler hands to [`Hook::error`] or
//! [`Hook::failed`] (or the free [`error`] / [`failed`], for code without a `Hook`) become
//! records `{type, message, where, frames}` that every later state reports as the node
//! variable `exceptions`; flymc's `no-exception` property fires on those no allow pattern covers.
//!
//! Watchdog: when the event server goes away (flymc exited or was killed) or says this node is
//! stale, the hook ends the process with exit code [`EXIT_SERVER_GONE`], so no node outlives
//! its checker (unless [`HookConfig::exit_when_server_gone`] is off).

mod caught;
mod client;
mod order;
pub mod protocol;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::Notify;

pub use caught::{error, failed, EXCEPTIONS_VAR};
use client::{Client, Lane};
use order::Local;
use protocol::{
    env, CancelReply, CancelRequest, DoneReply, DoneRequest, EventsReply, EventsRequest, Intercept,
    PausedReply, PausedRequest, PollReply, PollRequest, RegisterReply, RegisterRequest,
    ResumedReply, ResumedRequest,
};
pub use protocol::{EventId, Kind, PROTOCOL_VERSION};

/// Exit code of a node process whose event server went away.
pub const EXIT_SERVER_GONE: i32 = 75;

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("environment variable {0}")]
    Env(String),
    #[error("cannot reach the flymc event server at {0}")]
    Connect(String),
    #[error("HTTP exchange with the flymc event server failed: {0}")]
    Http(String),
    #[error("the flymc event server rejected the request ({status} {code}): {reason}")]
    Rejected {
        status: u16,
        code: String,
        reason: String,
    },
    #[error("the flymc event server answered something unexpected: {0}")]
    Protocol(String),
    #[error("hook misuse: {0}")]
    Usage(String),
    #[error("the hook stopped: {0}")]
    Closed(String),
}

/// Where the server is and who this node is; usually from the environment flymc sets.
#[derive(Clone, Debug)]
pub struct HookConfig {
    /// `host:port` of the event server.
    pub server: String,
    pub token: String,
    pub node: usize,
    pub incarnation: u32,
    /// The address this node may listen on, if flymc gave one.
    pub addr: Option<SocketAddr>,
    /// Every node's address, in node order (empty if not given).
    pub peers: Vec<SocketAddr>,
    /// The node's data directory (survives crash and reboot within a run), if given.
    pub data_dir: Option<PathBuf>,
    /// End the process when the server goes away (the default; see the crate docs).
    pub exit_when_server_gone: bool,
    /// The named pipe to wait on after pausing for a checkpoint (`FLYMC_RESUME`); without it
    /// the hook does not offer to pause.
    pub resume: Option<PathBuf>,
}

impl HookConfig {
    /// Read `FLYMC_SERVER`, `FLYMC_TOKEN`, `FLYMC_NODE`, `FLYMC_INCARNATION` (default 0), and
    /// the optional `FLYMC_NODE_ADDR`, `FLYMC_PEERS`, `FLYMC_DATA_DIR`.
    pub fn from_env() -> Result<HookConfig, HookError> {
        let var = |k: &str| {
            std::env::var(k)
                .map_err(|_| HookError::Env(format!("{k} is not set: start this node under flymc")))
        };
        let parse_addr = |k: &str, v: &str| {
            v.trim()
                .parse::<SocketAddr>()
                .map_err(|_| HookError::Env(format!("{k}: `{v}` is not ip:port")))
        };
        let node = var(env::NODE)?;
        let node = node
            .parse()
            .map_err(|_| HookError::Env(format!("{}: `{node}` is not a node index", env::NODE)))?;
        let incarnation = match std::env::var(env::INCARNATION) {
            Ok(v) => v.parse().map_err(|_| {
                HookError::Env(format!("{}: `{v}` is not a number", env::INCARNATION))
            })?,
            Err(_) => 0,
        };
        let addr = match std::env::var(env::NODE_ADDR) {
            Ok(v) => Some(parse_addr(env::NODE_ADDR, &v)?),
            Err(_) => None,
        };
        let peers = match std::env::var(env::PEERS) {
            Ok(v) if !v.trim().is_empty() => v
                .split(',')
                .map(|p| parse_addr(env::PEERS, p))
                .collect::<Result<_, _>>()?,
            _ => Vec::new(),
        };
        Ok(HookConfig {
            server: var(env::SERVER)?,
            token: var(env::TOKEN)?,
            node,
            incarnation,
            addr,
            peers,
            data_dir: std::env::var_os(env::DATA_DIR).map(PathBuf::from),
            exit_when_server_gone: true,
            resume: std::env::var_os(env::RESUME).map(PathBuf::from),
        })
    }
}

/// An event flymc enabled at this node.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    pub id: EventId,
    pub kind: Kind,
    /// Message type or timer name.
    pub name: String,
    /// The sender of a message (`None` for timers and client requests).
    pub from: Option<usize>,
    pub fields: Map<String, Value>,
    /// The payload the sender reported, verbatim.
    pub payload: Value,
}

impl Delivery {
    /// Decode the payload.
    pub fn payload_as<T: DeserializeOwned>(&self) -> Result<T, HookError> {
        serde_json::from_value(self.payload.clone())
            .map_err(|e| HookError::Protocol(format!("payload of {} {}: {e}", self.name, self.id)))
    }

    /// An integer field, if present.
    pub fn field_i64(&self, name: &str) -> Option<i64> {
        self.fields.get(name).and_then(Value::as_i64)
    }
}

/// An event to report: a message, a timer or a crash-point disk write.
#[derive(Clone, Debug)]
pub struct Outgoing {
    kind: Kind,
    to: Option<usize>,
    name: String,
    fields: Map<String, Value>,
    payload: Value,
    parent: Option<Option<EventId>>,
}

impl Outgoing {
    /// A message to node `to`.
    pub fn message(to: usize, name: &str) -> Outgoing {
        Outgoing {
            kind: Kind::Message,
            to: Some(to),
            name: name.into(),
            fields: Map::new(),
            payload: Value::Null,
            parent: None,
        }
    }

    /// A timer of this node.
    pub fn timer(name: &str) -> Outgoing {
        Outgoing {
            kind: Kind::Timeout,
            to: None,
            ..Outgoing::message(0, name)
        }
    }

    /// A crash-point disk write of this node (see [`Hook::crash_point`]).
    pub fn disk(name: &str) -> Outgoing {
        Outgoing {
            kind: Kind::Disk,
            to: None,
            ..Outgoing::message(0, name)
        }
    }

    /// Set one field.
    pub fn field(mut self, name: &str, value: impl Into<Value>) -> Outgoing {
        self.fields.insert(name.into(), value.into());
        self
    }

    /// Set the fields from a JSON object (`null` for none).
    pub fn fields(mut self, fields: Value) -> Result<Outgoing, HookError> {
        self.fields = object(fields, "fields")?;
        Ok(self)
    }

    pub fn payload(mut self, payload: Value) -> Outgoing {
        self.payload = payload;
        self
    }

    /// Name the parent explicitly (default: the event in progress, else the last one done,
    /// else startup).
    pub fn parent(mut self, parent: Option<EventId>) -> Outgoing {
        self.parent = Some(parent);
        self
    }
}

fn object(v: Value, what: &str) -> Result<Map<String, Value>, HookError> {
    match v {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(Map::new()),
        other => Err(HookError::Usage(format!(
            "{what} must be a JSON object, not {other}"
        ))),
    }
}

fn state_map(state: &impl Serialize) -> Result<Map<String, Value>, HookError> {
    let v = serde_json::to_value(state)
        .map_err(|e| HookError::Usage(format!("cannot serialise the node state: {e}")))?;
    object(v, "the node state")
}

struct Inner {
    cfg: HookConfig,
    nodes: usize,
    client: Arc<Client>,
    local: Mutex<Local>,
    changed: Notify,
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Local> {
        self.local.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A connection of one node to the event server. Cheap to clone; all clones share one state.
#[derive(Clone)]
pub struct Hook {
    inner: Arc<Inner>,
}

impl Hook {
    /// [`HookConfig::from_env`] then [`Hook::connect`].
    pub async fn from_env() -> Result<Hook, HookError> {
        Hook::connect(HookConfig::from_env()?).await
    }

    /// Register with the server and start receiving enable orders. Must run inside a tokio
    /// runtime.
    pub async fn connect(cfg: HookConfig) -> Result<Hook, HookError> {
        caught::install_panic_hook();
        let client = Arc::new(Client::new(cfg.server.clone(), cfg.token.clone()));
        let reply: RegisterReply = client
            .post(
                Lane::Report,
                "register",
                &RegisterRequest {
                    protocol: PROTOCOL_VERSION,
                    node: cfg.node,
                    incarnation: cfg.incarnation,
                    pid: Some(std::process::id()),
                    pausable: cfg.resume.is_some(),
                    resumes: cfg.resume.is_some(),
                    threads: false,
                },
            )
            .await?;
        let inner = Arc::new(Inner {
            nodes: reply.nodes,
            cfg,
            client,
            local: Mutex::new(Local::default()),
            changed: Notify::new(),
        });
        tokio::spawn(poll_loop(Arc::downgrade(&inner), inner.client.clone()));
        Ok(Hook { inner })
    }

    pub fn node(&self) -> usize {
        self.inner.cfg.node
    }

    /// How many nodes the cluster has.
    pub fn nodes(&self) -> usize {
        self.inner.nodes
    }

    pub fn incarnation(&self) -> u32 {
        self.inner.cfg.incarnation
    }

    pub fn config(&self) -> &HookConfig {
        &self.inner.cfg
    }

    /// The enabled event being processed, if any.
    pub fn current(&self) -> Option<EventId> {
        self.inner.lock().current
    }

    /// How many report or cancel requests are on their way to the server. A node that decides
    /// by itself when an enabled event's processing is over (all its tasks idle) must also wait
    /// for this to be 0: a task blocked on the network may still be reporting what it caused.
    pub fn reports_in_flight(&self) -> usize {
        self.inner.lock().outstanding
    }

    /// Report events (one request); returns their identities. The parent of each is the event
    /// in progress unless set with [`Outgoing::parent`].
    pub async fn report_all(&self, items: Vec<Outgoing>) -> Result<Vec<EventId>, HookError> {
        let node = self.node();
        let events: Vec<Intercept> = {
            let mut l = self.inner.lock();
            if let Some(f) = &l.fatal {
                return Err(HookError::Closed(f.clone()));
            }
            let default_parent = l.default_parent();
            let events = items
                .into_iter()
                .map(|o| {
                    let parent = o.parent.unwrap_or(default_parent);
                    let to = o.to.unwrap_or(node);
                    Intercept {
                        seq: l.next_seq(parent, o.kind, &o.name, to),
                        parent,
                        kind: o.kind,
                        name: o.name,
                        to,
                        fields: o.fields,
                        payload: o.payload,
                        channel: None,
                        peer: None,
                        delay_ms: None,
                    }
                })
                .collect();
            l.outstanding += 1;
            events
        };
        let n = events.len();
        let res: Result<EventsReply, HookError> = self
            .inner
            .client
            .post(
                Lane::Report,
                "events",
                &EventsRequest {
                    node,
                    incarnation: self.incarnation(),
                    events,
                },
            )
            .await;
        self.inner.lock().outstanding -= 1;
        self.inner.changed.notify_waiters();
        let ids = res?.ids;
        if ids.len() != n {
            return Err(HookError::Protocol(format!(
                "{} ids for {n} events",
                ids.len()
            )));
        }
        Ok(ids)
    }

    /// Report one event.
    pub async fn report(&self, item: Outgoing) -> Result<EventId, HookError> {
        Ok(self.report_all(vec![item]).await?[0])
    }

    /// Send message `name` to node `to`: it is delivered when flymc enables it. `fields` (a JSON
    /// object or null) are what guards and the global state see; `payload` is handed to the
    /// receiver verbatim.
    pub async fn send(
        &self,
        to: usize,
        name: &str,
        fields: Value,
        payload: Value,
    ) -> Result<EventId, HookError> {
        self.report(Outgoing::message(to, name).fields(fields)?.payload(payload))
            .await
    }

    /// Arm timer `name` of this node: it fires (is delivered by [`Hook::next`]) when flymc
    /// enables it, never by wall-clock time.
    pub async fn timer(&self, name: &str, fields: Value) -> Result<EventId, HookError> {
        self.report(Outgoing::timer(name).fields(fields)?).await
    }

    /// Disarm timer `id` (from [`Hook::timer`]). `Ok(false)` when it already fired: its
    /// delivery is on its way and the node should ignore it.
    pub async fn cancel(&self, id: EventId) -> Result<bool, HookError> {
        self.inner.lock().outstanding += 1;
        let res: Result<CancelReply, HookError> = self
            .inner
            .client
            .post(
                Lane::Report,
                "cancel",
                &CancelRequest {
                    node: self.node(),
                    incarnation: self.incarnation(),
                    ids: vec![id],
                },
            )
            .await;
        self.inner.lock().outstanding -= 1;
        self.inner.changed.notify_waiters();
        Ok(res?.cancelled.contains(&id))
    }

    /// A disk write that is a crash point. Reports it, reports `state` as the state reached so
    /// far (done for the event in progress, or startup), and returns once flymc enables the
    /// write; flymc may crash the node instead, and then this never returns. After it returns,
    /// the write is the event in progress: finish with [`Hook::done`] as usual. Only while
    /// processing an enabled event or during startup.
    pub async fn crash_point(
        &self,
        name: &str,
        fields: Value,
        state: &impl Serialize,
    ) -> Result<(), HookError> {
        let id = self.report(Outgoing::disk(name).fields(fields)?).await?;
        self.inner.lock().await_crash_point(id);
        self.finish(state_map(state)?).await?;
        self.wait(|l| l.take_crash_point(id).map(|_| ())).await
    }

    /// Startup is over: report the initial state. Events are delivered only after this.
    pub async fn ready(&self, state: &impl Serialize) -> Result<(), HookError> {
        if self.inner.lock().ready {
            return Err(HookError::Usage("ready() called twice".into()));
        }
        self.finish(state_map(state)?).await
    }

    /// The next event flymc enabled for this node. Returns only once the event enabled before
    /// it here is done (local ordering), so a node may call it from several tasks.
    pub async fn next(&self) -> Result<Delivery, HookError> {
        if !self.inner.lock().ready {
            return Err(HookError::Usage("next() before ready()".into()));
        }
        let o = self.wait(|l| l.take_delivery()).await?;
        let e = o.event;
        Ok(Delivery {
            id: e.id,
            kind: e.kind,
            name: e.name,
            from: e.from,
            fields: e.fields,
            payload: e.payload,
        })
    }

    /// The event in progress is processed and everything it caused is reported: report the
    /// state it led to.
    pub async fn done(&self, state: &impl Serialize) -> Result<(), HookError> {
        if !self.inner.lock().ready {
            return Err(HookError::Usage(
                "done() before ready(): report startup with ready()".into(),
            ));
        }
        self.finish(state_map(state)?).await
    }

    /// A handler met an error it does not return (it logs it, or the request is lost): record
    /// it as kind `kind` with `message`, where this is called. The next reported state has it
    /// in `exceptions`.
    #[track_caller]
    pub fn error(&self, kind: &str, message: impl std::fmt::Display) {
        caught::error(kind, message);
    }

    /// Like [`Hook::error`] for an error value: its type (without generic parameters) is the
    /// kind, its message with its sources the message.
    #[track_caller]
    pub fn failed<E: std::error::Error + ?Sized>(&self, err: &E) {
        caught::failed(err);
    }

    async fn finish(&self, mut state: Map<String, Value>) -> Result<(), HookError> {
        caught::add_to(&mut state);
        self.wait(|l| (l.outstanding == 0).then_some(())).await?;
        let event = self
            .inner
            .lock()
            .finishing()
            .map_err(|e| HookError::Usage(e.into()))?;
        let _: DoneReply = self
            .inner
            .client
            .post(
                Lane::Report,
                "done",
                &DoneRequest {
                    node: self.node(),
                    incarnation: self.incarnation(),
                    event,
                    state: state.clone(),
                },
            )
            .await?;
        let mut l = self.inner.lock();
        l.finished(event);
        l.reported = state;
        drop(l);
        self.inner.changed.notify_waiters();
        Ok(())
    }

    /// Wait until `take` yields something (or the hook stopped).
    async fn wait<T>(&self, mut take: impl FnMut(&mut Local) -> Option<T>) -> Result<T, HookError> {
        loop {
            let notified = self.inner.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut l = self.inner.lock();
                if let Some(t) = take(&mut l) {
                    return Ok(t);
                }
                if let Some(f) = &l.fatal {
                    return Err(HookError::Closed(f.clone()));
                }
            }
            notified.await;
        }
    }
}

/// A checkpoint (PROTOCOL.md, pause): say so, close every connection to the server while the
/// process is snapshotted, and go on when flymc writes to the resume pipe — in this process and
/// in every copy restored from the snapshot, each on connections of its own.
async fn pause(
    inner: &Inner,
    client: &Client,
    n: u64,
    pipe: &std::path::Path,
) -> Result<(), HookError> {
    let (node, incarnation) = (inner.cfg.node, inner.cfg.incarnation);
    let req = PausedRequest {
        node,
        incarnation,
        pause: n,
    };
    let _: PausedReply = client.post(Lane::Report, "paused", &req).await?;
    client.disconnect().await;
    let pipe = pipe.to_path_buf();
    // open() blocks until flymc opens the pipe for writing; then read to its end.
    tokio::task::spawn_blocking(move || std::fs::read(&pipe))
        .await
        .map_err(|e| HookError::Usage(format!("waiting to resume: {e}")))?
        .map_err(|e| HookError::Usage(format!("cannot read the resume pipe: {e}")))?;
    // Going on (this process, or a copy restored from its snapshot): say in which state, for
    // flymc to check against the one recorded before the pause.
    let state = inner.lock().reported.clone();
    let req = ResumedRequest {
        node,
        incarnation,
        pause: n,
        state,
    };
    let _: ResumedReply = client.post(Lane::Report, "resumed", &req).await?;
    Ok(())
}

/// Long-poll for enable orders until the server goes away.
async fn poll_loop(inner: Weak<Inner>, client: Arc<Client>) {
    let Some((node, incarnation, exit, resume)) = inner.upgrade().map(|i| {
        (
            i.cfg.node,
            i.cfg.incarnation,
            i.cfg.exit_when_server_gone,
            i.cfg.resume.clone(),
        )
    }) else {
        return;
    };
    let mut after = 0;
    loop {
        let req = PollRequest {
            node,
            incarnation,
            after,
            wait_ms: Some(25_000),
        };
        let res: Result<PollReply, HookError> = client.post(Lane::Poll, "poll", &req).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let res = match res {
            Ok(reply) => {
                {
                    let mut l = inner.lock();
                    l.push(reply.orders);
                    after = l.after;
                }
                match (reply.pause, &resume) {
                    (Some(n), Some(pipe)) => pause(&inner, &client, n, pipe).await,
                    _ => Ok(()),
                }
            }
            Err(e) => Err(e),
        };
        match res {
            Ok(()) => {}
            Err(e) => {
                if exit {
                    eprintln!("flymc-hook: node n{node}: {e}; exiting");
                    std::process::exit(EXIT_SERVER_GONE);
                }
                inner.lock().fatal = Some(e.to_string());
                inner.changed.notify_waiters();
                return;
            }
        }
        inner.changed.notify_waiters();
    }
}
