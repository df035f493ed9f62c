//! `zookeeper`: the unmodified ZooKeeper 3.8.0 that Debian ships, under flymc through the Java
//! hook (hooks/java) configured by integrations/zookeeper/hooks.toml.
//!
//! Every node is a `QuorumPeerMain` JVM with `-javaagent:flymc-hook.jar`, its own zoo.cfg and
//! data directory (server id = node + 1), on 127.0.k.(2+i) as a local process (default) or in a
//! container of the `flymc/zookeeper:3.8.0` image with host networking (`--backend docker`).
//! `flymc setup zookeeper [--docker]` installs and builds what this needs.
//!
//! Workload parameters (`[params]`, all optional):
//! - `variant`: `"3.8.0"` (default), `"zookeeper-1419"` (FastLeaderElection rebuilt with the
//!   pre-fix `totalOrderPredicate`, from `variants/zookeeper-1419.diff`), or any variant built
//!   with `flymc setup zookeeper --variant NAME --patch FILE.diff` (its classes go first on the
//!   class path); `flymc run --variant NAME` sets it;
//! - `zookeeper_home`: run a ZooKeeper you built instead of Debian's: the folder holding its
//!   jars (`lib/*.jar` of a binary distribution, or the jars themselves); local processes
//!   only; `flymc run --zookeeper-home DIR` sets it;
//! - `epochs`: each node's currentEpoch = acceptedEpoch on disk before the first start;
//! - `settle_timeout_ms`: how long a node may take to settle before it is a hang (default 60000:
//!   JVMs start slowly on a loaded machine);
//! - `clients`: client requests, e.g. `[{ to = 2, name = "write" }]` (a znode create through a
//!   real ZooKeeper client at that node, sent once the node serves);
//! - `staggered_start`: each node's first election waits for a `start` timer, so the order in
//!   which nodes join the election is a choice flymc explores (default false: the JVMs' race).

pub mod patch;
pub mod properties;
pub mod setup;

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flymc_model::{
    About, Feature, NodeId, Property, Symmetry, System, Target, TargetError, Workload,
};
use serde::Deserialize;
use serde_json::Value;

use flymc_real::cluster::{Backend, NodeCommand};
use flymc_real::system_file::{FileSystem, SystemFile};
use flymc_real::{which, BackendKind, ClientRequest, Launch, RealConfig, RealOptions, RealTarget};

pub const SYSTEM_NAME: &str = "zookeeper";
/// Where the hook attaches (turned into the agent's JSON configuration for every run).
pub const HOOKS_TOML: &str = include_str!("../hooks.toml");
const SETS: &str = include_str!("../sets.json");
/// The variants flymc ships: the unmodified build and ZOOKEEPER-1419 (others are built by
/// `flymc setup zookeeper --variant NAME --patch FILE.diff`).
pub const VARIANTS: [&str; 2] = ["3.8.0", "zookeeper-1419"];

/// The variants built on this machine besides the shipped ones.
pub fn built_variants() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(cache_dir().join("variants"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("classes").is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !VARIANTS.contains(&n.as_str()))
        .collect();
    v.sort();
    v
}
/// Debian's ZooKeeper jar (its manifest names the dependencies).
pub const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";

/// What the user may put in place of this integration's defaults: values the CLI reads from
/// the environment once, at its edge, and installs for the process ([`Settings::install`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings {
    /// The ZooKeeper jar nodes run (`$FLYMC_ZOOKEEPER_JAR` for the CLI); `None`: Debian's.
    pub jar: Option<PathBuf>,
    /// The image the docker backend runs (`$FLYMC_ZOOKEEPER_IMAGE` for the CLI); `None`:
    /// `flymc/zookeeper:3.8.0`.
    pub image: Option<String>,
}

static SETTINGS: std::sync::OnceLock<Settings> = std::sync::OnceLock::new();

impl Settings {
    /// Make these the process's settings; the first call wins.
    pub fn install(self) {
        let _ = SETTINGS.set(self);
    }

