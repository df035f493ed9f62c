from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest
from conftest import FakeServer, event

from flymc_hook import EXIT_SERVER_GONE, EnvError, Hook, HookConfig, UsageError, VirtualClock, caught
from flymc_hook._order import Local


@pytest.fixture(autouse=True)
def no_records() -> None:
    caught.clear()


def connect(server: FakeServer, **extra: str) -> Hook:
    cfg = HookConfig.from_env(server.env(**extra))
    cfg.exit_when_server_gone = False
    return Hook.connect(cfg)


def order(seq: int, id: str, previous: str | None) -> dict:
    return {"seq": seq, "previous": previous, "event": event(id, "message", "m", 1)}


def test_an_order_waits_until_the_previous_event_is_done() -> None:
    local = Local()
    local.push([order(1, "a", None), order(2, "b", "a")])
    assert local.take_delivery() is None, "nothing before ready"
    local.finished(local.finishing())
    assert local.take_delivery()["event"]["id"] == "a"
    assert local.take_delivery() is None, "b waits while a is in progress"
    local.finished(local.finishing())
    assert local.take_delivery()["event"]["id"] == "b"
    local.finished(local.finishing())
    with pytest.raises(UsageError):
        local.finishing()
    local.push([order(2, "b", "a")])
    assert not local.queue, "a repeated order is ignored"


def test_sequence_numbers_count_per_parent_kind_name_and_destination() -> None:
    local = Local()
    assert local.next_seq("p", "message", "a", 1) == 0
    assert local.next_seq("p", "message", "a", 2) == 0
    assert local.next_seq("p", "message", "a", 1) == 1
    assert local.next_seq(None, "message", "a", 1) == 0
    assert local.next_seq("p", "timeout", "a", 1) == 0


def test_the_environment_must_come_from_flymc() -> None:
    with pytest.raises(EnvError, match="FLYMC_SERVER is not set"):
        HookConfig.from_env({})
    with pytest.raises(EnvError, match="not a number"):
        HookConfig.from_env({"FLYMC_SERVER": "x:1", "FLYMC_TOKEN": "t", "FLYMC_NODE": "one"})


def test_a_node_registers_reports_its_events_and_processes_orders_in_flymc_order(server: FakeServer) -> None:
    hook = connect(server)
    assert (hook.node, hook.nodes) == (0, 3)
    assert server.of("register")[0]["protocol"] == 1
    assert "pausable" not in server.of("register")[0]
    elect = hook.timer("elect", delay_ms=150)
    hook.send(1, "hello", {"term": 0}, {"raw": "x"}, channel="tcp")
    with pytest.raises(UsageError):
        hook.next()
    hook.ready({"term": 0})
    first, second = server.of("events")
    assert first["events"][0] == {"parent": None, "seq": 0, "kind": "timeout", "name": "elect", "to": 0,
                                  "fields": {}, "payload": None, "delay_ms": 150}
    assert second["events"][0]["channel"] == "tcp" and second["events"][0]["to"] == 1
    assert server.of("done")[0] == {"node": 0, "incarnation": 0, "event": None, "state": {"term": 0}}
    # flymc enables a message and then the timer; the second waits for the first to be done.
    server.enable(event("m1", "message", "vote", 2, term=1), None)
    server.enable(event(elect, "timeout", "elect"), "m1")
    d = hook.next()
    assert (d.id, d.kind, d.name, d.sender, d.field("term")) == ("m1", "message", "vote", 2, 1)
    reply = hook.send(2, "vote-reply", {"granted": True})
    hook.done({"term": 1})
    d = hook.next()
    assert (d.id, d.kind, d.sender) == (elect, "timeout", None)
    hook.done({"term": 2})
    events = server.of("events")
    assert events[2]["events"][0]["parent"] == "m1", "a send's parent is the event in progress"
    assert reply
    assert [r["event"] for r in server.of("done")] == [None, "m1", elect]


def test_a_crash_point_reports_the_state_before_the_write_and_waits_for_its_order(server: FakeServer) -> None:
    hook = connect(server)
    hook.ready({"log": []})
    server.enable(event("w1", "client", "write", value=7), None)
    d = hook.next()
    assert d.kind == "client"
    result: list = []

    def write() -> None:
        hook.crash_point("log", {"log": []}, {"index": 1})
        result.append(hook.current)

    t = threading.Thread(target=write)
    t.start()
    with server.cond:
        server.cond.wait_for(lambda: len(server.of("done")) == 2, timeout=5)
    disk = server.of("events")[0]["events"][0]
    assert (disk["kind"], disk["name"], disk["parent"]) == ("disk", "log", "w1")
    assert server.of("done")[1] == {"node": 0, "incarnation": 0, "event": "w1", "state": {"log": []}}
    assert not result, "the write waits for flymc to enable it"
    disk_id = f"{server.ids:016x}"
    server.enable(event(disk_id, "disk", "log"), "w1")
    t.join(5)
    assert result == [disk_id], "after the crash point the write is the event in progress"
    hook.done({"log": [7]})
    assert server.of("done")[-1]["event"] == disk_id


