"""How many MCP sessions one `tooldeck serve` keeps open, decided at the HTTP edge.

A handshake-era client opens a session with `initialize` and may vanish without `DELETE`; its session
(~38 KB: the SDK transport, its server task, tooldeck's run) would live for the idle timeout. At
`max_sessions` a new session closes the **least recently used idle** one (no request in flight, no open
stream), exactly as a client's `DELETE` would; its id then answers 404 and, as the MCP spec asks, its
client starts a new session. Only when every session is busy is the newcomer refused (503
`serve.session_limit`). Refusing instead would let abandoned sessions lock out every new client for up to
the idle timeout; evicting never takes a session from a client that is using it (docs/serve.md).

This class is the bookkeeping only (no I/O): the gateway tells it when requests of a session start and
end, and closes the sessions `admit` hands back.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

SESSION_LIMIT = "serve.session_limit"


@dataclass(slots=True)
class _Entry:
    in_flight: int
    last_used: float


class SessionCap:
    def __init__(self, max_sessions: int, idle_timeout_s: float | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self._clock = clock
        self._sessions: OrderedDict[str, _Entry] = OrderedDict()  # least recently used first
        self._opening = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    def begin(self, session_id: str) -> bool:
        """A request of `session_id` starts; False when the session is not (or no longer) known here."""
        entry = self._sessions.get(session_id)
        if entry is None:
            return False
        entry.in_flight += 1
        entry.last_used = self._clock()
        self._sessions.move_to_end(session_id)
        return True

    def end(self, session_id: str) -> None:
        entry = self._sessions.get(session_id)
        if entry is not None:
            entry.in_flight = max(0, entry.in_flight - 1)
            entry.last_used = self._clock()
            self._sessions.move_to_end(session_id)

    def drop(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    def admit(self) -> list[str] | None:
        """Make room for one session that is being opened. Returns the ids of the sessions to close first
        (usually none, at the cap one), or None when every session is busy. Each `admit` that does not
        return None must be followed by `opened` or `not_opened`."""
        self._forget_expired()
        need = len(self._sessions) + self._opening + 1 - self.max_sessions
        victims: list[str] = []
        if need > 0:
            victims = [sid for sid, entry in self._sessions.items() if entry.in_flight == 0][:need]
            if len(victims) < need:
                return None
            for sid in victims:
                del self._sessions[sid]
        self._opening += 1
        return victims

    def opened(self, session_id: str) -> None:
        """The opening request created `session_id` (and is still in flight)."""
        self._opening = max(0, self._opening - 1)
        self._sessions[session_id] = _Entry(1, self._clock())

    def not_opened(self) -> None:
        self._opening = max(0, self._opening - 1)

    def _forget_expired(self) -> None:
        """Sessions idle past the idle timeout: the SDK has closed them already."""
        if self.idle_timeout_s is None:
            return
        horizon = self._clock() - self.idle_timeout_s
        for sid in [s for s, e in self._sessions.items() if e.in_flight == 0 and e.last_used < horizon]:
            del self._sessions[sid]
