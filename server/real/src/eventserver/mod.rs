//! The event server (FlyMC §2, Figure 3): hooks inside node processes report the messages,
//! timers and crash-point disk writes they intercept, long-poll for enable orders, and report
//! each node's state once it has processed an enabled event. Protocol: `hooks/PROTOCOL.md`.
//!
//! It runs on its own thread with a single-threaded tokio runtime, HTTP/1.1 via hyper, and
//! binds 127.0.0.1 on a free port unless told otherwise. The synchronous side
//! ([`crate::RealTarget`]) shares the run's [`RunState`] with the HTTP handlers under one
//! lock and waits for quiescence on a condition variable; long polls wait on per-node
//! notifications. A fresh random token per run makes requests of earlier runs fail.

pub mod conns;
mod http;
pub mod protocol;
pub mod state;

use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use flymc_model::{Event, EventId, GlobalState, NodeId};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use rand::RngCore;
use tokio::sync::{oneshot, Notify};

pub use conns::ConnStats;
use conns::{Conns, Limits, HEADER_TIMEOUT};
pub use state::{ClientRequest, Differs, RunState, SavedRun, ServerError, ServerStats, Unquiet};

/// Nodes beyond this index get no long-poll slot (their requests fail as unknown nodes).
const MAX_NODES: usize = 4096;

/// State shared by the HTTP handlers and the synchronous side.
pub(crate) struct Shared {
    state: Mutex<RunState>,
    /// Signalled whenever the run state changes.
    changed: Condvar,
    /// Per-node wake-ups for long polls.
    notify: Mutex<Vec<Arc<Notify>>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, RunState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Run `f` on the state, then wake everyone waiting for a change.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut RunState) -> T) -> T {
        let out = f(&mut self.lock());
        self.changed.notify_all();
        out
    }

    /// Wait for the next change of the run state, until `deadline`; past it, the state back
    /// as `Err`.
    fn wait_changed<'a>(
        &'a self,
        st: MutexGuard<'a, RunState>,
        deadline: Instant,
    ) -> Result<MutexGuard<'a, RunState>, MutexGuard<'a, RunState>> {
        let now = Instant::now();
        if now >= deadline {
            return Err(st);
        }
        Ok(self
            .changed
            .wait_timeout(st, deadline - now)
            .unwrap_or_else(|p| p.into_inner())
            .0)
    }

    pub(crate) fn notify(&self, node: usize) -> Arc<Notify> {
        if node >= MAX_NODES {
            return Arc::new(Notify::new());
        }
        let mut v = self.notify.lock().unwrap_or_else(|p| p.into_inner());
        while v.len() <= node {
            v.push(Arc::new(Notify::new()));
        }
        v[node].clone()
    }

    fn wake_pollers(&self, node: Option<NodeId>) {
        let v = self.notify.lock().unwrap_or_else(|p| p.into_inner());
        match node {
            Some(n) => {
                if let Some(x) = v.get(n) {
                    x.notify_waiters();
                }
            }
            None => v.iter().for_each(|x| x.notify_waiters()),
        }
    }

    pub(crate) fn counted(&self) {
        self.lock().stats.requests += 1;
    }

    pub(crate) fn rejected(&self, code: &str) {
        *self.lock().stats.rejected.entry(code.into()).or_insert(0) += 1;
    }
}

