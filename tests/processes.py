"""Whether a process a test started has really stopped (shared by the tests of timeouts and cancels)."""

from __future__ import annotations

import os
import time
from pathlib import Path


def ended(pid: int) -> bool:
    """The process no longer exists, or is a zombie (an orphan whose reaper, PID 1 of a container, may never wait
    for it; it runs nothing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0] in "ZX"
    except (OSError, IndexError):
        return False


def gone(pid: int, deadline_s: float = 20.0) -> bool:
    """`ended(pid)` within `deadline_s`, polled (a blocking wait: for sync tests and after the work was cancelled)."""
    end = time.monotonic() + deadline_s
    while not ended(pid):
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)
    return True
