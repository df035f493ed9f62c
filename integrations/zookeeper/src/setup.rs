//! `flymc setup zookeeper [--docker]`: install Debian's ZooKeeper and ASM when absent, build the
//! Java hook and the integration's helper with javac, build the `zookeeper-1419` variant from
//! Debian's source, and (with `--docker`) build the node image from nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use flymc_java_hook::{jar, javac, ASM};
use flymc_real::which;

use super::{class_path, java_dir, jvm_flags, ZOOKEEPER_JAR};

/// The class-data-sharing archive of the node JVMs, in the jar folder.
pub const CDS_ARCHIVE: &str = "zookeeper.jsa";

/// The node image `--backend docker` runs (built by `flymc setup zookeeper --docker`).
pub const IMAGE: &str = "flymc/zookeeper:3.8.0";
/// What the image holds: Debian's Java, ZooKeeper, ASM (for the hook) and SLF4J.
const IMAGE_PACKAGES: &[&str] = &[
    "openjdk-17-jre-headless",
    "libzookeeper-java",
    "libasm-java",
    "libslf4j-java",
];

const ZK_HELPER: &str = include_str!("../java/org/apache/zookeeper/server/quorum/FlymcZk.java");
/// 3.8.0's `totalOrderPredicate` (ZOOKEEPER-1419's fix), to recognise the source.
const PREDICATE_FIXED: &str = "return ((newEpoch > curEpoch)
                || ((newEpoch == curEpoch)
                    && ((newZxid > curZxid)
                        || ((newZxid == curZxid)
                            && (newId > curId)))));";

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub String);

impl From<flymc_java_hook::BuildError> for SetupError {
    fn from(e: flymc_java_hook::BuildError) -> SetupError {
        SetupError(e.0)
    }
}

fn err<T>(m: impl Into<String>) -> Result<T, SetupError> {
    Err(SetupError(m.into()))
}

fn run(cmd: &mut Command, what: &str) -> Result<(), SetupError> {
    Ok(flymc_java_hook::run(cmd, what)?)
}

fn is_root() -> bool {
    // SAFETY: plain syscall.
    unsafe { libc::geteuid() == 0 }
}

