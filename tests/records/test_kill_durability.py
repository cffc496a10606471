"""kill -9 at random points of real worker processes writing one real SQLite file, in turns that mix
fast, slow and refused calls (workload: _kill_plan.py). After each kill the store is reopened (which
recovers the dead worker's open calls) and checked against what the worker's tools logged:

- no completed result is lost: a result the tool returned more than FLUSH_BOUND_S before the kill is
  stored as completed, with its content and its real start and end times;
- no refusal is relabelled: a call the gate refused keeps the gate's code;
- a call recovered as outcome_unknown has no invented end time, and nothing is left open;
- every invocation replays valid for every provider format.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from tooldeck.protocols import validate
from tooldeck.records.replay import replay_all
from tooldeck.records.resume import budget_used
from tooldeck.records.store import SqliteRecorder
from tooldeck.records.writer import FLUSH_BOUND_S

from ._kill_plan import plan
from .support import count_results

HERE = Path(__file__).parent
KILLS = 36


def test_kill_9_at_random_points_loses_no_finished_result_and_relabels_no_refusal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    zygote = subprocess.Popen([sys.executable, str(HERE / "_kill_zygote.py"), str(home)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    stdin, stdout = zygote.stdin, zygote.stdout
    assert stdin is not None and stdout is not None
    rng = random.Random(20261130)
    stats: Counter[str] = Counter()
    try:
        for k in range(KILLS):
            seed, log = 100 + k, tmp_path / f"worker-{k}.jsonl"
            stdin.write(f"{seed} {log}\n")
            stdin.flush()
            pid = int(stdout.readline())
            _wait_for_line(log, "ready")
            time.sleep(rng.uniform(0.0, 1.2))
            killed_at = time.monotonic()
            os.kill(pid, signal.SIGKILL)
            status = stdout.readline().strip()
            assert status == "-9", f"worker {k} ended by itself ({status}): {log.read_text()}"
            _check(home, log, seed, killed_at, stats)
    finally:
        stdin.close()
        zygote.wait(timeout=60)
    print(dict(stats))
    # The kills landed where it matters: turns cut off with results already written, refusals of every kind.
    assert stats["kept from a cut-off turn"] >= 5 and stats["completed"] >= 100
    assert stats["tool.unknown_tool"] and stats["tool.invalid_arguments"] and stats["tool.budget_exhausted"]
    assert stats["outcome_unknown"] >= 10


def _wait_for_line(log: Path, kind: str, deadline_s: float = 60.0) -> None:
    end = time.monotonic() + deadline_s
    while not (log.exists() and any(line[0] == kind for line in _lines(log))):
        assert time.monotonic() < end, f"the worker never logged {kind!r}: {log.read_text() if log.exists() else ''}"
        time.sleep(0.005)


def _lines(log: Path) -> list[list[Any]]:
    return [orjson.loads(line) for line in log.read_bytes().splitlines()]


def _check(home: Path, log: Path, seed: int, killed_at: float, stats: Counter[str]) -> None:
    lines = _lines(log)
    assert [line for line in lines if line[0] == "error"] == []
    done = {line[1]: line for line in lines if line[0] == "done"}  # tag → (_, _, content, start, end, end_mono)
    planned = plan(seed)
    seen: set[str] = set()
    store = SqliteRecorder(home / "records.sqlite")  # opening it recovers the killed worker's open calls
    try:
        for v, inv_id in ((line[1], line[2]) for line in lines if line[0] == "invocation"):
            history = store.history(inv_id)
            rounds = list(history.rounds())
            assert [r for r, _ in rounds] == list(range(1, len(rounds) + 1))
            # A resume charges the budget the gate had charged: every stored call but the budget refusals.
            assert budget_used(history).total == sum(
                1 for calls in planned[v][:len(rounds)] for p in calls if p.refusal != "tool.budget_exhausted")
            for (_round, calls), planned_calls in zip(rounds, planned[v], strict=False):
                # Turns are written whole, before any tool runs, with the raw arguments verbatim.
                assert [(c.call_id, c.call_name, c.raw_arguments) for c in calls] == [
                    (p.tag, p.name, p.raw) for p in planned_calls]
                cut_off = any(c.status == "outcome_unknown" for c in calls)
                for c, p in zip(calls, planned_calls, strict=True):
                    seen.add(c.call_id)
                    assert c.result is not None and not c.is_open, c
                    logged = done.get(c.call_id)
                    if p.refusal is not None:  # no refusal relabelled
                        assert (c.status, c.result.error_code, logged) == ("failed", p.refusal, None), c
                        stats[p.refusal] += 1
                    elif c.status == "completed":
                        assert logged is not None, f"{c.call_id} is completed but its tool never returned"
                        assert c.result.content == logged[2]
                        assert c.started_at <= logged[3] and logged[4] <= c.finished_at  # real times
                        stats["completed"] += 1
                        stats["kept from a cut-off turn"] += cut_off
                    else:
                        assert (c.status, c.result.error_code) == ("outcome_unknown", "tool.outcome_unknown"), c
                        assert c.finished_at is None  # when it ended is unknown: no invented duration
                        # No completed result lost: only one that returned within the bound may be missing.
                        assert logged is None or logged[5] > killed_at - FLUSH_BOUND_S, (
                            f"{c.call_id} returned {killed_at - logged[5]:.3f} s before the kill and was lost")
                        stats["outcome_unknown"] += 1
                        if logged is not None:
                            stats["returned within the bound, not yet written"] += 1
                            age_ms = round((killed_at - logged[5]) * 1000)
                            stats["oldest of those, ms"] = max(stats["oldest of those, ms"], age_ms)
            for fmt, messages in replay_all(store, inv_id).items():
                assert validate(messages, fmt) == [], (fmt, inv_id)
                ids, results = count_results(messages, fmt)
                assert ids == results
        assert set(done) <= seen, "a tool ran in a turn that is not in the store"
    finally:
        with contextlib.suppress(Exception):
            store.close()
