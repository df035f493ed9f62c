"""flymc_zygote: a node started from the zygote is the node a fresh interpreter starts, and no
process outlives the one that started the nodes (flymc, played here by a small parent)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")

# What a node program reports about its start: enough to compare it with a fresh start.
NODE = textwrap.dedent(
    """
    import json, os, sys
    import warm
    out = {"argv": sys.argv, "cwd": os.getcwd(), "node": os.environ.get("FLYMC_NODE"),
           "pid": os.getpid(), "ppid": os.getppid(), "pgrp": os.getpgrp(), "path0": sys.path[0],
           "hash": hash("flymc"), "warm": warm.PID,
           "stdin": sys.stdin.read() if sys.argv[1] != "sleep" else ""}
    print(json.dumps(out), flush=True)
    what = sys.argv[1]
    if what == "sleep":
        with open(sys.argv[2], "w") as f:
            f.write(str(os.getpid()))
        sys.stdin.read()
    elif what == "kill":
        os.kill(os.getpid(), 9)
    elif what == "raise":
        raise RuntimeError("boom")
    sys.exit(int(what))
    """
)

# A preloaded module: which process imported it (the zygote, for its children).
WARM = "import os\nPID = os.getpid()\n"

# Plays flymc: starts each node as the leader of its own process group, as flymc does.
PARENT = textwrap.dedent(
    """
    import json, os, subprocess, sys
    spec = json.loads(sys.argv[1])
    out = []
    for n in spec["nodes"]:
        cmd = [sys.executable, "-c", "from flymc_zygote import main; main()", "--preload", "warm", "--",
               spec["script"]] + n["args"]
        env = dict(os.environ, FLYMC_NODE=str(n["node"]))
        p = subprocess.run(cmd, env=env, cwd=n["cwd"], input=n.get("stdin", ""), capture_output=True,
                           text=True, process_group=0 if spec["leader"] else None)
        out.append({"code": p.returncode, "out": p.stdout, "err": p.stderr})
    print(json.dumps(out))
    """
)


@pytest.fixture
def program() -> Iterator[Path]:
    # Short: the zygote's socket lives under it (TMPDIR), and socket paths are short.
    d = Path(tempfile.mkdtemp(prefix="fz", dir="/tmp"))
    (d / "node.py").write_text(NODE)
    (d / "warm.py").write_text(WARM)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def env(program: Path, **extra: str) -> Dict[str, str]:
    e = dict(os.environ, PYTHONPATH=f"{SRC}:{program}", PYTHONHASHSEED="7", TMPDIR=str(program))
    e.pop("FLYMC_ZYGOTE", None)
    e.update(extra)
    return e


def parent(program: Path, nodes: List[Dict[str, Any]], leader: bool = True, **extra: str) -> List[Dict[str, Any]]:
    spec = {"script": str(program / "node.py"), "nodes": nodes, "leader": leader}
    p = subprocess.run([sys.executable, "-c", PARENT, json.dumps(spec)], env=env(program, **extra),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out: List[Dict[str, Any]] = json.loads(p.stdout)
    return out


def report(r: Dict[str, Any]) -> Dict[str, Any]:
    line = r["out"].splitlines()[0]
    got: Dict[str, Any] = json.loads(line)
    return got


def gone(pid: int, within: float = 10.0) -> bool:
    """Whether process `pid` has ended (or is a zombie) within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (FileNotFoundError, ProcessLookupError):
            # Reaped between the open and the read: the kernel answers ESRCH then.
            return True
        time.sleep(0.02)
    return False


