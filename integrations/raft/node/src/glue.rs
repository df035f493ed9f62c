//! What both Raft node programs share: the RPC bridge over flymc's hook, the election timer
//! and the crash and reboot notices as flymc events, client writes, the state every node
//! reports, and the idle detection that tells when an enabled event's processing is over.
//! (Timer rules and state variables: see the `flymc-raft` crate's documentation; the types
//! both sides share are `flymc-raft-view`'s.)
//!
//! Idle detection: a Raft library works in background tasks (its core loop, replication
//! streams, the state machine worker), so "the handler returned" is not "the event is
//! processed". Each node runs on one current-thread tokio runtime whose `on_thread_park`
//! callback fires exactly when no task can run; nothing in the node waits on the wall clock
//! (the libraries' clocks are under the glue's control) and no blocking pool is used, so at
//! such a moment every task waits for a message, a reply or an order from flymc. If no hook
//! report is in flight then either, nothing more will happen until flymc enables something:
//! the event is processed.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};

use flymc_hook::{Delivery, EventId, Hook, HookError, Kind};
use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::{oneshot, Notify};

/// Command-line arguments of a node program.
pub struct Args {
    /// How often this node's election timer may fire per incarnation.
    pub elections: u32,
    /// Nodes whose election timer is armed at the start of a run.
    pub election_timers: Vec<usize>,
    /// How often a leader's heartbeat timer may fire per incarnation (0: it has none).
    pub heartbeats: u32,
}

fn args(program: &str) -> Result<Args, String> {
    let mut a = Args {
        elections: 2,
        election_timers: Vec::new(),
        heartbeats: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let value = it.next();
        let number = |what: &str| -> Result<u64, String> {
            value
                .as_deref()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{program}: {what} needs a number"))
        };
        match arg.as_str() {
            // The workload's [params] as JSON, as a system file passes them (`{params}`).
            "--params" => {
                let json = value.ok_or(format!("{program}: --params needs JSON"))?;
                let p: flymc_raft_view::Params =
                    serde_json::from_str(&json).map_err(|e| format!("{program}: --params: {e}"))?;
                let nodes: usize = std::env::var("FLYMC_NODES")
                    .ok()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                a.elections = p.elections;
                a.heartbeats = p.heartbeats;
                a.election_timers = p.election_timers.unwrap_or_else(|| (0..nodes).collect());
            }
            "--elections" => a.elections = number("--elections")? as u32,
            "--election-timer" => a.election_timers.push(number("--election-timer")? as usize),
            "--heartbeats" => a.heartbeats = number("--heartbeats")? as u32,
            other => return Err(format!("{program}: unknown argument `{other}`")),
        }
    }
    Ok(a)
}

/// Logs to stderr (flymc puts it in the node's log file), `warn` unless `RUST_LOG` says more.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

// The runtime's random numbers must be seeded (below), which tokio only allows with
// `--cfg tokio_unstable`; the workspace's .cargo/config.toml sets it.
#[cfg(not(tokio_unstable))]
compile_error!(
    "the Raft node programs need `--cfg tokio_unstable` (set in .cargo/config.toml; a RUSTFLAGS \
     environment variable replaces it: add `--cfg tokio_unstable` there)"
);

/// The node's runtime and its idle signal. `paused`: start with tokio's clock paused.
///
/// Its random numbers come from a fixed seed: `tokio::select!` (which the Raft libraries use in
/// their core loops and replication streams) polls its branches from a random start, so with
/// two branches ready the branch taken, and with it the messages sent, would differ between two
/// runs of the same path.
fn runtime(paused: bool) -> std::io::Result<(tokio::runtime::Runtime, Arc<Notify>)> {
    let idle = Arc::new(Notify::new());
    let on_park = idle.clone();
    let mut b = tokio::runtime::Builder::new_current_thread();
    b.enable_all()
        .rng_seed(tokio::runtime::RngSeed::from_bytes(b"flymc"))
        .on_thread_park(move || on_park.notify_waiters());
    if paused {
        b.start_paused(true);
    }
    Ok((b.build()?, idle))
}

/// Wait until every task of the node is idle and no hook report is in flight.
pub async fn settle(hook: &Hook, idle: &Notify) {
    loop {
        let parked = idle.notified();
        tokio::pin!(parked);
        parked.as_mut().enable();
        parked.await;
        if hook.reports_in_flight() == 0 {
            return;
        }
    }
}

