"""What is specific to the SQLite adapter: file settings, schema versioning, coexistence."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tooldeck.core.errors import TooldeckError
from tooldeck.records.schema import SCHEMA_VERSION
from tooldeck.records.store import SqliteRecorder
from tooldeck.runtime import Runtime

from .support import PlannedCall, PlannedRound, start_invocation, write_round


def _pragma(path: Path, name: str) -> object:
    with sqlite3.connect(path) as conn:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]


def test_store_file_is_wal_with_a_versioned_schema(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    store = SqliteRecorder(path)
    conn = store._conns.get()
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    store.close()
    assert _pragma(path, "journal_mode") == "wal"
    assert _pragma(path, "user_version") == SCHEMA_VERSION


def test_the_runtime_records_by_default_into_home(tmp_path: Path) -> None:
    with Runtime(tmp_path) as rt:
        inv = rt.invocation()
        inv.run([{"id": "c1", "name": "dice_roll", "arguments": '{"formula": "d4"}'}])
    assert (tmp_path / "records.sqlite").is_file()
    store = SqliteRecorder(tmp_path / "records.sqlite")
    assert [c.status for c in store.history(inv.id).calls] == ["completed"]
    store.close()


def test_other_tables_in_the_same_file_are_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS mcp_registrations (registration_id TEXT PRIMARY KEY)")
        conn.execute("INSERT INTO mcp_registrations VALUES ('time-1')")
    store = SqliteRecorder(path)
    inv = start_invocation(store)
    write_round(store, inv, 1, PlannedRound([PlannedCall("a", "search", "{}")]))
    store.close()
    SqliteRecorder(path).close()  # reopening does not migrate again
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT registration_id FROM mcp_registrations").fetchall() == [("time-1",)]


def test_a_newer_schema_is_refused_with_advice(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(TooldeckError) as err:
        SqliteRecorder(path)
    assert err.value.code == "records.schema_too_new" and "upgrade tooldeck" in err.value.message


def test_a_file_that_is_not_sqlite_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(TooldeckError) as err:
        SqliteRecorder(path)
    assert err.value.code == "records.store_unreadable"


def test_snapshot_rows_cannot_be_updated(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    store = SqliteRecorder(path)
    start_invocation(store)
    store.close()
    with sqlite3.connect(path) as conn, pytest.raises(sqlite3.IntegrityError, match="write-once"):
        conn.execute("UPDATE snapshots SET json = '{}'")


def test_a_turns_batches_are_consecutive_rowids_and_finished_turns_are_forgotten(tmp_path: Path) -> None:
    from tooldeck.records.port import FinishedCall, RequestedCall, StartedCall

    store = SqliteRecorder(tmp_path / "records.sqlite")
    inv = start_invocation(store)
    for round_no in (1, 2):
        store.calls_admitted(inv, round_no, [RequestedCall(f"c{i}", "search", "{}", i) for i in range(4)],
                             [StartedCall(f"c{i}", i, "extension/test:search", {}) for i in (0, 2, 3)], 1.0,
                             [FinishedCall("c1", 1, None, "failed", None, "no", None, True, "tool.unknown_tool", [],
                                           None, None, 1.0)])
        for batch in ([3], [0, 2]):
            store.calls_finished(inv, round_no, [FinishedCall(f"c{i}", i, "extension/test:search", "completed", {},
                                                              "ok", None, False, None, [], None, 1.0, 2.0)
                                                 for i in batch])
    store.flush()
    rows = store._conns.get().execute("SELECT t.round, r.result_id - (t.turn_id << 20), r.n FROM turns t "
                                      "JOIN results r ON r.result_id >> 20 = t.turn_id ORDER BY r.result_id").fetchall()
    assert rows == [(1, 0, 1), (1, 1, 1), (1, 2, 2), (2, 0, 1), (2, 1, 1), (2, 2, 2)]
    assert store._progress == {}  # what the store keeps per turn goes once the turn has every result
    for round_no in range(3, 3 + 4_200):  # turns whose results never come (a host that stops): bounded
        store.calls_admitted(inv, round_no, [RequestedCall("c", "search", "{}", 0)],
                             [StartedCall("c", 0, "extension/test:search", {})], 1.0)
    assert 0 < len(store._progress) <= 4_096
    store.close()


def _one_call_admitted(store: SqliteRecorder, inv: str, round_no: int) -> None:
    from tooldeck.records.port import RequestedCall, StartedCall

    store.calls_admitted(inv, round_no, [RequestedCall("c", "search", '{"x": 1}', 0)],
                         [StartedCall("c", 0, "extension/test:search", {"x": 1})], 1.0)


def _one_call_finished(store: SqliteRecorder, inv: str, round_no: int) -> None:
    from tooldeck.records.port import FinishedCall

    store.calls_finished(inv, round_no, [FinishedCall("c", 0, "extension/test:search", "completed", {"x": 1}, "ok",
                                                      None, False, None, [], None, 1.0, 2.0)])


def test_a_one_statement_write_waits_for_another_writer_and_then_commits(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "records.sqlite"
    store = SqliteRecorder(path, busy_timeout_ms=10_000, journal=False)  # the direct statements (journal: below)
    inv = start_invocation(store)
    _one_call_admitted(store, inv, 1)  # the invocation is this process's now: the next turns are one statement
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    released = threading.Event()

    def release() -> None:
        released.wait(10)
        other.execute("COMMIT")

    releaser = threading.Thread(target=release)
    releaser.start()
    threading.Timer(0.2, released.set).start()
    try:
        _one_call_admitted(store, inv, 2)
        assert released.is_set()  # it waited for the other writer
        _one_call_finished(store, inv, 2)
    finally:
        released.set()
        releaser.join()
        other.close()
    assert [(c.round, c.status) for c in store.history(inv).calls] == [(1, "started"), (2, "completed")]
    store.close()


@pytest.mark.parametrize("step", ["admitted", "finished"])
def test_a_one_statement_write_gives_records_busy_when_the_lock_never_comes(tmp_path: Path, step: str) -> None:
    path = tmp_path / "records.sqlite"
    store = SqliteRecorder(path, busy_timeout_ms=100, journal=False)  # the direct statements (journal: below)
    inv = start_invocation(store)
    _one_call_admitted(store, inv, 1)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(TooldeckError) as err:
            if step == "admitted":
                _one_call_admitted(store, inv, 2)
            else:
                _one_call_finished(store, inv, 1)
        assert err.value.code == "records.busy" and "busy_timeout_ms" in str(err.value)
    finally:
        other.execute("ROLLBACK")
        other.close()
    # nothing was written, and the store still works
    assert [(c.round, c.status) for c in store.history(inv).calls] == [(1, "started")]
    _one_call_finished(store, inv, 1)
    assert [(c.round, c.status) for c in store.history(inv).calls] == [(1, "completed")]
    store.close()


def _rows_in_main_file(path: Path, copy: Path) -> int:
    """Rows of `t` in the main database file alone (what checkpoints have copied out of the WAL)."""
    copy.write_bytes(path.read_bytes())
    with sqlite3.connect(copy) as conn:
        try:
            return conn.execute("SELECT count(*) FROM t").fetchone()[0]
        except sqlite3.DatabaseError:  # not checkpointed yet, or copied while a checkpoint wrote it
            return 0


def test_the_checkpointer_runs_after_every_n_writes_again_and_again(tmp_path: Path) -> None:
    import time

    from tooldeck.records.sqlite import Checkpointer, Connections, write

    path = tmp_path / "cp.sqlite"
    conns = Connections(path, 30_000, "NORMAL")
    checkpointer = Checkpointer(conns, every=50, idle_s=3600)  # only the write count wakes it
    conn = conns.get()
    conn.execute("CREATE TABLE t (x)")
    try:
        for expected in (50, 100, 150):
            for _ in range(50):
                write(conn, lambda c: c.execute("INSERT INTO t VALUES (1)"), 30_000, path)
                checkpointer.wrote()
            deadline = time.monotonic() + 30
            while _rows_in_main_file(path, tmp_path / "copy.sqlite") < expected:
                assert time.monotonic() < deadline, f"no checkpoint after {expected} writes"
                time.sleep(0.02)
    finally:
        checkpointer.stop()
        conns.close()
