import asyncio
import threading
import time

import tooldeck
from tests.core.helpers import builtin
from tooldeck.core.errors import ToolCallError
from tooldeck.core.results import ToolOutput

LOG: list[tuple[str, str, float]] = []


async def slow_safe(args, ctx):
    LOG.append(("start", ctx.call_id, time.monotonic()))
    await asyncio.sleep(0.2)
    LOG.append(("end", ctx.call_id, time.monotonic()))
    return ToolOutput(f"done {ctx.call_id}")


def runtime(tmp_path, **profile):
    tools = [
        builtin("safe.sleep", slow_safe, safe=True),
        builtin("mutate.sleep", slow_safe, mutating=True),
        builtin("boom", lambda a, c: 1 / 0),
        builtin("refuse", lambda a, c: (_ for _ in ()).throw(ToolCallError("demo.bad", "Fix it like this."))),
        builtin("hang", hang, mutating=True),
        builtin("hang.ro", hang, safe=True),
        builtin("thread.block", lambda a, c: (time.sleep(0.2), threading.current_thread().name)[1], blocking=True,
                safe=True),
        builtin("inline", lambda a, c: threading.current_thread().name),
    ]
    return tooldeck.Runtime(tmp_path, builtins=tools, profile={"allow": ["builtin:*"], **profile})


async def hang(args, ctx):
    await asyncio.sleep(30)


def calls(*names):
    return [{"id": f"c{i}", "name": n, "arguments": {}} for i, n in enumerate(names)]


def test_concurrency_safe_calls_run_together_and_results_keep_call_order(tmp_path):
    inv = runtime(tmp_path).invocation()
    start = time.monotonic()
    results = inv.run(calls(*["safe_sleep"] * 5))
    elapsed = time.monotonic() - start
    assert elapsed < 0.6, elapsed
    assert [r.content for r in results] == [f"done c{i}" for i in range(5)]


def test_a_mutating_call_between_safe_calls_is_not_overlapped(tmp_path):
    LOG.clear()
    inv = runtime(tmp_path).invocation()
    results = inv.run(calls("safe_sleep", "safe_sleep", "mutate_sleep", "safe_sleep", "safe_sleep"))
    assert [r.call_id for r in results] == [f"c{i}" for i in range(5)]
    times = {(kind, cid): t for kind, cid, t in LOG}
    assert times[("start", "c2")] >= max(times[("end", "c0")], times[("end", "c1")])
    assert times[("end", "c2")] <= min(times[("start", "c3")], times[("start", "c4")])


def test_concurrency_cap_is_respected(tmp_path):
    inv = runtime(tmp_path, max_concurrency=2).invocation()
    start = time.monotonic()
    inv.run(calls(*["safe_sleep"] * 4))
    assert time.monotonic() - start >= 0.39


def test_exceptions_become_results_and_never_kill_the_batch(tmp_path):
    inv = runtime(tmp_path).invocation()
    r1, r2, r3 = inv.run(calls("boom", "refuse", "safe_sleep"))
    assert r1.is_error and r1.error_code == "tool.execution_failed"
    assert "ZeroDivisionError" in r1.content
    assert r2.error_code == "demo.bad" and r2.content == "Fix it like this."
    assert r3.content == "done c2"


def test_timeouts_say_whether_the_tool_may_have_executed(tmp_path):
    inv = runtime(tmp_path, tool_timeout_s=0.2).invocation()
    r1, r2 = inv.run(calls("hang", "hang_ro"))
    assert r1.error_code == r2.error_code == "tool.timeout"
    assert "may have executed" in r1.content
    assert "may have executed" not in r2.content


def test_blocking_sync_tools_run_on_worker_threads_and_inline_tools_on_the_loop(tmp_path):
    inv = runtime(tmp_path).invocation()
    start = time.monotonic()
    results = inv.run(calls("thread_block", "thread_block", "thread_block", "inline"))
    assert time.monotonic() - start < 0.5
    assert all(r.content != threading.current_thread().name for r in results[:3])
    assert results[3].content == threading.current_thread().name


