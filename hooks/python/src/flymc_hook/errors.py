"""The hook's errors: one base class, one subclass per way a request can fail."""

from __future__ import annotations


class HookError(Exception):
    """Anything the hook could not do."""


class EnvError(HookError):
    """A `FLYMC_*` variable is missing or malformed: start the node under flymc."""


class ConnectError(HookError):
    """The event server cannot be reached (flymc exited, or the address is wrong)."""


class HttpError(HookError):
    """An HTTP exchange failed after every retry."""


class ProtocolError(HookError):
    """The server answered something this hook does not understand."""


class UsageError(HookError):
    """The node program used the hook out of order (e.g. `done` before `ready`)."""


class Rejected(HookError):
    """The server refused a request (a 4xx with `error` and `reason`)."""

    def __init__(self, status: int, code: str, reason: str) -> None:
        super().__init__(f"the flymc event server rejected the request ({status} {code}): {reason}")
        self.status = status
        self.code = code
        self.reason = reason