/// apt-get install, when we may; otherwise the one line that says what to run.
fn apt_install(packages: &[&str], say: &mut dyn FnMut(&str)) -> Result<(), SetupError> {
    if !is_root() || which("apt-get").is_none() {
        return err(format!(
            "missing Debian packages; run as root: apt-get install -y {}",
            packages.join(" ")
        ));
    }
    say(&format!("installing {} (apt-get)", packages.join(" ")));
    let _ = Command::new("apt-get").arg("update").output();
    run(
        Command::new("apt-get")
            .args(["install", "-y", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive"),
        "apt-get install",
    )
}

/// Install what is missing, build the jars and the variant; with `docker`, the image too.
pub fn setup(docker: bool, say: &mut dyn FnMut(&str)) -> Result<(), SetupError> {
    let mut missing = Vec::new();
    if which("java").is_none() || which("javac").is_none() {
        missing.push("default-jdk-headless");
    }
    if !Path::new(ZOOKEEPER_JAR).is_file() {
        missing.push("zookeeper");
    }
    if ASM.iter().any(|j| !Path::new(j).is_file()) {
        missing.push("libasm-java");
    }
    if !missing.is_empty() {
        apt_install(&missing, say)?;
    } else {
        say("Java, ZooKeeper 3.8.0 and ASM are installed");
    }
    build_jars(say)?;
    if let Err(e) = build_cds_archive(say) {
        say(&e.to_string());
    }
    build_variant_1419(say)?;
    if docker {
        flymc_real::cluster::docker::build_image(IMAGE, IMAGE_PACKAGES, say)
            .map_err(|e| SetupError(e.to_string()))?;
    }
    Ok(())
}

/// The ZooKeeper helper's jar (`FlymcZk`, compiled against the agent).
pub const HELPER_JAR: &str = "flymc-zk.jar";

/// What the helper jar is stamped with: its source and the agent's it was compiled against.
pub fn helper_digest() -> String {
    flymc_java_hook::digest(&[ZK_HELPER, &flymc_java_hook::agent_digest()])
}

/// flymc-hook.jar (the agent) and flymc-zk.jar (the ZooKeeper helper), from the sources built
/// into flymc.
pub fn build_jars(say: &mut dyn FnMut(&str)) -> Result<(), SetupError> {
    let out = java_dir();
    std::fs::create_dir_all(&out).map_err(|e| SetupError(format!("{}: {e}", out.display())))?;
    let tmp = tempfile::tempdir().map_err(|e| SetupError(format!("temporary directory: {e}")))?;
    let classes = flymc_java_hook::build_agent(&out, tmp.path())?;
    let zsrc = tmp.path().join("zsrc/org/apache/zookeeper/server/quorum");
    std::fs::create_dir_all(&zsrc).map_err(|e| SetupError(e.to_string()))?;
    let helper = zsrc.join("FlymcZk.java");
    std::fs::write(&helper, ZK_HELPER).map_err(|e| SetupError(e.to_string()))?;
    let zclasses = tmp.path().join("zk");
    javac(
        &["-cp", &format!("{ZOOKEEPER_JAR}:{}", classes.display())],
        &[helper],
        &zclasses,
        "javac (the ZooKeeper helper)",
    )?;
    jar(None, &zclasses, &out.join(HELPER_JAR))?;
    flymc_java_hook::write_stamp(&out.join(HELPER_JAR), &helper_digest())?;
    say(&format!("built the Java hook in {}", out.display()));
    Ok(())
}

/// A class-data-sharing archive of what a node's JVM loads until its first election round
/// (JDK 17 dynamic CDS: `-XX:ArchiveClassesAtExit`), so nodes start from mapped classes instead
/// of parsing and verifying them on every start. Dumped from one node of a three-node quorum
/// (the others never start: it stays LOOKING), ended once it has handled its own notification.
/// The archive records the jars it was made from; rebuilt jars make the JVM ignore it until
/// setup runs again.
pub fn build_cds_archive(say: &mut dyn FnMut(&str)) -> Result<(), SetupError> {
    let io = |what: &str, e: std::io::Error| SetupError(format!("CDS archive: {what}: {e}"));
    let out = java_dir().join(CDS_ARCHIVE);
    let partial = out.with_extension("jsa.tmp");
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&partial);
    let tmp = tempfile::tempdir().map_err(|e| io("temporary directory", e))?;
    let data = tmp.path().join("n0");
    std::fs::create_dir(&data).map_err(|e| io("data directory", e))?;
    let port = || -> Result<u16, SetupError> {
        std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| io("a free port", e))
    };
    let mut cfg = format!(
        "tickTime=10000000\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={}\n\
         clientPortAddress=127.0.0.1\nadmin.enableServer=false\nstandaloneEnabled=false\n\
         reconfigEnabled=false\n",
        data.display(),
        port()?
    );
    for i in 1..=3 {
        cfg += &format!("server.{i}=127.0.0.1:{}:{}\n", port()?, port()?);
    }
    std::fs::write(data.join("zoo.cfg"), cfg).map_err(|e| io("zoo.cfg", e))?;
    std::fs::write(data.join("myid"), "1\n").map_err(|e| io("myid", e))?;
    let log_path = tmp.path().join("node.log");
    let log = std::fs::File::create(&log_path).map_err(|e| io("node log", e))?;
    let java = which("java").unwrap_or_else(|| PathBuf::from("java"));
    let mut child = Command::new(java)
        .arg(format!("-XX:ArchiveClassesAtExit={}", partial.display()))
        .args(jvm_flags("info"))
        .arg("-cp")
        .arg(class_path("3.8.0"))
        .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
        .arg(data.join("zoo.cfg"))
        .stdout(log.try_clone().map_err(|e| io("node log", e))?)
        .stderr(log)
        .spawn()
        .map_err(|e| io("cannot start java", e))?;
    // Its own notification has been handled: election is under way, its classes are loaded.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let started = loop {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        if text.contains("Notification: my state:LOOKING") {
            break true;
        }
        if std::time::Instant::now() > deadline || child.try_wait().ok().flatten().is_some() {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_millis(50)); // polling the node's log
    };
    // SIGTERM: the JVM's orderly exit writes the archive.
    // SAFETY: plain syscall on our own child.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let _ = child.wait();
    if !started || !partial.is_file() {
        let _ = std::fs::remove_file(&partial);
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return err(format!(
            "CDS archive: the ZooKeeper node did not start an election (last line of its log: {last}); nodes start without it"
        ));
    }
    std::fs::rename(&partial, &out).map_err(|e| io("rename", e))?;
    say(&format!(
        "built the class-data-sharing archive {}",
        out.display()
    ));
    Ok(())
}

