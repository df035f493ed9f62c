"""A PySyncObj 0.3.17 node under flymc, through flymc's Python hook (hooks/python).

PySyncObj is tick-driven: `doTick()` reads the clock to decide when an election or a heartbeat
is due, and sends through a `Transport`. This program gives it
- a transport whose `send` reports the message to flymc (delivered when flymc enables it),
- a virtual clock that stands still; flymc's `election` and `heartbeat` timers move it past the
  deadline they stand for, and the election timer is armed again whenever PySyncObj moves its
  election deadline (a follower's timeout restarts at every append from its leader),
- one `doTick(0)` after every event flymc enables, and then the node's state.

Arguments: `--params JSON` (system.toml passes `{params}`).
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import pickle
import random
import sys
from typing import Any, Dict, List, Optional

from flymc_hook import Hook, VirtualClock
from pysyncobj import SyncObj, SyncObjConf, replicated
from pysyncobj import syncobj as syncobj_module
from pysyncobj.node import Node
from pysyncobj.transport import Transport

import fix

ROLES = {0: "follower", 1: "candidate", 2: "leader"}


class Log(SyncObj):
    """The replicated state machine: a list of the values written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.values: List[Any] = []

    @replicated
    def add(self, value: Any) -> None:
        self.values.append(value)


class FlymcTransport(Transport):
    """PySyncObj's transport, through flymc: every peer is connected from the start (a message
    to a crashed node is lost by flymc), and a send is a message flymc delivers when it chooses."""

    def __init__(self, syncObj: Any, selfNode: Node, otherNodes: Any, hook: Hook,
                 index: Dict[Node, int], channel: Optional[str]) -> None:
        super().__init__(syncObj, selfNode, otherNodes)
        self.hook = hook
        self.index = index
        self.channel = channel
        self.peers = sorted(otherNodes, key=lambda n: index[n])

    def tryGetReady(self) -> None:
        for n in self.peers:
            self._onNodeConnected(n)

    @property
    def ready(self) -> bool:
        return True

    def addNode(self, node: Node) -> None:
        pass

    def dropNode(self, node: Node) -> None:
        pass

    def destroy(self) -> None:
        pass

    def send(self, node: Node, message: Dict[str, Any]) -> bool:
        payload = base64.b64encode(pickle.dumps(message, protocol=4)).decode()
        self.hook.send(self.index[node], message["type"], fields(message), payload, channel=self.channel)
        return True


def fields(m: Dict[str, Any]) -> Dict[str, Any]:
    """What flymc sees of a message (its state and guards): its Raft fields, not its bytes."""
    out = {k: m[k] for k in ("term", "commit_index", "prevLogIdx", "prevLogTerm", "next_node_idx",
                             "success", "reset", "last_log_index", "last_log_term") if k in m}
    if "entries" in m:
        out["entries"] = [entry(e) for e in m["entries"]]
    return out


