"""Sync tools and traces (issue 13 items 4 and 6).

1. A sync tool `add(a, b)` through the whole pipeline, records off, one call per turn: the default
   (blocking: a thread hand-off), `blocking=False` (inline), and, for scale, the async tool; against
   the OpenAI Agents SDK's sync path (`function_tool` on a sync def, `FunctionTool.on_invoke_tool`,
   which runs it with `asyncio.to_thread`), all round-robin in the same run.
2. The hand-offs alone, `add(1, 2)` on another thread and back: `asyncio.to_thread`,
   `loop.run_in_executor` on a kept one-thread executor, a dedicated worker thread fed by a
   `SimpleQueue` that answers with `call_soon_threadsafe`, and tooldeck's `handoff` (kept workers, the
   caller waits up to `handoff.WINDOW_S` with the interpreter lock released, else awaits).
3. Traces: the async one-call turn and the sync default with no tracer provider, then (same process,
   after `set_tracer_provider`) with the OpenTelemetry SDK and an in-memory exporter. The cost of
   tracing when no provider is set is measured by `bench.core_bench` on the commits before and after.

    python -m bench.sync_bench
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import tempfile
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from queue import SimpleQueue
from typing import Any

import tooldeck
from bench.timing import REPEATS_ALLOWED, ainterleaved_us, expect_ok, report
from tooldeck import handoff

ARGS = '{"a": 1, "b": 2}'
PROFILE = {"allow": ["extension/*"], "max_calls_per_invocation": 10**9,
    "max_identical_calls": REPEATS_ALLOWED}
Variants = dict[str, Callable[[], Awaitable[object]]]


def add(a: int, b: int) -> int:
    return a + b


def add_inline(a: int, b: int) -> int:
    return a + b


async def add_async(a: int, b: int) -> int:
    return a + b


def runtime(home: Path) -> tooldeck.Runtime:
    rt = tooldeck.Runtime(home, builtins=[], records=False, profile=PROFILE)
    rt.tool(extension_id="bench")(add)
    rt.tool(extension_id="bench", blocking=False)(add_inline)
    rt.tool(extension_id="bench")(add_async)
    return rt


def turn(inv: Any, name: str) -> Callable[[], Awaitable[object]]:
    calls = [{"id": "c1", "name": name, "arguments": ARGS}]

    async def one() -> object:
        return await inv.arun(calls)

    return one


def peer() -> tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[object]]] | None:
    try:
        from agents import function_tool
        from agents.tool_context import ToolContext
    except ImportError:
        return None
    sync_tool, async_tool = function_tool(add), function_tool(add_async)

    def call(tool: Any, name: str) -> Callable[[], Awaitable[object]]:
        async def one() -> object:
            ctx = ToolContext(context=None, tool_name=name, tool_call_id="c1", tool_arguments=ARGS)
            return await tool.on_invoke_tool(ctx, ARGS)
        return one

    return call(sync_tool, "add"), call(async_tool, "add_async")


async def tools(home: Path) -> None:
    rt = runtime(home)
    inv = rt.invocation()
    for name in ("add", "add_inline", "add_async"):
        assert (await turn(inv, name)())[0].content == "3"
    variants: Variants = {
        "tooldeck sync, default (thread hand-off)": turn(inv, "add"),
        "tooldeck sync, blocking=False (inline)": turn(inv, "add_inline"),
        "tooldeck async": turn(inv, "add_async"),
    }
    peers = peer()
    baseline = "tooldeck sync, default (thread hand-off)"
    if peers is not None:
        assert str(await peers[0]()) == "3"
        baseline = "openai-agents sync FunctionTool (to_thread)"
        variants[baseline] = peers[0]
        variants["openai-agents async FunctionTool"] = peers[1]
    else:
        print("  (openai-agents not installed: `pip install -e '.[bench]'` for the peer rows)")
    rows = await ainterleaved_us(variants, 50, repeats=31, warmup=50, check=expect_ok)
    print("A sync tool, one call per turn, records off (median µs per call; target: default ≤ 0.33× the peer's sync):")
    report(rows, baseline)
    rt.close()


async def handoffs() -> None:
    loop = asyncio.get_running_loop()
    kept = concurrent.futures.ThreadPoolExecutor(1)
    queue: SimpleQueue[tuple[asyncio.Future[int], int, int] | None] = SimpleQueue()

    def worker() -> None:
        while (job := queue.get()) is not None:
            future, a, b = job
            loop.call_soon_threadsafe(future.set_result, add(a, b))

    thread = threading.Thread(target=worker, daemon=True)
    thread.start()

    async def to_thread() -> object:
        return await asyncio.to_thread(add, 1, 2)

    async def run_in_executor() -> object:
        return await loop.run_in_executor(kept, add, 1, 2)

    async def dedicated() -> object:
        future: asyncio.Future[int] = loop.create_future()
        queue.put((future, 1, 2))
        return await future

    def job() -> int:
        return add(1, 2)

    async def ours() -> object:
        done = handoff.start(job)
        if not done.wait(handoff.WINDOW_S):
            await done.settled()
        return done.result()

    async def ours_awaited() -> object:
        done = handoff.start(job)
        await done.settled()
        return done.result()

    rows = await ainterleaved_us({
        "asyncio.to_thread": to_thread,
        "run_in_executor, kept executor": run_in_executor,
        "worker thread + call_soon_threadsafe": dedicated,
        "tooldeck handoff, awaited (no window)": ours_awaited,
        "tooldeck handoff (window, else awaited)": ours,
    }, 50, repeats=31, warmup=50)
    print("The hand-off alone, add(1, 2) on another thread and back (median µs):")
    report(rows, "asyncio.to_thread")
    queue.put(None)
    kept.shutdown()


async def traces(home: Path) -> None:
    rt = runtime(home)
    inv = rt.invocation()
    names = {"tooldeck async, 1 call": "add_async", "tooldeck sync default, 1 call": "add"}
    before = await ainterleaved_us({k: turn(inv, v) for k, v in names.items()}, 50, repeats=21, warmup=50,
                                   check=expect_ok)
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        print("  (opentelemetry-sdk not installed: `pip install -e '.[otel]'` for the traced rows)")
        rt.close()
        return
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    def clearing(fn: Callable[[], Awaitable[object]]) -> Callable[[], Awaitable[object]]:
        async def one() -> object:
            out = await fn()
            exporter.clear()
            return out
        return one

    after = await ainterleaved_us({f"{k}, traced": clearing(turn(inv, v)) for k, v in names.items()}, 50,
                                  repeats=21, warmup=50, check=expect_ok)
    print("Traces: no tracer provider, then the SDK's provider with an in-memory exporter (median µs; the two "
          "halves measured one after the other):")
    report(before + after, "tooldeck async, 1 call")
    rt.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(tools(Path(tmp) / "tools"))
        asyncio.run(handoffs())
        asyncio.run(traces(Path(tmp) / "traces"))


if __name__ == "__main__":
    main()
