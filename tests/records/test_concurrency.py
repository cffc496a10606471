"""Many writer processes on one store: no row lost or corrupted."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tooldeck.records.store import SqliteRecorder

HERE = Path(__file__).parent
PROCESSES, ROUNDS, PER_ROUND = 8, 50, 10


@pytest.mark.parametrize("mode", ["steps", "admitted", "admitted-threads"])
def test_eight_processes_write_four_thousand_calls(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "records.sqlite"
    procs = [subprocess.Popen([sys.executable, str(HERE / "_writer.py"), str(path), f"p{n}", str(ROUNDS),
                               str(PER_ROUND), mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for n in range(PROCESSES)]
    for p in procs:
        _out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    store = SqliteRecorder(path)
    try:
        summaries = {s.invocation_id: s for s in store.list_invocations(limit=100)}
        assert sorted(summaries) == sorted(f"inv_p{n}" for n in range(PROCESSES))
        total = 0
        for n in range(PROCESSES):
            label = f"p{n}"
            summary = summaries[f"inv_{label}"]
            assert (summary.rounds, summary.calls, summary.open_calls, summary.errors) == (ROUNDS, ROUNDS * PER_ROUND,
                                                                                          0, 0)
            calls = store.history(f"inv_{label}").calls
            total += len(calls)
            assert len(calls) == ROUNDS * PER_ROUND
            for c in calls:
                where = f"{label}/{c.round}/{c.index}"
                assert c.call_id == f"{label}_{c.round}_{c.index}"
                assert c.status == "completed"
                assert c.raw_arguments == f'{{"path": "{where}", "text": "é\\n"}}'
                assert c.arguments == {"path": where, "text": "é\n"}
                assert c.result is not None and c.result.content == f"wrote {where}"
                assert c.result.structured == {"bytes": c.index}
        assert total == PROCESSES * ROUNDS * PER_ROUND
        assert store.recover() == []
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        # every writer closed with no open call behind: all settled, later recoveries skip them
        assert conn.execute("SELECT count(*), sum(settled) FROM owners").fetchone() == (PROCESSES, PROCESSES)
