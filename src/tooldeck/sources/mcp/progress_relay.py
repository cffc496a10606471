"""A relayed call's `notifications/progress`, in the order the upstream server sent them, all before its result.

The SDK's client (and the raw channel, `raw_relay.py`, which does as it does) runs the progress callback in a
task of its own per notification, so that a slow client never stops the read loop. Nothing then orders those
tasks against each other or against the call's result: when sending one progress to the downstream client
has to wait, the next one or the result itself overtook it, and a progress sent after its call's result is
dropped by the client's transport (a 2026-07-28 POST's event stream ends with the result). `ProgressRelay`
queues a call's notifications and sends them one after another, and the call awaits `drain` before its result
goes on.

Progress stays best-effort, and bounded: a notification the client does not take within PROGRESS_SEND_S is
dropped, and so are the ones after it on that call; at most MAX_QUEUED wait to be sent (past that the oldest
waiting one is dropped, so the client still gets the latest state, in order, and a server that floods progress
to a slow client costs no memory); and `drain` waits PROGRESS_SEND_S at most, then drops what is left, so a slow
or stuck client holds a result back by at most that long.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

from tooldeck.sources.mcp.callbacks import Peer

log = logging.getLogger("tooldeck.mcp")

PROGRESS_SEND_S = 2.0
"""How long one progress notification may take to reach the downstream client before it (and the rest of the
call's progress) is dropped; also how long the call's result waits for the progress queued before it."""
MAX_QUEUED = 32
"""Progress notifications of one call waiting to be sent; past that the oldest waiting one is dropped."""

Progress = tuple[float, float | None, str | None]


class ProgressRelay:
    """One call's progress callback: queues each notification, the first callback to find nobody sending sends
    the queue in order, and `drain` waits for it to empty."""

    __slots__ = ("_idle", "_peer", "_queue", "_send_deadline", "_sender", "_stuck", "dropped")

    def __init__(self, peer: Peer) -> None:
        self._peer = peer
        self._queue: deque[Progress] = deque()
        self._sender: asyncio.Task[None] | None = None
        """The callback's task that is sending the queue, if one is."""
        self._send_deadline: asyncio.Timeout | None = None
        """The deadline of the send in flight (`drain` brings it forward to stop that send)."""
        self._idle: asyncio.Future[None] | None = None
        """Done when the current sender stops (made for a `drain` that has to wait)."""
        self._stuck = False
        self.dropped = 0
        """Notifications not sent: past MAX_QUEUED, after a send that timed out, or left at the drain's deadline."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        if self._stuck:
            self.dropped += 1
            return
        if len(self._queue) >= MAX_QUEUED:
            self._queue.popleft()
            self.dropped += 1
        self._queue.append((progress, total, message))
        if self._sender is None:
            await self._send_queued()

    async def _send_queued(self) -> None:
        self._sender = asyncio.current_task()
        try:
            while self._queue and not self._stuck:
                progress, total, message = self._queue.popleft()
                try:
                    async with asyncio.timeout(PROGRESS_SEND_S) as self._send_deadline:
                        await self._peer.progress(progress, total, message)
                except TimeoutError:
                    self._give_up(f"the client did not take it within {PROGRESS_SEND_S:g} s")
                    self.dropped += 1
                except Exception as exc:  # best-effort, as the notification itself
                    self.dropped += 1
                    log.debug("progress not relayed: %s", exc)
        finally:  # also when this task is cancelled: the next notification, or `drain`, sends what is left
            self._sender = self._send_deadline = None
            idle, self._idle = self._idle, None
            if idle is not None and not idle.done():
                idle.set_result(None)

    def _give_up(self, why: str) -> None:
        self._stuck = True
        self.dropped += len(self._queue)
        self._queue.clear()
        log.debug("progress not relayed: %s; the rest of this call's progress is dropped", why)

    async def drain(self) -> None:
        """Wait until every notification received so far was relayed or dropped, PROGRESS_SEND_S at most."""
        try:
            async with asyncio.timeout(PROGRESS_SEND_S):
                while (self._queue and not self._stuck) or self._sender is not None:
                    if self._sender is None:  # its sender was cancelled: send the rest from here
                        await self._send_queued()
                        continue
                    if self._idle is None:
                        self._idle = asyncio.get_running_loop().create_future()
                    await asyncio.shield(self._idle)
        except TimeoutError:
            self._give_up(f"the client did not take the call's progress within {PROGRESS_SEND_S:g} s of its result")
            deadline = self._send_deadline
            if deadline is not None and not deadline.expired():
                deadline.reschedule(asyncio.get_running_loop().time())  # stop the send in flight: after the result
                # the client would drop it anyway
