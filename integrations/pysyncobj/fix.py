"""The fix of PySyncObj 0.3.17's append handler (the `fixed` parameter), applied by patching.

The deviation: on every `append_entries` whose `prevLogIdx` matches, the handler deletes every
entry after `prevLogIdx`, even when the message is empty or older than what the follower holds.
Raft (Figure 2, AppendEntries 3-4) deletes only from the first entry that *conflicts* with a new
one, and appends only what is not there yet. So once messages are reordered, a stale heartbeat
removes an entry the follower already acknowledged, the leader commits it counting that
acknowledgement, and a node without it can be elected: a committed entry lost.

The fix rewrites each append message before the handler sees it, so that the handler's
unconditional truncation is Raft's: the new entries the follower already holds (same index and
term) are taken off the front of the message (its `prevLogIdx`/`prevLogTerm` move up over them:
they matched); if none is left, nothing is deleted; and the commit index it carries is capped at
the last entry the message vouches for (Raft's `min(leaderCommit, index of last new entry)`).
"""

from __future__ import annotations

import logging
from typing import Any, Dict

from pysyncobj.syncobj import SyncObj

_original = SyncObj._SyncObj__onMessageReceived  # type: ignore[attr-defined]
_delete = SyncObj._SyncObj__deleteEntriesFrom  # type: ignore[attr-defined]


def _holds(obj: Any, idx: int, term: int) -> bool:
    log = obj._SyncObj__raftLog
    first = log[0][1]
    return first <= idx < first + len(log) and log[idx - first][2] == term


def _rewrite(obj: Any, m: Dict[str, Any]) -> Dict[str, Any]:
    if m.get("type") != "append_entries" or "prevLogIdx" not in m or m.get("transmission"):
        return m
    m = dict(m)
    entries = list(m.get("entries", []))
    prev, prev_term = m["prevLogIdx"], m["prevLogTerm"]
    last_vouched = prev + len(entries)
    if _holds(obj, prev, prev_term):
        while entries and _holds(obj, entries[0][1], entries[0][2]):
            prev, prev_term = entries[0][1], entries[0][2]
            entries.pop(0)
    m["prevLogIdx"], m["prevLogTerm"], m["entries"] = prev, prev_term, entries
    m["commit_index"] = min(m["commit_index"], last_vouched)
    m["_keep_suffix"] = not entries
    return m


def _on_message(self: Any, node: Any, message: Dict[str, Any]) -> None:
    global _current
    message = _rewrite(self, message)
    self._flymc_keep_suffix = message.pop("_keep_suffix", False)
    _current = self
    try:
        _original(self, node, message)
    finally:
        self._flymc_keep_suffix = False


def _delete_entries_from(self: Any, from_idx: int) -> None:
    if getattr(self, "_flymc_keep_suffix", False):
        return
    _delete(self, from_idx)


class _NoFalseTruncation(logging.Filter):
    """The handler warns that it truncates applied entries before it calls the (patched)
    delete; when the fix keeps the suffix, nothing is truncated and the warning is false."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_keeping() and record.getMessage().startswith("truncating already-applied"))


_current: Any = None


def _keeping() -> bool:
    return bool(getattr(_current, "_flymc_keep_suffix", False))


def apply() -> None:
    """Patch SyncObj before any instance exists (the handler is bound in the constructor)."""
    logging.getLogger("pysyncobj.syncobj").addFilter(_NoFalseTruncation())
    SyncObj._SyncObj__onMessageReceived = _on_message  # type: ignore[attr-defined]
    SyncObj._SyncObj__deleteEntriesFrom = _delete_entries_from  # type: ignore[attr-defined]
