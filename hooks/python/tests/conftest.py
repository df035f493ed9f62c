"""A fake event server: enough of hooks/PROTOCOL.md to drive the hook from a test, recording
every request it got."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterator, List, Optional

import pytest

TOKEN = "t0k3n"


class FakeServer:
    def __init__(self) -> None:
        self.requests: List[Dict[str, Any]] = []
        self.orders: List[Dict[str, Any]] = []
        self.pause: Optional[int] = None
        #: Close the next N connections without answering (a flooded server).
        self.drop = 0
        self.ids = 0
        self.cond = threading.Condition()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                with fake.cond:
                    if fake.drop > 0:
                        fake.drop -= 1
                        self.close_connection = True
                        self.connection.close()
                        return
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.headers.get("X-FlyMC-Token") != TOKEN:
                    return self.answer(401, {"protocol": 1, "error": "bad-token", "reason": "no"})
                endpoint = self.path.rsplit("/", 1)[-1]
                with fake.cond:
                    fake.requests.append({"endpoint": endpoint, "body": body})
                    fake.cond.notify_all()
                self.answer(200, fake.reply(endpoint, body))

            def answer(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.addr = f"127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def reply(self, endpoint: str, body: Dict[str, Any]) -> Any:
        if endpoint == "register":
            return {"protocol": 1, "node": body["node"], "incarnation": body["incarnation"], "nodes": 3}
        if endpoint == "events":
            with self.cond:
                ids = []
                for _ in body["events"]:
                    self.ids += 1
                    ids.append(f"{self.ids:016x}")
            return {"ids": ids}
        if endpoint == "done":
            return {"fresh": True}
        if endpoint == "cancel":
            return {"cancelled": body["ids"]}
        if endpoint == "paused":
            return {}
        if endpoint == "poll":
            with self.cond:
                self.cond.wait_for(
                    lambda: self.pause is not None or any(o["seq"] > body["after"] for o in self.orders),
                    timeout=2,
                )
                out: Dict[str, Any] = {"orders": [o for o in self.orders if o["seq"] > body["after"]]}
                if self.pause is not None:
                    out["pause"], self.pause = self.pause, None
                return out
        return {}

    def enable(self, event: Dict[str, Any], previous: Optional[str]) -> None:
        with self.cond:
            seq = len(self.orders) + 1
            self.orders.append({"seq": seq, "previous": previous, "event": event})
            self.cond.notify_all()

    def of(self, endpoint: str) -> List[Dict[str, Any]]:
        with self.cond:
            return [r["body"] for r in self.requests if r["endpoint"] == endpoint]

    def env(self, node: int = 0, **extra: str) -> Dict[str, str]:
        env = {"FLYMC_SERVER": self.addr, "FLYMC_TOKEN": TOKEN, "FLYMC_NODE": str(node),
               "FLYMC_NODES": "3", "FLYMC_INCARNATION": "0"}
        env.update(extra)
        return env


@pytest.fixture
def server() -> Iterator[FakeServer]:
    s = FakeServer()
    yield s
    s.http.shutdown()
    s.http.server_close()


def event(id: str, kind: str, name: str, sender: Optional[int] = None, **fields: Any) -> Dict[str, Any]:
    return {"id": id, "kind": kind, "name": name, "from": sender, "to": 0, "fields": fields, "payload": None}
