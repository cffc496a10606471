"""Registrations live in the records DB in their own table, stable across restarts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tooldeck.records.registrations import RegistrationStore
from tooldeck.sources.mcp.config import ServerConfig


def _ensure(store: RegistrationStore, server: ServerConfig) -> str:
    return store.ensure(server.name, server.endpoint_key(), server.endpoint()).registration_id


def test_stable_across_restarts_and_new_on_endpoint_change(tmp_path: Path) -> None:
    db = tmp_path / "records.sqlite"
    v1 = ServerConfig(name="Time Server", command="mcp-server-time", args=["--local-timezone", "UTC"])
    v2 = ServerConfig(name="Time Server", command="mcp-server-time", args=["--local-timezone", "Europe/Oslo"])
    first = _ensure(RegistrationStore(db), v1)
    assert first.startswith("time-server-") and ":" not in first
    assert _ensure(RegistrationStore(db), v1) == first  # a restart finds the same registration
    changed = _ensure(RegistrationStore(db), v2)
    assert changed != first
    assert _ensure(RegistrationStore(db), v1) == first  # going back finds the old one
    other_name = _ensure(RegistrationStore(db), ServerConfig(name="clock", command="mcp-server-time",
                                                             args=["--local-timezone", "UTC"]))
    assert other_name not in (first, changed)
    rows = RegistrationStore(db).all()
    assert {r.registration_id for r in rows} == {first, changed, other_name}
    assert rows[0].endpoint["transport"] == "stdio"


def test_own_table_leaves_user_version_alone(tmp_path: Path) -> None:
    db = tmp_path / "records.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE runs (id TEXT)")
        conn.execute("PRAGMA user_version = 7")
    RegistrationStore(db).ensure("s", "k", {"transport": "http", "url": "http://x/"})
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 7
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"runs", "mcp_registrations"} <= tables
