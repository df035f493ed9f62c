//! [`RealTarget`]: the [`Target`] the executor drives when the system is real node processes.
//!
//! It starts an [`EventServer`] once (the first `start`), and for every run asks a cluster
//! [`Backend`] for fresh node slots, launches each node's program with the `FLYMC_*`
//! environment of the hook protocol, and then works entirely through the server: pending events
//! are what hooks reported, `enable` queues an order at the event's node, `settle` waits until
//! every node has reported done (quiescence; no sleeps), `crash` is SIGKILL, `reboot` starts the
//! node again on its data directory as a new incarnation, `stop` kills everything. A node the
//! workload has down at the start is not launched until its first reboot.
//!
//! A system integrates by building a [`RealConfig`]: how to start node `i` (program, arguments,
//! environment; it gets every node's slot), the workload's client requests, and how long a node
//! may take to settle before that is a [`TargetError::Hang`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flymc_model::{Event, EventId, GlobalState, NodeId, Target, TargetError, Workload};

use crate::cluster::local::LocalBackend;
use crate::cluster::rundirs;
use crate::cluster::{Backend, ExitListener, NodeCommand, NodeSlot};
use crate::eventserver::protocol::{env, PROTOCOL_VERSION};
use crate::eventserver::SavedRun;
use crate::eventserver::{Differs, EventServer, Unquiet};

pub use crate::eventserver::ClientRequest;

/// What [`RealConfig::command`] is given to build a node's command line.
pub struct Launch<'a> {
    pub node: NodeId,
    /// 0 for the node's first process of the run (at the start, or at the first reboot of a
    /// node the workload has down at the start), then +1 per reboot. The data directory is
    /// empty before incarnation 0.
    pub incarnation: u32,
    /// Every node's slot (address, data directory), in node order.
    pub slots: &'a [NodeSlot],
    pub workload: &'a Workload,
}

impl Launch<'_> {
    pub fn slot(&self) -> &NodeSlot {
        &self.slots[self.node]
    }
}

pub type CommandFn = dyn Fn(&Launch) -> NodeCommand + Send + Sync;

/// How to run one system's nodes under flymc.
#[derive(Clone)]
pub struct RealConfig {
    /// For messages.
    pub system: String,
    /// The command line of node `launch.node`.
    pub command: Arc<CommandFn>,
    /// Client requests of the workload, pending from the start of every run.
    pub clients: Vec<ClientRequest>,
    /// How long a node may take to settle (start up, or process an enabled event) before it
    /// is reported as a hang. Default the settings' (`FLYMC_SETTLE_TIMEOUT_MS` for the CLI), else
    /// 10 s.
    pub settle_timeout: Duration,
    /// Where the event server listens (default 127.0.0.1 on a free port).
    pub bind: SocketAddr,
    /// Tell the other live nodes of every crash and reboot (client events `crashed {node}` and
    /// `rebooted {node}`), as their failure detector or a reconnecting peer would.
    pub notices: bool,
    /// A crash also loses the messages the node sent that flymc has not delivered yet (they
    /// were still in its send buffers). Off: they are delivered later like any other.
    pub crash_loses_outbound: bool,
    /// Regular expressions over node log lines that are findings (`no-error-log`), the
    /// system's; a workload adds `[logs] patterns` (see server/real/src/logscan.rs).
    pub log_patterns: Vec<String>,
    /// Java hooks use the JDK's HttpClient ([`crate::RealOptions::hook_jdk_http`]).
    pub hook_jdk_http: bool,
    /// Java hooks never settle on one exact check ([`crate::RealOptions::hook_sampled_quiet`]).
    pub hook_sampled_quiet: bool,
}

