//! `flymc setup criu`: build CRIU (4.1 or later; Debian bookworm's 3.17 fails `criu check` on
//! kernels with a `[vvar_vclock]` mapping) from Debian trixie's source into flymc's cache.
//!
//! The trixie source index comes from a deb-src entry derived from the machine's own apt sources
//! (its base suite's entries, with the suite renamed), kept in a private apt state: the system's
//! sources, and what `apt-get source` fetches for other setups, do not change. Only upstream's
//! tarball is fetched, checked against the index's SHA-256, and built with upstream's Makefile
//! (`make criu`) against bookworm's libraries.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use sha2::{Digest, Sha256};

use super::{Criu, SnapshotError};

/// What `make criu` needs, from the distribution.
const BUILD_DEPS: &[&str] = &[
    "gcc",
    "make",
    "libc6-dev",
    "pkg-config",
    "xz-utils",
    "libbsd-dev",
    "libcap-dev",
    "libgnutls28-dev",
    "libnet1-dev",
    "libnftables-dev",
    "libnl-3-dev",
    "libprotobuf-c-dev",
    // google/protobuf/descriptor.proto, which CRIU's images import.
    "libprotobuf-dev",
    "protobuf-c-compiler",
    "protobuf-compiler",
    "uuid-dev",
];
/// The Debian release whose source package is built.
const SUITE: &str = "trixie";
/// The oldest CRIU that knows the kernels' `[vvar_vclock]` mapping.
const MIN_VERSION: (u32, u32) = (4, 1);

/// Linux 6.16 refuses SO_PASSCRED and SO_PASSSEC on sockets other than AF_UNIX, AF_NETLINK and
/// AF_BLUETOOTH, and CRIU before 4.2 fails to dump any TCP socket there ("Can't get 1:16 opt:
/// Operation not supported"). CRIU 4.2 fixed it (upstream commit 4b7398595, which passes the
/// family down); the same check, reading the family with SO_DOMAIN, in `dump_socket_opts`.
const PASSCRED_DUMP: &str = "\tret |= dump_opt(sk, SOL_SOCKET, SO_PASSCRED, &val);
\tsoe->has_so_passcred = true;
\tsoe->so_passcred = val ? true : false;

\tret |= dump_opt(sk, SOL_SOCKET, SO_PASSSEC, &val);
\tsoe->has_so_passsec = true;
\tsoe->so_passsec = val ? true : false;
";
const PASSCRED_DUMP_FIXED: &str =
    "\t/* flymc: as CRIU 4.2 (4b7398595), for Linux 6.16 and later. */
\tval = 0;
\t{
\t\tsocklen_t flen = sizeof(val);
\t\tif (getsockopt(sk, SOL_SOCKET, SO_DOMAIN, &val, &flen) < 0)
\t\t\tval = AF_UNSPEC;
\t}
\tif (val == AF_UNIX || val == AF_NETLINK) {
\t\tret |= dump_opt(sk, SOL_SOCKET, SO_PASSCRED, &val);
\t\tsoe->has_so_passcred = true;
\t\tsoe->so_passcred = val ? true : false;

\t\tret |= dump_opt(sk, SOL_SOCKET, SO_PASSSEC, &val);
\t\tsoe->has_so_passsec = true;
\t\tsoe->so_passsec = val ? true : false;
\t}
";

fn err<T>(m: impl Into<String>) -> Result<T, SnapshotError> {
    Err(SnapshotError::Failed(m.into()))
}

