"""The time budget of one shell call inside its worker, and what happens when it runs out.

`Budget.stop(reason)` ends the call: at the deadline (the worker's reader thread), or when the host
sends a stop (a cancel, or its own deadline). Each part of the call registers a stop hook when it
starts something that will not notice by itself: the interpreter (`bash.cancel()`, effective at the
next command boundary), a `python3` run (its monty worker process is killed). `python`/`js` file
operations and `sleep` check `stopped` themselves. Hooks run once, on the stopping thread.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable

TIMEOUT = "timeout"
CANCEL = "cancel"


class Budget:
    def __init__(self, timeout_s: float, *, started: float | None = None) -> None:
        self.timeout_s = timeout_s
        self.started = time.monotonic() if started is None else started
        self.deadline = self.started + timeout_s
        self.reason: str | None = None
        self.stopped = threading.Event()
        self._hooks: dict[int, Callable[[], object]] = {}
        self._next = 0
        self._lock = threading.Lock()

    def remaining(self) -> float:
        if self.stopped.is_set():
            return 0.0
        return self.deadline - time.monotonic()

    def expired(self) -> bool:
        return self.stopped.is_set() or time.monotonic() >= self.deadline

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def on_stop(self, hook: Callable[[], object]) -> Callable[[], None]:
        """Run `hook` when the budget stops (at once if it already has); returns the unregister function."""
        with self._lock:
            if self.reason is None:
                key = self._next
                self._next += 1
                self._hooks[key] = hook

                def unregister() -> None:
                    with self._lock:
                        self._hooks.pop(key, None)

                return unregister
        hook()
        return lambda: None

    def stop(self, reason: str) -> None:
        with self._lock:
            if self.reason is not None:
                return
            self.reason = reason
            hooks = list(self._hooks.values())
            self._hooks.clear()
        self.stopped.set()
        for hook in hooks:
            with contextlib.suppress(Exception):  # a failing hook must not keep the others from stopping their work
                hook()