/// Why an RPC got no answer.
#[derive(Debug)]
pub struct RpcFailed(pub String);

impl std::fmt::Display for RpcFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RpcFailed {}

/// Requests to peers as flymc messages, their replies as flymc messages back.
///
/// A request `NAME` goes out as message `NAME`; the receiver answers with message
/// `NAME-reply` whose payload names the request's event id, which wakes the caller. A call to a
/// peer flymc told crashed or rebooted fails (its answer was lost with the old incarnation).
pub struct Rpc {
    hook: Hook,
    waiting: Mutex<HashMap<EventId, (usize, oneshot::Sender<Value>)>>,
}

impl Rpc {
    pub fn new(hook: Hook) -> Arc<Rpc> {
        Arc::new(Rpc {
            hook,
            waiting: Mutex::new(HashMap::new()),
        })
    }

    fn waiting(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<EventId, (usize, oneshot::Sender<Value>)>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub async fn call(
        &self,
        to: usize,
        name: &str,
        fields: Value,
        payload: &impl Serialize,
    ) -> Result<Value, RpcFailed> {
        let payload =
            serde_json::to_value(payload).map_err(|e| RpcFailed(format!("{name}: {e}")))?;
        let id = self
            .hook
            .send(to, name, fields, payload)
            .await
            .map_err(|e| RpcFailed(format!("{name} to n{to}: {e}")))?;
        let (tx, rx) = oneshot::channel();
        // The reply can only come with a later event, so registering now is in time.
        self.waiting().insert(id, (to, tx));
        rx.await
            .map_err(|_| RpcFailed(format!("{name} to n{to}: the peer crashed or rebooted")))
    }

    /// Hand a reply to its caller; false when nobody waits for it any more.
    fn reply(&self, re: EventId, body: Value) -> bool {
        match self.waiting().remove(&re) {
            Some((_, tx)) => tx.send(body).is_ok(),
            None => false,
        }
    }

    /// Fail every call to `peer`.
    fn fail_to(&self, peer: usize) {
        self.waiting().retain(|_, (to, _)| *to != peer);
    }
}

// What a node reports is what flymc's Raft properties read: one definition for both sides.
pub use flymc_raft_view::{Entry, NodeView as Observed, Role};

/// Serve one RPC: decode the request the hook delivered, run it on the library, encode the
/// reply (shared by every library's `request`).
pub async fn call<Req, Resp, E, F>(
    name: &str,
    body: Value,
    run: impl FnOnce(Req) -> F,
) -> Result<Value, String>
where
    Req: serde::de::DeserializeOwned,
    Resp: Serialize,
    E: std::fmt::Display,
    F: Future<Output = Result<Resp, E>>,
{
    let req =
        serde_json::from_value(body).map_err(|e| format!("undecodable {name} request: {e}"))?;
    let resp = run(req).await.map_err(|e| e.to_string())?;
    serde_json::to_value(resp).map_err(|e| e.to_string())
}

/// One Raft library behind the glue.
pub trait RaftLib {
    fn observe(&self) -> Observed;
    /// Handle request `name` (`vote`, `append`, `snapshot`) from a peer; the reply's body.
    fn request(&self, name: &str, body: Value) -> impl Future<Output = Result<Value, String>>;
    /// The election timeout fired (the glue checked the node needs an election).
    fn elect(&self) -> impl Future<Output = ()>;
    /// Send a heartbeat to every follower now (only called at a leader).
    fn heartbeat(&self) -> impl Future<Output = ()>;
    /// Propose a client write (only called at a leader; the outcome comes later).
    fn propose(&self, value: u64);
    /// A new event is delivered: time passes (as much as flymc likes, so leases run out).
    fn time_passes(&self) -> impl Future<Output = ()>;
}

/// Arm timer `name` (held in `slot`) when `want`, cancel it when not. A cancelled timer that
/// already fired is on its way and finds nothing to do.
async fn arm(
    hook: &Hook,
    slot: &mut Option<EventId>,
    want: bool,
    name: &str,
) -> Result<(), HookError> {
    match (want, *slot) {
        (true, None) => *slot = Some(hook.timer(name, json!({})).await?),
        (false, Some(id)) => {
            hook.cancel(id).await?;
            *slot = None;
        }
        _ => {}
    }
    Ok(())
}

/// The glue's own state: timers, notices, queued client writes.
pub struct Driver<R> {
    hook: Hook,
    idle: Arc<Notify>,
    rpc: Arc<Rpc>,
    raft: R,
    me: usize,
    elections_left: u32,
    eligible: bool,
    elect: Option<EventId>,
    /// Whether the workload gives leaders a heartbeat timer at all (its variables are
    /// reported only then).
    beats: bool,
    heartbeats_left: u32,
    beat: Option<EventId>,
    down: BTreeSet<usize>,
    /// Per peer: crash and reboot notices received. flymc may deliver a crash notice after
    /// the reboot notice that follows it (they are two events), so a peer is down when it has
    /// more crash notices than reboot notices, whatever their order.
    notices: HashMap<usize, (u32, u32)>,
    queued: Vec<u64>,
}

impl<R: RaftLib> Driver<R> {
    pub fn new(hook: Hook, idle: Arc<Notify>, rpc: Arc<Rpc>, raft: R, args: &Args) -> Driver<R> {
        let me = hook.node();
        // A rebooted node has lost its leader: its election timer runs as after a crash notice.
        let eligible = args.election_timers.contains(&me) || hook.incarnation() > 0;
        Driver {
            hook,
            idle,
            rpc,
            raft,
            me,
            elections_left: args.elections,
            eligible,
            elect: None,
            beats: args.heartbeats > 0,
            heartbeats_left: args.heartbeats,
            beat: None,
            down: BTreeSet::new(),
            notices: HashMap::new(),
            queued: Vec::new(),
        }
    }

