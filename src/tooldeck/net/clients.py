"""One guarded HTTP client per (run, event loop, net policy), so that the network tools of a run keep
their connections alive between calls instead of paying a new connection (and pool) per request.

A client belongs to the loop that made it; `close()` (called when the run closes) closes each client
on its own loop: at once when that loop is idle, as a task when it is running.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Final

from tooldeck.net.guard import NetPolicy, guarded_client

if TYPE_CHECKING:
    import httpx

    from tooldeck.catalog.runs import RunState

_STATE_KEY: Final = "net.clients"


class NetClients:
    def __init__(self) -> None:
        self._clients: dict[tuple[int, NetPolicy], tuple[asyncio.AbstractEventLoop, httpx.AsyncClient]] = {}

    def get(self, policy: NetPolicy) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        key = (id(loop), policy)
        held = self._clients.get(key)
        if held is not None and held[0] is loop and not held[1].is_closed:
            return held[1]
        client = guarded_client(policy)
        self._clients[key] = (loop, client)
        return client

    def close(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for loop, client in clients:
            if loop.is_closed() or client.is_closed:
                continue
            if not loop.is_running():
                loop.run_until_complete(client.aclose())
                continue
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is loop:
                loop.create_task(client.aclose())
            else:
                asyncio.run_coroutine_threadsafe(client.aclose(), loop)


def client_for(run: RunState, allow: list[str]) -> httpx.AsyncClient:
    """The run's guarded client for the Profile's `net_allow`, on the running loop."""
    clients = run.state.get(_STATE_KEY)
    if clients is None:
        clients = run.state[_STATE_KEY] = NetClients()
    return clients.get(NetPolicy.of(allow))
