"""Resource subscriptions of 2026-07-28 clients through `tooldeck serve` (issue 12 item 3): that protocol has no
`resources/subscribe`; a client lists the URIs in a `subscriptions/listen` stream and hears about them for as long as
the stream is open. Real processes: the official client (2026-07-28) → a real `tooldeck serve --http` → two real
fixture servers (`content_server.py`) whose URIs clash, the upstream on 2026-07-28 (`auto`) or the handshake protocol
(`legacy`)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.subscriptions import ResourceUpdated

from tests.server.support import http_server

FIXTURE = Path(__file__).resolve().with_name("content_server.py")
SHARED, OWN = "tooldeck+mcp://fb/note://shared", "note://fb/own"


def _home(tmp_path: Path, upstream: str) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    servers = {n: {"command": sys.executable, "args": [str(FIXTURE), "--name", n], "protocol": upstream}
               for n in ("fa", "fb")}
    (home / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return home


@asynccontextmanager
async def _listening(client: Client, uris: list[str], seen: list[str]) -> AsyncIterator[Any]:
    """A listen stream on `uris` whose resource updates are appended to `seen` while the block runs."""
    async with client.listen(resource_subscriptions=uris) as subscription, anyio.create_task_group() as tg:
        async def drain() -> None:
            async for event in subscription:
                if isinstance(event, ResourceUpdated):
                    seen.append(event.uri)

        tg.start_soon(drain)
        yield subscription
        tg.cancel_scope.cancel()


async def _until(condition: Any) -> None:
    with anyio.fail_after(30):
        while not condition():
            await anyio.sleep(0.05)


@pytest.mark.parametrize("upstream", ["auto", "legacy"])
async def test_listen_streams_get_the_updates_of_their_uris_while_open(tmp_path: Path, upstream: str) -> None:
    home = _home(tmp_path, upstream)
    one: list[str] = []
    two: list[str] = []
    with http_server(home) as served:
        async with Client(served.url, read_timeout_seconds=30) as client:
            assert client.protocol_version == "2026-07-28"
            async with _listening(client, [SHARED], one):
                async with _listening(client, [SHARED, OWN, "nope://nothing"], two) as second:
                    assert second.honored.resource_subscriptions == [SHARED, OWN, "nope://nothing"]
                    await client.call_tool("mcp__fb__touch", {"uri": "note://shared"})
                    await _until(lambda: SHARED in one and SHARED in two)
                    touched = await client.call_tool("mcp__fb__touch", {"uri": "note://fb/own"})
                    await _until(lambda: OWN in two)
                    if upstream == "legacy":  # one upstream subscription per URI, whatever the number of streams
                        assert touched.content[0].text.endswith(": 1 handshake-era subscriber(s)")
                # The second stream ended: its URIs are unsubscribed upstream once no stream lists them (the server
                # sees the end when the client's cancel arrives: poll).
                if upstream == "legacy":
                    with anyio.fail_after(30):
                        while not (await client.call_tool("mcp__fb__touch", {"uri": "note://fb/own"})
                                   ).content[0].text.endswith(": 0 handshake-era subscriber(s)"):
                            await anyio.sleep(0.1)
                await client.call_tool("mcp__fb__touch", {"uri": "note://shared"})
                await _until(lambda: one.count(SHARED) == 2)
            await anyio.sleep(0.5)  # a late, wrong delivery would have arrived by now
    assert one == [SHARED, SHARED]  # each update once, although two streams listed it; never the other URI
    assert two == [SHARED, OWN]  # nothing after the stream closed; the unknown URI never fired