def entry(e: Any) -> str:
    """A log entry as `TERM:VALUE` (`TERM:noop` for a leader's no-op)."""
    command, _, term = e
    kind = command[0]
    if kind == 1:
        return f"{term}:noop"
    if kind == 0:
        cmd = pickle.loads(command[1:])
        if isinstance(cmd, tuple) and len(cmd) >= 2 and cmd[1]:
            return f"{term}:{cmd[1][0]}"
    return f"{term}:?"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--params", required=True)
    params = json.loads(ap.parse_args().params)
    if params["fixed"]:
        fix.apply()
    # PySyncObj draws its election timeouts from `random`: the same draws in every run.
    random.seed(0)
    # Its warnings and errors to stderr, where system.toml's log_patterns read them; errors
    # also become `exceptions` records (the hook's log hook).
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    hook = Hook.from_env(log_level=logging.ERROR)
    me, n = hook.node, hook.nodes
    nodes = [Node(f"n{i}") for i in range(n)]
    index = {node: i for i, node in enumerate(nodes)}
    clock = VirtualClock()
    clock.patch(syncobj_module, "monotonicTime")
    channel = "raft" if params["ordered"] else None
    conf = SyncObjConf(
        autoTick=False,
        journalFile=os.path.join(hook.config.data_dir or ".", "journal"),
        # Only flymc's heartbeat timer keeps a leader in office; no step-down by the clock.
        leaderFallbackTimeout=1e9,
        connectionTimeout=1e9,
    )
    def make_transport(so: Any, s: Node, o: Any) -> FlymcTransport:
        return FlymcTransport(so, s, o, hook, index, channel)

    obj = Log(nodes[me], [x for x in nodes if x != nodes[me]], conf, nodeClass=Node, transportClass=make_transport)
    transport: FlymcTransport = obj._SyncObj__transport
    # Ready from the start, so PySyncObj never asks: connect the peers now.
    transport.tryGetReady()
    elections_left = params["elections"]
    heartbeats_left = params["heartbeats"]
    timers: Dict[str, Optional[str]] = {"election": None, "heartbeat": None}
    # PySyncObj's election deadline the armed election timer stands for: a leader's append
    # moves the deadline, and the timer follows it (cancelled and armed again). Armed once,
    # it would stand for a timeout that never restarts, and flymc's default order (timers by
    # deadline) would depose every leader before its first heartbeat.
    armed_deadline = 0.0

    def role() -> str:
        return ROLES[obj._SyncObj__raftState]

    def arm() -> None:
        nonlocal elections_left, heartbeats_left, armed_deadline
        leader = role() == "leader"
        deadline = obj._SyncObj__raftElectionDeadline
        if timers["election"] is not None and deadline != armed_deadline:
            hook.cancel(timers["election"])
            timers["election"] = None
        if not leader and timers["election"] is None and elections_left > 0 and me in params["election_timers"]:
            timers["election"] = hook.timer("election", delay_ms=int(conf.raftMaxTimeout * 1000))
            armed_deadline = deadline
        if leader and timers["heartbeat"] is None and heartbeats_left > 0:
            timers["heartbeat"] = hook.timer("heartbeat", delay_ms=int(conf.appendEntriesPeriod * 1000))
        # A leader does not campaign, a follower does not beat: withdraw what no longer fits.
        for name, wanted in (("election", not leader), ("heartbeat", leader)):
            t = timers[name]
            if t is not None and not wanted:
                hook.cancel(t)
                timers[name] = None

    def state() -> Dict[str, Any]:
        leader = obj._SyncObj__raftLeader
        voted = obj._SyncObj__votedForNodeId
        return {
            "term": obj.raftCurrentTerm,
            "voted_for": int(voted[1:]) if voted is not None else None,
            "role": role(),
            "leader": index.get(leader) if leader is not None else None,
            "log": [entry(e) for e in obj._SyncObj__raftLog[:]],
            "commit": obj.raftCommitIndex,
            "applied": list(obj.values),
            "elections_left": elections_left,
            "heartbeats_left": heartbeats_left,
        }

    obj.doTick(0)
    arm()
    hook.ready(state())
    while True:
        d = hook.next()
        if d.kind == "message":
            message = pickle.loads(base64.b64decode(d.payload))
            transport._onMessageReceived(nodes[d.sender], message)
        elif d.kind == "timeout" and d.name == "election" and timers["election"] == d.id:
            timers["election"] = None
            elections_left -= 1
            # Past any election deadline PySyncObj drew (at most raftMaxTimeout ahead).
            clock.advance(conf.raftMaxTimeout + 0.01)
        elif d.kind == "timeout" and d.name == "heartbeat" and timers["heartbeat"] == d.id:
            timers["heartbeat"] = None
            heartbeats_left -= 1
            clock.advance(conf.appendEntriesPeriod + 0.001)
        elif d.kind == "client" and d.name == "write":
            obj.add(d.field("value"))
        obj.doTick(0)
        arm()
        hook.done(state())


if __name__ == "__main__":
    main()
