"""Sync tools and concurrency of extension tools (issue 13 item 4): which extension tools run together,
the thread hand-off of blocking sync tools (handoff.py), and sync tools declared non-blocking."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import inspect
import threading
import time
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tooldeck
from tooldeck import handoff
from tooldeck.core.descriptors import ToolAnnotations
from tooldeck.core.errors import TooldeckError
from tooldeck.core.ids import ToolId

DEADLINE_S = 10.0


def runtime(tmp_path, **profile):
    # these tests repeat one call on purpose (warming a tool's hand-off): no repeated-call refusals
    return tooldeck.Runtime(tmp_path, builtins=[], records=False,
                            profile={"allow": ["extension/*"], "max_identical_calls": 0, **profile})


class InFlight:
    """Counts the calls running at once; they all wait for `release`."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.release = asyncio.Event()

    async def enter_and_wait(self) -> None:
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await self.release.wait()
        finally:
            self.now -= 1

    async def release_at(self, expected: int) -> None:
        """Release the calls once `expected` are in flight (or at the deadline); then a few more loop
        turns, so that calls that would start beyond `expected` have had their chance."""
        deadline = time.monotonic() + DEADLINE_S
        while self.now < expected and time.monotonic() < deadline:
            await asyncio.sleep(0.001)
        for _ in range(20):
            await asyncio.sleep(0)
        self.release.set()


def ten_calls(name: str, n: int = 10) -> list[dict]:
    return [{"id": f"c{i}", "name": name, "arguments": {"i": i}} for i in range(n)]


async def run_counting(tmp_path, expected: int, register, **profile) -> tuple[int, list]:
    rt = runtime(tmp_path, **profile)
    flight = InFlight()
    register(rt, flight)
    inv = rt.invocation()
    releaser = asyncio.create_task(flight.release_at(expected))
    results = await inv.arun(ten_calls("wait"))
    await releaser
    rt.close()
    return flight.peak, results


async def test_ten_async_extension_calls_run_together_by_default(tmp_path):
    # The reproducer: ten I/O-bound async calls ran one after another (peak 1).
    def register(rt, flight):
        @rt.tool(extension_id="io")
        async def wait(i: int) -> str:
            """Wait for I/O."""
            await flight.enter_and_wait()
            return f"done {i}"

    peak, results = await run_counting(tmp_path, 10, register, max_concurrency=10)
    assert peak == 10
    assert [r.content for r in results] == [f"done {i}" for i in range(10)]  # still in call order


async def test_the_profile_cap_bounds_async_extension_calls(tmp_path):
    def register(rt, flight):
        @rt.tool(extension_id="io")
        async def wait(i: int) -> str:
            """Wait for I/O."""
            await flight.enter_and_wait()
            return f"done {i}"

    peak, results = await run_counting(tmp_path, 8, register)  # max_concurrency defaults to 8
    assert peak == 8
    assert [r.content for r in results] == [f"done {i}" for i in range(10)]


@pytest.mark.parametrize("how", ["concurrent=False", "mutating"])
async def test_async_tools_opted_out_or_annotated_mutating_run_one_after_another(tmp_path, how):
    kwargs = {"concurrent": False} if how == "concurrent=False" else {"annotations": ToolAnnotations(mutating=True)}

    def register(rt, flight):
        @rt.tool(extension_id="io", **kwargs)
        async def wait(i: int) -> str:
            """Write something."""
            await flight.enter_and_wait()
            return f"done {i}"

    peak, results = await run_counting(tmp_path, 1, register, max_concurrency=10)
    assert peak == 1
    assert [r.content for r in results] == [f"done {i}" for i in range(10)]


def test_sync_tools_run_together_only_when_declared_concurrent(tmp_path):
    rt = runtime(tmp_path)
    barrier = threading.Barrier(3, timeout=DEADLINE_S)

    @rt.tool(extension_id="io", concurrent=True)
    def meet(i: int) -> str:
        """Three calls that can only finish together (on three threads at once)."""
        barrier.wait()
        return f"met {i}"

    calls = [{"id": f"c{i}", "name": "meet", "arguments": {"i": i}} for i in range(3)]
    assert [r.content for r in rt.invocation().run(calls)] == ["met 0", "met 1", "met 2"]

    seen: list[tuple[str, int]] = []
    lock = threading.Lock()

    @rt.tool(extension_id="io")
    def step(i: int) -> str:
        """A sync tool with the default: one call at a time."""
        with lock:
            seen.append(("start", i))
        time.sleep(0.002)
        with lock:
            seen.append(("end", i))
        return f"step {i}"

    calls = [{"id": f"c{i}", "name": "step", "arguments": {"i": i}} for i in range(4)]
    assert [r.content for r in rt.invocation().run(calls)] == [f"step {i}" for i in range(4)]
    assert seen == [(edge, i) for i in range(4) for edge in ("start", "end")]
    rt.close()


