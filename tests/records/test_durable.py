"""A result is durable as soon as it exists: written while its siblings still run, refusals with the
turn, and nothing written twice. Each test reads the SQLite file from another connection."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import tooldeck
from tests.conftest import MakeRuntime, RuntimeFactory
from tooldeck.core.descriptors import ToolAnnotations
from tooldeck.core.errors import HostFault, TooldeckError
from tooldeck.protocols import validate
from tooldeck.records.reader import CallRecord
from tooldeck.records.replay import replay_all
from tooldeck.records.store import SqliteRecorder

SAFE = ToolAnnotations(concurrency_safe=True)
Calls = list[CallRecord]


@pytest.fixture
def runtime(make_runtime: MakeRuntime) -> RuntimeFactory:
    """`runtime(**options)`: a runtime over the test's temp dir with only extension tools allowed."""
    return lambda **options: make_runtime(builtins=[], allow=["extension/*"], **options)


def _poll(path: Path, inv_id: str, until: Callable[[Calls], bool], deadline_s: float = 20.0) -> Calls:
    """Read the history from another connection until `until(calls)`; fails after `deadline_s`."""
    store = SqliteRecorder(path, recover_dead=False)
    try:
        end = time.monotonic() + deadline_s
        while True:
            with contextlib.suppress(TooldeckError):  # the invocation may not be committed yet
                calls = store.history(inv_id).calls
                if until(calls):
                    return calls
            assert time.monotonic() < end, "the store never reached the expected state"
            time.sleep(0.002)
    finally:
        store.close()


def _status(calls: Calls) -> dict[str, str]:
    return {c.call_id: c.status for c in calls}


