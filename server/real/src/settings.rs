//! Where flymc keeps what it builds and runs, and how long a node may take by default: values
//! the CLI reads from the environment once, at its edge, and installs for the process
//! ([`Settings::install`]). This crate reads them here ([`settings`]), never the environment.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

/// How long a node may take to settle when neither the system nor the workload says.
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings {
    /// Where `flymc setup` keeps what it builds (CRIU, the Java agent, ZooKeeper variants);
    /// `None`: `~/.cache/flymc`.
    pub cache: Option<PathBuf>,
    /// The folder for run directories; `None`: `flymc-<uid>` in the temporary directory.
    pub run_root: Option<PathBuf>,
    /// How long a node may take to settle unless its system or workload says; `None`:
    /// [`SETTLE_TIMEOUT`].
    pub settle_timeout: Option<Duration>,
}

static INSTALLED: OnceLock<Settings> = OnceLock::new();

impl Settings {
    /// Make these the process's settings; the first call wins (the CLI makes it before any
    /// work starts). Without one, every value is its default.
    pub fn install(self) {
        let _ = INSTALLED.set(self);
    }
}

/// The process's settings.
pub fn settings() -> &'static Settings {
    INSTALLED.get_or_init(Settings::default)
}