def test_descriptor_annotations_say_which_extension_tools_are_concurrency_safe(tmp_path):
    rt = runtime(tmp_path)

    async def a() -> str:
        """Async."""
        return "a"

    def s() -> str:
        """Sync."""
        return "s"

    def safe(tid: ToolId) -> bool:
        return next(d for d in rt.extensions.descriptors() if d.id == tid).annotations.concurrency_safe

    assert safe(rt.extensions.register(a, "x", "a1"))
    assert not safe(rt.extensions.register(a, "x", "a2", annotations=ToolAnnotations(mutating=True)))
    assert not safe(rt.extensions.register(a, "x", "a3", concurrent=False))
    assert not safe(rt.extensions.register(s, "x", "s1"))
    assert safe(rt.extensions.register(s, "x", "s2", annotations=ToolAnnotations(concurrency_safe=True)))
    assert safe(rt.extensions.register(s, "x", "s3", concurrent=True))
    assert safe(rt.extensions.register(a, "x", "a4", annotations=ToolAnnotations(mutating=True), concurrent=True))
    rt.close()


@settings(derandomize=True, max_examples=60, deadline=None)
@given(is_async=st.booleans(), concurrent=st.sampled_from([None, True, False]), mutating=st.booleans(),
       annotated_safe=st.booleans(), read_only=st.booleans())
def test_the_concurrency_rule_for_every_combination(tmp_path_factory, is_async, concurrent, mutating,
                                                    annotated_safe, read_only):
    from tooldeck.sources.extensions import ExtensionRegistry

    async def a() -> str:
        """Async."""
        return "a"

    def s() -> str:
        """Sync."""
        return "s"

    fn = a if is_async else s
    registry = ExtensionRegistry()
    given_annotations = ToolAnnotations(mutating=mutating, concurrency_safe=annotated_safe, read_only=read_only)
    tid = registry.register(fn, "x", annotations=given_annotations, concurrent=concurrent)
    got = registry.descriptors()[0].annotations
    expected = concurrent if concurrent is not None else (annotated_safe or (is_async and not mutating))
    assert got.concurrency_safe is expected
    assert (got.mutating, got.read_only) == (mutating, read_only)  # the rest is kept as given
    assert registry.resolve(tid) is not None


@pytest.mark.parametrize("bad", ["yes", 1, 0.0])
def test_a_concurrent_flag_that_is_not_a_bool_is_refused_and_nothing_is_registered(tmp_path, bad):
    rt = runtime(tmp_path)

    async def a() -> str:
        """Async."""
        return "a"

    with pytest.raises(TooldeckError) as err:
        rt.extensions.register(a, "x", concurrent=bad)
    assert err.value.code == "extension.tool_definition_invalid"
    assert "concurrent must be True, False or None" in err.value.message
    assert rt.extensions.descriptors() == []
    rt.close()


def test_blocking_false_runs_inline_and_the_default_on_a_tooldeck_worker(tmp_path):
    rt = runtime(tmp_path)

    @rt.tool(extension_id="t", blocking=False)
    def pure(x: int) -> str:
        """Inline."""
        return threading.current_thread().name

    @rt.tool(extension_id="t")
    def default(x: int) -> str:
        """On a worker."""
        return threading.current_thread().name

    inv = rt.invocation()
    for i in range(3):  # the window path and, once warmed, the same (new arguments: not a repeated call)
        assert inv.run([{"id": "a", "name": "pure", "arguments": {"x": i}}])[0].content == \
            threading.current_thread().name
        assert inv.run([{"id": "b", "name": "default", "arguments": {"x": i}}])[0].content.startswith("tooldeck-tool-")
    rt.close()


def test_a_blocking_tool_that_needs_the_event_loop_does_not_deadlock_and_loses_its_window(tmp_path):
    """The window never holds the loop beyond WINDOW_S: a tool that waits for the loop gets it."""
    rt = runtime(tmp_path)
    running = threading.Event()
    set_by_loop = threading.Event()

    @rt.tool(extension_id="t")
    def needs_loop() -> str:
        """Waits for the event loop, which answers once the tool runs."""
        running.set()
        return "set" if set_by_loop.wait(DEADLINE_S) else "loop was blocked"

    async def answer() -> None:
        while not running.is_set():
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.005)  # the tool itself then runs longer than the window
        set_by_loop.set()

    inv = rt.invocation()

    async def turn() -> str:
        running.clear()
        set_by_loop.clear()
        helper = asyncio.create_task(answer())
        out = (await inv.arun([{"id": "a", "name": "needs_loop", "arguments": {}}]))[0].content
        await helper
        return out

    assert asyncio.run(turn()) == "set"
    fn = rt.extensions.resolve(ToolId.parse("extension/t:needs_loop")).fn
    assert not handoff.wants_window(fn)  # it outlasted the window: next time it is awaited at once

    assert asyncio.run(turn()) == "set"
    rt.close()


