"""Subprocess: write N rounds of calls into a store through the port, or stop midway.

Usage: python _writer.py STORE_PATH LABEL ROUNDS PER_ROUND [MODE]
MODE: `steps` (default: calls_requested, calls_started, calls_finished), `admitted` (calls_admitted,
calls_finished: the runtime's path), `admitted-threads` (the same from two threads, odd and even
rounds), or `stop-after-started` (exit with the first round's calls in flight).
Prints the invocation id.
"""

from __future__ import annotations

import sys
import threading
import time

from tooldeck.records.port import FinishedCall, InvocationInfo, RequestedCall, StartedCall
from tooldeck.records.store import SqliteRecorder


def _round(store: SqliteRecorder, inv: str, label: str, r: int, per_round: int, mode: str) -> None:
    now = time.time()
    requested = [RequestedCall(f"{label}_{r}_{i}", "write_file", f'{{"path": "{label}/{r}/{i}", "text": "é\\n"}}', i)
                 for i in range(per_round)]
    started = [StartedCall(f"{label}_{r}_{i}", i, "extension/test:write_file",
                           {"path": f"{label}/{r}/{i}", "text": "é\n"}) for i in range(per_round)]
    if mode.startswith("admitted"):
        store.calls_admitted(inv, r, requested, started, now)
    else:
        store.calls_requested(inv, r, requested, now)
        store.calls_started(inv, r, started, now)
    if mode == "stop-after-started":
        sys.exit(0)  # a process that dies with calls in flight (no close, no results)
    store.calls_finished(inv, r, [
        FinishedCall(f"{label}_{r}_{i}", i, "extension/test:write_file", "completed",
                     {"path": f"{label}/{r}/{i}"}, f"wrote {label}/{r}/{i}", {"bytes": i}, False, None, [],
                     None, now, time.time()) for i in reversed(range(per_round))])


def main() -> None:
    path, label, rounds, per_round = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    mode = sys.argv[5] if len(sys.argv) > 5 else "steps"
    store = SqliteRecorder(path)
    inv = f"inv_{label}"
    store.invocation_started(InvocationInfo(f"run_{label}", inv, "openai", "chat", False, "snap_shared",
                                            '{"shared": true}', time.time()))
    print(inv, flush=True)
    if mode == "admitted-threads":
        threads = [threading.Thread(target=lambda k=k: [_round(store, inv, label, r, per_round, mode)
                                                        for r in range(1, rounds + 1) if r % 2 == k])
                   for k in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        for r in range(1, rounds + 1):
            _round(store, inv, label, r, per_round, mode)
    store.close()


if __name__ == "__main__":
    main()