def test_caught_exceptions_go_into_every_later_state_in_the_exceptions_format(server: FakeServer) -> None:
    hook = connect(server)
    hook.error("lost", "request 3")
    try:
        try:
            raise OSError("disk full")
        except OSError as e:
            raise ValueError("cannot save") from e
    except ValueError as e:
        hook.failed(e)
    hook.ready({"exceptions": "the node's own"})
    hook.cancel("0000000000000001")
    server.enable(event("m1", "message", "x", 1), None)
    hook.next()
    hook.done({"term": 1})
    own, later = (d["state"] for d in server.of("done"))
    assert own == {"exceptions": "the node's own"}
    lost, value = later["exceptions"]
    assert (lost["type"], lost["message"], lost["frames"]) == ("lost", "request 3", [])
    assert lost["where"].startswith("test_hook:")
    assert (value["type"], value["message"]) == ("ValueError", "cannot save: disk full")
    assert value["frames"][0].startswith("test_hook.test_caught_exceptions")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_the_log_hook_records_errors_logged_and_exceptions_escaping_threads() -> None:
    import logging

    caught.install(logging.ERROR)
    log = logging.getLogger("node")
    log.warning("only a warning")
    log.critical("truncating applied entries from %d", 3)
    t = threading.Thread(target=lambda: 1 / 0)
    t.start()
    t.join()
    r = caught.records()
    assert [x["type"] for x in r] == ["log.CRITICAL", "ZeroDivisionError"], r
    assert r[0]["message"] == "truncating applied entries from 3"
    assert r[1]["escaped"] is True and "division by zero" in r[1]["message"]


def test_a_pausable_hook_pauses_closes_its_connections_and_resumes_from_the_pipe(
    server: FakeServer, tmp_path: "os.PathLike[str]"
) -> None:
    pipe = os.path.join(str(tmp_path), "resume")
    os.mkfifo(pipe)
    hook = connect(server, FLYMC_RESUME=pipe)
    assert server.of("register")[0]["pausable"] is True
    hook.ready({"term": 1})
    server.pause = 4
    got: list = []
    t = threading.Thread(target=lambda: got.append(hook.next()))
    t.start()
    with server.cond:
        assert server.cond.wait_for(lambda: server.of("paused"), timeout=5)
    assert server.of("paused")[0]["pause"] == 4
    # The hook closes its connections right after the server answered `paused`.
    deadline = time.monotonic() + 5
    while any(hook._client._conns.values()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert hook._client._conns == {"report": None, "poll": None}, "no connection while paused"
    polls = len(server.of("poll"))
    time.sleep(0.2)
    assert len(server.of("poll")) == polls, "no poll until resumed"
    server.enable(event("m1", "message", "x", 1), None)
    with open(pipe, "wb"):
        pass
    t.join(5)
    assert got and got[0].id == "m1"
    assert server.of("poll")[-1]["after"] == 0
    # On going on, before polling again: the state it last reported, for flymc to check.
    resumed = server.of("resumed")
    assert [(r["pause"], r["state"]) for r in resumed] == [(4, {"term": 1})], resumed


def test_a_request_on_a_connection_closed_unanswered_is_sent_again(server: FakeServer) -> None:
    hook = connect(server)
    server.drop = 2
    hook.timer("t")
    assert len(server.of("events")) == 1


WATCHDOG = """
import sys
sys.path.insert(0, sys.argv[1])
from flymc_hook import Hook
hook = Hook.from_env()
hook.ready({})
hook.next()
"""


def test_a_node_ends_itself_when_the_event_server_is_gone(server: FakeServer) -> None:
    src = os.path.join(os.path.dirname(__file__), "..", "src")
    env = dict(os.environ, **server.env())
    p = subprocess.Popen([sys.executable, "-c", WATCHDOG, src], env=env, stderr=subprocess.PIPE)
    with server.cond:
        assert server.cond.wait_for(lambda: server.of("done"), timeout=10)
    server.http.shutdown()
    server.http.server_close()
    # The open long poll ends when the server's socket goes; then the next one is refused.
    try:
        code = p.wait(timeout=15)
    finally:
        p.kill()
    assert code == EXIT_SERVER_GONE, p.stderr.read() if p.stderr else ""
    assert b"exiting" in (p.stderr.read() if p.stderr else b"")


def test_the_virtual_clock_moves_only_when_told_and_patches_what_a_library_reads() -> None:
    class Lib:
        now = staticmethod(time.monotonic)

    clock = VirtualClock(start=5.0)
    clock.patch(Lib, "now")
    assert Lib.now() == 5.0
    time.sleep(0.01)
    assert Lib.now() == 5.0
    clock.advance(1.5)
    assert Lib.now() == 6.5
    with pytest.raises(ValueError):
        clock.advance(-1)
    clock.patch_time_module()
    assert time.monotonic() == 6.5 and time.time_ns() == 6_500_000_000
    clock.restore()
    assert Lib.now() != 6.5 and time.monotonic() != 6.5
