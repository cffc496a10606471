"""A relayed call's `notifications/progress`, in the order the upstream server sent them, all before its result.

The SDK's client (and the raw channel, `raw_relay.py`, which does as it does) runs the progress callback in a
task of its own per notification, so that a slow client never stops the read loop. Nothing then orders those
tasks against each other or against the call's result: when sending one progress to the downstream client
has to wait, the next one or the result itself overtook it, and a progress sent after its call's result is
dropped by the client's transport (a 2026-07-28 POST's event stream ends with the result). `ProgressRelay`
chains a call's notifications, and the call awaits `drain` before its result goes on.

Progress stays best-effort: a notification the client does not take within PROGRESS_SEND_S is dropped, and
so are the ones after it on that call, so a stuck client holds a result back by at most that long.
"""

from __future__ import annotations

import asyncio
import logging

from tooldeck.sources.mcp.callbacks import Peer

log = logging.getLogger("tooldeck.mcp")

PROGRESS_SEND_S = 2.0
"""How long one progress notification may take to reach the downstream client before it (and the rest of the
call's progress) is dropped."""


class ProgressRelay:
    """One call's progress callback: relays each notification to `peer` after the previous one, and `drain`
    waits for them all."""

    __slots__ = ("_last", "_peer", "_stuck")

    def __init__(self, peer: Peer) -> None:
        self._peer = peer
        self._last: asyncio.Future[None] | None = None
        """Done once the latest notification so far was relayed (or dropped)."""
        self._stuck = False

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        previous = self._last
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._last = done
        try:
            if previous is not None and not previous.done():
                await asyncio.wait([previous])  # never cancels `previous`, whatever happens to this task
            if self._stuck:
                return
            async with asyncio.timeout(PROGRESS_SEND_S):
                await self._peer.progress(progress, total, message)
        except TimeoutError:
            self._stuck = True
            log.debug("progress not relayed: the client did not take it within %g s; the rest of this call's "
                      "progress is dropped", PROGRESS_SEND_S)
        except Exception as exc:  # best-effort, as the notification itself
            log.debug("progress not relayed: %s", exc)
        finally:
            if not done.done():
                done.set_result(None)

    async def drain(self) -> None:
        """Wait until every notification received so far was relayed (or dropped)."""
        last = self._last
        if last is not None and not last.done():
            await asyncio.wait([last])

