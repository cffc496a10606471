"""The intent journal and its group commit (records/journal.py, group.py, merge.py; docs/records.md,
"The journal"): a turn's admission and results are durable in the process's journal before the tool
runs and before `arun` returns, and reach SQLite in one transaction per batch within the delay."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.records import journal
from tooldeck.records.port import FinishedCall, RequestedCall, StartedCall
from tooldeck.records.store import SqliteRecorder
from tooldeck.runtime import Runtime

from .support import start_invocation

HERE = Path(__file__).parent
DEADLINE_S = 30.0


def _rows(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """Read the file with a connection of its own (what another process sees)."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute(sql, params).fetchall()


def _poll(what: str, check: Any, deadline_s: float = DEADLINE_S) -> None:
    end = time.monotonic() + deadline_s
    while not check():
        assert time.monotonic() < end, f"{what} did not happen within {deadline_s} s"
        time.sleep(0.005)


@contextlib.contextmanager
def _worker(home: Path, mode: str) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    proc = subprocess.Popen([sys.executable, str(HERE / "_journal_worker.py"), str(home), mode],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until the worker reached its point
        assert line, f"the worker ended early: {proc.stderr.read() if proc.stderr else ''}"
        yield proc, line.split()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)


def _kill(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL


# -- real processes killed with SIGKILL ---------------------------------------------------------------

def test_a_call_killed_while_its_tool_runs_is_recovered_from_the_journal_with_its_raw_arguments(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    with _worker(home, "admit") as (proc, (_, inv_id)):
        _kill(proc)
    db = home / "records.sqlite"
    assert _rows(db, "SELECT count(*) FROM turns WHERE invocation_id = ?", (inv_id,)) == [(0,)]  # only in the journal
    assert list(journal.segments(journal.directory(db)))
    store = SqliteRecorder(db)  # opening merges the dead process's journal, then closes its open call
    try:
        [call] = store.history(inv_id).calls
        assert (call.call_id, call.raw_arguments, call.status) == ("h1", '{"note": "kept raw"}', "outcome_unknown")
        assert call.result is not None and call.result.error_code == "tool.outcome_unknown"
        assert [e.kind for e in store.events(inv_id)] == ["invocation_started", "call_recovered"]
    finally:
        store.close()
    assert list(journal.segments(journal.directory(db))) == []  # merged, then deleted


def test_a_result_returned_just_before_the_kill_is_in_the_store_after_recovery(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with _worker(home, "returned") as (proc, (_, inv_id, *content)):
        _kill(proc)
    assert " ".join(content) == "echo hi"
    db = home / "records.sqlite"
    assert _rows(db, "SELECT count(*) FROM turns WHERE invocation_id = ?", (inv_id,)) == [(0,)]
    store = SqliteRecorder(db)
    try:
        [call] = store.history(inv_id).calls
        assert (call.status, call.result.content if call.result else None) == ("completed", "echo hi")
        assert [e.kind for e in store.events(inv_id)] == ["invocation_started"]  # nothing to recover
    finally:
        store.close()


def test_two_processes_sharing_a_home_each_journal_their_own_turns(tmp_path: Path) -> None:
    home = tmp_path / "home"
    db = home / "records.sqlite"
    SqliteRecorder(db).close()  # the store exists before both start (neither creates it under the other)
    with _worker(home, "returned") as (first, (_, inv_a, *_r)), _worker(home, "admit") as (second, (_, inv_b)):
        owners = {s.owner_id for s in journal.segments(journal.directory(db))}
        assert len(owners) == 2  # one journal per process
        live = SqliteRecorder(db)  # both alive: their journals are theirs to commit, not merged by others
        try:
            assert live.history(inv_a).calls == [] and live.history(inv_b).calls == []
        finally:
            live.close()
        _kill(first)
        _kill(second)
    store = SqliteRecorder(db)
    try:
        assert [(c.call_id, c.status) for c in store.history(inv_a).calls] == [("e1", "completed")]
        assert [(c.call_id, c.status) for c in store.history(inv_b).calls] == [("h1", "outcome_unknown")]
    finally:
        store.close()


def test_a_merge_skips_what_a_commit_marker_covers_and_keeps_the_rest(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with _worker(home, "marked") as (proc, (_, inv_id)):
        _kill(proc)
    db = home / "records.sqlite"
    [segment] = journal.segments(journal.directory(db))
    kinds = [e[0] for e in journal.decode(segment.path.read_bytes()).entries]
    assert kinds == ["a", "r", "c", "a", "r"]  # turn 1, its commit marker, turn 2 (never committed)
    assert _rows(db, "SELECT round FROM turns WHERE invocation_id = ?", (inv_id,)) == [(1,)]
    store = SqliteRecorder(db)
    try:
        calls = store.history(inv_id).calls
        assert [(c.call_id, c.status, c.result.content if c.result else None) for c in calls] == [
            ("e1", "completed", "echo one"), ("e2", "completed", "echo two")]
    finally:
        store.close()


def _marked_up_to_its_end(db: Path) -> bool:
    """The process's segment ends with a commit marker that covers every entry before it."""
    [segment] = journal.segments(journal.directory(db))
    decoded = journal.decode(segment.path.read_bytes())
    return bool(decoded.entries) and decoded.entries[-1] == ["c", decoded.starts[-1]]


# -- in one process -----------------------------------------------------------------------------------

def _turn(store: SqliteRecorder, inv: str, round_no: int, content: str = "ok") -> None:
    store.calls_admitted(inv, round_no, [RequestedCall("c", "search", '{"q": 1}', 0)],
                         [StartedCall("c", 0, "extension/test:search", {"q": 1})], 1.0)
    store.calls_finished(inv, round_no, [FinishedCall("c", 0, "extension/test:search", "completed", {"q": 1},
                                                      content, None, False, None, [], None, 1.0, 2.0)])


def test_a_process_reads_its_own_writes_at_once(tmp_path: Path) -> None:
    rt = Runtime(tmp_path, records=True, builtins=[], profile={"allow": ["extension/*"]})
    rt.recorder._group.delay_s = rt.recorder._group.backstop_s = 3600.0  # type: ignore[attr-defined]  # no commit unless read

    @rt.tool("test", "echo")
    async def echo(note: str) -> str:
        """Echo."""
        return note

    inv = rt.invocation()
    inv.run([{"id": "e1", "name": "echo", "arguments": '{"note": "mine"}'}])
    assert _rows(tmp_path / "records.sqlite", "SELECT count(*) FROM turns") == [(0,)]
    [call] = rt.recorder.history(inv.id).calls  # type: ignore[attr-defined]
    assert (call.status, call.result.content) == ("completed", "mine")
    other = SqliteRecorder(tmp_path / "records.sqlite")  # another store object of this process: the same journal
    try:
        assert [c.call_id for c in other.history(inv.id).calls] == ["e1"]
    finally:
        other.close()
    rt.close()


def test_the_group_commit_writes_sqlite_without_any_read(tmp_path: Path) -> None:
    db = tmp_path / "records.sqlite"
    store = SqliteRecorder(db)
    inv = start_invocation(store)
    for round_no in range(1, 6):
        _turn(store, inv, round_no)
    _poll("the group commit", lambda: _rows(db, "SELECT count(*) FROM results") == [(5,)])
    assert _rows(db, "SELECT count(*) FROM turns") == [(5,)]
    # the segment is marked: everything before the marker is in SQLite (a merge would skip it)
    _poll("the commit marker", lambda: _marked_up_to_its_end(db))
    store.close()
    assert list(journal.segments(journal.directory(db))) == []  # deleted at close


def test_a_busy_store_does_not_hold_up_the_turn_and_gets_its_rows_once_free(tmp_path: Path) -> None:
    db = tmp_path / "records.sqlite"
    store = SqliteRecorder(db, busy_timeout_ms=100)
    store._group.delay_s = store._group.backstop_s = 0.01  # type: ignore[union-attr]
    inv = start_invocation(store)
    other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    try:
        _turn(store, inv, 1)  # durable in the journal although SQLite is locked
        time.sleep(0.3)  # the group commit has tried (and failed: records.busy), keeping its journal
        assert [s.owner_id for s in journal.segments(journal.directory(db))]
    finally:
        other.execute("ROLLBACK")
        other.close()
    _poll("the retried group commit", lambda: _rows(db, "SELECT count(*) FROM results") == [(1,)], 10)
    assert [c.status for c in store.history(inv).calls] == ["completed"]
    store.close()


def test_records_off_writes_no_journal(tmp_path: Path) -> None:
    rt = Runtime(tmp_path, records=False, builtins=[], profile={"allow": ["extension/*"]})

    @rt.tool("test", "echo")
    async def echo(note: str) -> str:
        """Echo."""
        return note

    rt.invocation().run([{"id": "e1", "name": "echo", "arguments": '{"note": "x"}'}])
    rt.close()
    assert not journal.directory(tmp_path / "records.sqlite").exists()
    assert not (tmp_path / "records.sqlite").exists()


def test_close_commits_everything_and_leaves_no_journal(tmp_path: Path) -> None:
    db = tmp_path / "records.sqlite"
    store = SqliteRecorder(db)
    store._group.delay_s = store._group.backstop_s = 3600.0  # type: ignore[union-attr]
    inv = start_invocation(store)
    _turn(store, inv, 1)
    store.close()
    assert _rows(db, "SELECT count(*) FROM results") == [(1,)]
    assert list(journal.segments(journal.directory(db))) == []
    assert _rows(db, "SELECT settled FROM owners") == [(1,)]


# -- a dead process's journal: torn tails, and a merge that runs twice ---------------------------------

def _dead_journal(tmp_path: Path) -> tuple[Path, str, Path]:
    """A home whose worker was killed after a one-call turn returned: (store, invocation, its segment)."""
    home = tmp_path / "home"
    with _worker(home, "returned") as (proc, (_, inv_id, *_r)):
        _kill(proc)
    db = home / "records.sqlite"
    [segment] = journal.segments(journal.directory(db))
    return db, inv_id, segment.path


def test_a_torn_tail_stops_the_merge_at_the_last_good_entry_and_is_kept(tmp_path: Path,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    db, inv_id, segment = _dead_journal(tmp_path)
    data = segment.read_bytes()
    entries = journal.decode(data).entries
    assert [e[0] for e in entries] == ["a", "r"]  # the admission, then the result
    segment.write_bytes(data[:-3])  # the process died inside its last write
    with caplog.at_level(logging.WARNING, "tooldeck.records"):
        store = SqliteRecorder(db)
    try:
        [call] = store.history(inv_id).calls  # the admission was merged, the torn result was not
        assert call.status == "outcome_unknown"
    finally:
        store.close()
    kept = segment.with_name(segment.name + ".bad")
    assert kept.read_bytes() == data[:-3] and not segment.exists()
    assert any("torn entry" in r.getMessage() and str(kept) in r.getMessage() for r in caplog.records)
    store = SqliteRecorder(db)  # and it is not merged again
    try:
        assert [c.status for c in store.history(inv_id).calls] == ["outcome_unknown"]
    finally:
        store.close()


def test_a_journal_merged_twice_adds_nothing_the_second_time(tmp_path: Path) -> None:
    db, _inv_id, segment = _dead_journal(tmp_path)
    copy = tmp_path / "copy.log"
    shutil.copyfile(segment, copy)
    SqliteRecorder(db).close()  # merged and deleted
    before = _rows(db, "SELECT * FROM results"), _rows(db, "SELECT * FROM turns"), _rows(db, "SELECT * FROM events")
    shutil.copyfile(copy, segment)  # as if the merging process died between its commit and the deletion
    SqliteRecorder(db).close()
    after = _rows(db, "SELECT * FROM results"), _rows(db, "SELECT * FROM turns"), _rows(db, "SELECT * FROM events")
    assert after == before and not segment.exists()


# -- the decoder ----------------------------------------------------------------------------------------

_entry = st.lists(st.one_of(st.integers(-(2**63), 2**63 - 1), st.text(max_size=40), st.none(),
                            st.floats(allow_nan=False, allow_infinity=False)), min_size=1, max_size=6)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.lists(_entry, max_size=6), st.data())
def test_the_decoder_reads_every_whole_entry_and_stops_at_damage(entries: list[list[Any]], data: st.DataObject
                                                                 ) -> None:
    frames = [journal.frame(e) for e in entries]
    stream = b"".join(frames)
    whole = journal.decode(stream)
    assert (whole.entries, whole.good, whole.problem) == (entries, len(stream), None)
    # cut anywhere: exactly the entries that end before the cut
    cut = data.draw(st.integers(0, len(stream)))
    ends = [sum(len(f) for f in frames[:i + 1]) for i in range(len(frames))]
    got = journal.decode(stream[:cut])
    assert got.entries == entries[:sum(1 for end in ends if end <= cut)]
    assert (got.problem is None) == (cut in (0, *ends))
    if stream:  # flip one bit: the entries before the damaged one, and a problem
        bit = data.draw(st.integers(0, len(stream) * 8 - 1))
        flipped = bytearray(stream)
        flipped[bit // 8] ^= 1 << (bit % 8)
        hit = sum(1 for end in ends if end <= bit // 8)
        got = journal.decode(bytes(flipped))
        assert got.entries == entries[:hit] and got.problem is not None and got.good == (ends[hit - 1] if hit else 0)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_the_decoder_never_raises_on_random_bytes(data: bytes) -> None:
    got = journal.decode(data)
    assert got.good <= len(data) and (got.problem is None) == (got.good == len(data))
    assert journal.decode(data[:got.good]).entries == got.entries


def test_concurrent_writers_of_one_store_share_one_journal_and_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "records.sqlite"
    store = SqliteRecorder(db)
    store._group.delay_s = store._group.backstop_s = 0.001  # type: ignore[union-attr]  # commits racing appends
    inv = start_invocation(store)
    errors: list[BaseException] = []

    def run(base: int) -> None:
        try:
            for r in range(base, base + 200):
                _turn(store, inv, r, f"r{r}")
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(1 + 1000 * k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    calls = store.history(inv).calls
    assert sorted(c.round for c in calls) == sorted(r for k in range(3) for r in range(1 + 1000 * k, 201 + 1000 * k))
    assert all(c.status == "completed" and c.result.content == f"r{c.round}" for c in calls)
    store.close()
    assert list(journal.segments(journal.directory(db))) == []


async def test_the_loops_timer_commits_while_the_loop_is_free(tmp_path: Path) -> None:
    import asyncio

    db = tmp_path / "records.sqlite"
    store = SqliteRecorder(db)
    store._group.backstop_s = 3600.0  # type: ignore[union-attr]  # only the loop's timer can commit
    inv = start_invocation(store)
    _turn(store, inv, 1)
    end = time.monotonic() + DEADLINE_S
    while _rows(db, "SELECT count(*) FROM results") != [(1,)]:
        assert time.monotonic() < end, "the loop's timer never committed"
        await asyncio.sleep(0.005)  # the loop is free
    assert _marked_up_to_its_end(db)
    store.close()


def test_the_thread_commits_when_the_loop_that_armed_the_timer_stopped(tmp_path: Path) -> None:
    import asyncio

    db = tmp_path / "records.sqlite"
    store = SqliteRecorder(db)
    store._group.delay_s = 3600.0  # type: ignore[union-attr]  # the loop's timer never comes: the thread must
    inv = start_invocation(store)

    async def turn() -> None:
        _turn(store, inv, 1)

    asyncio.run(turn())  # the loop is gone once the turn returned
    _poll("the backstop commit", lambda: _rows(db, "SELECT count(*) FROM results") == [(1,)])
    store.close()


async def test_a_loop_that_never_yields_commits_a_due_batch_with_its_next_write(tmp_path: Path) -> None:
    db = tmp_path / "records.sqlite"
    store = SqliteRecorder(db)
    store._group.backstop_s = 3600.0  # type: ignore[union-attr]  # neither the thread ...
    inv = start_invocation(store)
    _turn(store, inv, 1)
    time.sleep(0.1)  # ... nor the loop's timer (the loop is blocked here) can commit
    assert _rows(db, "SELECT count(*) FROM turns") == [(0,)]
    _turn(store, inv, 2)  # its first write finds the batch overdue and commits it, itself included
    assert _rows(db, "SELECT count(*) FROM turns") == [(2,)]
    store.close()
