//! What the cross-crate tests share: the node programs they start, which are packages of
//! their own (cargo builds another package's binaries only when asked).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The path of `bin` from workspace package `package`, built (or found fresh) by cargo in the
/// profile of this test, beside the `flymc` executable under test.
pub fn node_program(package: &str, bin: &str) -> String {
    static BUILT: OnceLock<std::sync::Mutex<Vec<String>>> = OnceLock::new();
    let built = BUILT.get_or_init(Default::default);
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    let dir = PathBuf::from(env!("CARGO_BIN_EXE_flymc"))
        .parent()
        .expect("the flymc executable has a folder")
        .to_path_buf();
    if !built.iter().any(|b| b == bin) {
        let mut c = Command::new(env!("CARGO"));
        c.args(["build", "--quiet", "-p", package, "--bin", bin])
            .arg("--manifest-path")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml"));
        if !cfg!(debug_assertions) {
            c.arg("--release");
        }
        let status = c.status().expect("cargo runs");
        assert!(
            status.success(),
            "cargo build -p {package} --bin {bin} failed"
        );
        built.push(bin.to_string());
    }
    dir.join(bin).display().to_string()
}
