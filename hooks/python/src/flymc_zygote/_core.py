"""The launcher (the process flymc started), the zygote and its children, in one module: all
three begin as the same process. See the package's docstring for what each does and why.

Wire format on the zygote's socket: the launcher sends a 4-byte big-endian length with its
standard streams attached (SCM_RIGHTS), then that many bytes of JSON (`argv`, `env`, `cwd`,
`pgid`); the zygote answers with JSON lines, `{"pid": N}` once the child is forked and
`{"status": S}` (a wait status) when it has ended.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Sequence, Tuple

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


class Usage(Exception):
    """A command line this program does not accept."""


class ZygoteError(Exception):
    """No zygote to start from: the node starts in this process instead."""


class Job:
    """What the child must become: the launcher's argv, environment, folder and streams."""

    __slots__ = ("argv", "env", "cwd", "pgid", "fds")

    def __init__(self, argv: List[str], env: Dict[str, str], cwd: str, pgid: int, fds: List[int]) -> None:
        self.argv = argv
        self.env = env
        self.cwd = cwd
        self.pgid = pgid
        self.fds = fds


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
            raise Usage(f"unknown option `{a}`; usage: python3 -m flymc_zygote [--preload MOD,...] -- SCRIPT [ARG...]")
        break
    argv = list(args[i:])
    if not argv:
        raise Usage("no script to run; usage: python3 -m flymc_zygote [--preload MOD,...] -- SCRIPT [ARG...]")
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
    return (
        os.environ.get(SWITCH) == "0"
        or not hasattr(os, "pidfd_open")
        or not hasattr(socket, "send_fds")
        # The first process of a PID namespace (flymc's CRIU snapshots): a child outside the
        # namespace could not be checkpointed with it.
        or os.getpid() == 1
        # A crash kills the group this process leads; a child in another would survive it.
        or os.getpgrp() != os.getpid()
        or os.getppid() == 1
    )


def _key(preload: List[str], script: str) -> str:
    import hashlib

    env = sorted((k, v) for k, v in os.environ.items() if not k.startswith(PER_NODE))
    ident = [sys.executable, sys.version, list(sys.flags), sys.path[1:], preload,
             os.path.realpath(script), os.getppid(), env]
    return hashlib.sha256(json.dumps(ident).encode()).hexdigest()[:24]


def _folder() -> str:
    """A folder only this user can use, for the zygotes' sockets and locks."""
    import stat

    uid = os.getuid()
    for base in (os.environ.get("TMPDIR") or "/tmp", "/tmp"):
        d = os.path.join(base, f"flymc-zygote-{uid}")
        if len(d) + 30 <= MAX_SOCKET_PATH:
            break
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(d)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o077:
        raise ZygoteError(f"{d} is not a folder of this user's alone")
    return d


def _dial(path: str) -> Optional[socket.socket]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return s
    except (FileNotFoundError, ConnectionRefusedError):
        s.close()
        return None


def _connect(preload: List[str], script: str) -> socket.socket:
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
    python = list(getattr(sys, "orig_argv", [sys.executable]))
    python = python[: python.index("-m")] if "-m" in python else [sys.executable]
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


def serve(args: Sequence[str]) -> List[str]:
    """`--serve PATH LOCK FLYMC_PID READY_FD --preload MODS -- SCRIPT` (what `_start` runs):
    the zygote. Returns only in a child it forked, with the argv that child runs."""
    path, lock, flymc, ready = args[0], args[1], int(args[2]), int(args[3])
    preload, argv = parse(args[4:])
    return _become(_serve(path, lock, preload, argv[0], flymc, ready))


#: True in a child forked by the zygote (which must never act as the zygote).
_in_child = False


