"""Puts Jenkins' JUnit schema (junit-10.xsd) at target/ci-venv/junit-10.xsd for the report tests.

No wheel installs a JUnit schema; pytest's sdist carries the one its own junitxml tests
validate against (MIT, (c) 2014 Gregory Boissinot), so it is taken from there, checked by hash.
"""
import glob
import hashlib
import subprocess
import sys
import tarfile

VERSION = "9.2.0"
MEMBER = f"pytest-{VERSION}/testing/example_scripts/junit-10.xsd"
SHA256 = "a1a816f58d1bf95ebabf371994df0b9246dee66ea9572fbec4f9296f1b2c0ff6"
OUT = "target/ci-venv/junit-10.xsd"

subprocess.run(
    [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
     f"pytest=={VERSION}", "-d", "target/ci-venv/sdist"],
    check=True,
)
sdist = glob.glob(f"target/ci-venv/sdist/pytest-{VERSION}.tar.gz")[0]
data = tarfile.open(sdist).extractfile(MEMBER).read()
if hashlib.sha256(data).hexdigest() != SHA256:
    sys.exit(f"{MEMBER} in {sdist} is not the expected schema (sha256 differs)")
with open(OUT, "wb") as f:
    f.write(data)
