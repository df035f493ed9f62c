//! The Java hook as a build step: its sources (compiled into flymc, so an installed flymc
//! needs no checkout) and the javac/jar steps that turn them into `flymc-hook.jar`. An
//! integration of a Java system calls [`build_agent`] from its setup and compiles its own
//! helpers against the agent's classes with [`javac`].

use std::path::{Path, PathBuf};
use std::process::Command;

/// The agent's sources, by file name (package `org.flymc.hook`).
pub const SOURCES: &[(&str, &str)] = &[
    ("Agent.java", include_str!("src/org/flymc/hook/Agent.java")),
    (
        "Backlog.java",
        include_str!("src/org/flymc/hook/Backlog.java"),
    ),
    (
        "Events.java",
        include_str!("src/org/flymc/hook/Events.java"),
    ),
    (
        "Exceptions.java",
        include_str!("src/org/flymc/hook/Exceptions.java"),
    ),
    ("Expr.java", include_str!("src/org/flymc/hook/Expr.java")),
    ("Hook.java", include_str!("src/org/flymc/hook/Hook.java")),
    ("Json.java", include_str!("src/org/flymc/hook/Json.java")),
    ("Net.java", include_str!("src/org/flymc/hook/Net.java")),
    (
        "Orders.java",
        include_str!("src/org/flymc/hook/Orders.java"),
    ),
    ("Point.java", include_str!("src/org/flymc/hook/Point.java")),
    (
        "Points.java",
        include_str!("src/org/flymc/hook/Points.java"),
    ),
    (
        "Quiescence.java",
        include_str!("src/org/flymc/hook/Quiescence.java"),
    ),
    ("Rests.java", include_str!("src/org/flymc/hook/Rests.java")),
];

/// Debian's ASM 9 (`libasm-java`), which the agent rewrites classes with.
pub const ASM: [&str; 3] = [
    "/usr/share/java/asm.jar",
    "/usr/share/java/asm-commons.jar",
    "/usr/share/java/asm-tree.jar",
];

/// The agent jar's file name.
pub const AGENT_JAR: &str = "flymc-hook.jar";

/// Beside a jar, `JAR.sources`: the digest of the sources it was built from, so a flymc whose
/// built-in sources changed (a newer checkout) sees that the installed jar is stale instead of
/// running an old hook silently.
fn stamp_of(jar: &Path) -> PathBuf {
    let mut name = jar.as_os_str().to_owned();
    name.push(".sources");
    PathBuf::from(name)
}

/// The digest (SHA-256, hex) of `texts` in order: what a jar built from them is stamped with.
pub fn digest(texts: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for t in texts {
        h.update((t.len() as u64).to_le_bytes());
        h.update(t.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The digest of the agent's [`SOURCES`].
pub fn agent_digest() -> String {
    let texts: Vec<&str> = SOURCES.iter().flat_map(|(n, t)| [*n, *t]).collect();
    digest(&texts)
}

/// Record that `jar` was built from sources with digest `digest`.
pub fn write_stamp(jar: &Path, digest: &str) -> Result<(), BuildError> {
    let stamp = stamp_of(jar);
    std::fs::write(&stamp, format!("{digest}\n"))
        .map_err(|e| BuildError(format!("{}: {e}", stamp.display())))
}

/// Whether `jar` exists and was built from sources with digest `digest`: `Err` is the one
/// line to show (what is wrong and `fix`, the command that rebuilds it).
pub fn check_stamp(jar: &Path, digest: &str, fix: &str) -> Result<(), String> {
    if !jar.is_file() {
        return Err(format!("{} is missing: run `{fix}`", jar.display()));
    }
    let recorded = std::fs::read_to_string(stamp_of(jar)).unwrap_or_default();
    if recorded.trim() != digest {
        return Err(format!(
            "{} was built from other sources than this flymc's (an older or newer flymc built it): run `{fix}`",
            jar.display()
        ));
    }
    Ok(())
}

/// A build step that failed, with the one line that says why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BuildError(pub String);

/// Run `cmd`; on failure, the last line it printed on stderr.
pub fn run(cmd: &mut Command, what: &str) -> Result<(), BuildError> {
    tracing::info!("setup: {what}: {cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| BuildError(format!("{what}: cannot run {:?}: {e}", cmd.get_program())))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(BuildError(format!(
            "{what} failed ({}): {last}",
            out.status
        )));
    }
    Ok(())
}

/// `javac -d out ARGS SOURCES`.
pub fn javac(args: &[&str], sources: &[PathBuf], out: &Path, what: &str) -> Result<(), BuildError> {
    std::fs::create_dir_all(out).map_err(|e| BuildError(format!("{}: {e}", out.display())))?;
    let mut c = Command::new("javac");
    c.args(["-nowarn", "-d"]).arg(out).args(args).args(sources);
    run(&mut c, what)
}

/// A jar of `classes` at `dest` (written beside it, then renamed: never half a jar).
pub fn jar(manifest: Option<&Path>, classes: &Path, dest: &Path) -> Result<(), BuildError> {
    let tmp = dest.with_extension("jar.tmp");
    let mut c = Command::new("jar");
    match manifest {
        Some(m) => c.arg("cfm").arg(&tmp).arg(m),
        None => c.arg("cf").arg(&tmp),
    };
    c.arg("-C").arg(classes).arg(".");
    run(&mut c, "jar")?;
    std::fs::rename(&tmp, dest).map_err(|e| BuildError(format!("{}: {e}", dest.display())))
}

/// Build `out/flymc-hook.jar` from [`SOURCES`]; returns the folder of its classes (inside
/// `work`), for compiling an integration's helpers against.
pub fn build_agent(out: &Path, work: &Path) -> Result<PathBuf, BuildError> {
    let io = |e: std::io::Error| BuildError(e.to_string());
    std::fs::create_dir_all(out).map_err(|e| BuildError(format!("{}: {e}", out.display())))?;
    let src = work.join("src/org/flymc/hook");
    std::fs::create_dir_all(&src).map_err(io)?;
    let mut files = Vec::new();
    for (name, text) in SOURCES {
        let f = src.join(name);
        std::fs::write(&f, text).map_err(io)?;
        files.push(f);
    }
    let classes = work.join("hook");
    javac(
        &["-cp", &ASM.join(":")],
        &files,
        &classes,
        "javac (the Java hook)",
    )?;
    let manifest = work.join("MANIFEST.MF");
    std::fs::write(
        &manifest,
        format!(
            "Premain-Class: org.flymc.hook.Agent\nClass-Path: {}\n",
            ASM.join(" ")
        ),
    )
    .map_err(io)?;
    jar(Some(&manifest), &classes, &out.join(AGENT_JAR))?;
    write_stamp(&out.join(AGENT_JAR), &agent_digest())?;
    Ok(classes)
}