impl RealConfig {
    pub fn new(
        system: &str,
        command: impl Fn(&Launch) -> NodeCommand + Send + Sync + 'static,
    ) -> RealConfig {
        RealConfig {
            system: system.into(),
            command: Arc::new(command),
            clients: Vec::new(),
            settle_timeout: crate::settings::settings()
                .settle_timeout
                .unwrap_or(crate::settings::SETTLE_TIMEOUT),
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            notices: false,
            crash_loses_outbound: false,
            log_patterns: Vec::new(),
            hook_jdk_http: false,
            hook_sampled_quiet: false,
        }
    }

    pub fn log_patterns(mut self, patterns: &[&str]) -> RealConfig {
        self.log_patterns = patterns.iter().map(|p| p.to_string()).collect();
        self
    }

    pub fn clients(mut self, clients: Vec<ClientRequest>) -> RealConfig {
        self.clients = clients;
        self
    }

    pub fn settle_timeout(mut self, t: Duration) -> RealConfig {
        self.settle_timeout = t;
        self
    }

    pub fn bind(mut self, addr: SocketAddr) -> RealConfig {
        self.bind = addr;
        self
    }

    /// The user's [`crate::RealOptions`] that concern every system alike (the listen address,
    /// the Java hook's transport).
    pub fn options(mut self, o: &crate::RealOptions) -> RealConfig {
        self.hook_jdk_http = o.hook_jdk_http;
        self.hook_sampled_quiet = o.hook_sampled_quiet;
        match o.listen {
            Some(addr) => self.bind(addr),
            None => self,
        }
    }

    pub fn notices(mut self, on: bool) -> RealConfig {
        self.notices = on;
        self
    }

    pub fn crash_loses_outbound(mut self, on: bool) -> RealConfig {
        self.crash_loses_outbound = on;
        self
    }
}

/// A real cluster behind the event server, as a [`Target`].
pub struct RealTarget {
    cfg: RealConfig,
    server: Option<Arc<EventServer>>,
    backend: Box<dyn Backend>,
    workload: Option<Workload>,
    slots: Vec<NodeSlot>,
    crashes: Vec<u32>,
    reboots: Vec<u32>,
    running: bool,
    /// A hang `pending` (which cannot fail) ran into; reported by the next call that can.
    deferred: Mutex<Option<TargetError>>,
    /// The server's count of late events when this run began.
    late_base: u64,
    /// What the server and this target knew at each checkpoint the backend keeps.
    kept: HashMap<u64, Kept>,
    /// Node log lines that match the log patterns, added to every settled state.
    logs: crate::logscan::LogScan,
    /// Whether this run said already why a snapshot was not taken: once per run, not once per
    /// path (where a hook cannot pause, that is every path, twice).
    said_no_snapshot: bool,
    /// Whether this target said already that a hook does not report its state after a pause.
    said_unchecked: bool,
}

/// A checkpoint's run besides its processes and directories (which the backend keeps).
struct Kept {
    saved: SavedRun,
    crashes: Vec<u32>,
    reboots: Vec<u32>,
}

/// The named pipe node `slot` waits on after pausing for a checkpoint.
fn resume_pipe(slot: &NodeSlot) -> std::path::PathBuf {
    slot.data_dir.with_extension("resume")
}

impl RealTarget {
    /// Nodes as local processes.
    pub fn new(cfg: RealConfig) -> RealTarget {
        RealTarget::with_backend(cfg, Box::new(LocalBackend::new()))
    }

    pub fn with_backend(cfg: RealConfig, backend: Box<dyn Backend>) -> RealTarget {
        RealTarget {
            cfg,
            server: None,
            backend,
            workload: None,
            slots: Vec::new(),
            crashes: Vec::new(),
            reboots: Vec::new(),
            running: false,
            late_base: 0,
            deferred: Mutex::new(None),
            kept: HashMap::new(),
            logs: Default::default(),
            said_no_snapshot: false,
            said_unchecked: false,
        }
    }

