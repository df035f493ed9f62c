//! Nodes as Docker containers, through the Docker Engine API (bollard).
//!
//! Each node runs in its own container of a flymc image (built from nothing by `flymc setup
//! zookeeper --docker`; nothing can be pulled), with host networking so the node keeps its
//! 127.0.k.x address and reaches the event server on 127.0.0.1. The run directory and flymc's
//! cache are bind-mounted at the same paths, so a node's command line is the same as for a
//! local process. Crash = SIGKILL the container, and a loud one: the kernel closes the node's
//! connections at once (the local backend holds them until flymc tells each peer,
//! `cluster/silence.rs`); reboot = a new container on the same data directory. Containers are
//! auto-removed, killed on stop, on drop and on Ctrl-C, and a node whose flymc is gone ends
//! itself (the hook's watchdog), which ends its container.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use bollard::container::{
    Config, CreateContainerOptions, KillContainerOptions, RemoveContainerOptions,
    WaitContainerOptions,
};
use bollard::models::HostConfig;
use bollard::Docker;
use flymc_model::NodeId;
use futures_util::StreamExt;

use super::local::LocalBackend;
use super::{Backend, ClusterError, ExitListener, NodeCommand, NodeSlot};

/// Containers of this flymc process, for the Ctrl-C handler.
fn registry() -> &'static Mutex<Vec<String>> {
    static R: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(Vec::new()))
}

fn runtime() -> Result<tokio::runtime::Runtime, ClusterError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ClusterError(format!("cannot start a runtime for Docker: {e}")))
}

fn connect(rt: &tokio::runtime::Runtime) -> Result<Docker, ClusterError> {
    let unreachable = |e: &dyn std::fmt::Display| {
        ClusterError(format!(
            "the Docker daemon is unreachable ({e}): start it (e.g. `service docker start`) or use --backend local"
        ))
    };
    let d = Docker::connect_with_local_defaults().map_err(|e| unreachable(&e))?;
    rt.block_on(async {
        let d = d.negotiate_version().await.map_err(|e| unreachable(&e))?;
        d.ping().await.map_err(|e| unreachable(&e))?;
        Ok(d)
    })
}

/// Kill and remove every container this flymc started (Ctrl-C, exit).
pub fn cleanup_all() {
    let names: Vec<String> =
        std::mem::take(&mut *registry().lock().unwrap_or_else(|p| p.into_inner()));
    if names.is_empty() {
        return;
    }
    let Ok(rt) = runtime() else { return };
    let Ok(d) = connect(&rt) else { return };
    rt.block_on(async {
        for n in names {
            let _ = d
                .remove_container(
                    &n,
                    Some(RemoveContainerOptions {
                        force: true,
                        ..Default::default()
                    }),
                )
                .await;
        }
    });
}

pub struct DockerBackend {
    image: String,
    rt: tokio::runtime::Runtime,
    docker: Docker,
    dirs: LocalBackend,
    containers: HashMap<NodeId, String>,
    mounts: Vec<PathBuf>,
}

impl DockerBackend {
    /// Connects to the daemon and checks the image is there (one-line fixes otherwise:
    /// `setup` is the command that builds the image). `mounts` are host folders the
    /// containers see at the same paths (where a system's setup put its built files).
    pub fn new(
        image: &str,
        mounts: Vec<PathBuf>,
        setup: &str,
    ) -> Result<DockerBackend, ClusterError> {
        let rt = runtime()?;
        let docker = connect(&rt)?;
        rt.block_on(docker.inspect_image(image)).map_err(|_| {
            ClusterError(format!(
                "the Docker image {image} is not built: run `{setup}`"
            ))
        })?;
        super::procs::install_cleanup_handler();
        Ok(DockerBackend {
            image: image.into(),
            rt,
            docker,
            dirs: LocalBackend::new(),
            containers: HashMap::new(),
            mounts,
        })
    }

    /// Keep run directories (data and logs) after the run.
    pub fn keep_dirs(mut self, keep: bool) -> DockerBackend {
        self.dirs = std::mem::take(&mut self.dirs).keep_dirs(keep);
        self
    }