    fn get() -> &'static Settings {
        SETTINGS.get_or_init(Settings::default)
    }
}

/// The ZooKeeper jar nodes run: the settings' ([`Settings::jar`]), else Debian's.
pub fn zookeeper_jar() -> PathBuf {
    (Settings::get().jar.clone()).unwrap_or_else(|| PathBuf::from(ZOOKEEPER_JAR))
}

/// The image the docker backend runs: the settings' ([`Settings::image`]), else
/// `flymc/zookeeper:3.8.0`.
pub fn image() -> String {
    (Settings::get().image.clone()).unwrap_or_else(|| setup::IMAGE.to_string())
}
const SLF4J_SIMPLE: &str = "/usr/share/java/slf4j-simple.jar";
/// ZooKeeper's tick is set so long that no wall-clock timeout of ZooKeeper's own fires during
/// a run; the timeouts the workloads depend on are flymc timers (hooks.toml).
const TICK_MS: u64 = 10_000_000;

/// Where `flymc setup` keeps what it builds (the jars here): flymc's cache folder.
pub use flymc_real::snapshot::cache_dir;

pub fn java_dir() -> PathBuf {
    cache_dir().join("java")
}

pub fn variant_dir(variant: &str) -> PathBuf {
    cache_dir().join("variants").join(variant)
}

/// The `zookeeper` system, its nodes where the user's [`RealOptions`] say. What it is
/// (name, hook, reported variables, symmetry, what survives a crash, allowed exceptions,
/// message kinds, sets file) is its system file, `system.toml`; this crate is what the file
/// cannot say (see the file's head).
pub struct ZookeeperSystem {
    pub options: RealOptions,
    file: FileSystem,
    /// The file's description; loaded from a file on disk (`--system .../system.toml`), its
    /// workloads are the file's.
    about: About,
}

/// The file's description, with what only this integration says; a shipped system has no
/// file or workloads folder of its own.
fn about(file: &FileSystem, from_disk: bool) -> About {
    let mut about = file.about().clone().feature(Feature::Docker);
    // `zookeeper_home` runs the jars of the folder it names.
    about.program_params = vec!["zookeeper_home".into()];
    // ZooKeeper's properties, shared with zk-le-sim, and their view here.
    about.sources = vec![
        "integrations/zookeeper/properties/src/lib.rs".into(),
        "integrations/zookeeper/src/properties.rs".into(),
    ];
    if !from_disk {
        about.workloads_dir = None;
        about.file = None;
    }
    about
}

impl Default for ZookeeperSystem {
    fn default() -> ZookeeperSystem {
        ZookeeperSystem::new(RealOptions::default())
    }
}

/// The system file compiled into flymc.
pub const SYSTEM_TOML: &str = include_str!("../system.toml");

/// The shipped system file, with the files it names compiled in.
pub fn system_file() -> SystemFile {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("system.toml");
    SystemFile::parse_with(
        &file,
        SYSTEM_TOML,
        &[("sets.json", SETS), ("hooks.toml", HOOKS_TOML)],
    )
    .unwrap_or_else(|e| panic!("the shipped integrations/zookeeper/system.toml does not load: {e}"))
}

impl ZookeeperSystem {
    pub fn new(options: RealOptions) -> ZookeeperSystem {
        ZookeeperSystem::of(FileSystem::new(system_file(), options), options, false)
    }

    /// The system a file on disk with `rust = "zookeeper"` describes.
    pub fn from_disk(file: SystemFile, options: RealOptions) -> ZookeeperSystem {
        ZookeeperSystem::of(FileSystem::new(file, options), options, true)
    }

    fn of(file: FileSystem, options: RealOptions, from_disk: bool) -> ZookeeperSystem {
        ZookeeperSystem {
            about: about(&file, from_disk),
            options,
            file,
        }
    }
}