    fn live(&self, n: usize) -> bool {
        !self.down.contains(&n)
    }

    /// Not leading, no live leader known, no vote given in this term to another live node.
    fn needs_election(&self, o: &Observed) -> bool {
        o.role != Role::Leader
            && !o.leader.is_some_and(|l| l != self.me && self.live(l))
            && !o.voted_for.is_some_and(|v| v != self.me && self.live(v))
    }

    fn state(&self, o: &Observed) -> Value {
        let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert("elect".into(), json!(self.elect.is_some()));
            m.insert("elections_left".into(), json!(self.elections_left));
            m.insert("eligible".into(), json!(self.eligible));
            m.insert("down".into(), json!(self.down));
            m.insert("queued".into(), json!(self.queued));
            if self.beats {
                m.insert("beat".into(), json!(self.beat.is_some()));
                m.insert("heartbeats_left".into(), json!(self.heartbeats_left));
            }
        }
        v
    }

    /// Start-up is over (the library is running on its persisted state).
    pub async fn run(mut self) -> Result<(), HookError> {
        settle(&self.hook, &self.idle).await;
        let o = self.after().await?;
        self.hook.ready(&self.state(&o)).await?;
        loop {
            let d = self.hook.next().await?;
            self.raft.time_passes().await;
            self.handle(d).await?;
            settle(&self.hook, &self.idle).await;
            let o = self.after().await?;
            self.hook.done(&self.state(&o)).await?;
        }
    }