    fn remove(&mut self, name: &str) -> Result<(), ClusterError> {
        let d = self.docker.clone();
        let n = name.to_string();
        let r = self.rt.block_on(async move {
            let _ = d
                .kill_container(&n, Some(KillContainerOptions { signal: "SIGKILL" }))
                .await;
            // Wait until it is gone, so a reboot never overlaps the killed incarnation.
            let mut w = d.wait_container(&n, None::<WaitContainerOptions<String>>);
            while let Some(x) = w.next().await {
                if x.is_err() {
                    break;
                }
            }
            match d
                .remove_container(
                    &n,
                    Some(RemoveContainerOptions {
                        force: true,
                        ..Default::default()
                    }),
                )
                .await
            {
                Ok(()) => Ok(()),
                Err(bollard::errors::Error::DockerResponseServerError { status_code, .. })
                    if status_code == 404 || status_code == 409 =>
                {
                    Ok(()) // already removed (auto-remove) or being removed
                }
                Err(e) => Err(e),
            }
        });
        registry()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|x| x != name);
        r.map_err(|e| ClusterError(format!("cannot remove container {name}: {e}")))
    }
}

impl Backend for DockerBackend {
    fn name(&self) -> &'static str {
        "docker"
    }

    fn prepare(&mut self, nodes: usize) -> Result<Vec<NodeSlot>, ClusterError> {
        self.stop()?;
        self.dirs.prepare(nodes)
    }

    fn launch(
        &mut self,
        slot: &NodeSlot,
        incarnation: u32,
        cmd: &NodeCommand,
        on_exit: ExitListener,
    ) -> Result<u32, ClusterError> {
        let run_dir = slot
            .data_dir
            .parent()
            .map(PathBuf::from)
            .unwrap_or_else(|| slot.data_dir.clone());
        let name = format!(
            "flymc-{}-{}-n{}-{}",
            std::process::id(),
            run_dir
                .file_name()
                .map(|s| s
                    .to_string_lossy()
                    .replace(|c: char| !c.is_ascii_alphanumeric(), ""))
                .unwrap_or_default(),
            slot.node,
            incarnation
        );
        // The program's output goes to the node's log, as for a local process.
        let mut line = format!("exec {}", shell_quote(&cmd.program.display().to_string()));
        for a in &cmd.args {
            line.push(' ');
            line.push_str(&shell_quote(a));
        }
        line += &format!(" >>{} 2>&1", shell_quote(&slot.log.display().to_string()));
        let mut binds = vec![format!("{0}:{0}", run_dir.display())];
        for m in &self.mounts {
            binds.push(format!("{0}:{0}:ro", m.display()));
        }
        let config = Config {
            image: Some(self.image.clone()),
            cmd: Some(vec!["/bin/sh".to_string(), "-c".to_string(), line]),
            env: Some(cmd.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            working_dir: Some(slot.data_dir.display().to_string()),
            labels: Some(HashMap::from([(
                "flymc.owner".to_string(),
                std::process::id().to_string(),
            )])),
            host_config: Some(HostConfig {
                network_mode: Some("host".into()),
                binds: Some(binds),
                auto_remove: Some(true),
                init: Some(false),
                ..Default::default()
            }),
            ..Default::default()
        };
        let d = self.docker.clone();
        let n = name.clone();
        registry()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(name.clone());
        self.rt
            .block_on(async move {
                d.create_container(
                    Some(CreateContainerOptions {
                        name: n.clone(),
                        platform: None,
                    }),
                    config,
                )
                .await?;
                d.start_container::<String>(&n, None).await
            })
            .map_err(|e| {
                ClusterError(format!(
                    "cannot start node n{}'s container {name}: {e}",
                    slot.node
                ))
            })?;
        self.containers.insert(slot.node, name.clone());
        // Tell the event server when the container ends by itself.
        let d = self.docker.clone();
        let node = slot.node;
        std::thread::Builder::new()
            .name(format!("flymc-docker-wait-{name}"))
            .spawn(move || {
                let Ok(rt) = runtime() else { return };
                let how = rt.block_on(async move {
                    let mut w = d.wait_container(&name, None::<WaitContainerOptions<String>>);
                    match w.next().await {
                        Some(Ok(r)) => format!("container exit status {}", r.status_code),
                        Some(Err(bollard::errors::Error::DockerContainerWaitError {
                            code,
                            ..
                        })) => format!("container exit status {code}"),
                        Some(Err(e)) => format!("container ended ({e})"),
                        None => "container ended".to_string(),
                    }
                });
                on_exit(node, incarnation, how);
            })
            .map_err(|e| ClusterError(format!("cannot watch the container: {e}")))?;
        Ok(0)
    }

    fn kill(&mut self, node: NodeId) -> Result<(), ClusterError> {
        match self.containers.remove(&node) {
            Some(name) => self.remove(&name),
            None => Ok(()),
        }
    }

    fn stop(&mut self) -> Result<(), ClusterError> {
        let names: Vec<String> = self.containers.drain().map(|(_, n)| n).collect();
        let mut first = Ok(());
        for n in names {
            if let Err(e) = self.remove(&n) {
                first = first.and(Err(e));
            }
        }
        let dirs = self.dirs.stop();
        first.and(dirs)
    }

    fn pids(&self) -> Vec<(NodeId, u32)> {
        Vec::new()
    }
}