/// A workload's parameters (see the module docs).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZkParams {
    pub variant: String,
    pub epochs: Option<Vec<u64>>,
    pub settle_timeout_ms: u64,
    pub log: String,
    pub clients: Vec<ZkClient>,
    pub zookeeper_home: Option<PathBuf>,
    /// Each node's first election waits for a `start` timer (hooks.toml), so the order in which
    /// nodes join is flymc's choice instead of the JVMs' race.
    pub staggered_start: bool,
}

impl Default for ZkParams {
    fn default() -> ZkParams {
        ZkParams {
            variant: "3.8.0".into(),
            epochs: None,
            settle_timeout_ms: 60_000,
            log: "warn".into(),
            clients: Vec::new(),
            zookeeper_home: None,
            staggered_start: false,
        }
    }
}

/// A client request of the workload: `{ to = 2, name = "write" }`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZkClient {
    pub to: NodeId,
    pub name: String,
}

/// The workload's parameters, checked against its ensemble.
pub fn params(w: &Workload) -> Result<ZkParams, TargetError> {
    let p: ZkParams = w.params()?;
    let bad = |m: String| Err(TargetError::Workload(format!("{SYSTEM_NAME}: {m}")));
    if w.nodes < 1 || w.nodes > 9 {
        return bad(format!(
            "{} nodes: ZooKeeper ensembles here have 1 to 9",
            w.nodes
        ));
    }
    let built = built_variants();
    if !VARIANTS.contains(&p.variant.as_str()) && !built.contains(&p.variant) {
        let valid: Vec<String> = VARIANTS
            .iter()
            .map(|v| v.to_string())
            .chain(built)
            .collect();
        return bad(format!(
            "unknown variant `{}` (valid: {}): build it with `flymc setup zookeeper --variant {} --patch FILE.diff`",
            p.variant,
            valid.join(", "),
            p.variant
        ));
    }
    if let Some(home) = &p.zookeeper_home {
        home_jars(home).map_err(TargetError::Workload)?;
    }
    if let Some(e) = p.epochs.as_ref().filter(|e| e.len() != w.nodes) {
        return bad(format!(
            "parameter `epochs` must be a list of {} non-negative integers, got {e:?}",
            w.nodes
        ));
    }
    if let Some(c) = p
        .clients
        .iter()
        .find(|c| c.to >= w.nodes || c.name != "write")
    {
        return bad(format!(
            "a client request is {{ to = <node 0..{}>, name = \"write\" }}, got {{ to = {}, name = {:?} }}",
            w.nodes - 1,
            c.to,
            c.name
        ));
    }
    Ok(p)
}

impl ZkParams {
    /// The client requests flymc sends (a znode create through a real client).
    fn requests(&self) -> Vec<ClientRequest> {
        self.clients
            .iter()
            .map(|c| ClientRequest {
                to: c.to,
                name: c.name.clone(),
                fields: serde_json::Map::new(),
                payload: Value::Null,
            })
            .collect()
    }
}

/// The agent's configuration: hooks.toml as JSON.
pub fn hook_config_json() -> Result<String, String> {
    flymc_real::system_file::hooks_config_json(HOOKS_TOML)
        .map_err(|e| format!("integrations/zookeeper/hooks.toml: {e}"))
}

/// Free ports per run (keyed by the run directory): quorum and election port of every node.
type PortMap = Arc<Mutex<HashMap<PathBuf, Vec<(u16, u16)>>>>;

/// A quorum and an election port on `ip`, free, different from each other and from the node's
/// client port `client`. Both listeners are held until both ports are known: the kernel may
/// hand a port it just freed out again, and ZooKeeper refuses a config whose quorum and
/// election ports are equal ("Invalid config", exit 2).
fn quorum_ports(ip: Ipv4Addr, client: u16) -> std::io::Result<(u16, u16)> {
    let mut last = None;
    for _ in 0..16 {
        let a = TcpListener::bind((ip, 0))?;
        let b = TcpListener::bind((ip, 0))?;
        let ports = (a.local_addr()?.port(), b.local_addr()?.port());
        if ports.0 != client && ports.1 != client && ports.0 != ports.1 {
            return Ok(ports);
        }
        last = Some(ports);
    }
    Err(std::io::Error::other(format!(
        "no two free ports on {ip} apart from {client} (last tried {last:?})"
    )))
}

