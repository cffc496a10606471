"""A relayed call's notifications (`notifications/progress` and `notifications/message`), in the order the upstream
server sent them, all before the call's result, and bounded.

The SDK's client (and the raw channel, `raw_relay.py`, which does as it does) runs each notification's callback
in a task of its own, so that a slow client never stops the read loop. Nothing then orders those tasks against
each other or against the call's result: when sending one notification to the downstream client has to wait,
the next one or the result itself overtakes it, and a notification sent after its call's result is dropped by
the client's transport (a 2026-07-28 POST's event stream ends with the result). `CallNotifications` stands in
for the call's peer: it queues the call's progress and log messages and sends them one after another, and the
call awaits `drain` before its result goes on. Requests (sampling, elicitation, roots) go straight to the peer.

Notifications stay best-effort, and bounded: one the client does not take within NOTIFY_SEND_S is dropped, and
so are the rest of that call's; at most MAX_QUEUED wait to be sent (past that the oldest waiting progress is
dropped, or the oldest waiting message when none is progress, so the client still gets the latest state in order
and a server that floods notifications at a slow client costs no memory); and `drain` waits NOTIFY_SEND_S at
most, then drops what is left, so a slow or stuck client holds a result back by at most that long (and the
moment the send in flight takes to stop).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import Any

import mcp_types as types

from tooldeck.sources.mcp.callbacks import Peer

log = logging.getLogger("tooldeck.mcp")

NOTIFY_SEND_S = 2.0
"""How long one notification may take to reach the downstream client before it (and the rest of the call's
notifications) is dropped; also how long the call's result waits for the notifications queued before it."""
STOP_GRACE_S = 0.1
"""How long `drain`, at its deadline, waits for the send in flight to stop (a peer that ignores the cancel)."""
MAX_QUEUED = 256
"""Notifications of one call waiting to be sent; past that one waiting notification is dropped. A server's burst
fits (a loop that logs and reports progress per step sends them faster than a client over HTTP takes them), a
flood costs a few kilobytes."""

_Queued = tuple[str, Any]
"""("progress", (progress, total, message)) or ("log", LoggingMessageNotificationParams)."""


class CallNotifications:
    """One call's peer, as the upstream connection sees it: notifications queued and sent in order, requests
    passed through."""

    __slots__ = ("_idle", "_peer", "_queue", "_send_deadline", "_sender", "_stuck", "dropped")

    def __init__(self, peer: Peer) -> None:
        self._peer = peer
        self._queue: deque[_Queued] = deque()
        self._sender: asyncio.Task[Any] | None = None
        """The notification's task that is sending the queue, if one is."""
        self._send_deadline: asyncio.Timeout | None = None
        """The deadline of the send in flight (`drain` brings it forward to stop that send)."""
        self._idle: asyncio.Future[None] | None = None
        """Done when the current sender stops (made for a `drain` that has to wait)."""
        self._stuck = False
        self.dropped = 0
        """Notifications not sent: past MAX_QUEUED, after a send that failed or timed out, or left at the drain's
        deadline."""

    @property
    def upstream_log_level(self) -> str | None:
        return getattr(self._peer, "upstream_log_level", None)

    async def sampling(self, params: types.CreateMessageRequestParams) -> Any:
        return await self._peer.sampling(params)

    async def elicitation(self, params: types.ElicitRequestParams) -> Any:
        return await self._peer.elicitation(params)

    async def roots(self) -> Any:
        return await self._peer.roots()

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        await self._notify(("progress", (progress, total, message)))

    async def log_message(self, params: types.LoggingMessageNotificationParams) -> None:
        await self._notify(("log", params))

    async def _notify(self, item: _Queued) -> None:
        if self._stuck:
            self.dropped += 1
            return
        queue = self._queue
        if len(queue) >= MAX_QUEUED:
            oldest_progress = next((i for i, (kind, _) in enumerate(queue) if kind == "progress"), 0)
            del queue[oldest_progress]
            self.dropped += 1
        queue.append(item)
        if self._sender is None:
            await self._send_queued()

    async def _send_queued(self) -> None:
        self._sender = asyncio.current_task()
        try:
            while self._queue and not self._stuck:
                kind, payload = self._queue.popleft()
                try:
                    async with asyncio.timeout(NOTIFY_SEND_S) as self._send_deadline:
                        if kind == "progress":
                            await self._peer.progress(*payload)
                        else:
                            await self._peer.log_message(payload)
                except TimeoutError:
                    self.dropped += 1
                    self._give_up(f"the client did not take it within {NOTIFY_SEND_S:g} s")
                except Exception as exc:  # best-effort, as the notification itself
                    self.dropped += 1
                    log.debug("%s notification not relayed: %s", kind, exc)
        finally:  # also when this task is cancelled: the next notification, or `drain`, sends what is left
            self._sender = self._send_deadline = None
            idle, self._idle = self._idle, None
            if idle is not None and not idle.done():
                idle.set_result(None)

    def _give_up(self, why: str) -> None:
        self._stuck = True
        self.dropped += len(self._queue)
        self._queue.clear()
        log.debug("notification not relayed: %s; the rest of this call's notifications are dropped", why)

    async def drain(self) -> None:
        """Wait until every notification received so far was relayed or dropped, NOTIFY_SEND_S at most."""
        try:
            async with asyncio.timeout(NOTIFY_SEND_S):
                while (self._queue and not self._stuck) or self._sender is not None:
                    if self._sender is None:  # its sender was cancelled: send the rest from here
                        await self._send_queued()
                        continue
                    if self._idle is None:
                        self._idle = asyncio.get_running_loop().create_future()
                    await asyncio.shield(self._idle)
        except TimeoutError:
            self._give_up(f"the client did not take the call's notifications within {NOTIFY_SEND_S:g} s of its "
                          "result")
            deadline = self._send_deadline
            if deadline is not None and not deadline.expired():
                # Stop the send in flight (after the result the client would drop it), and see it stopped: a send
                # that finished in this very turn of the loop would otherwise go out after the result.
                deadline.reschedule(asyncio.get_running_loop().time())
                if self._idle is None:
                    self._idle = asyncio.get_running_loop().create_future()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(STOP_GRACE_S):
                        await asyncio.shield(self._idle)
