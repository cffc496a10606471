"""Background reports for the loop: the reports `background_command` queued, drained before a model
turn and added to it as user text (`render_reports`, the form `builtins/background.py` documents).

The run's background manager exists only once a task was started in this process, or when a run
that was resumed has one on record; the loop asks only then, so a run without background tasks
pays nothing for them.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tooldeck.shell.background import STATE_KEY


def has_background(inv: Any, resumed: bool) -> bool:
    return STATE_KEY in inv.run_state.state or (resumed and _bound(inv))


def _bound(inv: Any) -> bool:
    return any(b.tool_id.startswith("builtin:background.") for b in inv.snapshot.bindings)


def drain(inv: Any) -> str | None:
    """The queued reports as one user text (None when there are none); they are marked delivered."""
    from tooldeck.builtins.background import pending_reports, render_reports

    reports = pending_reports(inv)
    return render_reports(reports) if reports else None


def running(inv: Any) -> bool:
    manager = inv.run_state.state.get(STATE_KEY)
    return manager is not None and any(t.status == "running" for t in manager.list())


async def wait_for_report(inv: Any, timeout: float, poll: float = 0.05) -> str | None:
    """While tasks still run and nothing is queued, wait (up to `timeout` seconds) for a report."""
    manager = inv.run_state.state.get(STATE_KEY)
    if manager is None:
        return None
    deadline = time.monotonic() + timeout
    while not manager.pending() and running(inv) and time.monotonic() < deadline:
        await asyncio.sleep(poll)
    return drain(inv)