/// Make sure apt can fetch sources: a deb-src twin of the machine's own deb entries.
fn enable_deb_src() -> Result<(), SetupError> {
    let dir = Path::new("/etc/apt/sources.list.d");
    let has_src = |text: &str| {
        text.lines().any(|l| {
            l.trim_start().starts_with("deb-src")
                || l.contains("Types: deb-src")
                || l.contains("Types: deb deb-src")
        })
    };
    let mut deb822 = String::new();
    let mut lists = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        if has_src(&text) {
            return Ok(());
        }
        if p.extension().is_some_and(|e| e == "sources") {
            deb822 += &text.replace("Types: deb\n", "Types: deb-src\n");
            deb822.push('\n');
        }
    }
    let main = std::fs::read_to_string("/etc/apt/sources.list").unwrap_or_default();
    if has_src(&main) {
        return Ok(());
    }
    for l in main.lines() {
        if let Some(rest) = l.trim_start().strip_prefix("deb ") {
            lists += &format!("deb-src {rest}\n");
        }
    }
    if !deb822.trim().is_empty() {
        std::fs::write(dir.join("flymc-src.sources"), deb822)
            .map_err(|e| SetupError(format!("cannot add a deb-src entry: {e}")))?;
    } else if !lists.is_empty() {
        std::fs::write(dir.join("flymc-src.list"), lists)
            .map_err(|e| SetupError(format!("cannot add a deb-src entry: {e}")))?;
    } else {
        return err("no apt sources found to derive a deb-src entry from");
    }
    run(Command::new("apt-get").arg("update"), "apt-get update")
}

/// Where setup keeps ZooKeeper 3.8.0's source from `apt-get source zookeeper`: the server's
/// Java tree under it, which variants patch and the analyzer reads.
pub fn kept_source() -> PathBuf {
    crate::cache_dir().join("src/zookeeper-3.8.0")
}

/// The server's Java sources, relative to the source root (and in patches, after `a/`).
pub const SERVER_JAVA: &str = "zookeeper-server/src/main/java";

/// The quorum package of the kept source (the analyzer's input for
/// `integrations/zookeeper/sets.json`).
pub fn kept_quorum_source() -> PathBuf {
    kept_source()
        .join(SERVER_JAVA)
        .join("org/apache/zookeeper/server/quorum")
}

/// ZOOKEEPER-1419 as a patch on 3.8.0: the pre-fix `totalOrderPredicate`.
pub const PATCH_1419: &str = include_str!("../variants/zookeeper-1419.diff");

