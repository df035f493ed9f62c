//! Node log lines as node state, for systems that only log what goes wrong.
//!
//! After every settle the real target hands each live node's log (its stdout and stderr,
//! [`NodeSlot::log`]) to a [`LogScan`], which reads the bytes written since the last scan and
//! keeps the lines that a pattern matches (a pattern's first capture group only, when it has
//! one, so timestamps stay out of the state). A node's kept lines, over the whole run (the log
//! is appended across reboots), are its variable `logged`, absent while there are none; the
//! generic property `no-error-log` fires on them (see [`flymc_model::exceptions`]). The
//! patterns are the system's ([`crate::RealConfig::log_patterns`]) and the workload's
//! `[logs] patterns`; without any, nothing is read.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use flymc_model::exceptions::{compile, matching_lines, Regex, LOGGED_VAR};
use flymc_model::{GlobalState, Workload};
use serde_json::Value;

use crate::cluster::NodeSlot;

/// How many bytes before the read position a scan compares, to notice a log that is not the
/// one it read before (a new run on the same path, a log put back by a snapshot restore).
const TAIL: usize = 64;

#[derive(Default)]
pub(crate) struct LogScan {
    /// The patterns in force, as given (to notice a change) and compiled.
    given: Vec<String>,
    patterns: Vec<Regex>,
    nodes: Vec<Seen>,
}

/// What was read of one node's log.
#[derive(Default)]
struct Seen {
    path: PathBuf,
    offset: u64,
    /// The last bytes before `offset`.
    tail: Vec<u8>,
    lines: Vec<String>,
}

impl LogScan {
    /// Add every live node's matching log lines to `state` as `logged`.
    pub(crate) fn scan(
        &mut self,
        system: &[String],
        workload: Option<&Workload>,
        slots: &[NodeSlot],
        state: &mut GlobalState,
    ) {
        // `[logs] system = false` in the workload drops the system's patterns.
        let mut given = match workload {
            Some(w) if !w.log_rules().system => Vec::new(),
            _ => system.to_vec(),
        };
        if let Some(w) = workload {
            given.extend(w.log_rules().patterns.iter().cloned());
        }
        if given != self.given {
            // The workload's patterns were checked when it was read; a system's bad one is
            // left out (its unit tests say so).
            self.patterns = compile(&given).unwrap_or_else(|e| {
                tracing::warn!("log patterns: {e}");
                Vec::new()
            });
            self.given = given;
            self.nodes.clear();
        }
        if self.patterns.is_empty() {
            return;
        }
        self.nodes.resize_with(slots.len(), Seen::default);
        for ((slot, seen), node) in slots.iter().zip(&mut self.nodes).zip(&mut state.nodes) {
            if !node.alive {
                continue;
            }
            if let Err(e) = seen.read(&slot.log, &self.patterns) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!("cannot read the log {}: {e}", slot.log.display());
                }
            }
            if !seen.lines.is_empty() {
                let lines = seen.lines.iter().cloned().map(Value::String).collect();
                node.vars.insert(LOGGED_VAR.into(), Value::Array(lines));
            }
        }
    }
}

impl Seen {
    /// Read the complete lines written since the last read.
    fn read(&mut self, path: &Path, patterns: &[Regex]) -> std::io::Result<()> {
        let mut f = File::open(path)?;
        let len = f.metadata()?.len();
        if self.path != path || len < self.offset || !self.same_file(&mut f)? {
            *self = Seen {
                path: path.to_path_buf(),
                ..Seen::default()
            };
        }
        f.seek(SeekFrom::Start(self.offset))?;
        let mut buf = Vec::new();
        f.take(len - self.offset).read_to_end(&mut buf)?;
        let Some(end) = buf.iter().rposition(|&b| b == b'\n') else {
            return Ok(());
        };
        let chunk = &buf[..=end];
        self.lines
            .extend(matching_lines(patterns, &String::from_utf8_lossy(chunk)));
        self.offset += chunk.len() as u64;
        self.tail.extend_from_slice(chunk);
        let cut = self.tail.len().saturating_sub(TAIL);
        self.tail.drain(..cut);
        Ok(())
    }