    async fn handle(&mut self, d: Delivery) -> Result<(), HookError> {
        let node_field = |d: &Delivery| d.field_i64("node").map(|n| n as usize);
        match (d.kind, d.name.as_str()) {
            (Kind::Message, name @ ("vote" | "append" | "snapshot")) => {
                let Some(from) = d.from else { return Ok(()) };
                match self.raft.request(name, d.payload.clone()).await {
                    Ok(body) => {
                        let fields = reply_fields(&body);
                        self.hook
                            .send(
                                from,
                                &format!("{name}-reply"),
                                fields,
                                json!({ "re": d.id.to_string(), "body": body }),
                            )
                            .await?;
                    }
                    // The library refused to answer (it is shutting down): the request is
                    // lost, and a node that never shuts down under flymc should not get here.
                    Err(e) => {
                        tracing::warn!("n{}: {name} from n{from}: {e}", self.me);
                        self.hook
                            .error("raft-request-refused", format!("{name} from n{from}: {e}"));
                    }
                }
            }
            (Kind::Message, name) if name.ends_with("-reply") => {
                let re = d
                    .payload
                    .get("re")
                    .and_then(Value::as_str)
                    .and_then(|s| s.parse::<EventId>().ok());
                let body = d.payload.get("body").cloned().unwrap_or(Value::Null);
                // A reply nobody waits for answers a call that already failed: drop it.
                if let Some(re) = re {
                    self.rpc.reply(re, body);
                }
            }
            (Kind::Message, "forward") | (Kind::Client, "write") => {
                if let Some(v) = d.field_i64("value") {
                    self.queued.push(v as u64);
                }
            }
            (Kind::Timeout, "elect") => {
                self.elect = None;
                let o = self.raft.observe();
                if self.eligible && self.elections_left > 0 && self.needs_election(&o) {
                    self.elections_left -= 1;
                    self.raft.elect().await;
                }
            }
            (Kind::Timeout, "heartbeat") => {
                self.beat = None;
                if self.heartbeats_left > 0 && self.raft.observe().role == Role::Leader {
                    self.heartbeats_left -= 1;
                    self.raft.heartbeat().await;
                }
            }
            (Kind::Client, "crashed") => {
                if let Some(n) = node_field(&d) {
                    let seen = self.notices.entry(n).or_default();
                    seen.0 += 1;
                    if seen.0 > seen.1 {
                        self.down.insert(n);
                        self.rpc.fail_to(n);
                    }
                    self.eligible = true;
                }
            }
            (Kind::Client, "rebooted") => {
                if let Some(n) = node_field(&d) {
                    let seen = self.notices.entry(n).or_default();
                    seen.1 += 1;
                    if seen.0 <= seen.1 {
                        self.down.remove(&n);
                    }
                    // What was in flight to the old incarnation is lost; a leader tells the new
                    // one at once what it missed.
                    self.rpc.fail_to(n);
                    settle(&self.hook, &self.idle).await;
                    if self.raft.observe().role == Role::Leader {
                        self.raft.heartbeat().await;
                    }
                }
            }
            (kind, name) => tracing::warn!("n{}: ignoring {kind:?} `{name}`", self.me),
        }
        Ok(())
    }

    /// After an event settled: hand queued writes on, arm or disarm the election timer and
    /// the leader's heartbeat timer.
    async fn after(&mut self) -> Result<Observed, HookError> {
        let o = self.raft.observe();
        if !self.queued.is_empty() {
            if o.role == Role::Leader {
                for v in std::mem::take(&mut self.queued) {
                    self.raft.propose(v);
                }
                settle(&self.hook, &self.idle).await;
            } else if let Some(l) = o.leader.filter(|&l| l != self.me && self.live(l)) {
                for v in std::mem::take(&mut self.queued) {
                    self.hook
                        .send(l, "forward", json!({ "value": v }), Value::Null)
                        .await?;
                }
            }
        }
        let o = self.raft.observe();
        let want = self.eligible && self.elections_left > 0 && self.needs_election(&o);
        arm(&self.hook, &mut self.elect, want, "elect").await?;
        // A leader's heartbeat timer: what makes it retry an append a follower refused or
        // that was lost, and tell followers of its commit index.
        let beat = self.heartbeats_left > 0 && o.role == Role::Leader;
        arm(&self.hook, &mut self.beat, beat, "heartbeat").await?;
        Ok(o)
    }
}

/// The fields flymc sees of a reply (for guards and for people reading paths).
fn reply_fields(body: &Value) -> Value {
    let mut f = serde_json::Map::new();
    for k in ["term", "success", "vote_granted", "granted"] {
        if let Some(v) = body.get(k) {
            f.insert(k.into(), v.clone());
        }
    }
    Value::Object(f)
}

/// A node program's whole life: logging, arguments, its runtime (on a `paused` clock that only
/// flymc's events advance, or not), `run` until the node stops, then report and exit.
pub fn main<F, Fut>(program: &str, paused: bool, run: F) -> !
where
    F: FnOnce(Args, Arc<Notify>) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    init_logging();
    let res = args(program).and_then(|args| {
        let (rt, idle) = runtime(paused).map_err(|e| format!("tokio: {e}"))?;
        rt.block_on(run(args, idle))
    });
    match res {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("{program}: {e}");
            std::process::exit(1)
        }
    }
}
