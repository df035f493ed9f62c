"""flymc's Python hook: a node program uses it to hand every inter-node message, timer and
crash-point disk write to flymc's event server, and to process an event only when flymc
enables it. The protocol is hooks/PROTOCOL.md; this package is its Python side, with the
surface of the Rust hook (hooks/rust).

A node's life under flymc::

    from flymc_hook import Hook

    hook = Hook.from_env()               # FLYMC_SERVER, FLYMC_TOKEN, FLYMC_NODE, ...
    count = 0
    hook.timer("tick")                   # startup: arm timers, send first messages
    hook.ready({"count": count})
    while True:
        d = hook.next()                  # the next event flymc enabled here
        if d.kind == "message" and d.name == "ping":
            count += 1
            hook.send(d.sender, "pong", {"n": count})
        hook.done({"count": count})      # everything it caused is reported: its state

Rules that keep paths replayable: report every event an enabled event causes before `done`;
never let wall-clock time decide anything (timers are events flymc enables; `VirtualClock` for
libraries that read the time themselves); report in `done` every variable that decides the
node's future; start Python with a fixed `PYTHONHASHSEED` (set iteration order).

The hook is synchronous and single-threaded: it polls for orders only inside `next()` and
`crash_point()`, so call it from one thread. Watchdog: when the event server is gone or says
this node is stale, the hook ends the process with exit status `EXIT_SERVER_GONE` (75).
"""

from __future__ import annotations

import os
import sys

from . import caught
from ._client import POLL, PROTOCOL_VERSION, REPORT, Client
from ._order import Local
from .caught import EXCEPTIONS_VAR
from .clock import VirtualClock
from .errors import (
    ConnectError,
    EnvError,
    HookError,
    HttpError,
    ProtocolError,
    Rejected,
    UsageError,
)

# Types for checkers only: importing `typing` (and `dataclasses`) costs every node start
# tens of milliseconds, and flymc starts every node of every path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Sequence

__all__ = [
    "EXCEPTIONS_VAR",
    "EXIT_SERVER_GONE",
    "PROTOCOL_VERSION",
    "ConnectError",
    "Delivery",
    "EnvError",
    "Hook",
    "HookConfig",
    "HookError",
    "HttpError",
    "Outgoing",
    "ProtocolError",
    "Rejected",
    "UsageError",
    "VirtualClock",
    "caught",
]

#: Exit status of a node process whose event server went away.
EXIT_SERVER_GONE = 75
#: How long one long poll may wait at the server.
POLL_WAIT_MS = 25_000

MESSAGE = "message"
TIMEOUT = "timeout"
DISK = "disk"
CLIENT = "client"


class HookConfig:
    """Where the server is and who this node is; usually from the environment flymc sets."""

    def __init__(
        self,
        server: str,
        token: str,
        node: int,
        incarnation: int = 0,
        addr: Optional[str] = None,
        peers: Optional[List[str]] = None,
        data_dir: Optional[str] = None,
        exit_when_server_gone: bool = True,
        resume: Optional[str] = None,
    ) -> None:
        #: `host:port` of the event server, and the run's token.
        self.server = server
        self.token = token
        self.node = node
        self.incarnation = incarnation
        #: `ip:port` this node may listen on, if flymc gave one.
        self.addr = addr
        #: Every node's `ip:port`, in node order.
        self.peers = list(peers or [])
        #: The node's data directory (kept across crash and reboot).
        self.data_dir = data_dir
        #: End the process when the server goes away (the default).
        self.exit_when_server_gone = exit_when_server_gone
        #: The named pipe to wait on after pausing for a checkpoint (FLYMC_RESUME); without it
        #: the hook does not offer to pause.
        self.resume = resume

    @staticmethod
    def from_env(environ: Optional[Dict[str, str]] = None) -> "HookConfig":
        env = os.environ if environ is None else environ

        def need(k: str) -> str:
            v = env.get(k)
            if v is None:
                raise EnvError(f"{k} is not set: start this node under flymc")
            return v

        def number(k: str, v: str) -> int:
            try:
                return int(v)
            except ValueError:
                raise EnvError(f"{k}: `{v}` is not a number") from None

        peers = [p.strip() for p in env.get("FLYMC_PEERS", "").split(",") if p.strip()]
        return HookConfig(
            server=need("FLYMC_SERVER"),
            token=need("FLYMC_TOKEN"),
            node=number("FLYMC_NODE", need("FLYMC_NODE")),
            incarnation=number("FLYMC_INCARNATION", env.get("FLYMC_INCARNATION", "0")),
            addr=env.get("FLYMC_NODE_ADDR"),
            peers=peers,
            data_dir=env.get("FLYMC_DATA_DIR"),
            resume=env.get("FLYMC_RESUME") or None,
        )


