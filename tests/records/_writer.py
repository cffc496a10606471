"""Subprocess: write N rounds of calls into a store through the port, or stop midway.

Usage: python _writer.py STORE_PATH LABEL ROUNDS PER_ROUND [stop-after-started]
Prints the invocation id.
"""

from __future__ import annotations

import sys
import time

from tooldeck.records.port import FinishedCall, InvocationInfo, RequestedCall, StartedCall
from tooldeck.records.store import SqliteRecorder


def main() -> None:
    path, label, rounds, per_round = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    stop = sys.argv[5] if len(sys.argv) > 5 else ""
    store = SqliteRecorder(path)
    inv = f"inv_{label}"
    store.invocation_started(InvocationInfo(f"run_{label}", inv, "openai", "chat", False, "snap_shared",
                                            '{"shared": true}', time.time()))
    print(inv, flush=True)
    for r in range(1, rounds + 1):
        now = time.time()
        store.calls_requested(inv, r, [RequestedCall(f"{label}_{r}_{i}", "write_file",
                                                     f'{{"path": "{label}/{r}/{i}", "text": "é\\n"}}', i)
                                       for i in range(per_round)], now)
        store.calls_started(inv, r, [StartedCall(f"{label}_{r}_{i}", i, "extension/test:write_file",
                                                 {"path": f"{label}/{r}/{i}", "text": "é\n"})
                                     for i in range(per_round)], now)
        if stop == "stop-after-started":
            sys.exit(0)  # a process that dies with calls in flight (no close, no results)
        store.calls_finished(inv, r, [
            FinishedCall(f"{label}_{r}_{i}", i, "extension/test:write_file", "completed",
                         {"path": f"{label}/{r}/{i}"}, f"wrote {label}/{r}/{i}", {"bytes": i}, False, None, [],
                         None, now, time.time()) for i in reversed(range(per_round))])
    store.close()


if __name__ == "__main__":
    main()