impl Drop for DockerBackend {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Does the daemon have `image`?
pub fn image_exists(image: &str) -> Result<bool, ClusterError> {
    let rt = runtime()?;
    let d = connect(&rt)?;
    Ok(rt.block_on(d.inspect_image(image)).is_ok())
}

/// The machine's own Debian mirror and suite (from its apt sources), for debootstrap.
fn apt_mirror() -> Option<(String, String)> {
    let mut texts = Vec::new();
    for e in std::fs::read_dir("/etc/apt/sources.list.d")
        .into_iter()
        .flatten()
        .flatten()
    {
        if e.path().extension().is_some_and(|x| x == "sources") {
            texts.push(std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    for t in &texts {
        for stanza in t.split("\n\n") {
            let get = |k: &str| {
                stanza
                    .lines()
                    .find_map(|l| l.strip_prefix(k).map(|v| v.trim().to_string()))
            };
            if get("Types:").is_some_and(|v| v.split_whitespace().any(|x| x == "deb")) {
                if let (Some(u), Some(s)) = (get("URIs:"), get("Suites:")) {
                    let suite = s.split_whitespace().next().unwrap_or("").to_string();
                    let uri = u.split_whitespace().next().unwrap_or("").to_string();
                    if !suite.contains('-') && !uri.is_empty() {
                        return Some((uri, suite));
                    }
                }
            }
        }
    }
    let list = std::fs::read_to_string("/etc/apt/sources.list").unwrap_or_default();
    list.lines().find_map(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        (w.len() >= 3 && w[0] == "deb" && !w[2].contains('-'))
            .then(|| (w[1].to_string(), w[2].to_string()))
    })
}

/// Build `image` from nothing unless it exists: debootstrap a Debian root file system from
/// the machine's own apt sources, install Debian's `packages` in it, `docker import` it.
pub fn build_image(
    image: &str,
    packages: &[&str],
    say: &mut dyn FnMut(&str),
) -> Result<(), ClusterError> {
    if image_exists(image)? {
        say(&format!("the Docker image {image} exists"));
        return Ok(());
    }
    let fail = |m: String| ClusterError(m);
    if crate::which("debootstrap").is_none() {
        say("installing debootstrap (apt-get)");
        let ok = Command::new("apt-get")
            .args(["install", "-y", "--no-install-recommends", "debootstrap"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            return Err(fail(
                "debootstrap is missing: run as root `apt-get install -y debootstrap`".into(),
            ));
        }
    }
    let (mirror, suite) = apt_mirror()
        .ok_or_else(|| fail("no Debian apt source found to debootstrap from".into()))?;
    let root = tempfile::Builder::new()
        .prefix("flymc-rootfs-")
        .tempdir()
        .map_err(|e| fail(format!("temporary directory: {e}")))?;
    let dir = root.path();
    say(&format!(
        "debootstrap {suite} from the machine's apt source (a few minutes)"
    ));
    let sh = |script: &str, what: &str| -> Result<(), ClusterError> {
        let out = Command::new("sh")
            .arg("-c")
            .arg(script)
            .output()
            .map_err(|e| fail(format!("{what}: {e}")))?;
        if !out.status.success() {
            let e = String::from_utf8_lossy(&out.stderr);
            let o = String::from_utf8_lossy(&out.stdout);
            let last = e
                .lines()
                .chain(o.lines())
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .to_string();
            return Err(fail(format!("{what} failed: {last}")));
        }
        Ok(())
    };
    let d = dir.display();
    sh(
        &format!("debootstrap --variant=minbase {suite} {d} {mirror}"),
        "debootstrap",
    )?;
    let packages = packages.join(" ");
    say(&format!("installing {packages} into the image"));
    let install = format!(
        "mount -t proc proc {d}/proc && \
         chroot {d} sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
           {packages} && apt-get clean && rm -rf /var/lib/apt/lists/*'; \
         rc=$?; umount {d}/proc; exit $rc"
    );
    sh(&install, "installing packages in the image")?;
    say(&format!("docker import as {image}"));
    sh(
        &format!("tar -C {d} -c . | docker import - {image}"),
        "docker import",
    )?;
    Ok(())
}