/// Everything one node needs on disk before its first start.
fn prepare_node(
    l: &Launch,
    ports: &[(u16, u16)],
    p: &ZkParams,
    hook_json: &str,
) -> std::io::Result<()> {
    let slot = l.slot();
    let data = &slot.data_dir;
    let mut cfg = format!(
        "tickTime={TICK_MS}\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={}\nclientPortAddress={}\n\
         admin.enableServer=false\n4lw.commands.whitelist=srvr\nreconfigEnabled=false\nstandaloneEnabled=false\n\
         localSessionsEnabled=true\nlocalSessionsUpgradingEnabled=false\n",
        data.display(),
        slot.addr.port(),
        slot.addr.ip()
    );
    for (i, s) in l.slots.iter().enumerate() {
        cfg += &format!(
            "server.{}={}:{}:{}\n",
            i + 1,
            s.addr.ip(),
            ports[i].0,
            ports[i].1
        );
    }
    std::fs::write(data.join("zoo.cfg"), cfg)?;
    std::fs::write(data.join("myid"), format!("{}\n", l.node + 1))?;
    if let Some(e) = &p.epochs {
        let v2 = data.join("version-2");
        std::fs::create_dir_all(&v2)?;
        std::fs::write(v2.join("currentEpoch"), e[l.node].to_string())?;
        std::fs::write(v2.join("acceptedEpoch"), e[l.node].to_string())?;
    }
    let run_dir = data.parent().unwrap_or(data);
    std::fs::write(run_dir.join("flymc-hook.json"), hook_json)?;
    Ok(())
}

/// The class path of a node of `variant`, on Debian's ZooKeeper.
pub fn class_path(variant: &str) -> String {
    class_path_on(variant, None).unwrap_or_default()
}

/// The class path of a node of `variant`, on Debian's ZooKeeper or the one in `home`.
pub fn class_path_on(variant: &str, home: Option<&std::path::Path>) -> Result<String, String> {
    let mut cp = Vec::new();
    if variant != "3.8.0" {
        cp.push(variant_dir(variant).join("classes").display().to_string());
    }
    cp.push(java_dir().join(setup::HELPER_JAR).display().to_string());
    match home {
        Some(h) => cp.extend(home_jars(h)?.iter().map(|j| j.display().to_string())),
        None => cp.push(zookeeper_jar().display().to_string()),
    }
    cp.push(SLF4J_SIMPLE.to_string());
    Ok(cp.join(":"))
}

/// The jars of a ZooKeeper the user built (`zookeeper_home`): `DIR/lib/*.jar` and `DIR/*.jar`,
/// which must include a `zookeeper-*.jar`.
pub fn home_jars(home: &std::path::Path) -> Result<Vec<PathBuf>, String> {
    let mut jars: Vec<PathBuf> = [home.join("lib"), home.to_path_buf()]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jar"))
        .collect();
    jars.sort();
    let has_zk = jars.iter().any(|j| {
        j.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            n.starts_with("zookeeper") && !n.contains("jute") && !n.contains("test")
        })
    });
    if !home.is_dir() {
        return Err(format!(
            "--zookeeper-home {}: no such folder: point it at the ZooKeeper you built (the folder with lib/)",
            home.display()
        ));
    }
    if !has_zk {
        return Err(format!(
            "--zookeeper-home {}: no zookeeper-*.jar in it or in its lib/: point it at the ZooKeeper you built (the folder with lib/)",
            home.display()
        ));
    }
    Ok(jars)
}