def test_a_tool_that_runs_short_again_gets_its_window_back(tmp_path):
    rt = runtime(tmp_path)
    slow = threading.Event()

    @rt.tool(extension_id="t")
    def sometimes_slow() -> str:
        """Slow while the event is set."""
        if slow.is_set():
            time.sleep(0.01)
        return "ok"

    fn = rt.extensions.resolve(ToolId.parse("extension/t:sometimes_slow")).fn
    inv = rt.invocation()
    call = [{"id": "a", "name": "sometimes_slow", "arguments": {}}]
    slow.set()
    deadline = time.monotonic() + DEADLINE_S
    while handoff.wants_window(fn) and time.monotonic() < deadline:  # one slow call suffices, unless the caller
        assert inv.run(call)[0].content == "ok"                       # was descheduled for the whole 10 ms
    assert not handoff.wants_window(fn)
    slow.clear()
    deadline = time.monotonic() + DEADLINE_S
    while not handoff.wants_window(fn) and time.monotonic() < deadline:  # one short call suffices, unless the
        assert inv.run(call)[0].content == "ok"                           # worker was preempted mid-call
    assert handoff.wants_window(fn)
    rt.close()


@pytest.mark.parametrize("slow", [False, True])
def test_exceptions_of_blocking_tools_become_results_on_both_paths(tmp_path, slow):
    rt = runtime(tmp_path)

    @rt.tool(extension_id="t")
    def fails(x: int) -> str:
        """Raises."""
        if slow:
            time.sleep(0.01)  # outlasts the window: the awaited path
        raise ValueError(f"bad x {x}")

    result = rt.invocation().run([{"id": "a", "name": "fails", "arguments": {"x": 7}}])[0]
    assert result.is_error and result.error_code == "tool.execution_failed"
    assert "ValueError: bad x 7" in result.content
    rt.close()


def test_a_blocking_tool_past_its_timeout_gives_a_timeout_and_frees_its_worker_when_it_returns(tmp_path):
    rt = runtime(tmp_path, tool_timeouts={"extension/t:stuck": 0.05})
    go_on = threading.Event()
    returned = threading.Event()

    @rt.tool(extension_id="t")
    def stuck() -> str:
        """Blocks until released."""
        go_on.wait(DEADLINE_S)
        returned.set()
        return "late"

    @rt.tool(extension_id="t")
    def quick() -> str:
        """Answers."""
        return "quick"

    inv = rt.invocation()
    result = inv.run([{"id": "a", "name": "stuck", "arguments": {}}])[0]
    assert result.error_code == "tool.timeout"
    assert not returned.is_set()  # the result came while the tool still ran (a thread cannot be stopped)
    go_on.set()
    assert returned.wait(DEADLINE_S)
    assert inv.run([{"id": "b", "name": "quick", "arguments": {}}])[0].content == "quick"
    assert handoff.workers.size <= handoff.workers.max_workers
    rt.close()


def test_blocking_tools_see_the_callers_context_variables(tmp_path):
    rt = runtime(tmp_path)
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")

    @rt.tool(extension_id="t")
    def read_var() -> str:
        """Reads a context variable on the worker thread."""
        return var.get()

    @rt.tool(extension_id="t", concurrent=True)
    def read_var_together() -> str:
        """The same, in a concurrent group."""
        return var.get()

    inv = rt.invocation()

    async def turn() -> list[str]:
        var.set("from the caller")
        one = await inv.arun([{"id": "a", "name": "read_var", "arguments": {}}])
        two = await inv.arun([{"id": f"b{i}", "name": "read_var_together", "arguments": {}} for i in range(2)])
        return [r.content for r in one + two]

    assert asyncio.run(turn()) == ["from the caller"] * 3
    rt.close()


def test_the_decorator_takes_concurrent_and_keeps_the_function(tmp_path):
    rt = runtime(tmp_path)

    async def f() -> str:
        """F."""
        return "f"

    assert rt.tool(extension_id="t", concurrent=False)(f) is f
    assert "concurrent" in inspect.signature(rt.tool).parameters
    rt.close()


def test_cancelling_a_turn_whose_calls_run_together_leaves_no_coroutine_unawaited(tmp_path):
    rt = runtime(tmp_path)
    started = 0

    @rt.tool(extension_id="t")
    async def hang(i: int) -> str:
        """Suspends until cancelled."""
        nonlocal started
        started += 1
        await asyncio.sleep(60)
        return "never"

    inv = rt.invocation()

    async def cancelled() -> None:
        task = asyncio.ensure_future(inv.arun([{"id": f"c{i}", "name": "hang", "arguments": {"i": i}}
                                               for i in range(3)]))
        while started < 3:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(cancelled())
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []
    rt.close()
