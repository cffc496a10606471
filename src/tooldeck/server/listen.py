"""`subscriptions/listen` of 2026-07-28 clients, with the upstream servers' resources in it.

The 2026-07-28 protocol dropped `resources/subscribe` / `unsubscribe` (and the standing GET stream): a client
names the resource URIs it wants to hear about in the `resourceSubscriptions` of a `subscriptions/listen`
request, whose response is the stream; the stream ends when the client goes away. The SDK's `ListenHandler`
serves the stream from a bus of events; this wraps it so that, for as long as the stream is open, each of
its URIs is subscribed upstream (`UpstreamRelay.subscribe`, the same shared per-(server, URI) subscription
as handshake-era clients get) and each upstream `notifications/resources/updated` becomes a
`ResourceUpdated` event on the bus, which the SDK delivers, named as the client asked, to exactly the
streams that listed that URI.

Every listen stream shares one subscriber entry per URI (counted), so an update is published once whatever
the number of streams. As the SDK does for a resource that does not exist, a URI that no upstream server
offers, or one the Profile hides, is acknowledged and never fires (logged); nothing is subscribed for it.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import ListenHandler, ResourceUpdated, SubscriptionBus
from mcp.shared.exceptions import MCPError

from tooldeck.server.upstream import UpstreamRelay

logger = logging.getLogger("tooldeck.serve")

LISTEN_KEY = "(subscriptions/listen)"
"""The subscriber key of the listen streams in `UpstreamRelay.subscribers` (never an HTTP session id)."""


class BusNotifier:
    """What `UpstreamRelay` tells about an update: here, an event on the listen streams' bus."""

    def __init__(self, bus: SubscriptionBus) -> None:
        self.bus = bus

    async def send_resource_updated(self, uri: str) -> None:
        await self.bus.publish(ResourceUpdated(uri=uri))


class ResourceListen:
    """The `subscriptions/listen` handler: the SDK's, plus upstream subscriptions for the stream's URIs."""

    def __init__(self, bus: SubscriptionBus) -> None:
        self.handler = ListenHandler(bus)
        self.notifier = BusNotifier(bus)
        self.upstream: UpstreamRelay | None = None
        """Set once the server knows whether MCP servers are configured."""
        self.streams: dict[str, int] = {}
        """URI (as the clients named it) -> open listen streams that asked for it."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any],
                       params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
        taken: list[str] = []
        try:
            for uri in dict.fromkeys(params.notifications.resource_subscriptions or ()):
                if await self._take(uri):
                    taken.append(uri)
            return await self.handler(ctx, params)
        finally:
            # The stream ends by the client going away, which cancels this handler: shielded, or the
            # upstream unsubscribe would be cancelled at its first await and the subscription would outlive it.
            with anyio.CancelScope(shield=True):
                for uri in taken:
                    await self._release(uri)

    async def _take(self, uri: str) -> bool:
        upstream = self.upstream
        if upstream is None:
            return False
        count = self.streams.get(uri, 0)
        if count == 0:
            try:
                await upstream.subscribe(uri, LISTEN_KEY, self.notifier)
            except MCPError as exc:
                code = (exc.error.data or {}).get("code") if isinstance(exc.error.data, dict) else None
                logger.warning("subscriptions/listen: %s will not fire (%s: %s)", uri, code or exc.error.code,
                               exc.error.message)
                return False
        self.streams[uri] = count + 1
        return True

    async def _release(self, uri: str) -> None:
        count = self.streams.get(uri, 0) - 1
        if count > 0:
            self.streams[uri] = count
            return
        self.streams.pop(uri, None)
        upstream = self.upstream
        if upstream is not None:
            try:
                await upstream.unsubscribe(uri, LISTEN_KEY)
            except Exception:  # the stream is gone either way; the upstream subscription may outlive it
                logger.warning("subscriptions/listen: ending the upstream subscription of %s failed", uri,
                               exc_info=True)

    def close(self) -> None:
        self.handler.close()