def test_a_node_from_the_zygote_starts_as_a_fresh_interpreter_would(program: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    runs = parent(program, [
        {"node": 0, "args": ["3"], "cwd": str(a), "stdin": "in0"},
        {"node": 1, "args": ["0", "x y"], "cwd": str(b), "stdin": "in1"},
        {"node": 2, "args": ["raise"], "cwd": str(a)},
    ])
    fresh = subprocess.run([sys.executable, str(program / "node.py"), "3"], env=env(program, FLYMC_NODE="0"),
                           cwd=a, input="in0", capture_output=True, text=True)
    want = report({"out": fresh.stdout})
    first, second = report(runs[0]), report(runs[1])
    assert runs[0]["code"] == 3 and runs[1]["code"] == 0, runs
    assert runs[0]["err"] == "" and runs[1]["err"] == "", runs
    for k in ("argv", "cwd", "node", "path0", "hash", "stdin"):
        assert first[k] == want[k], k
    assert want["warm"] == want["pid"] and first["warm"] == first["ppid"], "imported by the zygote"
    assert second["argv"] == [str(program / "node.py"), "0", "x y"]
    assert (second["cwd"], second["node"], second["stdin"]) == (str(b), "1", "in1")
    # Forked by one zygote, each in the group of the process its parent started.
    assert first["ppid"] == second["ppid"] != os.getpid()
    assert first["pgrp"] != second["pgrp"] and first["pgrp"] != first["pid"]
    assert runs[2]["code"] == 1 and "RuntimeError: boom" in runs[2]["err"], runs[2]


def test_death_by_a_signal_is_passed_back(program: Path) -> None:
    (run,) = parent(program, [{"node": 0, "args": ["kill"], "cwd": str(program)}])
    assert run["code"] == -signal.SIGKILL, run


def test_without_a_zygote_the_script_runs_in_the_started_process(program: Path) -> None:
    # Not the leader of a process group: a crash would not reach a child of the zygote.
    (run,) = parent(program, [{"node": 0, "args": ["4"], "cwd": str(program)}], leader=False)
    got = report(run)
    assert run["code"] == 4 and got["warm"] == got["pid"]
    # Switched off by the environment.
    (run,) = parent(program, [{"node": 0, "args": ["5"], "cwd": str(program)}], FLYMC_ZYGOTE="0")
    assert run["code"] == 5
    (run,) = parent(program, [{"node": 0, "args": ["0"], "cwd": str(program)}])
    got = report(run)
    assert got["warm"] == got["ppid"] != got["pid"], "a zygote's child this time"


def test_a_preload_that_fails_falls_back_to_a_fresh_start(program: Path) -> None:
    (program / "warm.py").write_text("raise ImportError('not today')\n")
    (program / "node.py").write_text("import sys\nsys.exit(6)\n")
    (run,) = parent(program, [{"node": 0, "args": [], "cwd": str(program)}])
    assert run["code"] == 6, run
    assert "the zygote cannot start: ImportError: not today; starting without a zygote" in run["err"], run


def test_a_bad_command_line_is_one_line_and_status_2(program: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "flymc_zygote", "--preload"], env=env(program),
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--preload needs" in p.stderr, p.stderr


class Flymc:
    """A parent that starts one node through the launcher and keeps running until told."""

    def __init__(self, program: Path) -> None:
        self.pidfile = program / "node.pid"
        code = textwrap.dedent(
            """
            import os, subprocess, sys
            p = subprocess.Popen([sys.executable, "-m", "flymc_zygote", "--preload", "warm", "--",
                                  sys.argv[1], "sleep", sys.argv[2]], stdin=subprocess.PIPE,
                                 stdout=subprocess.DEVNULL, process_group=0)
            print(p.pid, flush=True)
            sys.stdin.readline()
            """
        )
        self.proc = subprocess.Popen([sys.executable, "-c", code, str(program / "node.py"), str(self.pidfile)],
                                     env=env(program), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.launcher = int(self.proc.stdout.readline())
        deadline = time.monotonic() + 30
        while not (self.pidfile.exists() and self.pidfile.read_text()):
            assert time.monotonic() < deadline, "the node did not start"
            time.sleep(0.02)
        self.node = int(self.pidfile.read_text())
        with open(f"/proc/{self.node}/stat") as f:
            self.zygote = int(f.read().rsplit(")", 1)[1].split()[1])

    def end(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def test_a_crash_of_the_started_process_group_kills_the_node(program: Path) -> None:
    f = Flymc(program)
    try:
        assert f.node != f.launcher and os.getpgid(f.node) == f.launcher
        os.killpg(f.launcher, signal.SIGKILL)
        assert gone(f.node), "the node outlived its crash"
        assert not gone(f.zygote, within=0.2), "the zygote serves the next node"
    finally:
        f.end()
    assert gone(f.zygote), "the zygote outlived flymc"


def test_the_node_dies_with_its_launcher_even_outside_its_group(program: Path) -> None:
    f = Flymc(program)
    try:
        # The launcher alone, as if it died before its child joined its group.
        os.kill(f.launcher, signal.SIGKILL)
        assert gone(f.node), "the zygote did not end the node of a dead launcher"
    finally:
        f.end()


def test_nothing_outlives_the_parent_that_started_the_nodes(program: Path) -> None:
    f = Flymc(program)
    # flymc killed outright: its nodes die by their death signal in flymc (here: their group
    # is killed, as flymc's cleanup does), and the zygote notices its end on its own.
    os.killpg(f.launcher, signal.SIGKILL)
    f.proc.kill()
    f.proc.wait(timeout=30)
    assert gone(f.node) and gone(f.zygote), "a process outlived flymc"
    assert not list(program.glob("flymc-zygote-*/*.sock")), "the zygote left its socket"
