"""Which work of a process in the middle of an MCP stdio call does the caller pay for?

The official client calls the fixture server's `echo` directly, and through the do-nothing line relay
(`bench/line_relay.py`) with and without CPU work of its own per call, at each place of the call: `before` it
writes the request on (the client waits), `during` the server's work (after the request went on), `after` it
wrote the answer back (while the client reads it and sends the next call); and with a working set larger than a
core's caches (`objects`). Variants run round-robin in one run; each prints its median wall time per call as a
ratio to the direct call of the same run, the relay's CPU per call and the fixture's (the scheduler's nanoseconds,
every thread).

`tooldeck serve` is such a process: what this measures is where its work costs its client nothing (docs/benchmarks.md,
"Serve latency: the floor of a hop").

    python -m bench.hop_placement_bench
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters, get_default_environment

from bench.mcp_bench import FIXTURE, LINE_RELAY, PY, _children, _children_of, _cpu_s, _direct_call
from bench.timing import ainterleaved_ms

INNER = 20
REPEATS = 31
WORK_US = 150
OBJECTS = 200_000
"""Small objects the memory-bound work reads at random: tens of MB, more than the caches of a core."""
RELAYS = {
    "relay": None,
    f"relay, {WORK_US} µs before": f"before:{WORK_US}",
    f"relay, {WORK_US} µs during": f"during:{WORK_US}",
    f"relay, {WORK_US} µs after": f"after:{WORK_US}",
    f"relay, {WORK_US} µs before, objects": f"before:{WORK_US}:{OBJECTS}",
    f"relay, {WORK_US} µs during, objects": f"during:{WORK_US}:{OBJECTS}",
}


async def measure() -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """(wall ms per call, the middle process's CPU µs per call, the fixture's CPU µs per call) by variant."""
    variants: dict[str, Callable[[], Awaitable[Any]]] = {}
    middle: dict[str, int] = {}
    fixture: dict[str, int] = {}
    async with AsyncExitStack() as stack:
        before = _children(FIXTURE.name.encode())
        direct = await stack.enter_async_context(Client(StdioServerParameters(command=PY, args=[str(FIXTURE)]),
                                                        cache=None))
        [fixture["direct"]] = _children(FIXTURE.name.encode()) - before
        variants["direct"] = _direct_call(direct)
        for name, work in RELAYS.items():
            env = get_default_environment() | ({"LINE_RELAY_WORK": work} if work else {})
            before = _children(LINE_RELAY.name.encode())
            client = await stack.enter_async_context(Client(StdioServerParameters(
                command=PY, args=[str(LINE_RELAY), PY, str(FIXTURE)], env=env), cache=None))
            [middle[name]] = _children(LINE_RELAY.name.encode()) - before
            [fixture[name]] = _children_of(middle[name], FIXTURE.name.encode())
            variants[name] = _direct_call(client)
        for fn in variants.values():
            for _ in range(5):
                await fn()
        middle0, fixture0 = _cpu_now(middle), _cpu_now(fixture)
        wall = await ainterleaved_ms(variants, INNER, REPEATS)
        calls = REPEATS * INNER + 5
        middle_us = {name: (cpu - middle0[name]) / calls * 1e6 for name, cpu in _cpu_now(middle).items()}
        fixture_us = {name: (cpu - fixture0[name]) / calls * 1e6 for name, cpu in _cpu_now(fixture).items()}
    return wall, middle_us, fixture_us


def _cpu_now(pids: dict[str, int]) -> dict[str, float]:
    return {name: _cpu_s(pid) for name, pid in pids.items()}


def main() -> None:
    wall, middle, fixture = asyncio.run(measure())
    direct = wall["direct"]
    print(f"median call_tool latency (batches of {INNER}, {REPEATS} batches, round-robin; load average "
          f"{os.getloadavg()[0]:.1f})")
    for name, ms in wall.items():
        own = f"   relay CPU {middle[name]:5.0f} µs/call" if name in middle else " " * 29
        print(f"  {name:<34} {ms:6.3f} ms  {ms / direct:5.2f}× direct{own}   fixture CPU {fixture[name]:5.0f} µs/call")


if __name__ == "__main__":
    main()
