//! A mutation fuzzer for flymc's parsers that runs on stable Rust: cargo-fuzz and cargo-afl
//! need a nightly compiler or an instrumenting toolchain this project does not have, so this
//! one is blind (no coverage feedback). It starts from a seed corpus (`fuzz/corpus/<target>/`
//! and the files the checkout ships), mutates bytes and splices in tokens that reached past
//! the parsers before (deep nesting, long chains, huge node numbers, control characters), and
//! counts as a crash any panic or any output far larger than its input. A crash's input is
//! kept under `fuzz/regressions/<target>/`, which [`replay_regressions`] (a test) feeds back.
//! A stack overflow aborts the process: the input being run is always in
//! `target/fuzz/<target>.current`, so it can be kept by hand.

pub mod mutate;
pub mod targets;

use std::path::{Path, PathBuf};

/// The checkout's root (this crate is `fuzz/` in it).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("fuzz/ is in the checkout")
        .to_path_buf()
}

/// Every file directly in `dir` (none when it does not exist), in name order.
pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

/// Where a target's crashes are kept.
pub fn regressions(target: &str) -> PathBuf {
    root().join("fuzz/regressions").join(target)
}

/// Run every kept crash of every target again: none may crash now.
pub fn replay_regressions() -> Result<usize, String> {
    let mut n = 0;
    for t in targets::ALL {
        let mut runner = targets::Runner::new().map_err(|e| e.to_string())?;
        for f in files_in(&regressions(t.name)) {
            let input = std::fs::read(&f).map_err(|e| format!("{}: {e}", f.display()))?;
            runner
                .run(t, &input)
                .map_err(|why| format!("{}: {why}", f.display()))?;
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_kept_crash_is_handled_now() {
        let n = super::replay_regressions().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            n > 0,
            "the regression folders hold the crashes found so far"
        );
    }
}
