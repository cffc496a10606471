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