async def test_sync_facade_refuses_inside_a_running_loop(tmp_path):
    inv = runtime(tmp_path).invocation()
    try:
        inv.run(calls("inline"))
    except tooldeck.TooldeckError as exc:
        assert exc.code == "invocation.sync_in_async"
    else:
        raise AssertionError("run() inside a loop must refuse")
    [r] = await inv.arun(calls("inline"))
    assert not r.is_error


def test_host_faults_propagate_but_extension_os_errors_are_results(tmp_path):
    import errno

    import pytest

    def disk_fails(args, ctx):
        raise OSError(errno.EIO, "Input/output error")

    rt = tooldeck.Runtime(tmp_path, builtins=[builtin("disk.read", disk_fails)],
                          profile={"allow": ["builtin:*", "extension/*"]})

    @rt.tool(extension_id="ext")
    def fetch() -> str:
        """Fetch."""
        raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")

    inv = rt.invocation()
    [r] = inv.run(calls("fetch"))
    assert r.error_code == "tool.execution_failed" and "Connection refused" in r.content
    with pytest.raises(OSError):
        inv.run(calls("disk_read"))


def test_the_cap_counts_suspended_calls_while_calls_that_finish_at_once_pass_through(tmp_path):
    in_flight = {"now": 0, "peak": 0}

    async def counted(args, ctx):
        in_flight["now"] += 1
        in_flight["peak"] = max(in_flight["peak"], in_flight["now"])
        await asyncio.sleep(0.05)
        in_flight["now"] -= 1
        return ToolOutput(f"slept {ctx.call_id}")

    rt = tooldeck.Runtime(tmp_path, builtins=[builtin("count.sleep", counted, safe=True),
                                              builtin("quick", lambda a, c: f"quick {c.call_id}", safe=True)],
                          profile={"allow": ["builtin:*"], "max_concurrency": 2})
    names = ["count_sleep", "quick", "count_sleep", "count_sleep", "quick", "count_sleep", "count_sleep"]
    results = rt.invocation().run(calls(*names))
    assert in_flight["peak"] == 2
    assert [r.content for r in results] == [f"{'slept' if n == 'count_sleep' else 'quick'} c{i}"
                                            for i, n in enumerate(names)]


def test_a_host_fault_in_a_group_closes_the_calls_already_suspended(tmp_path):
    import pytest

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

    rt = tooldeck.Runtime(tmp_path, builtins=[builtin("wait", waits, safe=True), builtin("fault", fault, safe=True)],
                          profile={"allow": ["builtin:*"]})
    with pytest.raises(HostFault):
        rt.invocation().run(calls("wait", "wait", "fault"))
    assert closed == ["c0", "c1"]


def test_extension_functions_get_keywords_a_context_when_asked_and_sync_ones_a_worker_thread(tmp_path):
    rt = tooldeck.Runtime(tmp_path, builtins=[], records=False, profile={"allow": ["extension/*"]})

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


def test_effects_reach_the_invocation_on_the_single_call_path_and_the_batch_path(tmp_path):
    from tooldeck.core.results import ToolEffect

    def noted(args, ctx):
        return ToolOutput("noted", effects=[ToolEffect("note", {"call": ctx.call_id})])

    for records in (False, True):
        rt = tooldeck.Runtime(tmp_path / str(records), builtins=[builtin("note", noted)], records=records,
                              profile={"allow": ["builtin:*"]})
        inv = rt.invocation()
        inv.run(calls("note"))
        inv.run([{"id": "x", "name": "note"}, {"id": "y", "name": "note"}])
        assert [(cid, e.data["call"]) for cid, e in inv.effects] == [("c0", "c0"), ("x", "x"), ("y", "y")]
        rt.close()


def test_a_turn_may_be_any_iterable_of_calls(tmp_path):
    inv = runtime(tmp_path).invocation()
    one = inv.run(c for c in calls("inline"))  # type: ignore[arg-type]
    two = inv.run(tuple(calls("inline", "inline")))  # type: ignore[arg-type]
    assert [r.call_id for r in one + two] == ["c0", "c0", "c1"] and not any(r.is_error for r in one + two)