/// Build and install CRIU unless the installed one passes `criu check`.
pub fn setup(say: &mut dyn FnMut(&str)) -> Result<(), SnapshotError> {
    let bin = Criu::path();
    let installed = Criu::at(&bin);
    if bin.is_file() && installed.check().is_ok() {
        let v = installed.version()?;
        say(&format!(
            "CRIU {v} is built ({}) and `criu check` passes",
            bin.display()
        ));
        return Ok(());
    }
    // SAFETY: plain syscall.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/usr/bin/apt-get").is_file() {
        return err("building CRIU needs apt-get and root, and CRIU itself needs root: run `flymc setup criu` as root on Debian");
    }
    install_missing(BUILD_DEPS, say)?;
    let work = tempfile::Builder::new()
        .prefix("flymc-criu-build-")
        .tempdir()
        .map_err(|e| SnapshotError::Failed(format!("temporary directory: {e}")))?;
    let apt = PrivateApt::new(work.path())?;
    say(&format!(
        "reading Debian {SUITE}'s source index (a private apt state; the system's sources stay as they are)"
    ));
    apt.update()?;
    let orig = apt.orig_tarball("criu")?;
    let version = orig.version()?;
    say(&format!("fetching {} ({} bytes)", orig.name, orig.size));
    let tarball = work.path().join(&orig.name);
    apt.download(&orig, &tarball)?;
    verify_sha256(&tarball, &orig.sha256)?;
    let src = unpack(&tarball, work.path(), &format!("criu-{version}"))?;
    if patch_passcred(&src)? {
        say("applied CRIU 4.2's fix for TCP sockets on Linux 6.16 and later");
    } else if !version_at_least(&version, (4, 2)) {
        return err(format!(
            "CRIU {version}'s criu/sockets.c is not what flymc patches for Linux 6.16 (SO_PASSCRED)"
        ));
    }
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    say(&format!("building CRIU {version} (make -j{jobs} criu)"));
    let started = Instant::now();
    let dest = bin
        .parent()
        .expect("the CRIU path has a folder")
        .to_path_buf();
    fs::create_dir_all(&dest)
        .map_err(|e| SnapshotError::Failed(format!("cannot create {}: {e}", dest.display())))?;
    make(&src, jobs, &dest.join("build.log"))?;
    install(&src.join("criu/criu"), &bin)?;
    say(&format!(
        "built CRIU {version} in {:.0} s into {}",
        started.elapsed().as_secs_f64(),
        bin.display()
    ));
    Criu::at(&bin).check()?;
    say("`criu check` passes");
    Ok(())
}

fn run(cmd: &mut Command, what: &str) -> Result<String, SnapshotError> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| SnapshotError::Failed(format!("cannot run {what}: {e}")))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    err(format!("{what} failed ({}): {}", out.status, last.trim()))
}

fn installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

fn install_missing(packages: &[&str], say: &mut dyn FnMut(&str)) -> Result<(), SnapshotError> {
    let missing: Vec<&str> = packages.iter().copied().filter(|p| !installed(p)).collect();
    if missing.is_empty() {
        say("CRIU's build dependencies are installed");
        return Ok(());
    }
    say(&format!("installing {} (apt-get)", missing.join(" ")));
    let _ = Command::new("apt-get").args(["update", "-qq"]).output();
    run(
        Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive"),
        "apt-get install",
    )
    .map(|_| ())
}

/// apt with its own sources, lists and caches under a work directory.
struct PrivateApt {
    options: Vec<String>,
}

/// One file `apt-get --print-uris source` lists.
#[derive(Debug, PartialEq)]
struct SourceFile {
    uri: String,
    name: String,
    size: u64,
    sha256: String,
}

impl PrivateApt {
    fn new(work: &Path) -> Result<PrivateApt, SnapshotError> {
        let codename = os_codename()?;
        let mut own = Vec::new();
        let parts = Path::new("/etc/apt/sources.list.d");
        let mut names: Vec<PathBuf> = fs::read_dir(parts)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        names.sort();
        names.push(PathBuf::from("/etc/apt/sources.list"));
        for p in names {
            if let Ok(text) = fs::read_to_string(&p) {
                own.push((p.display().to_string(), text));
            }
        }
        let sources = derive_sources(&own, &codename, SUITE);
        if sources.is_empty() {
            return err(format!(
                "no apt source for Debian {codename} to derive a {SUITE} deb-src entry from (in /etc/apt/sources.list and /etc/apt/sources.list.d)"
            ));
        }
        let dir = work.join("apt");
        for d in ["lists/partial", "cache/archives/partial", "sources.list.d"] {
            fs::create_dir_all(dir.join(d))
                .map_err(|e| SnapshotError::Failed(format!("{}: {e}", dir.display())))?;
        }
        let list = dir.join(format!("{SUITE}-src.sources"));
        fs::write(&list, sources)
            .map_err(|e| SnapshotError::Failed(format!("{}: {e}", list.display())))?;
        let opt = |k: &str, v: &Path| format!("{k}={}", v.display());
        let options = vec![
            opt("Dir::Etc::SourceList", &list),
            opt("Dir::Etc::SourceParts", &dir.join("sources.list.d")),
            opt("Dir::State::Lists", &dir.join("lists")),
            opt("Dir::Cache", &dir.join("cache")),
            // The work directory is private to root; apt's download user could not write it.
            "APT::Sandbox::User=root".to_string(),
        ];
        Ok(PrivateApt { options })
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        for o in &self.options {
            c.arg("-o").arg(o);
        }
        c
    }

