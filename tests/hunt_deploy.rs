//! The shipped deployment files for sharded hunts (deploy/) are well-formed: the GitHub
//! workflow against GitHub's workflow schema, the Kubernetes manifests against Kubernetes'
//! schemas, the Slurm scripts as bash and as sbatch scripts, and the three agree on how many
//! shards there are. The validators come from PyPI, into the venv `bash .ci/run` makes
//! (target/ci-venv, from .ci/requirements.txt); `FLYMC_CI_PYTHON` names another interpreter
//! that has them. Each validator is also shown a broken file, which it must reject.
//! (`sbatch --test-only` on the scripts, which needs a running Slurm, is in hunt_slurm.rs.)

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn deploy(file: &str) -> PathBuf {
    checkout().join("deploy").join(file)
}

/// The Python that has the validators; fails the test (not skips it) when there is none.
fn python() -> PathBuf {
    let python = match std::env::var_os("FLYMC_CI_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => checkout().join("target/ci-venv/bin/python"),
    };
    assert!(
        python.exists(),
        "no {}: run `bash .ci/run` (it makes target/ci-venv from .ci/requirements.txt), or set \
         FLYMC_CI_PYTHON to a Python with check-jsonschema and kubernetes-validate",
        python.display()
    );
    python
}

struct Ran {
    code: i32,
    out: String,
}

/// `python -m MODULE ARGS`; a missing module fails with the way to install it.
fn validator(module: &str, args: &[&str]) -> Ran {
    let py = python();
    let out = Command::new(&py)
        .arg("-m")
        .arg(module)
        .args(args)
        .current_dir(checkout())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", py.display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !text.contains(&format!("No module named {module}")),
        "{} has no {module}: run `bash .ci/run` (installs .ci/requirements.txt into \
         target/ci-venv)\n{text}",
        py.display()
    );
    Ran {
        code: out.status.code().unwrap_or(-1),
        out: text,
    }
}

fn check_workflow(path: &Path) -> Ran {
    validator(
        "check_jsonschema",
        &[
            "--builtin-schema",
            "vendor.github-workflows",
            path.to_str().unwrap(),
        ],
    )
}

/// kubernetes-validate, strict (unknown fields are errors), against the oldest Kubernetes the
/// manifest is for (1.29: backoffLimitPerIndex on by default) and its newest schemas.
fn check_manifests(path: &Path) -> Vec<Ran> {
    [vec!["-k", "1.29"], vec![]]
        .into_iter()
        .map(|version| {
            let mut args = vec!["--strict"];
            args.extend(version);
            args.push(path.to_str().unwrap());
            validator("kubernetes_validate", &args)
        })
        .collect()
}

/// Every YAML document of a file, as JSON (PyYAML comes with kubernetes-validate).
fn yaml_documents(path: &Path) -> Vec<Value> {
    let py = python();
    let out = Command::new(&py)
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn broken_copy(dir: &Path, from: &Path, name: &str, what: &str, with: &str) -> PathBuf {
    let text = fs::read_to_string(from).unwrap();
    assert!(text.contains(what), "{what} not in {}", from.display());
    let path = dir.join(name);
    fs::write(&path, text.replacen(what, with, 1)).unwrap();
    path
}

#[test]
fn github_workflow_matches_githubs_schema() {
    let wf = deploy("github/nightly-hunt.yml");
    let ran = check_workflow(&wf);
    assert_eq!(ran.code, 0, "{}", ran.out);
    assert!(ran.out.contains("ok -- validation done"), "{}", ran.out);

    // What the schema cannot say: nightly and by hand, the matrix's shards are the merge's.
    let doc = &yaml_documents(&wf)[0];
    // YAML 1.1 reads the key `on` as true.
    let on = doc.get("on").or_else(|| doc.get("true")).expect("on:");
    assert!(on["schedule"][0]["cron"].is_string(), "{on}");
    assert!(on.get("workflow_dispatch").is_some(), "{on}");
    let shards = doc["jobs"]["shard"]["strategy"]["matrix"]["shard"]
        .as_array()
        .expect("a shard matrix");
    let want: Vec<Value> = (0..shards.len()).map(|k| Value::from(k as u64)).collect();
    assert_eq!(shards, &want, "the matrix must be 0..N-1");
    assert_eq!(
        doc["jobs"]["merge"]["env"]["SHARDS"].as_u64(),
        Some(shards.len() as u64),
        "the merge job's SHARDS must be the matrix's size"
    );
    let merge_steps = doc["jobs"]["merge"]["steps"].to_string();
    assert!(
        merge_steps.contains("github/codeql-action/upload-sarif"),
        "{merge_steps}"
    );
}

#[test]
fn a_broken_workflow_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let bad = broken_copy(
        dir.path(),
        &deploy("github/nightly-hunt.yml"),
        "bad.yml",
        "runs-on: ubuntu-latest",
        "runs_on: ubuntu-latest",
    );
    let ran = check_workflow(&bad);
    assert_ne!(ran.code, 0, "a job without runs-on passed:\n{}", ran.out);
    assert!(ran.out.contains("runs_on"), "{}", ran.out);
}

