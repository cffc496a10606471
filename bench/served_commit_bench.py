"""Records: the group commit of served calls, as `tooldeck serve` writes them (an invocation per call on one
snapshot: its start, its turn's admission and its result, journaled, then committed together), in a store
that already holds PRE invocations: CPU per commit of one call (calls that come one at a time) and of 8
(calls that come faster than the group-commit delay, 50 ms); and the whole of what records cost one
served call in the thread that serves it, at about the rate `tooldeck serve` takes calls back to back
(one every GAP_S, so a group commit holds ~40): its start, admission and result (journaled) and its share
of the group commits, µs of thread CPU per call.

With `--baseline-src DIR` the same runs against another checkout's `src/` (e.g. `git archive main`), each
build in its own process, alternated ROUNDS times; the ratio is ours over the baseline, per round.

    python -m bench.served_commit_bench
    python -m bench.served_commit_bench --baseline-src /tmp/dietbase/src
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

PRE = 30_000
CALLS = 2_000
ROUNDS = 3
SERVED = 2_000
GAP_S = 0.001
SERVED_BATCH = 40


def _measure() -> dict[str, float]:
    """In this process (whatever `tooldeck` it imports): µs of thread CPU per commit of 1 and of 8 calls, and per
    served call."""
    from tooldeck.records.port import FinishedCall, InvocationInfo, RequestedCall, StartedCall
    from tooldeck.records.store import SqliteRecorder

    try:
        from tooldeck.invocation_ids import new_invocation_id as new_id
    except ImportError:  # a build before invocation_ids.py: Invocation's own uuid4 ids
        def new_id() -> str:
            return f"inv_{uuid.uuid4().hex[:16]}"

    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteRecorder(Path(tmp) / "records.sqlite")
        snapshot = '{"tools": []}'
        store.invocation_started(InvocationInfo("run_s", new_id(), "anthropic", "chat", False, "snap_s", snapshot,
                                                time.time()))
        group = store._group
        assert group is not None

        def call(k: int) -> None:
            inv, now = new_id(), time.time()
            store.invocation_started(InvocationInfo("run_s", inv, "anthropic", "chat", False, "snap_s", snapshot, now))
            store.calls_admitted(inv, 1, [RequestedCall(f"mcp_{k}", "mcp__fx__echo", f'{{"message": "bench {k}"}}', 0)],
                                 [StartedCall(f"mcp_{k}", 0, "mcp/fx/echo", {"message": f"bench {k}"})], now)
            store.calls_finished(inv, 1, [FinishedCall(f"mcp_{k}", 0, "mcp/fx/echo", "completed", None, f"bench {k}",
                                                       {"result": f"bench {k}"}, False, None, [], None, now, now)])

        def per_commit(n: int, together: int) -> float:
            spent = 0.0
            for k in range(n):
                call(k)
                if (k + 1) % together == 0:
                    start = time.thread_time()
                    group.flush()
                    spent += time.thread_time() - start
            return spent / (n // together) * 1e6

        def served(n: int) -> float:
            """Thread CPU per call of its three writes and its share of the commits, calls GAP_S apart (as
            `tooldeck serve` takes them back to back: ids of one second spread over the same leaves)."""
            group.delay_s = group.backstop_s = 3600.0  # only this thread commits, every SERVED_BATCH calls
            spent = 0.0
            for k in range(n):
                start = time.thread_time()
                call(k)
                if (k + 1) % SERVED_BATCH == 0:
                    group.flush()
                spent += time.thread_time() - start
                time.sleep(GAP_S)
            return spent / n * 1e6

        per_commit(PRE, 50)
        out = {"1 call": per_commit(CALLS, 1), "8 calls": per_commit(CALLS, 8), "served": served(SERVED)}
        store.close()
        return out


def _run(src: str | None) -> dict[str, float]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    done = subprocess.run([sys.executable, "-m", "bench.served_commit_bench", "--child"], capture_output=True,
                          text=True, env=env, check=True, cwd=Path(__file__).resolve().parents[1])
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(baseline_src: str | None) -> None:
    print(f"group commit of served calls (start + admission + result each), store of {PRE:,} invocations; "
          f"µs of CPU per commit, {CALLS:,} calls")
    rows: dict[str, list[tuple[float, float | None]]] = {"1 call": [], "8 calls": [], "served": []}
    for _ in range(ROUNDS):
        ours = _run(None)
        base = _run(baseline_src) if baseline_src is not None else None
        for key in rows:
            rows[key].append((ours[key], base[key] if base is not None else None))
    for key, samples in rows.items():
        if key == "served":
            print(f"one served call's records (start + admission + result + its share of commits of {SERVED_BATCH}, "
                  f"a call every {GAP_S * 1e3:g} ms), µs of thread CPU per call, {SERVED:,} calls")
        line = f"  {key:<8} ours {statistics.median(o for o, _ in samples):7.1f} µs"
        if baseline_src is not None:
            ratios = [o / b for o, b in samples if b]
            line += (f"   base {statistics.median(b for _, b in samples if b is not None):7.1f} µs   ours/base "
                     f"{min(ratios):.2f}–{max(ratios):.2f} (median {statistics.median(ratios):.2f})")
        print(line)


if __name__ == "__main__":
    if sys.argv[1:] == ["--child"]:
        print(json.dumps(_measure()))
    elif len(sys.argv) == 3 and sys.argv[1] == "--baseline-src":
        main(str(Path(sys.argv[2]).resolve()))
    else:
        main(None)