/// Fetch Debian's ZooKeeper source once and keep the server's Java tree; returns the root.
fn ensure_source(say: &mut dyn FnMut(&str)) -> Result<PathBuf, SetupError> {
    let root = kept_source();
    let java = root.join(SERVER_JAVA);
    let whole = [
        "org/apache/zookeeper/server/ZooKeeperServer.java",
        "org/apache/zookeeper/server/quorum/FastLeaderElection.java",
    ];
    if whole.iter().all(|f| java.join(f).is_file()) {
        return Ok(root);
    }
    if which("dpkg-source").is_none() {
        apt_install(&["dpkg-dev"], say)?;
    }
    if !is_root() {
        return err("ZooKeeper's source comes from `apt-get source zookeeper`: run `flymc setup zookeeper` as root once");
    }
    enable_deb_src()?;
    let tmp = tempfile::tempdir().map_err(|e| SetupError(format!("temporary directory: {e}")))?;
    say("fetching Debian's ZooKeeper source (apt-get source zookeeper)");
    run(
        Command::new("apt-get")
            .args(["source", "-qq", "zookeeper"])
            .current_dir(tmp.path()),
        "apt-get source zookeeper",
    )?;
    let src = std::fs::read_dir(tmp.path())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join(SERVER_JAVA))
        .find(|p| p.join(whole[1]).is_file())
        .ok_or_else(|| {
            SetupError("apt-get source zookeeper gave no FastLeaderElection.java".into())
        })?;
    let text =
        std::fs::read_to_string(src.join(whole[1])).map_err(|e| SetupError(e.to_string()))?;
    if !text.contains(PREDICATE_FIXED) {
        return err("FastLeaderElection.java does not have 3.8.0's totalOrderPredicate: is this ZooKeeper 3.8.0?");
    }
    copy_java_files(&src, &java)?;
    Ok(root)
}

/// A variant's name: a folder name (letters, digits, `.`, `-`, `_`, starting with a letter or
/// digit, so never a build's own `.build-*` folder) that is not the unmodified build's.
fn check_variant_name(name: &str) -> Result<(), SetupError> {
    let ok = name.len() <= 100
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name != "3.8.0";
    if ok {
        Ok(())
    } else {
        err(format!("variant name `{name}`: use letters, digits, `-`, `_` and `.`, starting with a letter or digit, at most 100 (and not `3.8.0`, the unmodified build)"))
    }
}

/// The largest patch file setup reads (the shipped one is 1 KB).
const MAX_PATCH_BYTES: u64 = flymc_model::bounded::MAX_CONFIG_BYTES;
/// The largest source file a patch may change (FastLeaderElection.java is 50 KB).
const MAX_SOURCE_BYTES: u64 = flymc_model::bounded::MAX_CONFIG_BYTES;

/// The patch's files, each checked: a Java file under [`SERVER_JAVA`], its name relative with
/// no `..` (paths as in ZooKeeper's repository, `a/` and `b/` prefixed, as `patch -p1` reads).
fn read_patch(patch: &Path) -> Result<(String, Vec<crate::patch::FilePatch>), SetupError> {
    let shown = patch.display();
    let diff = flymc_model::bounded::read_text(patch, MAX_PATCH_BYTES)
        .map_err(|e| SetupError(format!("cannot read the patch {shown}: {e}")))?;
    let files = crate::patch::parse(&diff)
        .map_err(|e| SetupError(format!("{shown} is not a patch flymc applies: {e}")))?;
    if let Some(f) = files
        .iter()
        .find(|f| !f.path.starts_with(&format!("{SERVER_JAVA}/")) || !f.path.ends_with(".java"))
    {
        return err(format!("{shown} changes {}: a variant patches Java files under {SERVER_JAVA}/ (paths as in ZooKeeper's repository, `a/` and `b/` prefixed)", f.path));
    }
    Ok((diff, files))
}

