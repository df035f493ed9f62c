//! The hook's quiet check in a plain JVM (tests/probes/QuietProbe.java): what a check sees while
//! the kernel holds a connection no thread has accepted yet.

use std::process::Command;

#[test]
fn a_connection_queued_for_a_resting_acceptor_keeps_the_node_busy() {
    let work = tempfile::tempdir().expect("a temporary folder");
    let classes = flymc_java_hook::build_agent(&work.path().join("out"), work.path())
        .expect("the hook builds (javac and Debian's libasm-java; `bash .ci/run` installs both)");
    let probe = work.path().join("probe");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/probes/QuietProbe.java");
    let cp = format!("{}:{}", classes.display(), flymc_java_hook::ASM.join(":"));
    flymc_java_hook::javac(&["-cp", &cp], &[src], &probe, "javac (the probe)")
        .expect("the probe compiles against the hook");
    let out = Command::new("java")
        .args([
            "--add-opens",
            "java.base/java.net=ALL-UNNAMED",
            "--add-opens",
            "java.base/sun.nio.ch=ALL-UNNAMED",
            "-cp",
        ])
        .arg(format!("{cp}:{}", probe.display()))
        .arg("org.flymc.hook.QuietProbe")
        .output()
        .expect("java runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("ok"), "{text}");
}