    /// Whether the bytes before `offset` are still the ones read there.
    fn same_file(&self, f: &mut File) -> std::io::Result<bool> {
        if self.offset == 0 {
            return Ok(true);
        }
        f.seek(SeekFrom::Start(self.offset - self.tail.len() as u64))?;
        let mut now = vec![0; self.tail.len()];
        f.read_exact(&mut now)?;
        Ok(now == self.tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flymc_model::NodeView;
    use std::io::Write;

    fn slot(log: PathBuf) -> NodeSlot {
        NodeSlot {
            node: 0,
            addr: "127.0.0.1:1".parse().unwrap(),
            data_dir: log.with_extension("data"),
            log,
        }
    }

    fn state(alive: bool) -> GlobalState {
        GlobalState::new(
            vec![NodeView {
                alive,
                vars: Default::default(),
            }],
            &[],
        )
    }

    fn logged(s: &GlobalState) -> Option<Vec<String>> {
        s.var(0, LOGGED_VAR)
            .map(|v| serde_json::from_value(v.clone()).unwrap())
    }

    #[test]
    fn new_lines_accumulate_and_a_replaced_log_is_read_from_its_start() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("n0.log");
        let slots = [slot(log.clone())];
        let pats = vec!["ERROR \\d+ (.*)$".to_string()];
        let mut scan = LogScan::default();
        std::fs::write(&log, "INFO 1 up\nERROR 2 disk full\nERROR 3 half").unwrap();
        let mut s = state(true);
        scan.scan(&pats, None, &slots, &mut s);
        assert_eq!(logged(&s), Some(vec!["disk full".to_string()]));
        // The half line is read once complete; earlier lines are not read again.
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(b" a line\nWARN 4 meh\n").unwrap();
        let mut s = state(true);
        scan.scan(&pats, None, &slots, &mut s);
        assert_eq!(
            logged(&s),
            Some(vec!["disk full".to_string(), "half a line".to_string()])
        );
        // A dead node gets no variable; a log that is not the one read restarts the reading.
        let mut s = state(false);
        scan.scan(&pats, None, &slots, &mut s);
        assert_eq!(logged(&s), None);
        std::fs::write(
            &log,
            "INFO 9 other run, as long as the first one was.....\nERROR 10 x\n",
        )
        .unwrap();
        let mut s = state(true);
        scan.scan(&pats, None, &slots, &mut s);
        assert_eq!(logged(&s), Some(vec!["x".to_string()]));
        // Without patterns nothing is added.
        let mut s = state(true);
        scan.scan(&[], None, &slots, &mut s);
        assert_eq!(logged(&s), None);
    }

    #[test]
    fn a_workload_with_logs_system_false_drops_the_system_patterns_and_keeps_its_own() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("n0.log");
        let slots = [slot(log.clone())];
        std::fs::write(&log, "CRITICAL truncating\nERROR disk full\n").unwrap();
        let system = vec!["^CRITICAL (.*)$".to_string()];
        let base = "version = 1\nsystem = \"s\"\nnodes = 1\nmax_events = 5\n[logs]\npatterns = [\"^ERROR (.*)$\"]\n";
        let w = |extra: &str| {
            Workload::parse(std::path::Path::new("w.toml"), &format!("{base}{extra}")).unwrap()
        };
        let mut s = state(true);
        LogScan::default().scan(&system, Some(&w("")), &slots, &mut s);
        assert_eq!(
            logged(&s),
            Some(vec!["truncating".to_string(), "disk full".to_string()])
        );
        let mut s = state(true);
        LogScan::default().scan(&system, Some(&w("system = false\n")), &slots, &mut s);
        assert_eq!(logged(&s), Some(vec!["disk full".to_string()]));
    }
}