    fn update(&self) -> Result<(), SnapshotError> {
        run(
            self.command("apt-get").args(["update", "-qq"]),
            &format!("apt-get update (Debian {SUITE} sources)"),
        )
        .map(|_| ())
    }

    /// The upstream tarball of `package`'s source, as the index lists it.
    fn orig_tarball(&self, package: &str) -> Result<SourceFile, SnapshotError> {
        let out = run(
            self.command("apt-get")
                .args(["--print-uris", "-qq", "source", package]),
            &format!("apt-get source --print-uris {package}"),
        )?;
        parse_print_uris(&out)
            .into_iter()
            .find(|f| f.name.contains(".orig.tar."))
            .ok_or_else(|| {
                SnapshotError::Failed(format!(
                    "Debian {SUITE}'s {package} source lists no upstream tarball with a SHA-256"
                ))
            })
    }

    fn download(&self, f: &SourceFile, to: &Path) -> Result<(), SnapshotError> {
        run(
            self.command("/usr/lib/apt/apt-helper")
                .arg("download-file")
                .arg(&f.uri)
                .arg(to)
                .arg(format!("SHA256:{}", f.sha256)),
            &format!("downloading {}", f.name),
        )
        .map(|_| ())
    }
}

impl SourceFile {
    /// `criu_4.1.1.orig.tar.xz` → `4.1.1`, refused below [`MIN_VERSION`].
    fn version(&self) -> Result<String, SnapshotError> {
        let v = self
            .name
            .split_once('_')
            .and_then(|(_, rest)| rest.split_once(".orig.tar."))
            .map(|(v, _)| v.to_string())
            .ok_or_else(|| SnapshotError::Failed(format!("no version in {}", self.name)))?;
        if !version_at_least(&v, MIN_VERSION) {
            return err(format!(
                "Debian {SUITE} has CRIU {v}; flymc needs {}.{} or later",
                MIN_VERSION.0, MIN_VERSION.1
            ));
        }
        Ok(v)
    }
}

/// `4.1.1` is at least (4, 1).
fn version_at_least(v: &str, min: (u32, u32)) -> bool {
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= min
}

/// `'URI' NAME SIZE SHA256:HEX` lines.
fn parse_print_uris(out: &str) -> Vec<SourceFile> {
    out.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix('\'')?;
            let (uri, rest) = rest.split_once('\'')?;
            let mut f = rest.split_whitespace();
            let name = f.next()?.to_string();
            let size = f.next()?.parse().ok()?;
            let sha256 = f.next()?.strip_prefix("SHA256:")?.to_lowercase();
            Some(SourceFile {
                uri: uri.to_string(),
                name,
                size,
                sha256,
            })
        })
        .collect()
}

fn os_codename() -> Result<String, SnapshotError> {
    let text = fs::read_to_string("/etc/os-release").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .map(|v| v.trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            SnapshotError::Failed(
                "/etc/os-release names no VERSION_CODENAME: is this Debian?".into(),
            )
        })
}