class Delivery:
    """An event flymc enabled at this node."""

    __slots__ = ("id", "kind", "name", "sender", "fields", "payload")

    def __init__(self, id: str, kind: str, name: str, sender: Optional[int], fields: Dict[str, Any],
                 payload: Any) -> None:
        self.id = id
        #: "message", "timeout", "disk" or "client".
        self.kind = kind
        #: Message type, timer name or client event name.
        self.name = name
        #: The sender of a message (None for timers, disk writes and client requests).
        self.sender = sender
        self.fields = fields
        #: The payload the sender reported, verbatim.
        self.payload = payload

    def __repr__(self) -> str:
        return f"Delivery({self.kind} {self.name} {self.id} from {self.sender})"

    def field(self, name: str, default: Any = None) -> Any:
        return self.fields.get(name, default)


class Outgoing:
    """An event to report: a message, a timer or a crash-point disk write."""

    def __init__(self, kind: str, name: str, to: Optional[int] = None,
                 fields: Optional[Dict[str, Any]] = None, payload: Any = None,
                 channel: Optional[str] = None, peer: Optional[int] = None,
                 delay_ms: Optional[int] = None) -> None:
        self.kind = kind
        self.name = name
        self.to = to
        self.fields = dict(fields or {})
        self.payload = payload
        #: Messages with one sender, destination and channel are delivered in report order,
        #: like the packets of one TCP connection; None: flymc may reorder them.
        self.channel = channel
        #: A peer-failure timer: offered once that node's current incarnation crashed.
        self.peer = peer
        #: How long a timer asked to wait (flymc's fair continuation fires earliest first).
        self.delay_ms = delay_ms
        #: The event that caused it; default: the event in progress, else the last done.
        self.parent: Optional[str] = None
        self.parent_set = False

    @staticmethod
    def message(to: int, name: str, fields: Optional[Dict[str, Any]] = None, payload: Any = None,
                channel: Optional[str] = None) -> "Outgoing":
        return Outgoing(MESSAGE, name, to, fields, payload, channel)

    @staticmethod
    def timer(name: str, fields: Optional[Dict[str, Any]] = None, delay_ms: Optional[int] = None,
              peer: Optional[int] = None) -> "Outgoing":
        return Outgoing(TIMEOUT, name, None, fields, None, None, peer, delay_ms)

    @staticmethod
    def disk(name: str, fields: Optional[Dict[str, Any]] = None) -> "Outgoing":
        return Outgoing(DISK, name, None, fields)

    def with_parent(self, parent: Optional[str]) -> "Outgoing":
        self.parent, self.parent_set = parent, True
        return self


def _state(state: Dict[str, Any]) -> Dict[str, Any]:
    if not isinstance(state, dict):
        raise UsageError(f"the node state must be a dict, not {type(state).__name__}")
    return caught.add_to(state)


