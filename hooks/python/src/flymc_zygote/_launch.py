"""The launcher: the process flymc starts for a node. It runs for every node of every path, so
it imports almost nothing (`os`, `sys` and C modules; no `json`, whose `re` alone costs more
than the rest): it finds or starts the zygote, hands it this process's start, and ends as the
child ends. See the package's docstring.

Wire format on the zygote's socket: the launcher sends a 4-byte big-endian length with its
standard streams attached (SCM_RIGHTS), then that many bytes of a Python literal (a dict of
`argv`, `env`, `cwd`, `pgid`); the zygote answers with lines `pid N` once the child is forked
and `status S` (a wait status) when it has ended.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, List, Optional, Sequence, Tuple

#: "0": no zygote, every node in a fresh interpreter.
SWITCH = "FLYMC_ZYGOTE"
#: Variables flymc sets per node and per run: not part of which zygote a node uses.
PER_NODE = "FLYMC_"
#: Always imported by the zygote: the hook every node program uses.
DEFAULT_PRELOAD = ("flymc_hook",)
#: Exit status of a launcher whose zygote vanished before telling how its child ended.
EXIT_LOST = 70
#: Socket paths are at most 107 bytes (sun_path).
MAX_SOCKET_PATH = 100
USAGE = "usage: python3 -c 'from flymc_zygote import main; main()' [--preload MOD,...] -- SCRIPT [ARG...]"


class Usage(Exception):
    """A command line this program does not accept."""


class ZygoteError(Exception):
    """No zygote to start from: the node starts in this process instead."""


def parse(args: Sequence[str]) -> Tuple[List[str], List[str]]:
    """`[--preload MOD[,MOD...]]... [--] SCRIPT [ARG...]` -> (modules, [SCRIPT, ARG...])."""
    preload = list(DEFAULT_PRELOAD)
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if a == "--preload" or a.startswith("--preload="):
            if a == "--preload":
                if i + 1 >= len(args):
                    raise Usage("--preload needs a module list: --preload MOD[,MOD...]")
                value, i = args[i + 1], i + 2
            else:
                value, i = a.split("=", 1)[1], i + 1
            preload += [m.strip() for m in value.split(",") if m.strip()]
            continue
        if a.startswith("-"):
            raise Usage(f"unknown option `{a}`; {USAGE}")
        break
    argv = list(args[i:])
    if not argv:
        raise Usage(f"no script to run; {USAGE}")
    return preload, argv


def run(argv: List[str]) -> int:
    """Run the script as `python3 SCRIPT ARG...` would: its folder first on `sys.path`, as
    `__main__`. Its exceptions and `SystemExit` end the interpreter as they would there."""
    import runpy

    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.realpath(argv[0]))
    runpy.run_path(argv[0], run_name="__main__")
    return 0


def launch(preload: List[str], argv: List[str]) -> List[str]:
    """Hand the start to a zygote (then this process ends as the child ends, and this never
    returns), or return `argv` to run here, without a zygote."""
    if _unusable():
        return argv
    try:
        conn = _connect(preload, argv[0])
    except (OSError, ZygoteError) as e:
        sys.stderr.write(f"flymc_zygote: {e}; starting without a zygote\n")
        return argv
    _delegate(conn, argv)
    raise AssertionError("unreachable")  # pragma: no cover


def _unusable() -> bool:
    import _socket

    return (
        os.environ.get(SWITCH) == "0"
        or not hasattr(os, "pidfd_open")
        or not hasattr(_socket, "SCM_RIGHTS")
        # The first process of a PID namespace (flymc's CRIU snapshots): a child outside the
        # namespace could not be checkpointed with it.
        or os.getpid() == 1
        # A crash kills the group this process leads; a child in another would survive it.
        or os.getpgrp() != os.getpid()
        or os.getppid() == 1
    )


def _key(preload: List[str], script: str) -> str:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]
    except ImportError:  # Python 3.12 and later
        from hashlib import sha256
    env = sorted((k, v) for k, v in os.environ.items() if not k.startswith(PER_NODE))
    ident = [sys.executable, sys.version, tuple(sys.flags), sys.path[1:], preload,
             os.path.realpath(script), os.getppid(), env]
    return str(sha256(repr(ident).encode("utf-8", "surrogateescape")).hexdigest())[:24]


def _folder() -> str:
    """A folder only this user can use, for the zygotes' sockets and locks."""
    uid = os.getuid()
    d = ""
    for base in (os.environ.get("TMPDIR") or "/tmp", "/tmp"):
        d = os.path.join(base, f"flymc-zygote-{uid}")
        if len(d) + 30 <= MAX_SOCKET_PATH:
            break
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(d)
    if (st.st_mode & 0o170000) != 0o040000 or st.st_uid != uid or st.st_mode & 0o077:
        raise ZygoteError(f"{d} is not a folder of this user's alone")
    return d