def _keep_only(keep: Sequence[int]) -> None:
    """Close every descriptor from 3 up but `keep` (the launcher's lock, sockets and pipes
    must not live on in the zygote)."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _serve(path: str, lock: str, preload: List[str], script: str, flymc_pid: int, ready: int) -> Job:
    """The zygote: import, listen, fork a child per launcher. Ends with flymc. Returns only in
    a child, with its job."""
    try:
        flymc = os.pidfd_open(flymc_pid)
        _keep_only([ready, flymc])
        sys.path[0] = os.path.dirname(os.path.realpath(script))
        for m in preload:
            __import__(m)
        if os.path.exists(path):
            os.unlink(path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(64)
        os.write(ready, b"ok")
        os.close(ready)
    except BaseException as e:
        try:
            os.write(ready, f"the zygote cannot start: {type(e).__name__}: {e}".encode())
        finally:
            os._exit(1)
    try:
        job = _loop(listener, flymc)
    except BaseException:
        if _in_child:
            os._exit(EXIT_LOST)
        job = None
    if job is None:
        _end(path, lock)
    return job


def _end(path: str, lock: str) -> None:
    for p in (path, lock):
        try:
            os.unlink(p)
        except OSError:
            pass
    os._exit(0)


def _loop(listener: socket.socket, flymc: int) -> Optional[Job]:
    """Serve until flymc ends (returns None) or in a forked child (returns its job)."""
    global _in_child
    import selectors
    import signal

    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, ("accept", 0))
    sel.register(flymc, selectors.EVENT_READ, ("flymc", 0))
    # Per child: its launcher's connection and its pidfd.
    children: Dict[int, Tuple[socket.socket, int]] = {}
    while True:
        for key, _ in sel.select():
            what, pid = key.data
            if what == "flymc":
                for pid in children:
                    _kill(pid)
                return None
            if what == "accept":
                conn, _ = listener.accept()
                job = _receive(conn)
                if job is None:
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    _in_child = True
                    sel.close()
                    listener.close()
                    os.close(flymc)
                    for c, pfd in children.values():
                        c.close()
                        os.close(pfd)
                    conn.close()
                    return job
                for fd in job.fds:
                    os.close(fd)
                pfd = os.pidfd_open(pid)
                children[pid] = (conn, pfd)
                sel.register(conn, selectors.EVENT_READ, ("launcher", pid))
                sel.register(pfd, selectors.EVENT_READ, ("child", pid))
                _say(conn, {"pid": pid})
            elif what == "child":
                _, status = os.waitpid(pid, 0)
                conn, pfd = children.pop(pid)
                sel.unregister(pfd)
                os.close(pfd)
                if conn.fileno() >= 0:
                    sel.unregister(conn)
                    _say(conn, {"status": status})
                    conn.close()
            elif what == "launcher":
                # The launcher sends nothing after its job: readable means it is gone (killed
                # before its child joined its group, say), and its node must go with it.
                conn = children[pid][0]
                sel.unregister(conn)
                conn.close()
                os.kill(pid, signal.SIGKILL)


def _kill(pid: int) -> None:
    import signal

    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _say(conn: socket.socket, msg: Dict[str, Any]) -> None:
    try:
        conn.sendall(json.dumps(msg).encode() + b"\n")
    except OSError:
        pass


def _receive(conn: socket.socket) -> Optional[Job]:
    conn.settimeout(10)
    fds: List[int] = []
    try:
        head, fds, _, _ = socket.recv_fds(conn, 4, 3)
        if len(head) != 4 or len(fds) != 3:
            raise ValueError("a short request")
        (n,) = struct.unpack("!I", head)
        body = b""
        while len(body) < n:
            chunk = conn.recv(n - len(body))
            if not chunk:
                raise ValueError("a short request")
            body += chunk
        j = json.loads(body)
        conn.settimeout(None)
        return Job(list(j["argv"]), dict(j["env"]), str(j["cwd"]), int(j["pgid"]), fds)
    except (OSError, ValueError, KeyError, TypeError):
        for fd in fds:
            os.close(fd)
        return None


def _become(job: Job) -> List[str]:
    """In the zygote's child: take the launcher's group, streams, folder and environment."""
    os.setpgid(0, job.pgid)
    for i, fd in enumerate(job.fds):
        os.dup2(fd, i)
        os.close(fd)
    os.chdir(job.cwd)
    os.environ.clear()
    os.environ.update(job.env)
    return job.argv


def _delegate(conn: socket.socket, argv: List[str]) -> None:
    """In the launcher: send the job, wait for the child's end, end the same way."""
    body = json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd(),
                       "pgid": os.getpgrp()}).encode()
    socket.send_fds(conn, [struct.pack("!I", len(body))], [0, 1, 2])
    conn.sendall(body)
    child = None
    for line in conn.makefile("rb"):
        msg = json.loads(line)
        if "pid" in msg:
            child = int(msg["pid"])
        elif "status" in msg:
            _end_as(int(msg["status"]))
    # The zygote is gone without a word on the child: wait for the child, which is in this
    # process group, and say so.
    if child is not None:
        try:
            import select

            pfd = os.pidfd_open(child)
            select.select([pfd], [], [])
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
