//! The environment, read once: the `FLYMC_*` variables become typed settings here, at the
//! edge, and the libraries get them as values ([`flymc_real::settings`], the ZooKeeper
//! integration's [`flymc_zookeeper::Settings`], the workloads folder), never as variables.
//! (`FLYMC_LOG` is tracing's filter, read where the subscriber is made; the hooks inside node
//! processes read the hook protocol's variables themselves.)

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// What the environment says.
#[derive(Debug, Default)]
pub struct Env {
    /// `$FLYMC_WORKLOADS`: the workloads folder when `--workloads` does not name one.
    pub workloads: Option<PathBuf>,
    pub real: flymc_real::settings::Settings,
    pub zookeeper: flymc_zookeeper::Settings,
}

/// A variable that is set and not empty.
fn var(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

impl Env {
    /// Read the environment; `Err` is one line saying which variable is wrong and how.
    pub fn read() -> Result<Env, String> {
        let settle = match var("FLYMC_SETTLE_TIMEOUT_MS") {
            None => None,
            Some(v) => match v.to_str().and_then(|s| s.parse::<u64>().ok()) {
                Some(ms) if ms > 0 => Some(Duration::from_millis(ms)),
                _ => {
                    return Err(format!(
                        "FLYMC_SETTLE_TIMEOUT_MS={}: give a number of milliseconds above 0 (e.g. 20000), or unset it",
                        v.to_string_lossy()
                    ))
                }
            },
        };
        Ok(Env {
            workloads: var("FLYMC_WORKLOADS").map(PathBuf::from),
            real: flymc_real::settings::Settings {
                cache: var("FLYMC_CACHE").map(PathBuf::from),
                run_root: var(flymc_real::cluster::rundirs::ROOT_ENV).map(PathBuf::from),
                settle_timeout: settle,
            },
            zookeeper: flymc_zookeeper::Settings {
                jar: var("FLYMC_ZOOKEEPER_JAR").map(PathBuf::from),
                image: var("FLYMC_ZOOKEEPER_IMAGE").map(|v| v.to_string_lossy().into_owned()),
            },
        })
    }

    /// Install the settings for the process; the workloads folder is the caller's to use.
    pub fn install(self) -> Option<PathBuf> {
        self.real.install();
        self.zookeeper.install();
        self.workloads
    }
}