#[test]
fn kubernetes_manifests_match_kubernetes_schemas() {
    let manifest = deploy("kubernetes/hunt-job.yaml");
    for ran in check_manifests(&manifest) {
        assert_eq!(ran.code, 0, "{}", ran.out);
        assert!(!ran.out.contains("ERROR"), "{}", ran.out);
    }

    // An Indexed Job whose completions, parallelism and SHARDS agree, each pod its own shard,
    // and a merge Job (suspended until the shards are done) with the same SHARDS.
    let docs = yaml_documents(&manifest);
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["PersistentVolumeClaim", "Job", "Job"]);
    let shards = &docs[1]["spec"];
    assert_eq!(shards["completionMode"], "Indexed");
    let n = shards["completions"].as_u64().unwrap();
    assert_eq!(shards["parallelism"].as_u64(), Some(n));
    let env_shards = |job: &Value| -> u64 {
        job["spec"]["template"]["spec"]["containers"][0]["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "SHARDS")
            .and_then(|e| e["value"].as_str())
            .expect("SHARDS")
            .parse()
            .unwrap()
    };
    assert_eq!(env_shards(&docs[1]), n);
    assert_eq!(env_shards(&docs[2]), n);
    let script = docs[1]["spec"]["template"]["spec"]["containers"][0]["args"][0]
        .as_str()
        .unwrap();
    assert!(
        script.contains("--shard $(JOB_COMPLETION_INDEX)/$SHARDS"),
        "{script}"
    );
    assert_eq!(docs[2]["spec"]["suspend"], true);
    assert_eq!(docs[2]["spec"]["backoffLimit"], 0);
}

#[test]
fn a_broken_manifest_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let bad = broken_copy(
        dir.path(),
        &deploy("kubernetes/hunt-job.yaml"),
        "bad.yaml",
        "parallelism: 4",
        "paralelism: 4",
    );
    for ran in check_manifests(&bad) {
        assert_ne!(ran.code, 0, "a misspelt field passed:\n{}", ran.out);
        assert!(
            ran.out.contains("'paralelism' was unexpected"),
            "{}",
            ran.out
        );
    }
}

#[test]
fn slurm_scripts_are_bash_and_sbatch_scripts() {
    for script in ["hunt.sbatch", "merge.sbatch", "submit.sh"] {
        let path = deploy(&format!("slurm/{script}"));
        let out = Command::new("bash").arg("-n").arg(&path).output().unwrap();
        assert!(
            out.status.success(),
            "bash -n {script}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("#!"), "{script} has no #! line");
        if !script.ends_with(".sbatch") {
            continue;
        }
        // sbatch reads #SBATCH lines only up to the first command: every one must come
        // before it, and be an option.
        let mut body = false;
        let mut options = 0;
        for line in text.lines().skip(1) {
            let line = line.trim();
            if let Some(option) = line.strip_prefix("#SBATCH") {
                assert!(
                    !body,
                    "{script}: `{line}` comes after a command; sbatch ignores it"
                );
                assert!(
                    option.starts_with(" --") || option.starts_with(" -"),
                    "{script}: `{line}` is not an option"
                );
                options += 1;
            } else if !line.is_empty() && !line.starts_with('#') {
                body = true;
            }
        }
        assert!(options > 0, "{script} has no #SBATCH lines");
    }
}
