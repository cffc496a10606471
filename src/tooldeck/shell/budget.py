"""The time budget and cancel flag one shell call shares with its `python` and `js` builtins."""

from __future__ import annotations

import threading
import time


class Budget:
    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.started = time.monotonic()
        self.deadline = self.started + timeout_s
        self.cancelled = threading.Event()

    def remaining(self) -> float:
        if self.cancelled.is_set():
            return 0.0
        return self.deadline - time.monotonic()

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def elapsed(self) -> float:
        return time.monotonic() - self.started
