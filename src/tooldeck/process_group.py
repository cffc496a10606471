"""Start a host program in a process group of its own, so that everything it starts can be stopped at once.

asyncio's `create_subprocess_exec` can be cancelled while it is still setting the process up (connecting its
pipes), after the program already runs; asyncio then kills the leader alone and the program's children run on.
`spawn` lets the set-up finish and kills the whole group instead, then lets the cancellation through."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Any

REAP_S = 5.0
"""How long a group killed during set-up is waited for (a member that left the group may hold the pipes)."""


async def spawn(*argv: str, **kwargs: Any) -> asyncio.subprocess.Process:
    """`asyncio.create_subprocess_exec(*argv, start_new_session=True, **kwargs)`; its OSError as is."""
    started = asyncio.ensure_future(asyncio.create_subprocess_exec(*argv, start_new_session=True, **kwargs))
    try:
        return await asyncio.shield(started)
    except asyncio.CancelledError:
        with contextlib.suppress(OSError):  # OSError: it never started, so there is nothing to stop
            await asyncio.shield(_kill_when_started(started))
        raise


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(pgid, sig)


async def _kill_when_started(started: asyncio.Future[asyncio.subprocess.Process]) -> None:
    proc = await started
    kill_group(proc.pid)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(REAP_S):
            await proc.wait()