/// deb822 `deb-src` stanzas for `suite` from the machine's entries for its own release
/// `codename` (not its -updates or -security suites), in either apt format: same archive,
/// components and key, nothing written that the machine does not already use.
fn derive_sources(files: &[(String, String)], codename: &str, suite: &str) -> String {
    let mut stanzas: Vec<String> = Vec::new();
    let mut add = |uris: &str, comps: &str, signed_by: Option<&str>| {
        let mut s = format!("Types: deb-src\nURIs: {uris}\nSuites: {suite}\nComponents: {comps}\n");
        if let Some(k) = signed_by {
            s += &format!("Signed-By: {k}\n");
        }
        if !stanzas.contains(&s) {
            stanzas.push(s);
        }
    };
    for (name, text) in files {
        if name.ends_with(".sources") {
            for st in deb822_stanzas(text) {
                let get = |k: &str| {
                    st.iter()
                        .find(|(f, _)| f.eq_ignore_ascii_case(k))
                        .map(|(_, v)| v.as_str())
                };
                let types = get("Types").unwrap_or("");
                let suites = get("Suites").unwrap_or("");
                let enabled = !matches!(get("Enabled"), Some(v) if v.eq_ignore_ascii_case("no"));
                if enabled
                    && types
                        .split_whitespace()
                        .any(|t| t == "deb" || t == "deb-src")
                    && suites.split_whitespace().any(|s| s == codename)
                {
                    if let (Some(uris), Some(comps)) = (get("URIs"), get("Components")) {
                        add(uris, comps, get("Signed-By"));
                    }
                }
            }
        } else if name.ends_with(".list") {
            for l in text.lines() {
                let l = l.split('#').next().unwrap_or("").trim();
                let Some(rest) = l
                    .strip_prefix("deb ")
                    .or_else(|| l.strip_prefix("deb-src "))
                else {
                    continue;
                };
                let (opts, rest) = match rest.trim_start().strip_prefix('[') {
                    Some(r) => r.split_once(']').unwrap_or(("", r)),
                    None => ("", rest),
                };
                let mut f = rest.split_whitespace();
                let (Some(uri), Some(s)) = (f.next(), f.next()) else {
                    continue;
                };
                let comps: Vec<&str> = f.collect();
                if s != codename || comps.is_empty() {
                    continue;
                }
                let signed_by = opts
                    .split_whitespace()
                    .find_map(|o| o.strip_prefix("signed-by="));
                add(uri, &comps.join(" "), signed_by);
            }
        }
    }
    stanzas.join("\n")
}