class Hook:
    """A node's connection to the event server."""

    def __init__(self, cfg: HookConfig, client: Client, nodes: int) -> None:
        self.config = cfg
        self._client = client
        self._nodes = nodes
        self._local = Local()
        self._reported: Dict[str, Any] = {}

    @staticmethod
    def from_env(log_level: Optional[int] = None) -> "Hook":
        """`HookConfig.from_env()`, then `Hook.connect`."""
        return Hook.connect(HookConfig.from_env(), log_level=log_level)

    @staticmethod
    def connect(cfg: HookConfig, log_level: Optional[int] = None) -> "Hook":
        """Register with the server. Installs the exception hooks (and, with `log_level`, the
        log hook: log records at that level or above become `exceptions` records)."""
        caught.install(log_level)
        client = Client(cfg.server, cfg.token)
        req: Dict[str, Any] = {
            "protocol": PROTOCOL_VERSION,
            "node": cfg.node,
            "incarnation": cfg.incarnation,
            "pid": os.getpid(),
        }
        if cfg.resume:
            req["pausable"] = True
            req["resumes"] = True
        hook = Hook(cfg, client, 0)
        reply = hook._post(REPORT, "register", req)
        try:
            hook._nodes = int(reply["nodes"])
        except (KeyError, TypeError, ValueError):
            raise ProtocolError(f"register: no node count in {reply!r}") from None
        return hook

    @property
    def node(self) -> int:
        return self.config.node

    @property
    def nodes(self) -> int:
        """How many nodes the cluster has."""
        return self._nodes

    @property
    def incarnation(self) -> int:
        return self.config.incarnation

    @property
    def current(self) -> Optional[str]:
        """The enabled event being processed, if any."""
        return self._local.current

    def _post(self, lane: str, endpoint: str, body: Dict[str, Any], timeout: float = 30.0) -> Any:
        try:
            return self._client.post(lane, endpoint, body, timeout)
        except (ConnectError, HttpError, Rejected) as e:
            gone = isinstance(e, (ConnectError, HttpError)) or (
                e.status in (401, 409) and e.code in ("bad-token", "stale")
            )
            if gone and self.config.exit_when_server_gone:
                sys.stderr.write(f"flymc-hook: node n{self.node}: {e}; exiting\n")
                sys.stderr.flush()
                os._exit(EXIT_SERVER_GONE)
            raise

    def _who(self) -> Dict[str, Any]:
        return {"node": self.node, "incarnation": self.incarnation}

    # Reporting events ---------------------------------------------------------------------

    def report_all(self, items: Sequence[Outgoing]) -> List[str]:
        """Report events in one request; their ids, in order."""
        events = []
        default = self._local.default_parent()
        for o in items:
            parent = o.parent if o.parent_set else default
            to = self.node if o.to is None else o.to
            if o.kind != MESSAGE and to != self.node:
                raise UsageError(f"a {o.kind} event is this node's own: to must be {self.node}")
            e: Dict[str, Any] = {
                "parent": parent,
                "seq": self._local.next_seq(parent, o.kind, o.name, to),
                "kind": o.kind,
                "name": o.name,
                "to": to,
                "fields": o.fields,
                "payload": o.payload,
            }
            if o.channel is not None:
                e["channel"] = o.channel
            if o.peer is not None:
                e["peer"] = o.peer
            if o.delay_ms is not None:
                e["delay_ms"] = o.delay_ms
            events.append(e)
        reply = self._post(REPORT, "events", dict(self._who(), events=events))
        ids = reply.get("ids") if isinstance(reply, dict) else None
        if not isinstance(ids, list) or len(ids) != len(events):
            raise ProtocolError(f"events: {reply!r} for {len(events)} events")
        return [str(i) for i in ids]

    def report(self, item: Outgoing) -> str:
        return self.report_all([item])[0]

    def send(self, to: int, name: str, fields: Optional[Dict[str, Any]] = None, payload: Any = None,
             channel: Optional[str] = None) -> str:
        """Send message `name` to node `to`: delivered when flymc enables it. `fields` are what
        guards and the global state see; `payload` is handed to the receiver verbatim. With a
        `channel`, messages from here to `to` on it arrive in the order sent."""
        return self.report(Outgoing.message(to, name, fields, payload, channel))

    def timer(self, name: str, fields: Optional[Dict[str, Any]] = None, delay_ms: Optional[int] = None,
              peer: Optional[int] = None) -> str:
        """Arm timer `name`: it fires (comes out of `next()`) when flymc enables it, never by
        wall-clock time."""
        return self.report(Outgoing.timer(name, fields, delay_ms, peer))

    def cancel(self, event: str) -> bool:
        """Disarm timer `event`; False when it already fired (ignore its delivery)."""
        reply = self._post(REPORT, "cancel", dict(self._who(), ids=[event]))
        return event in (reply.get("cancelled") or [])

    # Processing --------------------------------------------------------------------------

    def ready(self, state: Dict[str, Any]) -> None:
        """Startup is over: report the initial state. Events are delivered only after this."""
        if self._local.ready:
            raise UsageError("ready() called twice")
        self._finish(state)

    def next(self) -> Delivery:
        """The next event flymc enabled at this node (in the order flymc enabled them)."""
        if not self._local.ready:
            raise UsageError("next() before ready()")
        o = self._wait(self._local.take_delivery)
        e = o["event"]
        return Delivery(
            id=e["id"],
            kind=e["kind"],
            name=e["name"],
            sender=e.get("from"),
            fields=e.get("fields") or {},
            payload=e.get("payload"),
        )

    def done(self, state: Dict[str, Any]) -> None:
        """The event in progress is processed and all it caused is reported: its state."""
        if not self._local.ready:
            raise UsageError("done() before ready(): report startup with ready()")
        self._finish(state)

    def crash_point(self, name: str, state: Dict[str, Any], fields: Optional[Dict[str, Any]] = None) -> None:
        """A disk write flymc may crash the node before. Reports the write, reports `state` as
        the state of the event in progress (so it must be the state *before* the write: what a
        crash here keeps), and returns once flymc enables the write; if flymc crashes the node
        instead, this never returns. Then the write is the event in progress: write, and end
        it with `done`."""
        event = self.report(Outgoing.disk(name, fields))
        self._local.awaited.add(event)
        self._finish(state)
        self._wait(lambda: self._local.take_crash_point(event))

    def error(self, kind: str, message: object) -> None:
        """Record an error a handler does not raise; later states carry it in `exceptions`."""
        caught.error(kind, message, depth=2)

    def failed(self, exc: BaseException) -> None:
        """Record a caught exception; later states carry it in `exceptions`."""
        caught.failed(exc, depth=2)

    def _finish(self, state: Dict[str, Any]) -> None:
        state = _state(state)
        event = self._local.finishing()
        self._post(REPORT, "done", dict(self._who(), event=event, state=state))
        self._local.finished(event)
        # What the node says on going on after a pause: the node hands its state over only here.
        self._reported = state

    def _wait(self, take: Callable[[], Any]) -> Any:
        while True:
            got = take()
            if got is not None:
                return got
            self._poll()

    def _poll(self) -> None:
        """One long poll; takes its orders, and pauses when asked."""
        req = dict(self._who(), after=self._local.after, wait_ms=POLL_WAIT_MS)
        reply = self._post(POLL, "poll", req, timeout=POLL_WAIT_MS / 1000.0 + 15.0)
        orders = reply.get("orders") if isinstance(reply, dict) else None
        if not isinstance(orders, list):
            raise ProtocolError(f"poll: {reply!r}")
        self._local.push(orders)
        pause = reply.get("pause")
        if pause is not None and self.config.resume:
            self._pause(int(pause), self.config.resume)

    def _pause(self, n: int, pipe: str) -> None:
        """A checkpoint (PROTOCOL.md, *Pause*): say so, close every connection while the
        process is snapshotted, go on when flymc opens the resume pipe and closes it."""
        self._post(REPORT, "paused", dict(self._who(), pause=n))
        self._client.disconnect()
        with open(pipe, "rb") as f:
            f.read()
        # Going on (this process, or a copy restored from its snapshot): say in which state,
        # for flymc to check against the one recorded before the pause.
        self._post(REPORT, "resumed", dict(self._who(), pause=n, state=self._reported))
