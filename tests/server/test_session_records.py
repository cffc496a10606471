"""What a `tooldeck serve` session leaves in the records, over real processes: an invocation only for a call
(a session that lists its tools and leaves records nothing), one per call, each with its call."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from mcp import Client

from .support import http_server, stdio_params


def _invocations(home: Path) -> list[tuple[str, str]]:
    db = home / "records.sqlite"
    if not db.exists():
        return []
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT invocation_id, run_id FROM invocations ORDER BY created_at").fetchall()


def _calls(home: Path, invocation_id: str) -> list[str]:
    from tooldeck.records.store import SqliteRecorder

    store = SqliteRecorder(home / "records.sqlite")
    try:
        return [c.call_id for c in store.history(invocation_id).calls]
    finally:
        store.close()


async def test_a_stdio_session_without_a_call_records_no_invocation(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with Client(stdio_params(home), cache=None) as client:
        assert {t.name for t in (await client.list_tools()).tools} >= {"dice_roll"}
    assert _invocations(home) == []  # the server has ended (stdin closed): everything it wrote is in the file


async def test_each_served_call_is_one_recorded_invocation_of_the_sessions_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with Client(stdio_params(home), cache=None) as client:
        await client.list_tools()
        for _ in range(3):
            assert not (await client.call_tool("dice_roll", {"formula": "d6"})).is_error
    invocations = _invocations(home)
    assert len(invocations) == 3 and len({run for _, run in invocations}) == 1
    assert [len(_calls(home, inv)) for inv, _ in invocations] == [1, 1, 1]


async def test_an_http_session_without_a_call_records_no_invocation(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with http_server(home) as served:
        for mode in ("legacy", "auto"):
            async with Client(served.url, mode=mode, cache=None) as client:
                await client.list_tools()
        async with Client(served.url, mode="legacy", cache=None) as client:
            assert not (await client.call_tool("dice_roll", {"formula": "d6"})).is_error
    [(invocation, _run)] = _invocations(home)  # the server stopped: its records are committed
    assert len(_calls(home, invocation)) == 1
