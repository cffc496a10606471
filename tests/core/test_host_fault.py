"""Issue 11, R6: a host fault propagates out of `Invocation.run`, but only after the turn is closed in
the records: the failing call with `tool.host_fault` and the fault's message, finished calls with
their results, calls it stopped before they started as never run. Real OS errors from real
syscalls, a real SQLite records file, every replay checked."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path
from typing import Any

import pytest

import tooldeck
from tests.conftest import MakeRuntime, RuntimeFactory
from tests.core.helpers import builtin
from tooldeck.core.errors import HostFault
from tooldeck.core.results import ToolOutput
from tooldeck.protocols import validate
from tooldeck.records.replay import replay_all

FINAL = ("completed", "failed", "outcome_unknown")


def stat_a_long_name(args: dict[str, Any], ctx: Any) -> str:
    os.stat(ctx.run.workspace_root / ("a" * 300))  # ENAMETOOLONG from the kernel
    return "unreachable"


async def fails_after_a_wait(args: dict[str, Any], ctx: Any) -> str:
    await asyncio.sleep(0.01)
    with open(ctx.run.workspace_root / ("b" * 300), "w"):  # the async path (`dispatch._finish`)
        return "unreachable"


def done(args: dict[str, Any], ctx: Any) -> ToolOutput:
    return ToolOutput(f"done {ctx.call_id}")


async def slow(args: dict[str, Any], ctx: Any) -> str:
    await asyncio.sleep(0.05)
    return f"slow {ctx.call_id}"


def host_fault(args: dict[str, Any], ctx: Any) -> str:
    raise HostFault("host.disk_gone", "the workspace disk is gone")


@pytest.fixture
def make(make_runtime: MakeRuntime) -> RuntimeFactory:
    """`make(**options)`: the host-fault test tools over a runtime in the test's temp dir."""
    def build(**kw: Any) -> tooldeck.Runtime:
        tools = [builtin("done", done), builtin("stat.long", stat_a_long_name),
                 builtin("write.long", fails_after_a_wait, mutating=True),
                 builtin("read.blocking", stat_a_long_name, blocking=True),
                 builtin("slow", slow, safe=True), builtin("fault", host_fault, safe=True)]
        return make_runtime(builtins=tools, allow=["builtin:*"], **kw)

    return build


def calls(*names: str) -> list[dict[str, Any]]:
    return [{"id": f"c{i}", "name": n} for i, n in enumerate(names)]


def closed(rt: tooldeck.Runtime, inv: Any) -> list[tuple[str, str | None]]:
    """(status, error code) of each recorded call; every one is closed and every replay valid."""
    history = rt.recorder.history(inv.id)
    assert all(c.status in FINAL for c in history.calls), [c.status for c in history.calls]
    for fmt, messages in replay_all(rt.recorder, inv.id).items():
        assert validate(messages, fmt) == [], fmt
    return [(c.status, c.result.error_code) for c in history.calls]


def test_r6_an_os_error_from_a_builtin_propagates_after_the_turn_is_closed(make: RuntimeFactory) -> None:
    rt = make()
    inv = rt.invocation()
    with pytest.raises(OSError) as err:
        inv.run(calls("done", "stat_long", "done"))
    assert err.value.errno == errno.ENAMETOOLONG
    assert closed(rt, inv) == [("completed", None), ("failed", "tool.host_fault"), ("failed", "tool.interrupted")]
    first, fault, after = rt.recorder.history(inv.id).calls
    assert first.result.content == "done c0"
    assert "fault of the host" in fault.result.content and "File name too long" in fault.result.content
    assert fault.result.structured["error"]["exception"] == "OSError"
    assert "nothing was executed" in after.result.content


def test_a_mutating_call_stopped_by_a_host_fault_may_have_run(make: RuntimeFactory) -> None:
    rt = make()
    for names in (("write_long",), ("done", "write_long")):  # the one-call path and the batch path
        inv = rt.invocation()
        with pytest.raises(OSError):
            inv.run(calls(*names))
        status, code = closed(rt, inv)[-1]
        assert (status, code) == ("outcome_unknown", "tool.host_fault")
        assert "may have executed" in rt.recorder.history(inv.id).calls[-1].result.content


def test_a_host_fault_on_a_worker_thread_closes_the_turn_too(make: RuntimeFactory) -> None:
    rt = make()
    inv = rt.invocation()
    with pytest.raises(OSError):
        inv.run(calls("read_blocking", "done"))
    assert closed(rt, inv) == [("failed", "tool.host_fault"), ("failed", "tool.interrupted")]


def test_a_host_fault_in_a_concurrent_group(make: RuntimeFactory) -> None:
    """The group's other call had started (it may have run); the call after the group never started."""
    rt = make()
    inv = rt.invocation()
    with pytest.raises(HostFault):
        inv.run(calls("slow", "fault", "done"))
    assert closed(rt, inv) == [("outcome_unknown", "tool.outcome_unknown"), ("failed", "tool.host_fault"),
                               ("failed", "tool.interrupted")]
    assert "the workspace disk is gone" in rt.recorder.history(inv.id).calls[1].result.content


def test_a_failing_confirmation_callback_is_a_host_fault_and_the_call_did_not_run(make: RuntimeFactory) -> None:
    def broken(request: Any) -> bool:
        raise RuntimeError("the approval service is down")

    rt = make(confirm=broken)
    inv = rt.invocation(profile={"allow": ["builtin:*"], "permissions": {"builtin:done": "ask"}})
    with pytest.raises(RuntimeError):
        inv.run(calls("slow", "done", "slow"))
    assert closed(rt, inv) == [("completed", None), ("failed", "tool.host_fault"), ("failed", "tool.interrupted")]
    assert "was not run" in rt.recorder.history(inv.id).calls[1].result.content


def test_when_the_records_fail_too_the_fault_propagates_with_a_note(make: RuntimeFactory, tmp_path: Path) -> None:
    from tooldeck.records.store import SqliteRecorder

    class Failing(SqliteRecorder):
        def calls_finished(self, *args: Any) -> None:
            raise tooldeck.TooldeckError("records.write_failed", "disk full")

    rt = make(records=Failing(tmp_path / "records.sqlite"))
    with pytest.raises(OSError) as err:
        rt.invocation().run(calls("done", "stat_long"))
    assert err.value.errno == errno.ENAMETOOLONG
    assert any("could not close round 1" in note and "disk full" in note for note in err.value.__notes__)
