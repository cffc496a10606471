"""Concurrency: 8 threads (8 runs sharing one session workspace) read-modify-write one file through the
tools; every update is either applied or refused as stale, and none is lost."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

import tooldeck
from tests.workspace.conftest import page_text
from tooldeck.runtime import RunState
from tooldeck.workspace import errors as E

THREADS = 8
ROUNDS = 200
PATH = "output/counter.md"


def test_concurrent_read_modify_write_loses_no_update(runtime: tooldeck.Runtime) -> None:
    shared = runtime.run_state("session").workspace_root
    seed = runtime.invocation(run_id="session")
    asyncio.run(seed.arun([{"id": "s", "name": "workspace_write_file",
                            "arguments": {"path": PATH, "content": "END"}}]))
    barrier = threading.Barrier(THREADS)
    applied: list[list[str]] = [[] for _ in range(THREADS)]
    outcomes: list[Counter[str]] = [Counter() for _ in range(THREADS)]
    failures: list[BaseException] = []

    def worker(t: int) -> None:
        try:
            rid = f"worker-{t}"
            runtime.runs[rid] = RunState(rid, shared)
            inv = runtime.invocation(run_id=rid, profile={"max_calls_per_invocation": 2 * ROUNDS})
            barrier.wait()
            for i in range(ROUNDS):
                token = f"t{t}-{i}"
                [read] = asyncio.run(inv.arun([{"id": f"r{i}", "name": "workspace_read_file",
                                                "arguments": {"path": PATH}}]))
                assert not read.is_error and read.structured["fullRead"], read.content
                [text] = page_text(read)
                if t % 2:  # half the threads patch, half rewrite the whole file
                    call = {"name": "workspace_apply_patch",
                            "arguments": {"path": PATH, "old_string": "END", "new_string": f"{token} END"}}
                else:
                    call = {"name": "workspace_write_file",
                            "arguments": {"path": PATH, "content": text.replace("END", f"{token} END")}}
                [res] = asyncio.run(inv.arun([{"id": f"w{i}", **call}]))
                if res.is_error:
                    assert res.error_code in (E.WRITE_STALE_FILE, E.PATCH_STALE_FILE), res.content
                    outcomes[t]["stale"] += 1
                else:
                    applied[t].append(token)
                    outcomes[t]["applied"] += 1
        except BaseException as exc:  # surfaced below
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not failures, failures[0]
    final = (shared / PATH).read_text().split()
    assert final[-1] == "END"
    tokens = final[:-1]
    every_applied = [tok for per in applied for tok in per]
    assert len(tokens) == len(set(tokens)) == len(every_applied)
    assert set(tokens) == set(every_applied)
    for t in range(THREADS):
        mine = [tok for tok in tokens if tok.startswith(f"t{t}-")]
        assert mine == applied[t]  # each thread's updates land in its own order
        assert outcomes[t]["applied"] + outcomes[t]["stale"] == ROUNDS
    print("applied/stale:", sum(o["applied"] for o in outcomes), sum(o["stale"] for o in outcomes))
    assert sum(o["applied"] for o in outcomes) >= ROUNDS  # progress, not just refusals
