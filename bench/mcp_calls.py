"""Python function calls per MCP tool call through tooldeck, over stdio and streamable HTTP.

A deterministic complement to `mcp_bench` (wall-clock on a shared machine swings more than a few
µs): every Python-level call on the caller's thread and on the MCP loop thread is counted while
the same `echo` call runs 50 times through `Invocation.run`, records off. Compare two checkouts by
running it in each (e.g. with `PYTHONPATH=<other checkout>/src`).

    python -m bench.mcp_calls
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

from bench.timing import REPEATS_ALLOWED, free_port, wait_port
from tooldeck.runtime import Runtime

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "mcp" / "fixtures" / "fixture_server.py"
CALLS = 50


async def _set_profile(profile: Any) -> None:
    sys.setprofile(profile)


def _count(rt: Runtime) -> tuple[float, float]:
    """(all Python calls, calls into tooldeck) per MCP call."""
    assert rt.mcp is not None
    inv = rt.invocation()
    calls = [{"id": "c", "name": "mcp__fx__echo", "arguments": {"message": "bench"}}]
    for _ in range(5):
        [result] = inv.run(calls)
        if result.is_error:
            raise RuntimeError(result.content)
    counter: Counter[bool] = Counter()
    lock = threading.Lock()

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call":
            with lock:
                counter["/tooldeck/" in frame.f_code.co_filename] += 1

    sys.setprofile(profile)
    rt.mcp.loop.run_sync(_set_profile(profile))
    results = []
    try:
        for _ in range(CALLS):
            results += inv.run(calls)
    finally:
        sys.setprofile(None)
        rt.mcp.loop.run_sync(_set_profile(None))
    refused = [r.content for r in results if r.is_error or r.content != "Echo: bench"]
    assert not refused, f"{len(refused)} of the counted calls did not echo: {refused[0][:300]}"
    return (counter[True] + counter[False]) / CALLS, counter[True] / CALLS


def main() -> None:
    port = free_port()
    server = subprocess.Popen([sys.executable, str(FIXTURE), "--http", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        wait_port(port)
        with tempfile.TemporaryDirectory() as tmp:
            entries = {"stdio": {"command": sys.executable, "args": [str(FIXTURE)]},
                       "http": {"url": f"http://127.0.0.1:{port}/mcp"}}
            print(f"Python calls per MCP call (mean of {CALLS}), caller thread + MCP loop thread:")
            for name, entry in entries.items():
                home = Path(tmp) / name
                home.mkdir()
                (home / "mcp.json").write_text(json.dumps({"mcpServers": {"fx": entry}}), encoding="utf-8")
                rt = Runtime(home, builtins=[], records=False,
                             profile={"allow": ["mcp/*"], "max_calls_per_invocation": 10_000_000,
    "max_identical_calls": REPEATS_ALLOWED})
                try:
                    total, ours = _count(rt)
                finally:
                    rt.close()
                print(f"  {name:<6} {total:7.0f} in all, {ours:4.0f} in tooldeck")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
