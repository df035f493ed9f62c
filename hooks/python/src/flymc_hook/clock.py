"""A virtual clock for libraries that read the time themselves.

Under flymc, time must not decide anything: timers are events flymc enables. A library that
reads `time.monotonic()` to decide when an election or a heartbeat is due (PySyncObj, most
tick-driven libraries) gets this clock instead: it stands still unless the node program moves
it, and the node moves it only when flymc fires the timer that stands for the deadline.

    clock = VirtualClock()
    clock.patch(pysyncobj.syncobj, "monotonicTime")  # the name the library calls
    ...
    if d.kind == "timeout" and d.name == "election":
        clock.advance(2.0)                           # past any election deadline
        obj.doTick(0)

Patch the name where the library looks it up (a module that did `from time import monotonic`
holds its own reference). `patch_time_module()` replaces `time.time` and `time.monotonic`
themselves, for code that calls `time.monotonic()` through the module; it leaves sleeps and
socket timeouts alone (they do not read these functions).
"""

from __future__ import annotations

import time
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, List, Tuple


class VirtualClock:
    """Seconds that pass only when `advance` or `set` says so."""

    def __init__(self, start: float = 1000.0) -> None:
        # Not 0: libraries often treat 0 as "never happened".
        self._now = float(start)
        self._undo: List[Tuple[Any, str, Any]] = []

    def now(self) -> float:
        return self._now

    __call__ = now

    def advance(self, seconds: float) -> float:
        """Move the clock forward; the new time."""
        if seconds < 0:
            raise ValueError("a clock does not go back")
        self._now += seconds
        return self._now

    def set(self, when: float) -> None:
        if when < self._now:
            raise ValueError("a clock does not go back")
        self._now = float(when)

    def patch(self, owner: Any, name: str) -> Callable[[], float]:
        """Replace `owner.name` (a module's or class's time function) with this clock; the
        function it replaced."""
        before = getattr(owner, name)
        setattr(owner, name, self.now)
        self._undo.append((owner, name, before))
        return before  # type: ignore[no-any-return]

    def patch_time_module(self) -> None:
        """Replace `time.time` and `time.monotonic` (and their `_ns` twins)."""
        self.patch(time, "time")
        self.patch(time, "monotonic")
        self.patch_ns(time, "time_ns")
        self.patch_ns(time, "monotonic_ns")

    def patch_ns(self, owner: Any, name: str) -> None:
        before = getattr(owner, name)
        setattr(owner, name, lambda: int(self._now * 1_000_000_000))
        self._undo.append((owner, name, before))

    def restore(self) -> None:
        """Undo every patch, newest first."""
        while self._undo:
            owner, name, before = self._undo.pop()
            setattr(owner, name, before)
