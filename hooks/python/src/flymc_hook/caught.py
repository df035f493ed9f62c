"""What a node caught, in the format of the `exceptions` node variable (hooks/PROTOCOL.md).

Each record is ``{"type", "message", "where", "frames"}``: the exception's type (its qualified
name, ``builtins.`` left out), its message with its causes (``outer: inner``), where it was
recorded (``module:line``) and the traceback, innermost frame first (``module.function:line``).
Records are kept for the process's life (one incarnation); every state the hook reports
afterwards carries them all, so flymc's ``no-exception`` property sees them until the node
reboots. Paths are module names, not file paths, so a path file replays on another machine.
"""

from __future__ import annotations

import logging
import sys
import threading
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType, TracebackType
    from typing import Any, Dict, List, Optional

#: The node variable the records go to.
EXCEPTIONS_VAR = "exceptions"

_records: List[Dict[str, Any]] = []
_lock = threading.Lock()
_installed = False
_log_hook: Optional["LogHook"] = None


def _module(frame: FrameType) -> str:
    return str(frame.f_globals.get("__name__", "?"))


def _place(frame: Optional[FrameType], line: Optional[int] = None) -> str:
    if frame is None:
        return "?"
    return f"{_module(frame)}:{line if line is not None else frame.f_lineno}"


def _frames(tb: Optional[TracebackType]) -> List[str]:
    out = []
    while tb is not None:
        f = tb.tb_frame
        out.append(f"{_module(f)}.{f.f_code.co_name}:{tb.tb_lineno}")
        tb = tb.tb_next
    out.reverse()
    return out


def type_name(exc: BaseException) -> str:
    t = type(exc)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def message(exc: BaseException) -> str:
    """The exception's message, then its causes' (`__cause__`, else `__context__`)."""
    parts = [str(exc) or type_name(exc)]
    seen = {id(exc)}
    cur = exc.__cause__ or exc.__context__
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        parts.append(str(cur) or type_name(cur))
        cur = cur.__cause__ or cur.__context__
    return ": ".join(parts)


def _push(record: Dict[str, Any]) -> None:
    with _lock:
        _records.append(record)


def error(kind: str, msg: object, *, depth: int = 1) -> None:
    """A handler met an error it does not raise (it logs it, or a request is lost): record it
    as `kind` with `msg`, where this was called (`depth` frames up)."""
    frame = sys._getframe(depth)
    _push({"type": kind, "message": str(msg), "where": _place(frame), "frames": []})


def failed(exc: BaseException, *, depth: int = 1) -> None:
    """Record a caught exception: its type, message with causes, and traceback."""
    frame = sys._getframe(depth)
    _push(
        {
            "type": type_name(exc),
            "message": message(exc),
            "where": _place(frame),
            "frames": _frames(exc.__traceback__),
        }
    )


def _escaped(exc: BaseException, tb: Optional[TracebackType]) -> None:
    frames = _frames(tb)
    _push(
        {
            "type": type_name(exc),
            "message": message(exc),
            "where": frames[0] if frames else "?",
            "frames": frames,
            "escaped": True,
        }
    )


class LogHook(logging.Handler):
    """A logging handler that records every log record at or above its level: type
    ``log.LEVEL`` (or the exception's type when the record carries one), the record's
    message, ``module:line`` of the logging call."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
            ty = f"log.{record.levelname}"
            frames: List[str] = []
            if record.exc_info and record.exc_info[1] is not None:
                exc = record.exc_info[1]
                ty = type_name(exc)
                msg = f"{msg}: {message(exc)}"
                frames = _frames(record.exc_info[2])
            _push({"type": ty, "message": msg, "where": f"{record.module}:{record.lineno}", "frames": frames})
        except Exception:  # a log hook must never break the node
            self.handleError(record)


def install(log_level: Optional[int] = logging.ERROR) -> None:
    """Record exceptions that escape any thread (`sys.excepthook`, `threading.excepthook`,
    chaining the ones before) and, unless `log_level` is None, every log record at or above
    `log_level` (one `LogHook` on the root logger). `Hook.connect` calls it; calling it again
    only adds the log hook or changes its level."""
    global _installed, _log_hook
    with _lock:
        first, _installed = not _installed, True
    if first:
        before = sys.excepthook

        def excepthook(t: Any, exc: BaseException, tb: Optional[TracebackType]) -> None:
            _escaped(exc, tb)
            before(t, exc, tb)

        sys.excepthook = excepthook
        thread_before = threading.excepthook

        def thread_hook(args: Any) -> None:
            if args.exc_value is not None:
                _escaped(args.exc_value, args.exc_traceback)
            thread_before(args)

        threading.excepthook = thread_hook
    if log_level is not None:
        if _log_hook is None:
            _log_hook = LogHook(log_level)
            logging.getLogger().addHandler(_log_hook)
        else:
            _log_hook.setLevel(log_level)


def records() -> List[Dict[str, Any]]:
    """A copy of every record so far."""
    with _lock:
        return [dict(r) for r in _records]


def add_to(state: Dict[str, Any]) -> Dict[str, Any]:
    """`state` with the records as `exceptions`, unless there are none or it has the key."""
    with _lock:
        if _records and EXCEPTIONS_VAR not in state:
            state = dict(state)
            state[EXCEPTIONS_VAR] = [dict(r) for r in _records]
    return state


def clear() -> None:
    """Forget every record (tests only: a real node keeps them for its incarnation)."""
    with _lock:
        _records.clear()