/// The JVM command line of one node (paths are the same on the host and in containers).
pub fn java_args(l: &Launch, p: &ZkParams) -> Vec<String> {
    let data = &l.slot().data_dir;
    let run_dir = data.parent().unwrap_or(data);
    let jars = java_dir();
    let mut args = jvm_flags(&p.log);
    if p.staggered_start {
        args.push("-Dflymc.zk.staggeredStart=true".into());
    }
    args.extend([
        format!(
            "-javaagent:{}={}",
            jars.join(flymc_java_hook::AGENT_JAR).display(),
            run_dir.join("flymc-hook.json").display()
        ),
        "-cp".into(),
        class_path_on(&p.variant, p.zookeeper_home.as_deref()).unwrap_or_default(),
        "org.apache.zookeeper.server.quorum.QuorumPeerMain".into(),
        data.join("zoo.cfg").display().to_string(),
    ]);
    args
}

/// The class-data-sharing archive of a node's JVM for `variant`, if setup made one (see
/// [`setup::build_cds_archive`]; it was dumped with the class path of 3.8.0).
pub fn cds_archive(variant: &str) -> Option<PathBuf> {
    let a = java_dir().join(setup::CDS_ARCHIVE);
    (variant == "3.8.0" && a.is_file()).then_some(a)
}

/// The JVM options every node starts with (and the CDS archive is dumped with).
pub fn jvm_flags(log: &str) -> Vec<String> {
    vec![
        "-XX:+UseSerialGC".into(),
        "-XX:TieredStopAtLevel=1".into(),
        "-Xss512k".into(),
        "-Xmx256m".into(),
        // A small young generation: a node touches (and a snapshot dumps and restores) a few
        // MiB of heap instead of most of a default eden. 30 le-3crash paths: restore 330 ->
        // 218 ms, snapshots 285 -> 182 ms a path (docs/BENCHMARKS.md).
        "-Xms32m".into(),
        "-Xmn8m".into(),
        // Map the class-data archives where they were dumped (Debian's JDK 17 relocates them
        // by default): relocating dirtied ~15 MiB a node that every snapshot then carried.
        "-XX:+UnlockDiagnosticVMOptions".into(),
        "-XX:ArchiveRelocationMode=0".into(),
        "-XX:-UsePerfData".into(),
        "-Djava.net.preferIPv4Stack=true".into(),
        "-Dzookeeper.admin.enableServer=false".into(),
        "-Dzookeeper.jmx.log4j.disable=true".into(),
        "-Dzookeeper.commitProcessor.numWorkerThreads=0".into(),
        "-Dzookeeper.learner.closeSocketAsync=false".into(),
        "-Dzookeeper.leader.closeSocketAsync=false".into(),
        format!("-Dorg.slf4j.simpleLogger.defaultLogLevel={log}"),
        "-Dorg.slf4j.simpleLogger.showDateTime=true".into(),
    ]
}

/// What a run on this machine needs; a one-line fix for what is missing.
pub fn check_installed(backend: BackendKind, variant: &str) -> Result<(), String> {
    if backend == BackendKind::Local {
        if which("java").is_none() {
            return Err("Java is missing: install it (apt-get install -y default-jre-headless), then run `flymc setup zookeeper`".into());
        }
        if !zookeeper_jar().is_file() {
            return Err(format!(
                "ZooKeeper is missing ({}): run `flymc setup zookeeper`",
                zookeeper_jar().display()
            ));
        }
    }
    for (jar, digest) in [
        (flymc_java_hook::AGENT_JAR, flymc_java_hook::agent_digest()),
        (setup::HELPER_JAR, setup::helper_digest()),
    ] {
        flymc_java_hook::check_stamp(&java_dir().join(jar), &digest, "flymc setup zookeeper")
            .map_err(|e| format!("the Java hook: {e}"))?;
    }
    if variant != "3.8.0" && !variant_dir(variant).join("classes").is_dir() {
        let how = if VARIANTS.contains(&variant) {
            "flymc setup zookeeper".to_string()
        } else {
            format!("flymc setup zookeeper --variant {variant} --patch FILE.diff")
        };
        return Err(format!("the {variant} variant is not built: run `{how}`"));
    }
    Ok(())
}

