"""A minimal HTTP/1.1 JSON client for the hook protocol (hooks/PROTOCOL.md, *Transport*).

One kept-alive connection per lane (reports never wait behind a long poll), TCP_NODELAY, and a
retry on a new connection when one was closed before it answered: the server closes idle
kept-alive connections, and under a burst of other connections it may close a new one unread.
Every request of the protocol is idempotent, so sending it again is safe.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from typing import Any, Dict, Optional

from .errors import ConnectError, HttpError, ProtocolError, Rejected

PROTOCOL_VERSION = 1
TOKEN_HEADER = "X-FlyMC-Token"
#: New connections tried after a request's connection closed before it answered.
RETRIES = 4

REPORT = "report"
POLL = "poll"


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
        self._conns: Dict[str, Optional[http.client.HTTPConnection]] = {REPORT: None, POLL: None}

    def _connect(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.connect()
        except OSError as e:
            raise ConnectError(f"{self.server}: {e}") from None
        assert conn.sock is not None
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def disconnect(self) -> None:
        """Close both connections (before a checkpoint: a snapshot holds no connection)."""
        for lane, conn in self._conns.items():
            if conn is not None:
                conn.close()
            self._conns[lane] = None

    def post(self, lane: str, endpoint: str, body: Dict[str, Any], timeout: Optional[float] = 30.0) -> Any:
        """POST `body`; the answer's JSON, or an error. A 4xx is `Rejected`."""
        data = json.dumps(body, separators=(",", ":")).encode()
        headers = {"Content-Type": "application/json", TOKEN_HEADER: self.token}
        attempt = 0
        while True:
            conn = self._conns.get(lane)
            fresh = conn is None
            try:
                if conn is None:
                    conn = self._connect(timeout)
                    self._conns[lane] = conn
                conn.request("POST", f"/v{PROTOCOL_VERSION}/{endpoint}", body=data, headers=headers)
                resp = conn.getresponse()
                status, answer = resp.status, resp.read()
                if resp.will_close:
                    conn.close()
                    self._conns[lane] = None
                break
            except ConnectError:
                raise
            except (OSError, http.client.HTTPException) as e:
                if conn is not None:
                    conn.close()
                self._conns[lane] = None
                # A kept-alive connection the server closed: try a new one at once; a new one
                # closed unread (the server is flooded): a few more, with growing pauses.
                if isinstance(e, ConnectionRefusedError):
                    raise ConnectError(f"{self.server}: {e}") from None
                if not fresh:
                    continue
                attempt += 1
                if attempt > RETRIES:
                    raise HttpError(f"{endpoint}: {e}") from None
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
