//! `raft` and `raft-asyncraft`: real Raft clusters, one node program per node (openraft's
//! current release, or async-raft 0.6.1 with its apply-before-match bug), started as local
//! processes with their own data directories. Each is described by its system file,
//! `openraft/system.toml` and `asyncraft/system.toml` (node program, parameters, client writes,
//! reported variables, symmetry, what a crash loses, sets file); this is what the files cannot
//! say: the parameters' ranges and cross-checks ([`params`](crate::params)) and Raft's properties,
//! written once in Rust and shared with raft-sim.

use std::path::{Path, PathBuf};
use std::time::Duration;

use flymc_model::{About, Property, Symmetry, System, Target, TargetError, Workload};
use flymc_real::system_file::{FileSystem, SystemFile};
use flymc_real::{RealConfig, RealOptions, RealTarget};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// openraft (system `raft`).
    OpenRaft,
    /// async-raft 0.6.1 (system `raft-asyncraft`).
    AsyncRaft,
}

impl Flavor {
    /// The system file compiled into flymc, with the files it names.
    fn embedded(
        self,
    ) -> (
        &'static str,
        &'static str,
        [(&'static str, &'static str); 1],
    ) {
        match self {
            Flavor::OpenRaft => (
                "openraft/system.toml",
                include_str!("../openraft/system.toml"),
                [("../sets-openraft.json", crate::SETS)],
            ),
            Flavor::AsyncRaft => (
                "asyncraft/system.toml",
                include_str!("../asyncraft/system.toml"),
                [("../sets-asyncraft.json", crate::SETS_ASYNCRAFT)],
            ),
        }
    }

    /// Its system file as compiled into flymc.
    pub fn system_file(self) -> SystemFile {
        let (rel, text, files) = self.embedded();
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
        SystemFile::parse_with(&file, text, &files)
            .unwrap_or_else(|e| panic!("the shipped {rel} does not load: {e}"))
    }
}

/// A Raft system: its system file's [`FileSystem`], with Raft's parameter checks and
/// properties.
pub struct RaftSystem {
    inner: FileSystem,
    /// Loaded from a file on disk (`--system .../system.toml`): its workloads are the file's.
    /// The shipped systems use the workloads folder (`--workloads`, `$FLYMC_WORKLOADS`).
    from_disk: bool,
    about: About,
}

/// The file's description, with Raft's property sources; a shipped system has no file or
/// workloads folder of its own.
fn about(inner: &FileSystem, from_disk: bool) -> About {
    let mut about = inner.about().clone();
    // Raft's properties, shared with raft-sim, and their view here (both flavours).
    about.sources = vec![
        "integrations/raft/properties/src/lib.rs".into(),
        "integrations/raft/src/properties.rs".into(),
    ];
    if !from_disk {
        about.workloads_dir = None;
        about.file = None;
    }
    about
}

impl RaftSystem {
    /// The shipped system; the node program is looked up next to the running executable.
    pub fn new(flavor: Flavor) -> RaftSystem {
        RaftSystem::of(
            FileSystem::new(flavor.system_file(), RealOptions::default()),
            false,
        )
    }

    fn of(inner: FileSystem, from_disk: bool) -> RaftSystem {
        RaftSystem {
            about: about(&inner, from_disk),
            inner,
            from_disk,
        }
    }

    /// The system a file on disk with `rust = "raft"` describes.
    pub fn from_disk(file: SystemFile) -> RaftSystem {
        RaftSystem::of(FileSystem::new(file, RealOptions::default()), true)
    }

    /// Runs under the user's options (the event server's address).
    pub fn options(self, options: RealOptions) -> RaftSystem {
        RaftSystem::of(self.inner.options(options), self.from_disk)
    }

    pub fn with_program(flavor: Flavor, program: impl Into<PathBuf>) -> RaftSystem {
        let s = RaftSystem::new(flavor);
        RaftSystem::of(s.inner.with_program(program), s.from_disk)
    }

    /// The [`RealConfig`] for `w`.
    pub fn config(&self, w: &Workload) -> Result<RealConfig, TargetError> {
        let params = crate::params(self.name(), w)?;
        let mut cfg = self.inner.config(w)?;
        if let Some(ms) = params.settle_timeout_ms {
            cfg = cfg.settle_timeout(Duration::from_millis(ms));
        }
        Ok(cfg)
    }
}

impl System for RaftSystem {
    fn about(&self) -> &About {
        &self.about
    }

    fn target(&self, w: &Workload) -> Result<Box<dyn Target>, TargetError> {
        Ok(Box::new(RealTarget::with_backend(
            self.config(w)?,
            Box::new(self.inner.options_ref().local_backend()),
        )))
    }

    fn properties(&self, _w: &Workload) -> Vec<Box<dyn Property>> {
        crate::properties::all()
    }

    fn symmetry(&self, w: &Workload) -> Symmetry {
        self.inner.symmetry(w)
    }
}