/// The fields of each deb822 stanza (continuation lines joined, comments dropped).
fn deb822_stanzas(text: &str) -> Vec<Vec<(String, String)>> {
    let mut out: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        if line.trim().is_empty() {
            if !out.last().is_some_and(Vec::is_empty) {
                out.push(Vec::new());
            }
            continue;
        }
        let cur = out.last_mut().expect("never empty");
        if line.starts_with([' ', '\t']) {
            if let Some((_, v)) = cur.last_mut() {
                v.push('\n');
                v.push_str(line);
            }
        } else if let Some((k, v)) = line.split_once(':') {
            cur.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

fn verify_sha256(file: &Path, want: &str) -> Result<(), SnapshotError> {
    let data =
        fs::read(file).map_err(|e| SnapshotError::Failed(format!("{}: {e}", file.display())))?;
    let got: String = Sha256::digest(&data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if got != want {
        return err(format!(
            "{} has SHA-256 {got}, the source index says {want}",
            file.display()
        ));
    }
    Ok(())
}

fn unpack(tarball: &Path, into: &Path, top: &str) -> Result<PathBuf, SnapshotError> {
    run(
        Command::new("tar")
            .arg("-xf")
            .arg(tarball)
            .arg("-C")
            .arg(into),
        &format!("tar -xf {}", tarball.display()),
    )?;
    let src = into.join(top);
    if !src.join("Makefile").is_file() {
        return err(format!("{} holds no {top}/Makefile", tarball.display()));
    }
    Ok(src)
}

/// Apply [`PASSCRED_DUMP_FIXED`] where the source still has the old code (not in 4.2 and later).
fn patch_passcred(src: &Path) -> Result<bool, SnapshotError> {
    let file = src.join("criu/sockets.c");
    let text = fs::read_to_string(&file)
        .map_err(|e| SnapshotError::Failed(format!("{}: {e}", file.display())))?;
    if !text.contains(PASSCRED_DUMP) {
        return Ok(false);
    }
    fs::write(&file, text.replacen(PASSCRED_DUMP, PASSCRED_DUMP_FIXED, 1))
        .map_err(|e| SnapshotError::Failed(format!("{}: {e}", file.display())))?;
    Ok(true)
}

/// `make -jN criu`, its output in `log` (kept: it is what to read when the build fails).
fn make(src: &Path, jobs: usize, log: &Path) -> Result<(), SnapshotError> {
    let out = fs::File::create(log)
        .map_err(|e| SnapshotError::Failed(format!("{}: {e}", log.display())))?;
    let out2 = out
        .try_clone()
        .map_err(|e| SnapshotError::Failed(format!("{}: {e}", log.display())))?;
    let status = Command::new("make")
        .arg(format!("-j{jobs}"))
        .arg("criu")
        .current_dir(src)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(out2)
        .status()
        .map_err(|e| SnapshotError::Failed(format!("cannot run make: {e}")))?;
    if status.success() {
        return Ok(());
    }
    let text = fs::read_to_string(log).unwrap_or_default();
    let why = text
        .lines()
        .find(|l| l.contains("error") || l.contains("*** "))
        .unwrap_or("")
        .trim()
        .to_string();
    err(format!(
        "building CRIU failed ({status}): {why} (the whole output: {})",
        log.display()
    ))
}

/// Copy next to the target, then rename: an interrupted setup never leaves half a binary.
fn install(built: &Path, bin: &Path) -> Result<(), SnapshotError> {
    let tmp = bin.with_extension("new");
    fs::copy(built, &tmp)
        .and_then(|_| fs::rename(&tmp, bin))
        .map_err(|e| SnapshotError::Failed(format!("cannot install {}: {e}", bin.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEB822: &str = "Types: deb
# http://snapshot.example/archive/debian/20250520T000000Z
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
";

    #[test]
    fn derives_the_next_release_from_the_base_suite_only() {
        let files =
            vec![
            ("/etc/apt/sources.list.d/debian.sources".to_string(), DEB822.to_string()),
            (
                // The deb-src twin some setups add: the same entry, not a second one.
                "/etc/apt/sources.list.d/src.sources".to_string(),
                DEB822.replace("Types: deb\n", "Types: deb-src\n"),
            ),
            (
                "/etc/apt/sources.list.d/other.sources".to_string(),
                "Types: deb\nURIs: https://vendor.example/x\nSuites: nodistro\nComponents: main\n"
                    .to_string(),
            ),
            ("/etc/apt/sources.list".to_string(), String::new()),
        ];
        let got = derive_sources(&files, "bookworm", "trixie");
        assert_eq!(
            got,
            "Types: deb-src\nURIs: http://mirror.example/debian\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
        );
    }

    #[test]
    fn derives_from_one_line_entries_too() {
        let list = "# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://m.example/debian bookworm main contrib\ndeb http://m.example/debian-security bookworm-security main\n";
        let files = vec![("/etc/apt/sources.list".to_string(), list.to_string())];
        assert_eq!(
            derive_sources(&files, "bookworm", "trixie"),
            "Types: deb-src\nURIs: http://m.example/debian\nSuites: trixie\nComponents: main contrib\nSigned-By: /k.gpg\n"
        );
        assert_eq!(derive_sources(&files, "bullseye", "trixie"), "");
    }

    #[test]
    fn patches_the_socket_options_dump_once() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("criu")).unwrap();
        let file = d.path().join("criu/sockets.c");
        fs::write(
            &file,
            format!("int f(void)\n{{\n{PASSCRED_DUMP}\treturn ret;\n}}\n"),
        )
        .unwrap();
        assert!(patch_passcred(d.path()).unwrap());
        let patched = fs::read_to_string(&file).unwrap();
        assert!(patched.contains("SO_DOMAIN") && !patched.contains(PASSCRED_DUMP));
        assert!(
            !patch_passcred(d.path()).unwrap(),
            "4.2's code is left alone"
        );
        assert!(version_at_least("4.2", (4, 2)) && !version_at_least("4.1.1", (4, 2)));
    }

    #[test]
    fn reads_the_upstream_tarball_and_its_checksum() {
        let out = "'http://m.example/debian/pool/main/c/criu/criu_4.1.1-1.dsc' criu_4.1.1-1.dsc 2806 SHA256:12ab\n'http://m.example/debian/pool/main/c/criu/criu_4.1.1.orig.tar.xz' criu_4.1.1.orig.tar.xz 1021136 SHA256:F80A\n";
        let files = parse_print_uris(out);
        assert_eq!(files.len(), 2);
        let orig = &files[1];
        assert_eq!(orig.name, "criu_4.1.1.orig.tar.xz");
        assert_eq!(orig.size, 1021136);
        assert_eq!(orig.sha256, "f80a");
        assert_eq!(orig.version().unwrap(), "4.1.1");
        let old = SourceFile {
            name: "criu_3.17.1.orig.tar.gz".into(),
            ..files.into_iter().next().unwrap()
        };
        assert!(old
            .version()
            .unwrap_err()
            .to_string()
            .contains("4.1 or later"));
    }
}