/// `flymc setup zookeeper --variant NAME --patch FILE.diff`: apply a unified diff (paths as
/// in ZooKeeper's repository, `patch -p1`) to 3.8.0's source, compile the Java files it
/// changes against the Debian jars, and keep their classes where `--variant NAME` puts them
/// first on the class path. Returns the variant's folder.
///
/// The name and every file the patch names are checked before anything else; the patch is
/// applied in memory (the kept source is only read) and compiled in a folder of its own; the
/// variant replaces one of its name only once it is built.
pub fn build_variant(
    name: &str,
    patch: &Path,
    say: &mut dyn FnMut(&str),
) -> Result<PathBuf, SetupError> {
    check_variant_name(name)?;
    let shown = patch.display().to_string();
    let (diff, files) = read_patch(patch)?;
    let src = ensure_source(say)?;
    let patched = crate::patch::apply(&src, &files, MAX_SOURCE_BYTES).map_err(|e| {
        SetupError(format!(
            "{shown} does not apply to ZooKeeper 3.8.0's source: {e}"
        ))
    })?;
    let tmp = tempfile::tempdir().map_err(|e| SetupError(format!("temporary directory: {e}")))?;
    let io = |e: std::io::Error| SetupError(format!("variant {name}: {e}"));
    for (f, text) in &patched {
        // `f` is checked: plain components under SERVER_JAVA, so inside `tmp`.
        let to = tmp.path().join(f);
        std::fs::create_dir_all(to.parent().unwrap_or(tmp.path())).map_err(io)?;
        std::fs::write(&to, text).map_err(io)?;
    }
    let variants = crate::variant_dir(name)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let dir = install(&variants, name, |fresh| {
        let classes = fresh.join("classes");
        std::fs::create_dir_all(&classes).map_err(io)?;
        compile(name, tmp.path(), patched.keys(), &classes)?;
        std::fs::write(fresh.join("patch.diff"), &diff).map_err(io)
    })?;
    say(&format!(
        "built the {name} variant ({} patched files) in {}",
        patched.len(),
        dir.display()
    ));
    Ok(dir)
}

/// javac the patched `files` (under `tree`) against the Debian jars into `classes`.
fn compile<'a>(
    name: &str,
    tree: &Path,
    files: impl Iterator<Item = &'a String>,
    classes: &Path,
) -> Result<(), SetupError> {
    let mut javac = Command::new("javac");
    javac
        .args(["-nowarn", "-implicit:none", "-d"])
        .arg(classes)
        .args(["-cp", ZOOKEEPER_JAR, "-sourcepath"])
        .arg(tree.join(SERVER_JAVA))
        .args(files.map(|f| tree.join(f)));
    let out = javac
        .output()
        .map_err(|e| SetupError(format!("cannot run javac: {e}")))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        let first = text
            .lines()
            .find(|l| l.contains(": error:"))
            .or_else(|| text.lines().find(|l| !l.trim().is_empty()))
            .unwrap_or("javac failed");
        let first = first.replace(&format!("{}/", tree.display()), "");
        return err(format!(
            "variant {name}: the patched sources do not compile: {first}"
        ));
    }
    Ok(())
}

/// Build variant `name` with `fill` into a fresh folder of its own in `variants` (a
/// `.build-*` temporary folder, which no variant name can be), then put it in place of
/// `variants/name`: a build that fails leaves the old variant, and no other variant is
/// touched.
fn install(
    variants: &Path,
    name: &str,
    fill: impl FnOnce(&Path) -> Result<(), SetupError>,
) -> Result<PathBuf, SetupError> {
    let io = |e: std::io::Error| SetupError(format!("variant {name}: {e}"));
    std::fs::create_dir_all(variants).map_err(io)?;
    let staging = tempfile::Builder::new()
        .prefix(".build-")
        .tempdir_in(variants)
        .map_err(io)?;
    let fresh = staging.path().join("variant");
    std::fs::create_dir(&fresh).map_err(io)?;
    fill(&fresh)?;
    let dir = variants.join(name);
    let previous = staging.path().join("previous");
    match std::fs::rename(&dir, &previous) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    if let Err(e) = std::fs::rename(&fresh, &dir) {
        let _ = std::fs::rename(&previous, &dir);
        return Err(io(e));
    }
    // Dropping `staging` removes the previous build.
    Ok(dir)
}

