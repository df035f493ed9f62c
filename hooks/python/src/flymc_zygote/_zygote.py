"""The zygote (`python3 -m flymc_zygote --serve ...`, started by a launcher) and the children it
forks. See the package's docstring."""

from __future__ import annotations

import os
import socket
import sys

from ._launch import EXIT_LOST, parse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Dict, List, Optional, Sequence, Tuple

#: True in a child forked by the zygote (which must never act as the zygote).
_in_child = False


class Job:
    """What a child must become: its launcher's argv, environment, folder and streams."""

    __slots__ = ("argv", "env", "cwd", "pgid", "fds")

    def __init__(self, argv: List[str], env: Dict[str, str], cwd: str, pgid: int, fds: List[int]) -> None:
        self.argv = argv
        self.env = env
        self.cwd = cwd
        self.pgid = pgid
        self.fds = fds


def serve(args: Sequence[str]) -> List[str]:
    """`--serve PATH LOCK FLYMC_PID READY_FD --preload MODS -- SCRIPT`: be the zygote. Returns
    only in a child it forked, with the argv that child runs."""
    path, lock, flymc, ready = args[0], args[1], int(args[2]), int(args[3])
    preload, argv = parse(args[4:])
    return _become(_serve(path, lock, preload, argv[0], flymc, ready))


def _keep_only(keep: Sequence[int]) -> None:
    """Close every descriptor from 3 up but `keep` (nothing of the launcher lives on here)."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _serve(path: str, lock: str, preload: List[str], script: str, flymc_pid: int, ready: int) -> Job:
    """Import, listen, fork a child per launcher; end with flymc. Returns only in a child."""
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
        raise AssertionError("unreachable")  # pragma: no cover
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
                _say(conn, f"pid {pid}")
            elif what == "child":
                _, status = os.waitpid(pid, 0)
                conn, pfd = children.pop(pid)
                sel.unregister(pfd)
                os.close(pfd)
                if conn.fileno() >= 0:
                    sel.unregister(conn)
                    _say(conn, f"status {status}")
                    conn.close()
            elif what == "launcher":
                # The launcher sends nothing after its job: readable means it is gone (killed
                # before its child joined its group, say), and its node must go with it. A
                # crash of the group ends both at once: when this batch already reaped the
                # child, its launcher's hang-up is stale.
                if pid not in children:
                    continue
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


def _say(conn: socket.socket, line: str) -> None:
    try:
        conn.sendall(line.encode() + b"\n")
    except OSError:
        pass


def _receive(conn: socket.socket) -> Optional[Job]:
    import ast

    conn.settimeout(10)
    fds: List[int] = []
    try:
        head, fds, _, _ = socket.recv_fds(conn, 4, 3)
        if len(head) != 4 or len(fds) != 3:
            raise ValueError("a short request")
        n = int.from_bytes(head, "big")
        body = b""
        while len(body) < n:
            chunk = conn.recv(n - len(body))
            if not chunk:
                raise ValueError("a short request")
            body += chunk
        j = ast.literal_eval(body.decode("utf-8", "surrogateescape"))
        conn.settimeout(None)
        return Job(list(j["argv"]), dict(j["env"]), str(j["cwd"]), int(j["pgid"]), fds)
    except (OSError, ValueError, KeyError, TypeError, SyntaxError):
        for fd in fds:
            os.close(fd)
        return None


def _become(job: Job) -> List[str]:
    """In a child: take the launcher's group, streams, folder and environment."""
    os.setpgid(0, job.pgid)
    for i, fd in enumerate(job.fds):
        os.dup2(fd, i)
        os.close(fd)
    os.chdir(job.cwd)
    os.environ.clear()
    os.environ.update(job.env)
    return job.argv
