"""Subprocess for tests/records/test_journal.py: a real Runtime with records on whose group commit never
comes (the delay is an hour), so what it wrote is only in its journal when the test kills it.

    python _journal_worker.py HOME admit      one call of `hold` (a tool that never returns): prints
                                              "running INV" once the tool runs
    python _journal_worker.py HOME returned   a one-call turn of `echo`: prints "returned INV CONTENT" once
                                              `run` returned
    python _journal_worker.py HOME marked     a turn committed (its segment marked), then another one not:
                                              prints "marked INV"
    python _journal_worker.py HOME second     a turn committed, then a second invocation on the same run and
                                              snapshot (its start journaled) with a one-call turn of `echo`:
                                              prints "second INV2"
Then it waits to be killed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tooldeck.runtime import Runtime


def main() -> None:
    home, mode = Path(sys.argv[1]), sys.argv[2]
    rt = Runtime(home, records=True, builtins=[], profile={"allow": ["extension/*"]})
    rt.recorder._group.delay_s = rt.recorder._group.backstop_s = 3600.0  # type: ignore[attr-defined]

    @rt.tool("test", "hold")
    def hold(note: str) -> str:
        """Never returns."""
        print(f"running {inv.id}", flush=True)
        time.sleep(3600)
        return note

    @rt.tool("test", "echo")
    def echo(note: str) -> str:
        """Answer at once."""
        return f"echo {note}"

    inv = rt.invocation("openai", run_id="run_journal")
    if mode == "second":
        inv.run([{"id": "e1", "name": "echo", "arguments": '{"note": "one"}'}])
        rt.recorder.flush()  # type: ignore[attr-defined]  # the run and the snapshot are stored
        second = rt.invocation("openai", run_id="run_journal", snapshot=inv.snapshot)
        second.run([{"id": "e2", "name": "echo", "arguments": '{"note": "two"}'}])
        print(f"second {second.id}", flush=True)
    elif mode == "marked":
        inv.run([{"id": "e1", "name": "echo", "arguments": '{"note": "one"}'}])
        rt.recorder.flush()  # type: ignore[attr-defined]  # committed, and the segment marked so
        inv.run([{"id": "e2", "name": "echo", "arguments": '{"note": "two"}'}])
        print(f"marked {inv.id}", flush=True)
    elif mode == "admit":
        inv.run([{"id": "h1", "name": "hold", "arguments": '{"note": "kept raw"}'}])
    else:
        [result] = inv.run([{"id": "e1", "name": "echo", "arguments": '{"note": "hi"}'}])
        print(f"returned {inv.id} {result.content}", flush=True)
    time.sleep(3600)


if __name__ == "__main__":
    main()
