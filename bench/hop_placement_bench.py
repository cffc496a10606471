"""Which work of a process in the middle of an MCP stdio call does the caller pay for?

The official client calls the fixture server's `echo` directly, and through the do-nothing line relay
(`bench/line_relay.py`) with and without CPU work of its own per call, at each place of the call: `before` it
writes the request on (the client waits), `during` the server's work (after the request went on), `after` it
wrote the answer back (while the client reads it and sends the next call); and with a working set larger than a
core's caches (`swept`: the work writes every cache line of an 8 MiB buffer, at least once a call). Variants run
round-robin in one run; each prints its median wall time per call as a ratio to the direct call of the same run,
the relay's CPU per call and the fixture's (the scheduler's nanoseconds, every thread).

`tooldeck serve` is such a process: what this measures is where its work costs its client nothing, and what a large
working set of its own costs the server behind it (docs/benchmarks.md, "Serve latency: the floor of a hop").

    python -m bench.hop_placement_bench
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

from mcp.client.stdio import get_default_environment

from bench.mcp_bench import Variants, add_direct, add_relay, interleaved_with_cpu, print_with_cpu

INNER = 20
REPEATS = 31
WORK_US = 150
SWEPT = 8 << 20
"""Bytes the memory-bound work writes a cache line of each (at least once a call): four times a core's L2 here, a
quarter of the shared L3."""
RELAYS = {
    "relay": None,
    f"relay, {WORK_US} µs before": f"before:{WORK_US}",
    f"relay, {WORK_US} µs during": f"during:{WORK_US}",
    f"relay, {WORK_US} µs after": f"after:{WORK_US}",
    f"relay, {WORK_US} µs before, 8 MiB swept": f"before:{WORK_US}:{SWEPT}",
    f"relay, {WORK_US} µs during, 8 MiB swept": f"during:{WORK_US}:{SWEPT}",
}


async def measure() -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """(wall ms per call, the middle process's CPU µs per call, the fixture's CPU µs per call) by variant."""
    variants: Variants = {}
    middle: dict[str, int] = {}
    fixture: dict[str, int] = {}
    async with AsyncExitStack() as stack:
        await add_direct(stack, variants, fixture)
        for name, work in RELAYS.items():
            env = get_default_environment() | ({"LINE_RELAY_WORK": work} if work else {})
            await add_relay(stack, name, variants, middle, fixture, env)
        for fn in variants.values():
            for _ in range(5):
                await fn()
        return await interleaved_with_cpu(variants, middle, fixture, INNER, REPEATS)


def main() -> None:
    print_with_cpu(*asyncio.run(measure()), INNER, REPEATS)


if __name__ == "__main__":
    main()
