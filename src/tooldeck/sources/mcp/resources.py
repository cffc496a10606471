"""Resources, resource templates, prompts and completion of the configured MCP servers (`Upstream`), for a
gateway that relays them (`tooldeck serve`, `server/upstream.py`).

Every method is awaited from the caller's loop and runs on the MCP loop (the sessions live there). Listings
ask every server that is not paused and declared the capability, all at once, every page (at most
`MAX_PAGES`); a server that cannot be reached or fails to list is left out of that listing and its failure is
recorded as any other (`health.failed`), so one broken server never hides the others'. Requests to one server
(`read`, `get_prompt`, `complete`) raise `ConnectFailed` when it cannot be reached and let the server's own
JSON-RPC error (`MCPError`) through unchanged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import mcp_types as types
from mcp import Client

from tooldeck.sources.mcp import health
from tooldeck.sources.mcp.discovery import Discovery
from tooldeck.sources.mcp.failures import ConnectFailed
from tooldeck.sources.mcp.loop import LoopSlot
from tooldeck.sources.mcp.servers import Servers
from tooldeck.sources.mcp.state import ServerState

log = logging.getLogger("tooldeck.mcp")

MAX_PAGES = 100
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Offer:
    """One listed item (a `Resource`, `ResourceTemplate` or `Prompt`) and the server that listed it."""

    server: str
    registration_id: str
    label: str
    item: Any


@dataclass(frozen=True, slots=True)
class Listed:
    resources: list[Offer]
    templates: list[Offer]


class Upstream:
    def __init__(self, servers: Servers, discovery: Discovery, loop: LoopSlot) -> None:
        self.servers = servers
        self.discovery = discovery
        self.loop = loop

    # -- listings ---------------------------------------------------------------------------------
    async def resources(self) -> Listed:
        found = await self._each("resources", self._list_resources)
        return Listed([o for pair in found for o in pair[0]], [o for pair in found for o in pair[1]])

    async def prompts(self) -> list[Offer]:
        found = await self._each("prompts", self._list_prompts)
        return [o for offers in found for o in offers]

    async def _list_resources(self, state: ServerState, client: Client) -> tuple[list[Offer], list[Offer]]:
        resources = await _pages(lambda c: client.list_resources(cursor=c), lambda r: r.resources)
        templates = await _pages(lambda c: client.list_resource_templates(cursor=c), lambda r: r.resource_templates)
        return [_offer(state, r) for r in resources], [_offer(state, t) for t in templates]

    async def _list_prompts(self, state: ServerState, client: Client) -> list[Offer]:
        return [_offer(state, p) for p in await _pages(lambda c: client.list_prompts(cursor=c), lambda r: r.prompts)]

    async def _each(self, capability: str, lister: Callable[[ServerState, Client], Awaitable[T]]) -> list[T]:
        states = [s for s in self.servers.by_name.values() if not s.config.paused]

        async def one(state: ServerState) -> T | None:
            try:
                client = await self._client(state)
            except ConnectFailed:  # recorded by connect
                return None
            if getattr(client.server_capabilities, capability, None) is None:
                return None
            try:
                async with asyncio.timeout(state.config.connect_timeout_s):
                    return await lister(state, client)
            except Exception as exc:
                conn = state.connection
                if conn is not None:
                    health.failed(self.servers.dirs, state, conn.classify(exc, "list"))
                log.warning("MCP server `%s`: listing its %s failed: %s", state.config.name, capability, exc)
                return None

        async def run() -> list[T]:
            found = await asyncio.gather(*(one(s) for s in states))
            return [f for f in found if f is not None]

        return await self.loop.get().run(run())

    # -- one server ---------------------------------------------------------------------------------
    async def read(self, server: str, uri: str) -> types.ReadResourceResult:
        return await self._on(server, lambda client: client.read_resource(uri))

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
        return await self._on(server, lambda client: client.get_prompt(name, arguments))

    async def complete(self, server: str, ref: types.PromptReference | types.ResourceTemplateReference,
                       argument: dict[str, str], context: dict[str, str] | None) -> types.CompleteResult:
        return await self._on(server, lambda client: client.complete(ref, argument, context))

    async def _on(self, server: str, request: Callable[[Client], Awaitable[T]]) -> T:
        state = self.servers.named(server)

        async def run() -> T:
            client = await self._client(state)
            async with asyncio.timeout(state.config.call_timeout_s):
                return await request(client)

        return await self.loop.get().run(run())

    async def _client(self, state: ServerState) -> Client:
        conn = await self.discovery.connect(state)
        client = conn.client
        if client is None:  # closed between the connect and now
            conn = await self.discovery.connect(state)
            client = conn.client
        assert client is not None
        return client


def _offer(state: ServerState, item: Any) -> Offer:
    return Offer(state.config.name, state.rid, state.config.label or state.config.name, item)


async def _pages(fetch: Callable[[str | None], Awaitable[Any]], items: Callable[[Any], list[Any]]) -> list[Any]:
    out: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await fetch(cursor)
        out.extend(items(page))
        cursor = page.next_cursor
        if not cursor:
            break
    return out