def _dial(path: str) -> Any:
    import _socket

    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.connect(path)
        return s
    except (FileNotFoundError, ConnectionRefusedError):
        s.close()
        return None


def _connect(preload: List[str], script: str) -> Any:
    """A connection to this program's zygote, started if there is none yet (one launcher at a
    time starts it: the others wait on the lock)."""
    import fcntl

    d = _folder()
    base = os.path.join(d, _key(preload, script))
    path = base + ".sock"
    s = _dial(path)
    if s is not None:
        return s
    lock = os.open(base + ".lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        s = _dial(path)
        if s is not None:
            return s
        _start(path, base + ".lock", preload, script)
        s = _dial(path)
        if s is None:
            raise ZygoteError(f"the zygote does not listen on {path}")
        return s
    finally:
        os.close(lock)


def _start(path: str, lock: str, preload: List[str], script: str) -> None:
    """Start the zygote and return once it listens. Forked twice, so that it is no child of
    flymc's and leads a process group of its own (a crash of this node must not reach it) in
    flymc's session (so that its children can join a launcher's group); then a fresh
    interpreter (exec), so that nothing of this launcher lives on in it."""
    r, w = os.pipe()
    os.set_inheritable(w, True)
    # This interpreter's options (-X, -E, ...), then the zygote's arguments.
    orig = list(getattr(sys, "orig_argv", []))
    cut = [i for i, a in enumerate(orig) if a in ("-c", "-m")]
    python = orig[: cut[0]] if cut else [sys.executable]
    argv = python + ["-m", "flymc_zygote", "--serve", path, lock, str(os.getppid()), str(w),
                     "--preload", ",".join(preload), "--", script]
    env = {k: v for k, v in os.environ.items() if not k.startswith(PER_NODE)}
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setpgid(0, 0)
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.execve(sys.executable, argv, env)
        except BaseException as e:
            try:
                os.write(w, f"cannot start the zygote: {e}".encode())
            finally:
                os._exit(1)
        # The middle process: gone at once, so that the zygote is no child of flymc's.
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    said = b""
    while True:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        said += chunk
    os.close(r)
    if said != b"ok":
        raise ZygoteError(said.decode(errors="replace") or "the zygote ended as it started")


def _delegate(conn: Any, argv: List[str]) -> None:
    """Send the job, wait for the child's end, end the same way."""
    import _socket

    body = repr({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd(),
                 "pgid": os.getpgrp()}).encode("utf-8", "surrogateescape")
    fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2))
    conn.sendmsg([len(body).to_bytes(4, "big")], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    conn.sendall(body)
    child: Optional[int] = None
    said = b""
    while True:
        chunk = conn.recv(4096)
        if not chunk:
            break
        said += chunk
        while b"\n" in said:
            line, said = said.split(b"\n", 1)
            what, _, n = line.decode().partition(" ")
            if what == "pid":
                child = int(n)
            elif what == "status":
                _end_as(int(n))
    # The zygote is gone without a word on the child: wait for the child, which is in this
    # process group, and say so.
    if child is not None:
        try:
            import select

            select.select([os.pidfd_open(child)], [], [])
        except OSError:
            pass
    sys.stderr.write("flymc_zygote: the zygote ended before its child; its exit status is lost\n")
    sys.stderr.flush()
    os._exit(EXIT_LOST)


def _end_as(status: int) -> None:
    if os.WIFSIGNALED(status):
        import signal

        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))
