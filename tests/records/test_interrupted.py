"""Interrupted calls: killed processes, dead owners, live owners, explicit resume."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tooldeck.core.descriptors import ToolAnnotations
from tooldeck.protocols import validate
from tooldeck.records.port import FinishedCall, RequestedCall, StartedCall
from tooldeck.records.replay import replay_all
from tooldeck.records.resume import resume_invocation
from tooldeck.records.store import SqliteRecorder
from tooldeck.runtime import Runtime

from .support import ADAPTERS, PlannedCall, PlannedRound, count_results, start_invocation, write_round

HERE = Path(__file__).parent


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(HERE / script), *args], capture_output=True, text=True, timeout=120,
                          check=True)


def test_sigkill_mid_batch_leaves_a_clean_store_with_unknown_outcomes(tmp_path: Path) -> None:
    home, markers = tmp_path / "home", tmp_path / "markers"
    markers.mkdir()
    proc = subprocess.Popen([sys.executable, str(HERE / "_kill_worker.py"), str(home), str(markers)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        inv_id = proc.stdout.readline().strip()  # type: ignore[union-attr]
        deadline = time.monotonic() + 60
        while len(list(markers.iterdir())) < 4:
            assert proc.poll() is None, proc.stderr.read()  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the slow calls never started"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    assert proc.returncode == -signal.SIGKILL

    store = SqliteRecorder(home / "records.sqlite")  # opening recovers the calls of the dead process
    try:
        calls = store.history(inv_id).calls
        assert [(c.round, c.call_id, c.status) for c in calls] == [
            (1, "q1", "completed"), (1, "q2", "completed"),
            (2, "t0", "outcome_unknown"), (2, "t1", "outcome_unknown"), (2, "t2", "outcome_unknown"),
            (2, "t3", "outcome_unknown"), (2, "bad", "failed")]
        assert calls[0].result.content == "quick 1"
        for c in calls[2:6]:
            assert c.result.is_error and c.result.error_code == "tool.outcome_unknown"
            assert "may or may not have run" in c.result.content and "Check the current state" in c.result.content
        assert calls[6].raw_arguments == '{"n": ' and calls[6].result.error_code == "tool.invalid_arguments"
        # The refusal was stored with the turn, so recovery did not touch it.
        assert [e.data["call_id"] for e in store.events(inv_id) if e.kind == "call_recovered"] == [
            "t0", "t1", "t2", "t3"]
        for c in calls[2:6]:  # when they ended is unknown: no invented duration
            assert c.finished_at is None and c.started_at is not None
        for fmt, messages in replay_all(store, inv_id).items():
            assert validate(messages, fmt) == [], fmt
            ids, results = count_results(messages, fmt)
            assert ids == results and [len(t) for t in ids] == [2, 5]
    finally:
        store.close()

    # Resume: same invocation, next round, the interrupted calls are not run again.
    with Runtime(home, records=True) as rt:
        ran: list[int] = []

        @rt.tool("test", "transfer", annotations=ToolAnnotations(concurrency_safe=True, mutating=True))
        async def transfer(n: int) -> str:
            """Slow, mutating."""
            ran.append(n)
            return f"transferred {n}"

        resumed = resume_invocation(rt, inv_id)
        assert resumed.recovered == []  # already recovered when the store opened
        assert resumed.invocation.id == inv_id and resumed.invocation.round == 2
        assert validate(resumed.messages("anthropic"), "anthropic") == []
        [result] = resumed.invocation.run([{"id": "t9", "name": "transfer", "arguments": {"n": 9}}])
        assert result.content == "transferred 9" and ran == [9]
        calls = rt.recorder.history(inv_id).calls
        assert [(c.round, c.call_id) for c in calls][-1] == (3, "t9")
        assert len(list(markers.iterdir())) == 4


def test_a_dead_writer_is_recovered_and_a_live_one_is_not(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    live = SqliteRecorder(path)
    mine = start_invocation(live)
    write_round(live, mine, 1, PlannedRound([PlannedCall("m", "search", "{}")], interrupt="after_started"))
    inv_dead = _run("_writer.py", str(path), "dead", "1", "3", "stop-after-started").stdout.strip()

    other = SqliteRecorder(path)  # another opener: recovers the dead process, leaves ours running
    try:
        assert [c.status for c in other.history(inv_dead).calls] == ["outcome_unknown"] * 3
        assert [c.status for c in other.history(mine).calls] == ["started"]
        assert other.recover() == []
        forced = other.recover(mine, force=True)
        assert [(c.call_id, c.status) for c in forced] == [("m", "outcome_unknown")]
    finally:
        other.close()
    # The live writer's late result does not overwrite the recorded outcome; it is kept as an event.
    live.calls_finished(mine, 1, [FinishedCall("m", 0, None, "completed", None, "done late", None, False, None, [],
                                               None, None, time.time())])
    [call] = live.history(mine).calls
    assert call.status == "outcome_unknown" and "may or may not have run" in call.result.content
    late = [e for e in live.events(mine) if e.kind == "late_result"]
    assert late and late[0].data["content"] == "done late"
    live.close()


def test_resume_in_process_after_cancellation(tmp_path: Path) -> None:
    import asyncio

    with Runtime(tmp_path, records=True) as rt:
        started = asyncio.Event()

        @rt.tool("test", "hang", annotations=ToolAnnotations(mutating=True))
        async def hang() -> str:
            """Never returns."""
            started.set()
            await asyncio.sleep(3600)
            return "never"

        inv = rt.invocation("gemini")

        async def cancel_midway() -> None:
            task = asyncio.ensure_future(inv.arun([{"id": "h1", "name": "hang", "arguments": {}}]))
            await started.wait()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        asyncio.run(cancel_midway())
        # The cancelled turn closed its started call itself: the result never arrived.
        assert [c.status for c in rt.recorder.history(inv.id).calls] == ["outcome_unknown"]
        resumed = resume_invocation(rt, inv.id)
        assert resumed.recovered == []
        contents = resumed.messages()
        assert validate(contents, "gemini") == []
        response = contents[1]["parts"][0]["functionResponse"]["response"]["error"]
        assert "may or may not have run" in response
        again = rt.resume(inv.id)
        assert again.round == 1 and again.gate.budget.total == 1


def test_processes_that_end_cleanly_leave_nothing_to_recover(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    inv = _run("_writer.py", str(path), "clean", "2", "3").stdout.strip()
    store = ADAPTERS["sqlite"](tmp_path)
    try:
        assert store.recover() == []
        assert all(c.status == "completed" for c in store.history(inv).calls)
    finally:
        store.close()


def _finished(call_id: str, index: int, content: str) -> FinishedCall:
    return FinishedCall(call_id, index, "extension/test:search", "completed", {}, content, None, False, None, [],
                        None, None, time.time())


def _admit(store: SqliteRecorder, inv: str, round_no: int, ids: list[str]) -> None:
    store.calls_admitted(inv, round_no, [RequestedCall(c, "search", "{}", i) for i, c in enumerate(ids)],
                         [StartedCall(c, i, "extension/test:search", {}) for i, c in enumerate(ids)], time.time())


def test_results_after_recovery_become_late_results_and_the_rest_still_land(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    live = SqliteRecorder(path)
    inv = start_invocation(live)
    _admit(live, inv, 1, ["a", "b", "c"])
    live.calls_finished(inv, 1, [_finished("a", 0, "a done")])

    other = SqliteRecorder(path)  # e.g. a resume elsewhere: closes what is open, whoever owns it
    try:
        assert [(c.call_id, c.status) for c in other.recover(inv, force=True)] == [("b", "outcome_unknown"),
                                                                                   ("c", "outcome_unknown")]
    finally:
        other.close()
    live.calls_finished(inv, 1, [_finished("c", 2, "c late"), _finished("b", 1, "b late")])
    _admit(live, inv, 2, ["d"])
    live.calls_finished(inv, 2, [_finished("d", 0, "d done")])
    live.close()

    store = SqliteRecorder(path)
    try:
        calls = store.history(inv).calls
        assert [(c.call_id, c.status) for c in calls] == [("a", "completed"), ("b", "outcome_unknown"),
                                                          ("c", "outcome_unknown"), ("d", "completed")]
        assert calls[0].result.content == "a done" and calls[3].result.content == "d done"
        assert all("may or may not have run" in c.result.content for c in calls[1:3])
        events = store.events(inv)
        assert [e.data["call_id"] for e in events if e.kind == "call_recovered"] == ["b", "c"]
        assert [(e.data["call_id"], e.data["content"]) for e in events if e.kind == "late_result"] == [
            ("c", "c late"), ("b", "b late")]
        summary = store.invocation(inv)
        assert (summary.rounds, summary.calls, summary.open_calls, summary.unknown_outcomes) == (2, 4, 0, 2)
        assert store.recover() == []
    finally:
        store.close()


class _ResultLandsFirst(SqliteRecorder):
    """Runs `before_write` just before its next write transaction: another writer got there first."""

    before_write: Any = None

    def _write(self, fn: Any) -> Any:
        hook, self.before_write = self.before_write, None
        if hook is not None:
            hook()
        return super()._write(fn)


def test_a_result_that_lands_while_recovery_runs_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    live = SqliteRecorder(path)
    inv = start_invocation(live)
    _admit(live, inv, 1, ["a", "b"])
    other = _ResultLandsFirst(path)
    try:
        # Recovery has read a and b as open; a's result commits before recovery's transaction.
        # (committed: the journaled result is flushed, as the group commit would)
        other.before_write = lambda: (live.calls_finished(inv, 1, [_finished("a", 0, "a done")]), live.flush())
        assert [c.call_id for c in other.recover(inv, force=True)] == ["b"]
        a, b = other.history(inv).calls
        assert (a.status, a.result.content, b.status) == ("completed", "a done", "outcome_unknown")
        assert [e.kind for e in other.events(inv)] == ["invocation_started", "call_recovered"]
    finally:
        other.close()
        live.close()
