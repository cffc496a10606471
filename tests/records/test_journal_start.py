"""An invocation whose run and snapshot are already stored starts in the journal (records/merge.py `Started`):
no SQLite transaction of its own, committed with its turns by the group commit, and merged from the journal of
a process that died before that commit (`tooldeck serve` starts an invocation per served call)."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path
from typing import Any

from tooldeck.records import journal
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
    assert _invocations(db) == [first]  # only in the journal
    assert [e[0] for e in journal.decode(next(iter(journal.segments(journal.directory(db)))).path.read_bytes()
                                         ).entries] == ["i"]
    assert [e.kind for e in store.events(second)] == ["invocation_started"]  # a read flushes: the process sees it
    assert _invocations(db) == [first, second]
    assert _rows(db, "SELECT run_id, snapshot_id, owner_id IS NOT NULL FROM invocations WHERE invocation_id = ?",
                 (second,)) == [("run_a", snap.id, 1)]
    assert _rows(db, "SELECT count(*) FROM owner_invocations WHERE invocation_id = ?", (second,)) == [(1,)]
    third = start_invocation(store, snap, "run_b")  # another run: its row first, in its own transaction
    assert third in _invocations(db)
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