    /// Why no snapshot was taken: a notice the first time in a run, then only at debug level.
    fn no_snapshot(&mut self, why: &str) {
        if self.said_no_snapshot {
            tracing::debug!("{}: no snapshot here: {why}", self.cfg.system);
        } else {
            self.said_no_snapshot = true;
            tracing::warn!(
                "{}: no snapshot here: {why} (said once per run; paths re-execute their prefix where there is none)",
                self.cfg.system
            );
        }
    }

    /// The event server (after the first `start`).
    pub fn server(&self) -> Option<&EventServer> {
        self.server.as_deref()
    }

    /// The current run's node slots.
    pub fn slots(&self) -> &[NodeSlot] {
        &self.slots
    }

    /// Process ids of the running nodes.
    pub fn pids(&self) -> Vec<(NodeId, u32)> {
        self.backend.pids()
    }

    fn server_or_start(&mut self) -> Result<Arc<EventServer>, TargetError> {
        if self.server.is_none() {
            let s = EventServer::start(self.cfg.bind).map_err(|e| {
                TargetError::Other(format!(
                    "cannot start the event server on {}: {e}; pick another address with --listen",
                    self.cfg.bind
                ))
            })?;
            self.server = Some(Arc::new(s));
        }
        Ok(self.server.clone().expect("just started"))
    }

    fn srv(&self) -> Result<&EventServer, TargetError> {
        match (&self.server, self.running) {
            (Some(s), true) => Ok(s),
            _ => Err(TargetError::Other(format!(
                "{}: the cluster is not started",
                self.cfg.system
            ))),
        }
    }

    fn launch(&mut self, node: NodeId, incarnation: u32) -> Result<(), TargetError> {
        let server = self.server_or_start()?;
        let workload = self.workload.as_ref().expect("started with a workload");
        let mut cmd = (self.cfg.command)(&Launch {
            node,
            incarnation,
            slots: &self.slots,
            workload,
        });
        let slot = &self.slots[node];
        let peers: Vec<String> = self.slots.iter().map(|s| s.addr.to_string()).collect();
        for (k, v) in [
            (env::SERVER, server.addr().to_string()),
            (env::TOKEN, server.token()),
            (env::NODE, node.to_string()),
            (env::NODES, self.slots.len().to_string()),
            (env::INCARNATION, incarnation.to_string()),
            (env::NODE_ADDR, slot.addr.to_string()),
            (env::PEERS, peers.join(",")),
            (env::DATA_DIR, slot.data_dir.display().to_string()),
            (env::PROTOCOL, PROTOCOL_VERSION.to_string()),
        ] {
            cmd.env.push((k.to_string(), v));
        }
        if self.cfg.hook_jdk_http {
            cmd.env.push((env::HOOK_HTTP.to_string(), "jdk".into()));
        }
        if self.cfg.hook_sampled_quiet {
            cmd.env
                .push((env::HOOK_QUIET.to_string(), "sampled".into()));
        }
        let slot = slot.clone();
        if self.backend.checkpoints().is_some() {
            let pipe = resume_pipe(&slot);
            make_pipe(&pipe).map_err(|e| {
                TargetError::Other(format!("cannot create {}: {e}", pipe.display()))
            })?;
            cmd.env
                .push((env::RESUME.to_string(), pipe.display().to_string()));
        }
        let on_exit = exit_listener(&server);
        self.backend
            .launch(&slot, incarnation, &cmd, on_exit)
            .map_err(|e| TargetError::Other(e.to_string()))?;
        Ok(())
    }

    /// Wait for quiescence.
    fn quiet(&self) -> Result<(), TargetError> {
        let server = self.srv()?;
        let timeout = self.cfg.settle_timeout;
        server
            .wait_quiet(timeout)
            .map_err(|(why, detail)| match why {
                Unquiet::Busy(node) => {
                    tracing::warn!("{}: node n{node} hangs: {detail}", self.cfg.system);
                    TargetError::Hang {
                        node,
                        millis: timeout.as_millis() as u64,
                    }
                }
                Unquiet::Exited(node, status, ready) => TargetError::Exited {
                    node,
                    status,
                    restarting: self.reboots[node] > 0 && !ready,
                    log_tail: exit_tail(&self.slots[node]),
                },
            })
    }

