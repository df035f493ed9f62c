"""A minimal HTTP/1.1 JSON client for the hook protocol (hooks/PROTOCOL.md, *Transport*), on
plain sockets: `http.client` alone costs a node tens of milliseconds of imports at every start,
and flymc starts every node of every path.

One kept-alive connection per lane (reports never wait behind a long poll), TCP_NODELAY, and a
retry on a new connection when one was closed before it answered: the server closes idle
kept-alive connections, and under a burst of other connections it may close a new one unread.
Every request of the protocol is idempotent, so sending it again is safe.
"""

from __future__ import annotations

import json
import socket
import time

from .errors import ConnectError, HttpError, ProtocolError, Rejected

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO, Dict, Optional, Tuple

PROTOCOL_VERSION = 1
TOKEN_HEADER = "X-FlyMC-Token"
#: New connections tried after a request's connection closed before it answered.
RETRIES = 4

REPORT = "report"
POLL = "poll"


class _Closed(Exception):
    """The connection ended before a whole answer arrived."""


class _Conn:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.file: BinaryIO = sock.makefile("rb")

    def close(self) -> None:
        try:
            self.file.close()
        finally:
            self.sock.close()

    def exchange(self, head: bytes, body: bytes) -> Tuple[int, bytes, bool]:
        """Send one request; (status, body, whether the server closes the connection)."""
        self.sock.sendall(head + body)
        status_line = self.file.readline(65537)
        if not status_line:
            raise _Closed()
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[1].isdigit():
            raise ProtocolError(f"not an HTTP answer: {status_line[:80]!r}")
        status = int(parts[1])
        length, chunked, close = None, False, False
        while True:
            line = self.file.readline(65537)
            if not line:
                raise _Closed()
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("latin-1").partition(":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value:
                chunked = True
            elif name == "connection" and "close" in value:
                close = True
        if chunked:
            data = b""
            while True:
                size = int(self.file.readline(65537).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.file.readline(65537)
                    break
                data += self._read(size)
                self.file.readline(65537)
        else:
            data = self._read(length or 0)
        return status, data, close

    def _read(self, n: int) -> bytes:
        data = self.file.read(n)
        if len(data) != n:
            raise _Closed()
        return data


class Client:
    """Posts JSON to `/v1/<endpoint>` of one event server, on two lanes."""

    def __init__(self, server: str, token: str) -> None:
        host, _, port = server.rpartition(":")
        if not host or not port.isdigit():
            raise ConnectError(f"{server}: not host:port")
        self.host = host
        self.port = int(port)
        self.server = server
        self.token = token
        self._conns: Dict[str, Optional[_Conn]] = {REPORT: None, POLL: None}

    def _connect(self, timeout: Optional[float]) -> _Conn:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=timeout)
        except OSError as e:
            raise ConnectError(f"{self.server}: {e}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _Conn(sock)

    def disconnect(self) -> None:
        """Close both connections (before a checkpoint: a snapshot holds no connection)."""
        for lane, conn in self._conns.items():
            if conn is not None:
                conn.close()
            self._conns[lane] = None

    def post(self, lane: str, endpoint: str, body: Dict[str, Any], timeout: Optional[float] = 30.0) -> Any:
        """POST `body`; the answer's JSON, or an error. A 4xx is `Rejected`."""
        data = json.dumps(body, separators=(",", ":")).encode()
        head = (
            f"POST /v{PROTOCOL_VERSION}/{endpoint} HTTP/1.1\r\nHost: {self.server}\r\n"
            f"Content-Type: application/json\r\n{TOKEN_HEADER}: {self.token}\r\n"
            f"Content-Length: {len(data)}\r\n\r\n"
        ).encode()
        attempt = 0
        while True:
            conn = self._conns.get(lane)
            fresh = conn is None
            try:
                if conn is None:
                    conn = self._connect(timeout)
                    self._conns[lane] = conn
                conn.sock.settimeout(timeout)
                status, answer, close = conn.exchange(head, data)
                if close:
                    conn.close()
                    self._conns[lane] = None
                break
            except (OSError, _Closed) as e:
                if conn is not None:
                    conn.close()
                self._conns[lane] = None
                if isinstance(e, ConnectionRefusedError):
                    raise ConnectError(f"{self.server}: {e}") from None
                # A kept-alive connection the server closed: a new one at once; a new one
                # closed unread (the server is flooded): a few more, with growing pauses.
                if not fresh:
                    continue
                attempt += 1
                if attempt > RETRIES:
                    raise HttpError(f"{endpoint}: {e or 'connection closed before an answer'}") from None
                time.sleep((5 << (2 * (attempt - 1))) / 1000.0)
        try:
            parsed = json.loads(answer) if answer else {}
        except ValueError:
            raise ProtocolError(f"{endpoint}: answer is not JSON: {answer[:200]!r}") from None
        if status == 200:
            return parsed
        if isinstance(parsed, dict):
            raise Rejected(status, str(parsed.get("error", "?")), str(parsed.get("reason", "")))
        raise Rejected(status, "?", str(parsed))
