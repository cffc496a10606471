import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

import tooldeck
from tests.conftest import MakeRuntime
from tests.core.helpers import builtin
from tooldeck.core.errors import ToolCallError
from tooldeck.core.results import ToolOutput

WAIT_S = 20.0
"""A generous deadline for an event the test waits for (a loaded machine is slow, never this slow)."""


class InFlight:
    """Counts the calls running at once; `wait_for(n)` holds a call until `n` calls have been in flight together
    (or fails after WAIT_S), so a test sees concurrency happen instead of timing it."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.log: list[tuple[str, str]] = []

    def enter(self, call_id: str) -> None:
        self.now += 1
        self.peak = max(self.peak, self.now)
        self.log.append(("start", call_id))

    def leave(self, call_id: str) -> None:
        self.now -= 1
        self.log.append(("end", call_id))

    async def wait_for(self, n: int) -> None:
        async with asyncio.timeout(WAIT_S):
            while self.peak < n:
                await asyncio.sleep(0.001)


def tools(flight: InFlight, together: int = 1) -> list[Any]:
    async def held(args, ctx):
        flight.enter(ctx.call_id)
        await flight.wait_for(together)
        await asyncio.sleep(0.01)  # let any call that could overlap this one start
        flight.leave(ctx.call_id)
        return ToolOutput(f"done {ctx.call_id}")

    return [
        builtin("safe.sleep", held, safe=True),
        builtin("mutate.sleep", held, mutating=True),
        builtin("boom", lambda a, c: 1 / 0),
        builtin("refuse", lambda a, c: (_ for _ in ()).throw(ToolCallError("demo.bad", "Fix it like this."))),
        builtin("hang", hang, mutating=True),
        builtin("hang.ro", hang, safe=True),
        builtin("inline", lambda a, c: threading.current_thread().name),
    ]


@pytest.fixture
def runtime(make_runtime: MakeRuntime) -> Callable[..., tooldeck.Runtime]:
    """`runtime(flight=None, together=1, **profile_keys)`: the dispatch test tools over a real runtime."""
    def build(flight: InFlight | None = None, together: int = 1, **profile: Any) -> tooldeck.Runtime:
        return make_runtime(builtins=tools(flight or InFlight(), together), allow=["builtin:*"], **profile)

    return build


async def hang(args, ctx):
    await asyncio.sleep(30)


def calls(*names):
    return [{"id": f"c{i}", "name": n, "arguments": {}} for i, n in enumerate(names)]


def test_concurrency_safe_calls_run_together_and_results_keep_call_order(runtime):
    flight = InFlight()
    inv = runtime(flight, together=5).invocation()
    results = inv.run(calls(*["safe_sleep"] * 5))  # each call waits until all five are in flight
    assert [r.content for r in results] == [f"done c{i}" for i in range(5)]
    assert flight.peak == 5


def test_a_mutating_call_between_safe_calls_is_not_overlapped(runtime):
    flight = InFlight()
    inv = runtime(flight, together=1).invocation()
    results = inv.run(calls("safe_sleep", "safe_sleep", "mutate_sleep", "safe_sleep", "safe_sleep"))
    assert [r.call_id for r in results] == [f"c{i}" for i in range(5)]
    assert [r.content for r in results] == [f"done c{i}" for i in range(5)]
    order = flight.log.index
    assert order(("start", "c2")) > max(order(("end", "c0")), order(("end", "c1")))
    assert order(("end", "c2")) < min(order(("start", "c3")), order(("start", "c4")))
    assert flight.peak == 2  # the safe calls on either side did overlap


def test_concurrency_cap_is_respected(runtime):
    flight = InFlight()
    inv = runtime(flight, together=2, max_concurrency=2).invocation()
    results = inv.run(calls(*["safe_sleep"] * 4))
    assert [r.content for r in results] == [f"done c{i}" for i in range(4)]
    assert flight.peak == 2


def test_exceptions_become_results_and_never_kill_the_batch(runtime):
    inv = runtime().invocation()
    r1, r2, r3 = inv.run(calls("boom", "refuse", "safe_sleep"))
    assert r1.is_error and r1.error_code == "tool.execution_failed"
    assert "ZeroDivisionError" in r1.content
    assert r2.error_code == "demo.bad" and r2.content == "Fix it like this."
    assert r3.content == "done c2"


def test_timeouts_say_whether_the_tool_may_have_executed(runtime):
    inv = runtime(tool_timeout_s=0.2).invocation()
    r1, r2 = inv.run(calls("hang", "hang_ro"))
    assert r1.error_code == r2.error_code == "tool.timeout"
    assert "may have executed" in r1.content
    assert "may have executed" not in r2.content


def test_blocking_sync_tools_run_on_worker_threads_and_inline_tools_on_the_loop(make_runtime):
    together = threading.Barrier(3, timeout=WAIT_S)  # passes only when three calls block at once

    def block(args, ctx):
        together.wait()
        return threading.current_thread().name

    rt = make_runtime(builtins=[builtin("thread.block", block, blocking=True, safe=True),
                                builtin("inline", lambda a, c: threading.current_thread().name)],
                      allow=["builtin:*"])
    results = rt.invocation().run(calls("thread_block", "thread_block", "thread_block", "inline"))
    assert not any(r.is_error for r in results), [r.content for r in results]
    assert all(r.content != threading.current_thread().name for r in results[:3])
    assert len({r.content for r in results[:3]}) == 3  # three worker threads
    assert results[3].content == threading.current_thread().name


async def test_sync_facade_refuses_inside_a_running_loop(runtime):
    inv = runtime().invocation()
    try:
        inv.run(calls("inline"))
    except tooldeck.TooldeckError as exc:
        assert exc.code == "invocation.sync_in_async"
    else:
        raise AssertionError("run() inside a loop must refuse")
    [r] = await inv.arun(calls("inline"))
    assert not r.is_error


def test_host_faults_propagate_but_extension_os_errors_are_results(make_runtime):
    import errno

    def disk_fails(args, ctx):
        raise OSError(errno.EIO, "Input/output error")

    rt = make_runtime(builtins=[builtin("disk.read", disk_fails)], allow=["builtin:*", "extension/*"])

    @rt.tool(extension_id="ext")
    def fetch() -> str:
        """Fetch."""
        raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")

    inv = rt.invocation()
    [r] = inv.run(calls("fetch"))
    assert r.error_code == "tool.execution_failed" and "Connection refused" in r.content
    with pytest.raises(OSError):
        inv.run(calls("disk_read"))


def test_the_cap_counts_suspended_calls_while_calls_that_finish_at_once_pass_through(make_runtime):
    in_flight = {"now": 0, "peak": 0}

    async def counted(args, ctx):
        in_flight["now"] += 1
        in_flight["peak"] = max(in_flight["peak"], in_flight["now"])
        await asyncio.sleep(0.05)
        in_flight["now"] -= 1
        return ToolOutput(f"slept {ctx.call_id}")

    rt = make_runtime(builtins=[builtin("count.sleep", counted, safe=True),
                                builtin("quick", lambda a, c: f"quick {c.call_id}", safe=True)],
                      allow=["builtin:*"], max_concurrency=2)
    names = ["count_sleep", "quick", "count_sleep", "count_sleep", "quick", "count_sleep", "count_sleep"]
    results = rt.invocation().run(calls(*names))
    assert in_flight["peak"] == 2
    assert [r.content for r in results] == [f"{'slept' if n == 'count_sleep' else 'quick'} c{i}"
                                            for i, n in enumerate(names)]


def test_a_host_fault_in_a_group_closes_the_calls_already_suspended(make_runtime):
    from tooldeck.core.errors import HostFault

    closed: list[str] = []

    async def waits(args, ctx):
        try:
            await asyncio.sleep(5)
        except GeneratorExit:
            closed.append(ctx.call_id)
            raise

    def fault(args, ctx):
        raise HostFault("host.disk_gone", "the workspace disk is gone")

    rt = make_runtime(builtins=[builtin("wait", waits, safe=True), builtin("fault", fault, safe=True)],
                      allow=["builtin:*"])
    with pytest.raises(HostFault):
        rt.invocation().run(calls("wait", "wait", "fault"))
    assert closed == ["c0", "c1"]


def test_extension_functions_get_keywords_a_context_when_asked_and_sync_ones_a_worker_thread(make_runtime):
    rt = make_runtime(builtins=[], records=False, allow=["extension/*"])

    @rt.tool(extension_id="ext")
    def where(tag: str) -> str:
        """Which thread runs a sync tool."""
        return f"{tag} on {threading.current_thread().name}"

    @rt.tool(extension_id="ext")
    async def who(tag: str, ctx: tooldeck.CallContext) -> str:
        """Which call this is."""
        await asyncio.sleep(0)
        return f"{tag} is {ctx.call_id} #{ctx.index} of {ctx.turn.call_names}"

    first, second = rt.invocation().run([{"id": "a", "name": "where", "arguments": {"tag": "x"}},
                                         {"id": "b", "name": "who", "arguments": '{"tag": "y"}'}])
    assert first.content.startswith("x on ") and first.content != f"x on {threading.current_thread().name}"
    assert second.content == "y is b #1 of ['where', 'who']"


def test_effects_reach_the_invocation_on_the_single_call_path_and_the_batch_path(make_runtime):
    from tooldeck.core.results import ToolEffect

    def noted(args, ctx):
        return ToolOutput("noted", effects=[ToolEffect("note", {"call": ctx.call_id})])

    for records in (False, True):
        rt = make_runtime(home=str(records), builtins=[builtin("note", noted)], records=records,
                          allow=["builtin:*"])
        inv = rt.invocation()
        inv.run(calls("note"))
        inv.run([{"id": "x", "name": "note"}, {"id": "y", "name": "note"}])
        assert [(cid, e.data["call"]) for cid, e in inv.effects] == [("c0", "c0"), ("x", "x"), ("y", "y")]


def test_a_turn_may_be_any_iterable_of_calls(runtime):
    inv = runtime().invocation()
    one = inv.run(c for c in calls("inline"))  # type: ignore[arg-type]
    two = inv.run(tuple(calls("inline", "inline")))  # type: ignore[arg-type]
    assert [r.call_id for r in one + two] == ["c0", "c0", "c1"] and not any(r.is_error for r in one + two)