impl ZookeeperSystem {
    pub fn config(&self, w: &Workload) -> Result<RealConfig, TargetError> {
        let p = params(w)?;
        check_installed(self.options.backend, &p.variant).map_err(TargetError::Other)?;
        if p.zookeeper_home.is_some() && self.options.backend != BackendKind::Local {
            return Err(TargetError::Other(
                "--zookeeper-home runs a ZooKeeper of this machine: use the local backend".into(),
            ));
        }
        let hook_json = hook_config_json().map_err(TargetError::Other)?;
        let java = match self.options.backend {
            BackendKind::Local => which("java").unwrap_or_else(|| PathBuf::from("java")),
            BackendKind::Docker => PathBuf::from("java"),
        };
        let ports: PortMap = Arc::new(Mutex::new(HashMap::new()));
        let cds = match self.options.backend {
            // The archive was dumped with Debian's class path.
            BackendKind::Local if p.zookeeper_home.is_none() => cds_archive(&p.variant),
            BackendKind::Local => None,
            BackendKind::Docker => None,
        };
        let settle = Duration::from_millis(p.settle_timeout_ms);
        let clients = p.requests();
        let cfg = RealConfig::new(SYSTEM_NAME, move |l: &Launch| {
            let key = l.slots[0]
                .data_dir
                .parent()
                .map(PathBuf::from)
                .unwrap_or_default();
            let mine = {
                let mut m = ports.lock().unwrap_or_else(|e| e.into_inner());
                m.retain(|k, _| k.exists());
                m.entry(key)
                    .or_insert_with(|| {
                        l.slots
                            .iter()
                            .map(|s| {
                                let ip = match s.addr {
                                    SocketAddr::V4(a) => *a.ip(),
                                    _ => Ipv4Addr::LOCALHOST,
                                };
                                quorum_ports(ip, s.addr.port()).unwrap_or((0, 0))
                            })
                            .collect()
                    })
                    .clone()
            };
            if l.incarnation == 0 {
                if let Err(e) = prepare_node(l, &mine, &p, &hook_json) {
                    tracing::error!("zookeeper: cannot prepare node n{}: {e}", l.node);
                }
            }
            let mut c = NodeCommand::new(&java);
            c.args = java_args(l, &p);
            // Local nodes start from the class-data-sharing archive when setup made one (the
            // image's JVM is another build: its nodes start without).
            if let Some(a) = cds.as_ref() {
                c.args
                    .insert(0, format!("-XX:SharedArchiveFile={}", a.display()));
            }
            c
        })
        .settle_timeout(settle)
        .clients(clients)
        .options(&self.options);
        Ok(cfg)
    }

    fn backend(&self) -> Result<Box<dyn Backend>, TargetError> {
        match self.options.backend {
            BackendKind::Local => Ok(Box::new(self.options.local_backend())),
            BackendKind::Docker => flymc_real::cluster::docker::DockerBackend::new(
                &image(),
                vec![cache_dir()],
                "flymc setup zookeeper --docker",
            )
            .map(|b| Box::new(b.keep_dirs(self.options.keep_run_dirs)) as Box<dyn Backend>)
            .map_err(|e| TargetError::Other(e.to_string())),
        }
    }
}

impl System for ZookeeperSystem {
    fn about(&self) -> &About {
        &self.about
    }

    fn target(&self, w: &Workload) -> Result<Box<dyn Target>, TargetError> {
        let cfg = self.config(w)?;
        Ok(Box::new(RealTarget::with_backend(cfg, self.backend()?)))
    }

    fn properties(&self, w: &Workload) -> Vec<Box<dyn Property>> {
        properties::properties(w.nodes)
    }

    /// No symmetric roles (the system file says why).
    fn symmetry(&self, w: &Workload) -> Symmetry {
        self.file.symmetry(w)
    }
}