    /// Keep `e` for the next call that can report it (the first one deferred wins).
    fn defer(&self, e: TargetError) {
        self.deferred
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(e);
    }

    fn has_deferred(&self) -> bool {
        self.deferred
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    fn take_deferred(&self) -> Result<(), TargetError> {
        match self
            .deferred
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Let paused nodes go on: write to their resume pipes. Each open waits for the node to
    /// open its end; a node that does not within the settle timeout is an error.
    fn resume(&self, nodes: &[NodeId]) -> Result<(), TargetError> {
        for &n in nodes {
            let pipe = resume_pipe(&self.slots[n]);
            release(&pipe, self.cfg.settle_timeout).map_err(|e| {
                TargetError::Other(format!(
                    "{}: node n{n} did not resume after a checkpoint ({}): {e}",
                    self.cfg.system,
                    pipe.display()
                ))
            })?;
        }
        Ok(())
    }

    /// Nodes whose hook is older than `/v1/resumed`: their copies cannot be checked. Said once.
    fn unchecked(&mut self, nodes: &[NodeId]) {
        if let (Some(n), false) = (nodes.first(), self.said_unchecked) {
            self.said_unchecked = true;
            tracing::warn!(
                "{}: node n{n}'s hook does not report its state after a pause (an older hook: update it; for the Java hook run `flymc setup zookeeper`), so restored copies of it are not checked against their snapshot",
                self.cfg.system
            );
        }
    }

    fn check_node(&self, node: NodeId) -> Result<(), TargetError> {
        if node >= self.slots.len() {
            return Err(TargetError::BadNode(node, "no such node".into()));
        }
        Ok(())
    }
}

impl Target for RealTarget {
    fn start(&mut self, workload: &Workload) -> Result<(), TargetError> {
        if self.running {
            self.stop()?;
        }
        *self.deferred.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let n = workload.nodes;
        if let Some(c) = self.cfg.clients.iter().find(|c| c.to >= n) {
            return Err(TargetError::Workload(format!(
                "client request `{}` goes to node {}, but the workload has nodes 0..{}",
                c.name,
                c.to,
                n - 1
            )));
        }
        let server = self.server_or_start()?;
        self.slots = self
            .backend
            .prepare(n)
            .map_err(|e| TargetError::Other(e.to_string()))?;
        self.workload = Some(workload.clone());
        self.crashes = vec![0; n];
        self.reboots = vec![0; n];
        server.begin_run(n, &self.cfg.clients);
        self.late_base = server.stats().late_events;
        self.running = true;
        // Nodes down at the start are not launched: their data directories stay empty until
        // a reboot starts them. The others notice they are down as they would a crash.
        for &node in &workload.down {
            server.down(node);
            if self.cfg.notices {
                server.notice(EventId::down(node), "crashed", node);
            }
        }
        for node in (0..n).filter(|node| !workload.down.contains(node)) {
            self.launch(node, 0)?;
        }
        self.quiet()
    }

    fn checkpoint(&mut self, key: u64) -> Result<bool, TargetError> {
        // A node that hung or exited is the next step's finding, not a reason to lose the run.
        if self.has_deferred() || self.backend.checkpoints().is_none() {
            return Ok(false);
        }
        self.srv()?;
        // After a crash or a reboot nobody has waited for the cluster yet. A hang here is the
        // next step's to report, as `pending` would.
        if let Err(e) = self.quiet() {
            self.defer(e);
            return Ok(false);
        }
        let server = self.server.clone().expect("running");
        let began = std::time::Instant::now();
        let paused = match server.pause(self.cfg.settle_timeout) {
            Ok(p) => p,
            Err((why, paused)) => {
                self.resume(&paused)?;
                server.end_pause();
                self.no_snapshot(&why);
                return Ok(false);
            }
        };
        let pausing = began.elapsed();
        let saved = server.save_run();
        let dumped = self
            .backend
            .checkpoints()
            .expect("checked above")
            .dump(key, &paused);
        let dumping = began.elapsed() - pausing;
        // The originals go on whatever became of the snapshot; each reports its state on going
        // on, which must be the one it reported before the pause (nothing ran meanwhile).
        self.resume(&paused)?;
        server.end_pause();
        let check = server
            .await_resumed(&paused, self.cfg.settle_timeout)
            .map_err(|why| {
                TargetError::Other(format!("{}: after a snapshot, {why}", self.cfg.system))
            })?;
        self.unchecked(&check.unchecked);
        let changed = check.differs;
        tracing::debug!(
            "{}: snapshot {key:016x}: pause {} ms, dump {} ms, resume {} ms",
            self.cfg.system,
            pausing.as_millis(),
            dumping.as_millis(),
            (began.elapsed() - pausing - dumping).as_millis()
        );
        if !changed.is_empty() {
            // The snapshot holds a cluster whose recorded states are not its own: never restored.
            tracing::warn!(
                "{}: snapshot {key:016x} not kept: {}",
                self.cfg.system,
                differences(&changed)
            );
            self.backend
                .checkpoints()
                .expect("checked above")
                .discard(key);
            return Ok(false);
        }
        match dumped {
            Ok(true) => {
                self.kept.insert(
                    key,
                    Kept {
                        saved,
                        crashes: self.crashes.clone(),
                        reboots: self.reboots.clone(),
                    },
                );
                Ok(true)
            }
            Ok(false) => Ok(false),
            Err(e) => {
                self.no_snapshot(&e.to_string());
                Ok(false)
            }
        }
    }

    fn restore(&mut self, workload: &Workload, key: u64) -> Result<bool, TargetError> {
        let Some(kept) = self.kept.get(&key) else {
            return Ok(false);
        };
        let (saved, crashes, reboots) = (
            kept.saved.clone(),
            kept.crashes.clone(),
            kept.reboots.clone(),
        );
        if self.backend.checkpoints().is_none() {
            return Ok(false);
        }
        if self.running {
            self.stop()?;
        }
        *self.deferred.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let server = self.server_or_start()?;
        let live: Vec<(NodeId, u32)> = saved
            .alive()
            .into_iter()
            .enumerate()
            .filter_map(|(n, inc)| inc.map(|i| (n, i)))
            .collect();
        // The new run first, so that the copies' exits are news about it.
        server.resume_run(&saved);
        let restored = self.backend.checkpoints().expect("checked above").restore(
            key,
            &live,
            exit_listener(&server),
        );
        let slots = match restored {
            Ok(Some(slots)) => slots,
            Ok(None) => {
                server.end_run();
                self.kept.remove(&key);
                return Ok(false);
            }
            Err(e) => {
                server.end_run();
                self.kept.remove(&key);
                let _ = self.backend.stop();
                return Err(TargetError::Other(format!(
                    "{}: cannot restore a snapshot: {e}",
                    self.cfg.system
                )));
            }
        };
        self.slots = slots;
        self.workload = Some(workload.clone());
        self.crashes = crashes;
        self.reboots = reboots;
        self.late_base = server.stats().late_events;
        self.running = true;
        let nodes: Vec<NodeId> = live.iter().map(|(n, _)| *n).collect();
        if let Err(e) = self.resume(&nodes) {
            let _ = self.stop();
            return Err(e);
        }
        // The copies must be the cluster that was snapshotted: each node's state as it finds
        // it on going on, against the state recorded before the pause.
        let checked = server.await_resumed(&nodes, self.cfg.settle_timeout);
        let checked = checked.map(|c| {
            self.unchecked(&c.unchecked);
            c.differs
        });
        match checked {
            Ok(differs) if differs.is_empty() => {}
            Ok(differs) => {
                let kept = keep_differences(&self.cfg.system, key, &differs);
                let _ = self.stop();
                self.kept.remove(&key);
                self.backend
                    .checkpoints()
                    .expect("checked above")
                    .discard(key);
                return Err(TargetError::RestoreDiffers(format!(
                    "{}: {}{kept}",
                    self.cfg.system,
                    differences(&differs)
                )));
            }
            Err(why) => {
                let _ = self.stop();
                return Err(TargetError::Other(format!(
                    "{}: after a restore, {why}",
                    self.cfg.system
                )));
            }
        }
        self.quiet()?;
        Ok(true)
    }

    fn settled(&mut self) -> Result<(), TargetError> {
        self.take_deferred()?;
        self.quiet()
    }

    fn late_reports(&self) -> u64 {
        self.server
            .as_ref()
            .map_or(0, |s| s.stats().late_events.saturating_sub(self.late_base))
    }

    fn pending(&self) -> Vec<Event> {
        let Ok(server) = self.srv() else {
            return Vec::new();
        };
        if let Err(e) = self.quiet() {
            self.defer(e);
        }
        server.pending()
    }

    fn enable(&mut self, id: EventId) -> Result<(), TargetError> {
        self.take_deferred()?;
        let server = self.srv()?;
        let news = server.crash_news(id);
        let Some(to) = server.enable(id) else {
            return Err(TargetError::NotPending(id));
        };
        // Only now may the crashed node's connections to `to` tell it anything.
        if let Some(crashed) = news {
            self.backend.crash_noticed(crashed, to);
        }
        Ok(())
    }

    fn settle(&mut self) -> Result<GlobalState, TargetError> {
        self.take_deferred()?;
        self.quiet()?;
        let mut state = self.srv()?.snapshot();
        let w = self.workload.as_ref();
        self.logs
            .scan(&self.cfg.log_patterns, w, &self.slots, &mut state);
        Ok(state)
    }

    fn crash(&mut self, node: NodeId) -> Result<(), TargetError> {
        self.take_deferred()?;
        self.check_node(node)?;
        let server = self.srv()?;
        if !server.alive(node) {
            return Err(TargetError::BadNode(node, "crash needs a live node".into()));
        }
        server.crash(node, self.crashes[node]);
        if self.cfg.crash_loses_outbound {
            server.lose_outbound(node);
        }
        if self.cfg.notices {
            server.notice(EventId::crash(node, self.crashes[node]), "crashed", node);
        }
        self.crashes[node] += 1;
        self.backend
            .kill(node)
            .map_err(|e| TargetError::Other(e.to_string()))
    }

    fn reboot(&mut self, node: NodeId) -> Result<(), TargetError> {
        self.take_deferred()?;
        self.check_node(node)?;
        let server = self.srv()?;
        if server.alive(node) {
            return Err(TargetError::BadNode(
                node,
                "reboot needs a crashed node".into(),
            ));
        }
        let incarnation = server.reboot(node, self.reboots[node]);
        if self.cfg.notices {
            server.notice(EventId::reboot(node, self.reboots[node]), "rebooted", node);
        }
        self.reboots[node] += 1;
        self.launch(node, incarnation)
    }

    fn keep_logs(&mut self, into: &std::path::Path) -> Result<usize, TargetError> {
        let failed = |e: std::io::Error| {
            TargetError::Other(format!(
                "cannot keep the node logs in {}: {e}; check that the folder is writable",
                into.display()
            ))
        };
        std::fs::create_dir_all(into).map_err(failed)?;
        let mut kept = 0;
        for slot in &self.slots {
            let Some(name) = slot.log.file_name() else {
                continue;
            };
            match std::fs::copy(&slot.log, into.join(name)) {
                Ok(_) => kept += 1,
                // A node that never started has no log.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(failed(e)),
            }
            for report in crash_reports(&slot.data_dir) {
                let Some(file) = report.file_name() else {
                    continue;
                };
                let to = into.join(format!("n{}-{}", slot.node, file.to_string_lossy()));
                std::fs::copy(&report, to).map_err(failed)?;
                kept += 1;
            }
        }
        Ok(kept)
    }

    fn stop(&mut self) -> Result<(), TargetError> {
        if let Some(s) = &self.server {
            s.end_run();
        }
        self.running = false;
        let stopped = self
            .backend
            .stop()
            .map_err(|e| TargetError::Other(e.to_string()));
        self.take_deferred()?;
        stopped
    }
}

/// `n1: zxid 5 recorded, 4 restored; ...`: the variables that differ, node by node.
fn differences(differs: &[Differs]) -> String {
    let show = |v: Option<&serde_json::Value>| v.map_or("absent".to_string(), |v| v.to_string());
    differs
        .iter()
        .map(|d| {
            let mut names: Vec<&String> = d.recorded.keys().chain(d.resumed.keys()).collect();
            names.sort();
            names.dedup();
            let vars: Vec<String> = names
                .into_iter()
                .filter(|k| d.recorded.get(*k) != d.resumed.get(*k))
                .map(|k| {
                    let text = format!(
                        "{k} {} recorded, {} restored",
                        show(d.recorded.get(k)),
                        show(d.resumed.get(k))
                    );
                    flymc_model::escape::line(&text).into_owned()
                })
                .collect();
            format!("n{}: {}", d.node, vars.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Keep a restore that differed for diagnosis: the recorded and the restored states of each
/// node that differs, as JSON in a kept directory of the per-user run folder (never swept).
/// Returns ` (kept in DIR)`, or nothing when it could not be written.
fn keep_differences(system: &str, key: u64, differs: &[Differs]) -> String {
    let root = rundirs::Root::default_for_runs();
    let Ok(dir) = rundirs::create(&root, "restore-differs-") else {
        return String::new();
    };
    let file = dir.path().join(format!("{key:016x}.json"));
    let body = serde_json::json!({ "system": system, "snapshot": format!("{key:016x}"), "nodes": differs });
    let written = serde_json::to_vec_pretty(&body)
        .ok()
        .and_then(|b| std::fs::write(&file, b).ok());
    if written.is_none() || dir.mark_kept().is_err() {
        dir.remove();
        return String::new();
    }
    let path = file.clone();
    dir.release();
    format!(" (kept in {})", path.display())
}

/// Crash reports a runtime left in a node's working directory (the data directory): the JVM's
/// `hs_err_pid*.log` when it ends on an internal error. Kept with the logs: a `node-exited`
/// finding that is the runtime's fault, not the system's, shows there.
fn crash_reports(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<std::path::PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("hs_err_pid") && n.ends_with(".log"))
        })
        .collect();
    found.sort();
    found
}

/// What a node's end says: the last lines of its log, or when the JVM died on an internal
/// error (its log ends in the crash banner, which names nothing), what its crash report says
/// went wrong: the signal or error, and the frame it struck in.
fn exit_tail(slot: &NodeSlot) -> Vec<String> {
    let lines = log_tail(&slot.log, 40);
    // A Java agent whose start failed aborts the JVM with this line and a native stack.
    if let Some(fatal) = lines
        .iter()
        .find(|l| l.contains("FATAL ERROR in native method"))
    {
        return vec![fatal.trim().to_string()];
    }
    let crashed = lines
        .iter()
        .any(|l| l.contains("A fatal error has been detected by the Java Runtime Environment"));
    let summary = crashed
        .then(|| crash_reports(&slot.data_dir).pop())
        .flatten()
        .and_then(|report| crash_summary(&String::from_utf8_lossy(&std::fs::read(report).ok()?)));
    match summary {
        Some(what) => vec![format!("the JVM crashed: {what}")],
        None => lines[lines.len().saturating_sub(3)..].to_vec(),
    }
}

/// "SIGSEGV (0xb) at pc=...; V [libjvm.so+0x...] SymbolTable::lookup_shared(...)" from an
/// `hs_err_pid*.log`.
fn crash_summary(report: &str) -> Option<String> {
    let lines: Vec<&str> = report.lines().collect();
    let what = lines.iter().find_map(|l| {
        let l = l.strip_prefix('#')?.trim();
        (l.starts_with("SIG") || l.starts_with("Internal Error") || l.starts_with("Out of Memory"))
            .then(|| l.to_string())
    })?;
    let frame = lines
        .iter()
        .position(|l| l.starts_with("# Problematic frame:"))
        .and_then(|i| lines.get(i + 1))
        .map(|l| l.trim_start_matches('#').trim().to_string());
    Some(match frame {
        Some(f) => format!("{what}; {f}"),
        None => what,
    })
}

/// The last `n` non-empty lines of the log file at `path` (none if it cannot be read).
fn log_tail(path: &std::path::Path, n: usize) -> Vec<String> {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let mut lines: Vec<String> = text
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(n)
        .map(|l| l.trim_end().to_string())
        .collect();
    lines.reverse();
    lines
}

/// Tells the server when a node process of its current run ends.
fn exit_listener(server: &Arc<EventServer>) -> ExitListener {
    let weak = Arc::downgrade(server);
    let run = server.run_id();
    Arc::new(move |node, incarnation, how| {
        if let Some(s) = weak.upgrade() {
            s.node_exited(run, node, incarnation, how);
        }
    })
}

/// Create the named pipe `path` (afresh).
fn make_pipe(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let _ = std::fs::remove_file(path);
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: a valid NUL-terminated path; mkfifo touches nothing else.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Write to the pipe a paused hook reads to its end. Opening for writing waits for the reader;
/// if it does not come within `timeout`, open the reading end ourselves so the waiting open
/// returns, and fail.
fn release(path: &std::path::Path, timeout: Duration) -> std::io::Result<()> {
    use std::io::Write;
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        let r = std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .and_then(|mut f| f.write_all(b"go\n"));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(timeout) {
        Ok(r) => r,
        Err(_) => {
            use std::os::unix::fs::OpenOptionsExt;
            let _unblock = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(path);
            let _ = rx.recv();
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("nobody opened it within {} ms", timeout.as_millis()),
            ))
        }
    }
}

impl Drop for RealTarget {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jvm_crash_is_said_by_its_signal_and_frame() {
        let report = "#\n# A fatal error has been detected by the Java Runtime Environment:\n#\n\
            #  SIGSEGV (0xb) at pc=0x00007fc6b084434a, pid=1, tid=13\n#\n\
            # JRE version: OpenJDK Runtime Environment (17.0.15+6)\n# Problematic frame:\n\
            # V  [libjvm.so+0xe4434a]  SymbolTable::lookup_shared(char const*, int, unsigned int)+0x25a\n#\n";
        assert_eq!(
            crash_summary(report).as_deref(),
            Some(
                "SIGSEGV (0xb) at pc=0x00007fc6b084434a, pid=1, tid=13; \
                 V  [libjvm.so+0xe4434a]  SymbolTable::lookup_shared(char const*, int, unsigned int)+0x25a"
            )
        );
        assert_eq!(crash_summary("# nothing here\n"), None);
    }

    #[test]
    fn a_jvms_crash_report_in_the_data_directory_is_found_and_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        for f in [
            "hs_err_pid1.log",
            "hs_err_pid7.log",
            "zoo.cfg",
            "n0.log",
            "hs_err_pid1.txt",
        ] {
            std::fs::write(d.path().join(f), "x").unwrap();
        }
        std::fs::create_dir(d.path().join("version-2")).unwrap();
        let names: Vec<String> = crash_reports(d.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["hs_err_pid1.log", "hs_err_pid7.log"]);
        assert!(crash_reports(&d.path().join("missing")).is_empty());
    }
}
