"""The hook's local bookkeeping, free of I/O (the Rust hook's `order.rs`): which enable order
may run next (local ordering, FlyMC §5), which event is in progress, and the per-parent
sequence numbers of reported events."""

from __future__ import annotations

from collections import deque
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Deque, Dict, List, Optional, Set, Tuple

from .errors import UsageError


class Local:
    def __init__(self) -> None:
        #: Orders received and not yet started, in `seq` order.
        self.queue: Deque[Dict[str, Any]] = deque()
        #: Highest order `seq` received (the next poll's `after`).
        self.after = 0
        #: The enabled event being processed (delivered, not yet done).
        self.current: Optional[str] = None
        #: The last event reported done.
        self.last_done: Optional[str] = None
        #: Startup finished (`ready` was reported).
        self.ready = False
        #: Crash points waiting for their enable order.
        self.awaited: Set[str] = set()
        self._seqs: Dict[Tuple[Optional[str], str, str, int], int] = {}

    def push(self, orders: List[Dict[str, Any]]) -> None:
        """Add orders from a poll answer; repeats (a retried poll) are ignored."""
        for o in orders:
            if o["seq"] > self.after:
                self.after = o["seq"]
                self.queue.append(o)

    def _front_startable(self) -> Optional[Dict[str, Any]]:
        if not self.queue:
            return None
        o = self.queue[0]
        if self.ready and self.current is None and o.get("previous") == self.last_done:
            return o
        return None

    def take_delivery(self) -> Optional[Dict[str, Any]]:
        """The next order for the node's handler, if it may start now."""
        o = self._front_startable()
        if o is None or o["event"]["id"] in self.awaited:
            return None
        self.queue.popleft()
        self.current = o["event"]["id"]
        return o

    def take_crash_point(self, event: str) -> Optional[Dict[str, Any]]:
        """The enable order of crash point `event`, if it may start now."""
        o = self._front_startable()
        if o is None or o["event"]["id"] != event:
            return None
        self.awaited.discard(event)
        self.queue.popleft()
        self.current = event
        return o

    def default_parent(self) -> Optional[str]:
        """The event in progress, else the last one done, else startup (None)."""
        return self.current if self.current is not None else self.last_done

    def next_seq(self, parent: Optional[str], kind: str, name: str, to: int) -> int:
        key = (parent, kind, name, to)
        n = self._seqs.get(key, 0)
        self._seqs[key] = n + 1
        return n

    def finishing(self) -> Optional[str]:
        """What a `done` now finishes: None for startup, else the event in progress."""
        if not self.ready:
            return None
        if self.current is None:
            raise UsageError("done() called with no enabled event in progress")
        return self.current

    def finished(self, event: Optional[str]) -> None:
        if event is None:
            self.ready = True
        else:
            self.current = None
            self.last_done = event
