"""Background reports for the loop: the reports `background_command` queued, drained before a model
turn and added to it as user text (`render_reports`, the form `builtins/background.py` documents),
and the notes of the run's delegation link (agent/delegation/link.py): results of delegated tasks
nobody awaited, reports of background subagent legs.

The run's background manager exists only once a task was started in this process, or when a run
that was resumed has one on record; the loop asks only then, so a run without background tasks
pays nothing for them.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tooldeck.shell.background import STATE_KEY

NOTES_KEY = "agent.notes"
"""agent/delegation/link.py sets it once the run started a child or a background leg."""


def has_background(inv: Any, resumed: bool) -> bool:
    state = inv.run_state.state
    return STATE_KEY in state or NOTES_KEY in state or (resumed and _bound(inv))


def _bound(inv: Any) -> bool:
    return any(b.tool_id.startswith("builtin:background.") for b in inv.snapshot.bindings)


def drain(inv: Any) -> str | None:
    """The queued reports as one user text (None when there are none); they are marked delivered."""
    state = inv.run_state.state
    notes = state.get(NOTES_KEY)
    texts: list[str] = []
    if STATE_KEY in state or notes is None or _bound(inv):  # the shell's manager (made on a resumed run's first look)
        from tooldeck.builtins.background import pending_reports, render_reports

        reports = pending_reports(inv)
        if reports:
            texts.append(render_reports(reports))
    if notes is not None:
        text = notes.drain()
        if text:
            texts.append(text)
    return "\n\n".join(texts) if texts else None


def running(inv: Any) -> bool:
    state = inv.run_state.state
    manager = state.get(STATE_KEY)
    notes = state.get(NOTES_KEY)
    return (manager is not None and any(t.status == "running" for t in manager.list())) or \
        (notes is not None and notes.running())


def _pending(inv: Any) -> bool:
    state = inv.run_state.state
    manager = state.get(STATE_KEY)
    notes = state.get(NOTES_KEY)
    return (manager is not None and bool(manager.pending())) or (notes is not None and notes.has_notes())


async def wait_for_report(inv: Any, timeout: float, poll: float = 0.05) -> str | None:
    """While tasks still run and nothing is queued, wait (up to `timeout` seconds) for a report."""
    state = inv.run_state.state
    if STATE_KEY not in state and NOTES_KEY not in state:
        return None
    deadline = time.monotonic() + timeout
    while not _pending(inv) and running(inv) and time.monotonic() < deadline:
        await asyncio.sleep(poll)
    return drain(inv)
