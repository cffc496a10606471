"""Subscriptions to upstream resources (`Watches`): one upstream subscription per (server, URI), however many
downstream subscribers share it.

- A server on the 2026-07-28 protocol gets a `subscriptions/listen` stream with that URI, held by a task on the
  MCP loop; a handshake-era server gets `resources/subscribe`, and its `notifications/resources/updated` come
  through the connection's message listeners.
- `callback(uri)` runs on the MCP loop with the server's own URI; the caller hops to its own loop.
- After a reconnect the upstream subscription is gone (a new session knows nothing of it): the subscriber
  subscribes again. A server's failure ends its listen stream; nothing is retried on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tooldeck.sources.mcp.resources import Upstream

log = logging.getLogger("tooldeck.mcp")

Callback = Callable[[str], None]


@dataclass(slots=True)
class _Watch:
    callbacks: list[Callback] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    legacy: bool = False


class Watches:
    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self._watches: dict[tuple[str, str], _Watch] = {}
        self._listening: set[int] = set()
        """ids of the connections whose listener is installed."""

    async def subscribe(self, server: str, uri: str, callback: Callback) -> None:
        await self.upstream.loop.get().run(self._subscribe(server, uri, callback))

    async def unsubscribe(self, server: str, uri: str, callback: Callback) -> None:
        await self.upstream.loop.get().run(self._unsubscribe(server, uri, callback))

    async def _subscribe(self, server: str, uri: str, callback: Callback) -> None:
        key = (server, uri)
        watch = self._watches.get(key)
        if watch is not None:
            watch.callbacks.append(callback)
            return
        state = self.upstream.servers.named(server)
        client = await self.upstream._client(state)
        conn = state.connection
        assert conn is not None
        watch = _Watch([callback])
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            watch.task = asyncio.get_running_loop().create_task(self._listen(client, key, ready))
            await ready  # raises what the server answered to the listen request
        else:
            watch.legacy = True
            if id(conn) not in self._listening:
                self._listening.add(id(conn))
                conn.listeners.append(lambda message: self._legacy_message(server, message))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated as of 2026-07-28; this server speaks an earlier version
                await client.session.subscribe_resource(uri)
        self._watches[key] = watch

    async def _unsubscribe(self, server: str, uri: str, callback: Callback) -> None:
        key = (server, uri)
        watch = self._watches.get(key)
        if watch is None:
            return
        with contextlib.suppress(ValueError):
            watch.callbacks.remove(callback)
        if watch.callbacks:
            return
        del self._watches[key]
        if watch.task is not None:
            watch.task.cancel()
            return
        state = self.upstream.servers.named(server)
        client = state.connection.client if state.connection is not None else None
        if client is not None:
            with warnings.catch_warnings(), contextlib.suppress(Exception):
                warnings.simplefilter("ignore")
                await client.session.unsubscribe_resource(uri)

    async def _listen(self, client: Any, key: tuple[str, str], ready: asyncio.Future[None]) -> None:
        from mcp.shared.subscriptions import ResourceUpdated

        try:
            async with client.listen(resource_subscriptions=[key[1]]) as subscription:
                ready.set_result(None)
                async for event in subscription:
                    if isinstance(event, ResourceUpdated) and event.uri == key[1]:
                        self._fire(key)
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                log.info("MCP server `%s`: the subscription to %s ended: %s", key[0], key[1], exc)

    def _legacy_message(self, server: str, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            key = (server, message.params.uri)
            watch = self._watches.get(key)
            if watch is not None and watch.legacy:
                self._fire(key)

    def _fire(self, key: tuple[str, str]) -> None:
        watch = self._watches.get(key)
        for callback in list(watch.callbacks if watch is not None else ()):
            try:
                callback(key[1])
            except Exception:  # one subscriber's failure must not stop the others
                log.exception("a resource-updated subscriber failed")
