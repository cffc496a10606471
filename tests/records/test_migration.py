"""Migrations: a v2 store (one `calls` and one `results` row per call) opens as the current one with
nothing lost; a v4 store gets the view of v5."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson

from tooldeck.records import owner as owners
from tooldeck.records.owner import Owner
from tooldeck.records.port import FinishedCall, InvocationInfo, RequestedCall, StartedCall
from tooldeck.records.schema import MIGRATIONS, SCHEMA_VERSION
from tooldeck.records.store import SqliteRecorder

ODD = "lone \ud800 surrogate"
"""v2 stored a str that is not valid UTF-8 as its surrogate-preserving bytes."""


def _dead_owner() -> Owner:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return Owner(socket.gethostname(), child.pid, "00000000:1")  # reaped, and another boot's token


def _v2_store(path: Path, dead: Owner, live: Owner) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    for step in (*MIGRATIONS[0], *MIGRATIONS[1]):
        assert isinstance(step, str)
        conn.execute(step)
    conn.execute("PRAGMA user_version = 2")
    conn.execute("CREATE TABLE mcp_registrations (registration_id TEXT PRIMARY KEY)")
    conn.execute("INSERT INTO mcp_registrations VALUES ('time-1')")
    conn.execute("INSERT INTO runs VALUES ('run_v2', 100.0)")
    conn.execute("INSERT INTO snapshots VALUES ('snap_v2', 'openai', '{\"v\": 2}', 100.0)")
    for owner_id, o in ((1, dead), (2, live)):
        conn.execute("INSERT INTO owners (owner_id, host, pid, token, first_seen) VALUES (?, ?, ?, ?, 100.0)",
                     (owner_id, o.host, o.pid, o.token))
    for inv, owner_id, at in (("inv_dead", 1, 101.0), ("inv_live", 2, 102.0)):
        conn.execute("INSERT INTO invocations VALUES (?, 'run_v2', 'snap_v2', 'openai', 'chat', 0, ?, ?)",
                     (inv, at, owner_id))
        conn.execute("INSERT INTO owner_invocations VALUES (?, ?)", (owner_id, inv))
    calls = [
        # inv_dead round 1: completed, refused by the gate (tool id from the result), outcome_unknown.
        ("inv_dead", 1, 0, "c0", "search", "extension/test:search", '{"x": 1}', '{"x":1}', "completed", 110.0,
         110.0, 111.0, 1),
        ("inv_dead", 1, 1, "c1", "search", "extension/test:search", "[1]", None, "failed", 110.0, None, 110.5, 1),
        ("inv_dead", 1, 2, ODD.encode("utf-8", "surrogatepass"), "write", "extension/test:write", "42", "{}",
         "outcome_unknown", 110.0, 110.0, 115.0, 1),
        # inv_dead round 2: killed mid-turn: one call admitted, one only requested.
        ("inv_dead", 2, 0, "c3", "write", "extension/test:write", '{"p": "a"}', '{"p":"a"}', "started", 120.0, 120.0,
         None, 1),
        ("inv_dead", 2, 1, "c4", "search", None, None, None, "requested", 120.0, None, None, 1),
        # inv_live round 1: its process still runs the call.
        ("inv_live", 1, 0, "l0", "search", "extension/test:search", "{}", "{}", "started", 130.0, 130.0, None, 2),
    ]
    conn.executemany("INSERT INTO calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", calls)
    results = [
        ("inv_dead", 1, 0, "found 3", '{"hits": 3}', 0, None, '["tool-results/x.txt"]', '{"raw": [1]}',
         '[{"kind": "read"}]', 111.5),
        ("inv_dead", 1, 1, "bad arguments", '{"error": {"code": "tool.invalid_arguments"}}', 1,
         "tool.invalid_arguments", None, None, None, 111.5),
        ("inv_dead", 1, 2, ODD.encode("utf-8", "surrogatepass"), None, 1, "tool.timeout", None, None, None, 116.0),
    ]
    conn.executemany("INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", results)
    conn.execute("INSERT INTO events (invocation_id, kind, data, at) VALUES ('inv_dead', 'late_result', "
                 "'{\"index\": 2}', 117.0)")
    conn.execute("INSERT INTO events (invocation_id, run_id, kind, data, at) VALUES (NULL, 'run_v2', 'background', "
                 "'{\"task\": 1}', 118.0)")
    conn.close()


def test_a_v2_store_migrates_without_losing_anything(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    dead, live = _dead_owner(), owners.current()
    assert not owners.is_alive(dead) and owners.is_alive(live)
    _v2_store(path, dead, live)

    store = SqliteRecorder(path)  # migrates, then recovers the dead owner's open calls
    try:
        calls = store.history("inv_dead").calls
        rows = [(c.round, c.index, c.call_id, c.call_name, c.tool_id, c.raw_arguments, c.arguments, c.status,
                 c.requested_at, c.started_at, c.owner) for c in calls]
        assert rows == [
            (1, 0, "c0", "search", "extension/test:search", '{"x": 1}', {"x": 1}, "completed", 110.0, 110.0, dead),
            (1, 1, "c1", "search", "extension/test:search", "[1]", None, "failed", 110.0, None, dead),
            (1, 2, ODD, "write", "extension/test:write", "42", {}, "outcome_unknown", 110.0, 110.0, dead),
            (2, 0, "c3", "write", "extension/test:write", '{"p": "a"}', {"p": "a"}, "outcome_unknown", 120.0, 120.0,
             dead),
            (2, 1, "c4", "search", None, None, None, "failed", 120.0, None, dead),
        ]
        assert [c.finished_at for c in calls[:3]] == [111.0, 110.5, 115.0]
        c0, c1, c2 = (c.result for c in calls[:3])
        assert (c0.content, c0.structured, c0.is_error, c0.error_code, c0.resource_refs, c0.raw_result, c0.effects,
                c0.recorded_at) == ("found 3", {"hits": 3}, False, None, ["tool-results/x.txt"], {"raw": [1]},
                                    [{"kind": "read"}], 111.5)
        assert (c1.content, c1.is_error, c1.error_code, c1.resource_refs, c1.effects) == (
            "bad arguments", True, "tool.invalid_arguments", [], [])
        assert (c2.content, c2.structured, c2.error_code, c2.recorded_at) == (ODD, None, "tool.timeout", 116.0)
        # Round 2 was open: recovered when the store opened (its owner is gone), never re-run.
        assert calls[3].result.error_code == "tool.outcome_unknown"
        assert calls[4].result.error_code == "tool.interrupted" and calls[3].finished_at is None  # unknown
        dead_summary = store.invocation("inv_dead")
        assert (dead_summary.rounds, dead_summary.calls, dead_summary.errors, dead_summary.open_calls,
                dead_summary.unknown_outcomes) == (2, 5, 4, 0, 2)
        kinds = [e.kind for e in store.events("inv_dead")]
        assert kinds == ["late_result", "call_recovered", "call_recovered"]
        assert store.run_events("run_v2", "background") == [{"task": 1}]
        assert orjson.loads(store.snapshot_json("snap_v2")) == {"v": 2}

        # The live owner's call is left alone until an explicit resume closes it.
        [l0] = store.history("inv_live").calls
        assert (l0.status, l0.owner, l0.started_at) == ("started", live, 130.0)
        assert store.invocation("inv_live").open_calls == 1
        assert [(c.call_id, c.status) for c in store.recover("inv_live", force=True)] == [("l0", "outcome_unknown")]

        # The migrated store takes new turns.
        store.calls_admitted("inv_live", 2, [RequestedCall("l1", "search", "{}", 0)],
                             [StartedCall("l1", 0, "extension/test:search", {})], time.time())
        store.calls_finished("inv_live", 2, [FinishedCall("l1", 0, "extension/test:search", "completed", {}, "ok",
                                                          None, False, None, [], None, None, time.time())])
        assert [c.status for c in store.history("inv_live").calls] == ["outcome_unknown", "completed"]
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"turns", "results", "mcp_registrations"} <= tables and not {"calls", "results_v2"} & tables
        assert conn.execute("SELECT registration_id FROM mcp_registrations").fetchall() == [("time-1",)]
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_an_empty_v2_store_migrates(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    for step in (*MIGRATIONS[0], *MIGRATIONS[1]):
        conn.execute(step)  # type: ignore[arg-type]
    conn.execute("PRAGMA user_version = 2")
    conn.close()
    SqliteRecorder(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_v4_store_gets_the_view_with_real_start_times(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    SqliteRecorder(path).close()
    with sqlite3.connect(path) as conn:  # back to v4: its view took the turn's admission time first
        conn.execute("DROP VIEW calls_view")
        conn.execute(MIGRATIONS[3][0])  # type: ignore[arg-type]
        conn.execute("PRAGMA user_version = 4")
    store = SqliteRecorder(path)
    try:
        store.invocation_started(InvocationInfo("run", "inv", "openai", "chat", False, "snap", "{}", 1.0))
        store.calls_admitted("inv", 1, [RequestedCall("a", "search", "{}", 0)],
                             [StartedCall("a", 0, "extension/test:search", {})], 10.0)
        store.calls_finished("inv", 1, [FinishedCall("a", 0, "extension/test:search", "completed", {}, "ok", None,
                                                     False, None, [], None, 12.0, 13.0)])
        [call] = store.history("inv").calls
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT started_at, finished_at FROM calls_view").fetchall() == [(12.0, 13.0)]
    assert (call.started_at, call.finished_at) == (12.0, 13.0)


def test_a_v6_store_indexes_only_run_scoped_events(tmp_path: Path) -> None:
    """v7: `events_run` leaves out the events of an invocation (run_id NULL), which every invocation's
    start writes; the run-scoped reads still find theirs through it, in order."""
    path = tmp_path / "records.sqlite"
    SqliteRecorder(path).close()
    with sqlite3.connect(path) as conn:  # back to v6: the full index
        conn.execute("DROP INDEX events_run")
        conn.execute("CREATE INDEX events_run ON events (run_id, kind, seq)")
        conn.execute("PRAGMA user_version = 6")
    store = SqliteRecorder(path)
    try:
        store.invocation_started(InvocationInfo("run_a", "inv_a", "openai", "chat", False, "snap", "{}", 1.0))
        for i in range(3):
            store.append_run_event("run_a", "background", {"task": i})
        store.append_run_event("run_b", "background", {"task": 9})
        assert store.run_events("run_a", "background") == [{"task": 0}, {"task": 1}, {"task": 2}]
        assert [e.kind for e in store.events("inv_a")] == ["invocation_started"]
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
        [sql] = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events_run'").fetchone()
        assert sql.endswith("WHERE run_id IS NOT NULL")
        # Entries: the four run-scoped events, not the invocation's start.
        assert conn.execute("SELECT count(*) FROM events INDEXED BY events_run WHERE run_id IS NOT NULL"
                            ).fetchone() == (4,)
        for query, params in (("SELECT data FROM events WHERE run_id = ? AND kind = ? ORDER BY seq",
                               ("run_a", "background")),
                              ("SELECT seq FROM events WHERE run_id = ? AND substr(kind, 1, ?) = ? ORDER BY seq",
                               ("run_a", 4, "back"))):
            plan = " ".join(r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {query}", params))
            assert "INDEX events_run (run_id=?" in plan, plan
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
