"""An invocation whose run and snapshot are already stored starts in the journal (records/merge.py `Started`):
no SQLite transaction of its own, committed with its turns by the group commit, journaled in the same write as
its first turn's admission (or at the commit, should that come first), and merged from the journal of a process
that died before that commit (`tooldeck serve` starts an invocation per served call)."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path
from typing import Any

from tooldeck.records import journal
from tooldeck.records.port import RequestedCall, StartedCall
from tooldeck.records.store import SqliteRecorder

from .support import snapshot, start_invocation
from .test_journal import DEADLINE_S, _kill, _poll, _rows, _worker


def _invocations(db: Path) -> list[str]:
    return [r[0] for r in _rows(db, "SELECT invocation_id FROM invocations ORDER BY created_at")]


def test_the_first_invocation_of_a_run_is_written_at_once_and_a_later_one_with_the_group_commit(
        tmp_path: Path) -> None:
    db = tmp_path / "records.sqlite"
    store = SqliteRecorder(db)
    store._group.delay_s = store._group.backstop_s = 3600.0  # type: ignore[union-attr]  # no commit unless flushed
    snap = snapshot()
    first = start_invocation(store, snap, "run_a")
    assert _invocations(db) == [first]  # a new run and snapshot: stored in their own transaction
    second = start_invocation(store, snap, "run_a")
    assert _invocations(db) == [first]  # queued for the group commit
    assert _entries(db) == []  # and journaled with the next write
    assert [e.kind for e in store.events(second)] == ["invocation_started"]  # a read flushes: the process sees it
    assert _entries(db) == ["i"]  # journaled before its commit
    assert _invocations(db) == [first, second]
    assert _rows(db, "SELECT run_id, snapshot_id, owner_id IS NOT NULL FROM invocations WHERE invocation_id = ?",
                 (second,)) == [("run_a", snap.id, 1)]
    assert _rows(db, "SELECT count(*) FROM owner_invocations WHERE invocation_id = ?", (second,)) == [(1,)]
    third = start_invocation(store, snap, "run_b")  # another run: its row first, in its own transaction
    assert third in _invocations(db)
    store.close()


def _entries(db: Path) -> list[str]:
    return [e[0] for segment in journal.segments(journal.directory(db))
            for e in journal.decode(segment.path.read_bytes()).entries if e[0] != "c"]


def test_a_start_is_journaled_in_one_write_with_its_first_admission(tmp_path: Path) -> None:
    db = tmp_path / "records.sqlite"
    store = SqliteRecorder(db)
    store._group.delay_s = store._group.backstop_s = 3600.0  # type: ignore[union-attr]
    snap = snapshot()
    start_invocation(store, snap, "run_a")
    store.flush()  # the run and the snapshot are stored
    writes: list[bytes] = []
    real = journal.Journal.append

    def append(self: journal.Journal, data: bytes) -> None:
        writes.append(data)
        real(self, data)

    journal.Journal.append = append  # type: ignore[method-assign]
    try:
        second = start_invocation(store, snap, "run_a")
        assert writes == []
        store.calls_admitted(second, 1, [RequestedCall("c1", "echo", "{}", 0)],
                             [StartedCall("c1", 0, "test/echo", {})], 1.0)
    finally:
        journal.Journal.append = real  # type: ignore[method-assign]
    [write] = writes
    assert [e[0] for e in journal.decode(write).entries] == ["i", "a"]
    assert [e.kind for e in store.events(second)] == ["invocation_started"]
    store.close()


def test_the_group_commit_writes_journaled_starts_without_any_read(tmp_path: Path) -> None:
    db = tmp_path / "records.sqlite"
    store = SqliteRecorder(db)
    snap = snapshot()
    ids = [start_invocation(store, snap) for _ in range(5)]
    _poll("the group commit", lambda: set(_invocations(db)) == set(ids))
    assert _rows(db, "SELECT count(*) FROM events WHERE kind = 'invocation_started'") == [(5,)]
    store.close()


def test_a_process_killed_before_the_group_commit_leaves_a_start_the_next_store_merges(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with _worker(home, "second") as (proc, (_, inv_id)):
        _kill(proc)
    db = home / "records.sqlite"
    assert inv_id not in _invocations(db)  # only in the dead process's journal
    [segment] = journal.segments(journal.directory(db))
    entries = journal.decode(segment.path.read_bytes()).entries
    assert [e[0] for e in entries if e[0] != "c"][-3:] == ["i", "a", "r"]
    copy = tmp_path / "copy.log"
    copy.write_bytes(segment.path.read_bytes())
    store = SqliteRecorder(db)  # merges the dead journal: the start, then its turn and result
    try:
        [call] = store.history(inv_id).calls
        assert (call.call_id, call.status, call.result.content if call.result else None) == (
            "e2", "completed", "echo two")
        assert [e.kind for e in store.events(inv_id)] == ["invocation_started"]
    finally:
        store.close()
    before = _all(db)
    segment.path.write_bytes(copy.read_bytes())  # as if the merging process died before deleting the segment
    SqliteRecorder(db).close()
    assert _all(db) == before and not segment.path.exists()


def test_a_process_killed_while_the_first_tool_of_a_journaled_start_runs_leaves_both_to_merge(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    with _worker(home, "second_hold") as (proc, (_, inv_id)):
        _kill(proc)
    db = home / "records.sqlite"
    assert inv_id not in _invocations(db)  # only in the dead process's journal
    assert _entries(db)[-2:] == ["i", "a"]
    store = SqliteRecorder(db)  # merges the start and the admission, then recovery closes the open call
    try:
        [call] = store.history(inv_id).calls
        assert (call.call_id, call.raw_arguments, call.status) == ("h2", '{"note": "held"}', "outcome_unknown")
        assert [e.kind for e in store.events(inv_id)] == ["invocation_started", "call_recovered"]
    finally:
        store.close()


def _all(db: Path) -> tuple[Any, ...]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return tuple(conn.execute(f"SELECT * FROM {table}").fetchall()
                     for table in ("invocations", "owner_invocations", "events", "turns", "results"))


def test_a_read_waits_for_a_commit_another_thread_has_in_flight(tmp_path: Path) -> None:
    db = tmp_path / "records.sqlite"
    store = SqliteRecorder(db)
    group = store._group
    assert group is not None
    group.delay_s = group.backstop_s = 3600.0
    snap = snapshot()
    start_invocation(store, snap, "run_a")
    second = start_invocation(store, snap, "run_a")  # journaled
    real = group.committers[-1]
    entered, release = threading.Event(), threading.Event()

    def slow(writes: list[Any]) -> None:
        entered.set()
        release.wait(DEADLINE_S)
        real(writes)

    group.committers[-1] = slow
    committing = threading.Thread(target=group.flush)  # as the backstop thread does: the queue is taken
    committing.start()
    try:
        assert entered.wait(DEADLINE_S)
        threading.Timer(0.3, release.set).start()
        # the queue is empty now, but its writes are not in SQLite yet: the read waits for them
        assert [e.kind for e in store.events(second)] == ["invocation_started"]
    finally:
        release.set()
        committing.join(DEADLINE_S)
        group.committers[-1] = real
        store.close()