/// The event server of one flymc target. Dropping it stops the server thread.
pub struct EventServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    conns: Arc<Conns>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl EventServer {
    /// Bind `bind` (port 0 picks a free one) and start serving on a new thread.
    pub fn start(bind: SocketAddr) -> std::io::Result<EventServer> {
        let listener = std::net::TcpListener::bind(bind)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(RunState::default()),
            changed: Condvar::new(),
            notify: Mutex::new(Vec::new()),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (tx, rx) = oneshot::channel();
        let s = shared.clone();
        let conns = Conns::new(Limits::for_this_process());
        let c = conns.clone();
        let thread = std::thread::Builder::new()
            .name("flymc-eventserver".into())
            .spawn(move || runtime.block_on(serve(listener, s, c, rx)))?;
        Ok(EventServer {
            addr,
            shared,
            conns,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    /// Where hooks reach the server.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Start a new run: fresh token (returned), every node starting up, the client requests
    /// pending.
    pub fn begin_run(&self, nodes: usize, clients: &[ClientRequest]) -> String {
        let mut bytes = [0u8; 16];
        rand::thread_rng().fill_bytes(&mut bytes);
        let token = hex(&bytes);
        self.shared
            .with(|st| st.begin(token.clone(), nodes, clients));
        self.shared.wake_pollers(None);
        token
    }

    /// End the run: requests with its token fail from now on.
    pub fn end_run(&self) {
        self.shared.with(RunState::end);
        self.shared.wake_pollers(None);
    }

    /// The current run's token (empty between runs).
    pub fn token(&self) -> String {
        self.shared.lock().token().to_string()
    }

    /// Events the checker may enable, in a deterministic order.
    pub fn pending(&self) -> Vec<Event> {
        self.shared.lock().pending()
    }

    /// Queue the enable order of a pending event: the node it is enabled at, `None` if it is
    /// not pending.
    pub fn enable(&self, id: EventId) -> Option<NodeId> {
        let node = self.shared.with(|st| st.enable(id));
        if let Some(n) = node {
            self.shared.wake_pollers(Some(n));
        }
        node
    }

    /// The node whose crash enabling `id` would tell its node of (a peer-failure timer's
    /// peer, a `crashed` notice's node), if any.
    pub fn crash_news(&self, id: EventId) -> Option<NodeId> {
        self.shared.lock().crash_news(id)
    }

    /// Mark `node` crashed (its `nth` crash), before its process is killed.
    pub fn crash(&self, node: NodeId, nth: u32) {
        self.shared.with(|st| st.crash(node, nth));
        self.shared.wake_pollers(Some(node));
    }

    /// Mark `node` down from the start of the run, never started (before any node starts).
    pub fn down(&self, node: NodeId) {
        self.shared.with(|st| st.down(node));
    }

    /// Drop the pending messages `node` sent (after its crash).
    pub fn lose_outbound(&self, node: NodeId) {
        self.shared.with(|st| st.lose_outbound(node));
    }

    /// Expect a new incarnation of `node` (its `nth` reboot); returns the incarnation.
    pub fn reboot(&self, node: NodeId, nth: u32) -> u32 {
        self.shared.with(|st| st.reboot(node, nth))
    }

    /// Tell the other live nodes that `cause` (a crash or reboot of `about`) happened, as
    /// client events `name {node: about}`.
    pub fn notice(&self, cause: EventId, name: &str, about: NodeId) {
        self.shared.with(|st| st.notice(cause, name, about));
    }

    pub fn alive(&self, node: NodeId) -> bool {
        self.shared.lock().alive(node)
    }

    /// The process id `node` registered with, if it did.
    pub fn pid(&self, node: NodeId) -> Option<u32> {
        self.shared.lock().pid(node)
    }

    /// The process of `node`'s `incarnation` in run `run` ended without flymc crashing it.
    pub fn node_exited(&self, run: u64, node: NodeId, incarnation: u32, status: String) {
        self.shared
            .with(|st| st.exited(run, node, incarnation, status));
    }

    /// Which run this is (counts `begin_run`s).
    pub fn run_id(&self) -> u64 {
        self.shared.lock().run()
    }

    /// Wait until every live node has finished what it was given (registered, ready, and done
    /// with every enabled event), at most `timeout`.
    pub fn wait_quiet(&self, timeout: Duration) -> Result<(), (Unquiet, String)> {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.lock();
        loop {
            match st.quiet() {
                Ok(()) => return Ok(()),
                Err(exited @ Unquiet::Exited(..)) => return Err((exited, String::new())),
                Err(Unquiet::Busy(n)) => {
                    st = self.shared.wait_changed(st, deadline).map_err(|st| {
                        let detail = st.busy_with(n);
                        (Unquiet::Busy(n), detail)
                    })?;
                }
            }
        }
    }

    /// Ask every live node's hook to pause and wait until all have (at most `timeout`): then
    /// no hook has a connection to the server, and its process can be checkpointed. Returns the
    /// nodes that paused. On an error, the reason and the nodes that did pause (they wait to
    /// be resumed all the same); no pause is left pending.
    pub fn pause(&self, timeout: Duration) -> Result<Vec<NodeId>, (String, Vec<NodeId>)> {
        let asked = self
            .shared
            .with(RunState::ask_pause)
            .map_err(|why| (why, Vec::new()))?;
        for &n in &asked {
            self.shared.wake_pollers(Some(n));
        }
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.lock();
        while !st.all_paused() {
            if let Err(Unquiet::Exited(n, how, _)) = st.quiet() {
                let paused = st.paused_nodes();
                st.end_pause();
                return Err((format!("node n{n} exited while pausing ({how})"), paused));
            }
            st = self.shared.wait_changed(st, deadline).map_err(|mut st| {
                let paused = st.paused_nodes();
                st.end_pause();
                (
                    format!("the nodes did not pause within {} ms", timeout.as_millis()),
                    paused,
                )
            })?;
        }
        Ok(asked)
    }

    /// Wait until each of `nodes`, let go after a pause, has reported its state on going on
    /// (`/v1/resumed`): the nodes whose state differs from the one recorded before the pause,
    /// and those whose (older) hook does not report.
    /// A node that exits, or does not report within `timeout`, is an error (its reason).
    pub fn await_resumed(
        &self,
        nodes: &[NodeId],
        timeout: Duration,
    ) -> Result<state::ResumeCheck, String> {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.lock();
        loop {
            let check = st.resumed_states(nodes).map_err(|u| match u {
                Unquiet::Exited(n, how, _) => format!("node n{n} exited after resuming ({how})"),
                Unquiet::Busy(n) => format!("node n{n} is busy"),
            })?;
            if check.waiting.is_empty() {
                return Ok(check);
            }
            st = self.shared.wait_changed(st, deadline).map_err(|_| {
                format!(
                    "node{} {} did not report {} state within {} ms of resuming (a pausable hook reports `POST /v1/resumed`: hooks/PROTOCOL.md, Pause)",
                    if check.waiting.len() == 1 { "" } else { "s" },
                    check.waiting.iter().map(|n| format!("n{n}")).collect::<Vec<_>>().join(", "),
                    if check.waiting.len() == 1 { "its" } else { "their" },
                    timeout.as_millis()
                )
            })?;
        }
    }

    /// The paused nodes were let go (or killed): no pause is pending.
    pub fn end_pause(&self) {
        self.shared.with(RunState::end_pause);
    }

    /// The run as it is now, to resume from later ([`EventServer::resume_run`]).
    pub fn save_run(&self) -> SavedRun {
        self.shared.lock().save()
    }

    /// Start a new run that goes on from `saved` (its processes restored from the same
    /// checkpoint). Returns the new run's id.
    pub fn resume_run(&self, saved: &SavedRun) -> u64 {
        let run = self.shared.with(|st| {
            st.resume(saved);
            st.run()
        });
        self.shared.wake_pollers(None);
        run
    }

    /// The global state now.
    pub fn snapshot(&self) -> GlobalState {
        self.shared.lock().snapshot()
    }

    pub fn stats(&self) -> ServerStats {
        self.shared.lock().stats.clone()
    }

    /// What the server did with connections so far.
    pub fn connections(&self) -> ConnStats {
        self.conns.stats()
    }
}

impl Drop for EventServer {
    fn drop(&mut self) {
        let c = self.conns.stats();
        if c.evicted + c.refused > 0 {
            // Hooks never leave a connection pending long: someone else was connecting.
            tracing::warn!(
                "event server {}: closed {} connections that never showed the run's token ({} to make room for newer ones, {} at the cap of open connections; {} accepted in all): another program was connecting to flymc's port",
                self.addr,
                c.evicted + c.refused,
                c.evicted,
                c.refused,
                c.accepted
            );
        }
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The longest pause after failing accepts (out of descriptors, mostly), doubling from 5 ms.
const MAX_ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

async fn serve(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    conns: Arc<Conns>,
    mut shutdown: oneshot::Receiver<()>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("event server cannot listen: {e}");
            return;
        }
    };
    let mut backoff = Duration::ZERO;
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => return,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                backoff = Duration::ZERO;
                stream
            }
            Err(e) => {
                // Retrying at once would spin while the descriptors are gone; the run itself
                // reports exhaustion where it needs one (a node's port, a log file).
                conns.accept_failed();
                backoff = (backoff * 2).clamp(Duration::from_millis(5), MAX_ACCEPT_BACKOFF);
                tracing::warn!(
                    "event server cannot accept a connection ({e}); retrying in {} ms",
                    backoff.as_millis()
                );
                tokio::select! {
                    _ = &mut shutdown => return,
                    _ = tokio::time::sleep(backoff) => continue,
                }
            }
        };
        let Some((ticket, evicted)) = conns.admit() else {
            tracing::debug!("event server: too many connections; closing a new one");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let s = shared.clone();
        tokio::spawn(async move {
            let t = ticket.clone();
            let service = service_fn(move |req| http::handle(req, s.clone(), t.clone()));
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                why = evicted => if why.is_err() {
                    // Trusted (the sender is gone, not fired): serve it to the end.
                    let _ = conn.await;
                }
            }
            drop(ticket);
        });
        // Let the new connection read its head before the next accept: a hook's request is
        // there at once and trusts its connection before a burst of idle ones could evict it.
        tokio::task::yield_now().await;
    }
}