def _batches(path: Path, inv_id: str) -> list[int]:
    """Result rows per turn of `inv_id`, in round order (one row per write transaction)."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        return [n for (n,) in db.execute(
            "SELECT (SELECT count(*) FROM results r WHERE r.result_id BETWEEN t.turn_id << 20 "
            "AND (t.turn_id << 20) + 1048575) FROM turns t WHERE t.invocation_id = ? ORDER BY t.round", (inv_id,))]


@pytest.fixture
def held() -> Iterator[tuple[threading.Event, threading.Event]]:
    """(started, release) for a tool that blocks until the test releases it."""
    started, release = threading.Event(), threading.Event()
    yield started, release
    release.set()


def _add_tools(rt: tooldeck.Runtime, started: threading.Event, release: threading.Event,
               annotations: ToolAnnotations = SAFE) -> None:
    @rt.tool("t", "fast", annotations=annotations)
    async def fast(n: int) -> str:
        """Answers at once."""
        return f"fast {n}"

    @rt.tool("t", "hold", annotations=annotations)
    async def hold() -> str:
        """Blocks until released."""
        started.set()
        while not release.is_set():
            await asyncio.sleep(0.002)
        return "released"

    @rt.tool("t", "hold_thread", blocking=True, annotations=annotations)
    def hold_thread() -> str:
        """Blocks its worker thread until released."""
        started.set()
        release.wait(60)
        return "released"


@pytest.mark.parametrize(("annotations", "slow"), [(SAFE, "hold"), (ToolAnnotations(), "hold"),
                                                   (SAFE, "hold_thread")],
                         ids=["together", "one-at-a-time", "worker-thread"])
async def test_a_result_is_in_the_store_while_its_sibling_still_runs(
        runtime: RuntimeFactory, tmp_path: Path, held: tuple[threading.Event, threading.Event],
        annotations: ToolAnnotations, slow: str) -> None:
    started, release = held
    rt = runtime(records=True)
    _add_tools(rt, started, release, annotations)
    path = tmp_path / "records.sqlite"
    inv = rt.invocation()
    t0 = time.time()
    task = asyncio.create_task(inv.arun([
        {"id": "a", "name": "fast", "arguments": {"n": 1}}, {"id": "b", "name": slow, "arguments": {}},
        {"id": "c", "name": "nope", "arguments": {}}, {"id": "d", "name": "fast", "arguments": '{"n": "x"}'}]))
    await asyncio.to_thread(started.wait, 20)
    # Another connection, while `b` is blocked: the refusals were stored with the turn, and `a` has been written.
    calls = await asyncio.to_thread(_poll, path, inv.id, lambda calls: _status(calls).get("a") == "completed")
    assert not release.is_set() and not task.done()
    assert _status(calls) == {"a": "completed", "b": "started", "c": "failed", "d": "failed"}
    a, _b, c, d = calls
    assert (c.result.error_code, d.result.error_code) == ("tool.unknown_tool", "tool.invalid_arguments")
    assert a.result.content == "fast 1" and t0 <= a.started_at <= a.finished_at <= time.time()
    # Written while the turn still waits (seen above: committed before `b` was released), not at its end; how soon
    # after `a` finished (FLUSH_BOUND_S) is a timing, measured in bench/records_bench.py.
    assert a.result.recorded_at >= a.finished_at
    release.set()
    results = await task
    assert [r.content for r in results][:2] == ["fast 1", "released"]
    final = rt.recorder.history(inv.id).calls
    assert _status(final) == {"a": "completed", "b": "completed", "c": "failed", "d": "failed"}
    assert [(x.result.content, x.result.recorded_at) for x in final[:1]] == [(a.result.content, a.result.recorded_at)]
    assert _batches(path, inv.id) == [3]  # refusals with the turn, `a` while `b` ran, `b` at the end
    assert [e.kind for e in rt.recorder.events(inv.id)] == ["invocation_started"]  # nothing written twice
    summary = rt.recorder.invocation(inv.id)
    assert (summary.calls, summary.errors, summary.open_calls) == (4, 2, 0)
    for fmt, messages in replay_all(rt.recorder, inv.id).items():
        assert validate(messages, fmt) == [], fmt
    rt.close()


async def test_turns_that_never_wait_write_once_at_the_end(runtime: RuntimeFactory, tmp_path: Path) -> None:
    rt = runtime(records=True)
    _add_tools(rt, threading.Event(), threading.Event())
    inv = rt.invocation()
    await inv.arun([{"id": "a", "name": "fast", "arguments": {"n": 1}}])
    await inv.arun([{"id": f"c{i}", "name": "fast", "arguments": {"n": i}} for i in range(5)])
    await inv.arun([{"id": "x", "name": "fast", "arguments": {"n": 1}}, {"id": "y", "name": "nope"}])
    await inv.arun([{"id": "z", "name": "nope"}])
    # One-call turn, a turn of 5 finished on their first step, then with a refusal (stored with the turn),
    # then a turn holding only a refusal: no result is written twice, no turn is written in pieces.
    rt.recorder.flush()  # the group commit, now: the file is read with a connection of its own
    assert _batches(tmp_path / "records.sqlite", inv.id) == [1, 1, 2, 1]
    assert [c.status for c in rt.recorder.history(inv.id).calls] == ["completed"] * 7 + ["failed", "failed"]
    rt.close()


async def test_a_cancelled_turn_after_a_flush_writes_each_call_once(
        runtime: RuntimeFactory, tmp_path: Path, held: tuple[threading.Event, threading.Event]) -> None:
    started, release = held
    rt = runtime(records=True)
    _add_tools(rt, started, release)
    path = tmp_path / "records.sqlite"
    inv = rt.invocation()
    task = asyncio.create_task(inv.arun([{"id": "a", "name": "fast", "arguments": {"n": 1}},
                                         {"id": "b", "name": "hold"}, {"id": "c", "name": "nope"}]))
    await asyncio.to_thread(_poll, path, inv.id, lambda calls: _status(calls).get("a") == "completed")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    a, b, c = rt.recorder.history(inv.id).calls
    assert (a.status, b.status, c.status) == ("completed", "outcome_unknown", "failed")
    assert c.result.error_code == "tool.unknown_tool"
    assert b.finished_at is None and b.started_at is not None  # when it ended is unknown: no invented duration
    assert _batches(path, inv.id) == [3] and [e.kind for e in rt.recorder.events(inv.id)] == ["invocation_started"]
    rt.close()


class _FailsOnce(SqliteRecorder):
    """A store whose first write of results fails (a writer in another process held the lock)."""

    failures = 0

    def calls_finished(self, *args: Any) -> None:
        if not self.failures:
            self.failures += 1
            raise TooldeckError("records.busy", "the records store stayed locked by another writer")
        super().calls_finished(*args)


async def test_a_failed_flush_leaves_the_results_to_the_end_of_the_turn(
        runtime: RuntimeFactory, tmp_path: Path, held: tuple[threading.Event, threading.Event],
        caplog: pytest.LogCaptureFixture) -> None:
    started, release = held
    store = _FailsOnce(tmp_path / "records.sqlite")
    rt = runtime(records=store)
    _add_tools(rt, started, release)
    inv = rt.invocation()
    task = asyncio.create_task(inv.arun([{"id": "a", "name": "fast", "arguments": {"n": 1}},
                                         {"id": "b", "name": "hold"}]))
    with caplog.at_level(logging.WARNING, logger="tooldeck.records"):
        await asyncio.to_thread(started.wait, 20)
        deadline = time.monotonic() + 20
        while not store.failures:
            assert time.monotonic() < deadline, "no flush was attempted"
            await asyncio.sleep(0.005)
        assert [c.status for c in store.history(inv.id).calls] == ["started", "started"]
        release.set()
        assert [r.content for r in await task] == ["fast 1", "released"]
    assert "written at the end of the turn" in caplog.text and "records.busy" in caplog.text
    assert [(c.status, c.result.content) for c in store.history(inv.id).calls] == [("completed", "fast 1"),
                                                                                   ("completed", "released")]
    rt.close()


async def test_a_fault_leaving_the_turn_closes_it_in_the_records(runtime: RuntimeFactory, tmp_path: Path) -> None:
    """The process lives on, so nothing would recover the turn's open calls: the runtime closes them."""
    rt = runtime(records=True)

    @rt.tool("t", "fast", annotations=SAFE)
    async def fast() -> str:
        """Answers at once."""
        return "fast"

    @rt.tool("t", "broken", annotations=SAFE)
    async def broken() -> str:
        """A host fault after a moment."""
        await asyncio.sleep(0.001)
        raise HostFault("test.disk", "the disk went away")

    inv = rt.invocation()
    with pytest.raises(HostFault):
        await inv.arun([{"id": "a", "name": "fast"}, {"id": "b", "name": "broken"}, {"id": "c", "name": "nope"}])
    a, b, c = rt.recorder.history(inv.id).calls
    assert (a.status, a.result.content, c.result.error_code) == ("completed", "fast", "tool.unknown_tool")
    assert [e.kind for e in rt.recorder.events(inv.id)] == ["invocation_started"]
    # dispatch turns the fault into the call's own result (docs/records.md, "When the host fails"): a
    # read-only tool's is `failed`, and its end time is the fault's
    assert (b.status, b.result.error_code) == ("failed", "tool.host_fault")
    assert b.finished_at is not None
    rt.close()