fn copy_java_files(from: &Path, to: &Path) -> Result<(), SetupError> {
    let fail = |e: std::io::Error| {
        SetupError(format!(
            "cannot keep the quorum sources in {}: {e}",
            to.display()
        ))
    };
    std::fs::create_dir_all(to).map_err(fail)?;
    for entry in std::fs::read_dir(from).map_err(fail)? {
        let p = entry.map_err(fail)?.path();
        let Some(name) = p.file_name() else { continue };
        if p.is_dir() {
            // Subpackages (auth, flexible, ...) are part of what the analyzer reads.
            copy_java_files(&p, &to.join(name))?;
        } else if p.extension().is_some_and(|x| x == "java") {
            std::fs::copy(&p, to.join(name)).map_err(fail)?;
        }
    }
    Ok(())
}

/// ZOOKEEPER-1419: the variant built from the shipped patch (`variants/zookeeper-1419.diff`),
/// unless it is built from that patch already.
pub fn build_variant_1419(say: &mut dyn FnMut(&str)) -> Result<(), SetupError> {
    let dir = crate::variant_dir("zookeeper-1419");
    let built = std::fs::read_to_string(dir.join("patch.diff")).is_ok_and(|t| t == PATCH_1419);
    if built
        && dir.join("classes").is_dir()
        && kept_quorum_source()
            .join("FastLeaderElection.java")
            .is_file()
    {
        say("the zookeeper-1419 variant is built");
        return Ok(());
    }
    let tmp = tempfile::tempdir().map_err(|e| SetupError(format!("temporary directory: {e}")))?;
    let patch = tmp.path().join("zookeeper-1419.diff");
    std::fs::write(&patch, PATCH_1419).map_err(|e| SetupError(e.to_string()))?;
    build_variant("zookeeper-1419", &patch, say)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(variants: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(variants.join(name)).unwrap();
        std::fs::write(variants.join(name).join("patch.diff"), text).unwrap();
    }

    fn text(variants: &Path, name: &str) -> String {
        std::fs::read_to_string(variants.join(name).join("patch.diff")).unwrap_or_default()
    }

    /// Issue 43: building `keep` deleted `keep.new` (the build's own scratch name), and a
    /// failed rebuild of `old.new` destroyed it.
    #[test]
    fn building_a_variant_touches_no_other_and_a_failed_build_keeps_the_old_one() {
        let d = tempfile::tempdir().unwrap();
        let variants = d.path();
        variant(variants, "keep.new", "keep.new's");
        variant(variants, "old.new", "old.new's");
        let built = |fresh: &Path| -> Result<(), SetupError> {
            std::fs::write(fresh.join("patch.diff"), "new").map_err(|e| SetupError(e.to_string()))
        };
        install(variants, "keep", built).unwrap();
        assert_eq!(text(variants, "keep"), "new");
        assert_eq!(text(variants, "keep.new"), "keep.new's");
        let failed = install(variants, "old.new", |_| err("javac failed"));
        assert_eq!(failed.unwrap_err().0, "javac failed");
        assert_eq!(text(variants, "old.new"), "old.new's");
        install(variants, "old.new", built).unwrap();
        assert_eq!(text(variants, "old.new"), "new");
        // Nothing of the builds is left beside the variants.
        let mut left: Vec<String> = std::fs::read_dir(variants)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["keep", "keep.new", "old.new"]);
    }

    #[test]
    fn variant_names_are_plain_folder_names() {
        for good in ["zookeeper-1419", "keep.new", "a", "v2_fix"] {
            assert!(check_variant_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            ".build-x",
            "-x",
            "_x",
            "..",
            "a/b",
            "3.8.0",
            "a b",
            &"x".repeat(101),
        ] {
            assert!(check_variant_name(bad).is_err(), "{bad}");
        }
    }
}
