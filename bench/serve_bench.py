"""`tooldeck serve` call latency vs a minimal official-SDK `MCPServer` doing the same work.

The official `mcp` client calls `dice_roll {"formula": "2d6+1"}` on:

- `serve`    `tooldeck serve` (gate, dispatch, projection, a new Invocation per call on the session's snapshot),
             records on (the default: four SQLite transactions per call)
- `serve-nr` `tooldeck serve --no-records`
- `fixture`  an `MCPServer` with one `dice_roll(formula: str) -> str` tool that parses and rolls with
             tooldeck's own dice functions (so the tool work is identical)

over stdio and streamable HTTP (127.0.0.1), in both protocol eras (`auto` = 2026-07-28 per-request
envelope, `legacy` = the 2025-11-25 initialize handshake), measured round-robin in one run (medians of
batches, so machine load falls on all variants alike). Read the ratios.

    python -m bench.serve_bench
    python -m bench.serve_bench --baseline-src DIR   # also `base`: tooldeck serve from another checkout's
                                                     # src/ (before/after a change, in the same run)

For example, against the commit before a change:

    git archive <commit> | tar -x -C /tmp/base && python -m bench.serve_bench --baseline-src /tmp/base/src
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from bench.timing import ainterleaved_ms, free_port, wait_port

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
TOOLDECK = str(Path(PY).with_name("tooldeck"))
INNER = 20
REPEATS = 25
ARGS = {"formula": "2d6+1"}
MODES = ("auto", "legacy")
SERVERS = ("fixture", "serve", "serve-nr")


# -- the fixture server (run as `python -m bench.serve_bench --fixture [PORT]`) -----------------------
def fixture(port: int | None) -> None:
    from mcp.server.mcpserver import MCPServer

    from tooldeck.builtins.dice import parse_formula, roll

    app = MCPServer("dice-fixture", log_level="WARNING")

    @app.tool(description="Roll dice and return each die and the total.")
    def dice_roll(formula: str) -> str:
        return roll(parse_formula(formula.strip())).content

    if port is None:
        app.run("stdio")
    else:
        app.run("streamable-http", host="127.0.0.1", port=port)


# -- measuring --------------------------------------------------------------------------------------


def _call(client: Client) -> Callable[[], Awaitable[Any]]:
    async def run() -> Any:
        result = await client.call_tool("dice_roll", ARGS)
        if result.is_error:
            raise RuntimeError(str(result.content))
        return result

    return run



async def measure(home: Path, baseline_src: str | None = None) -> dict[str, float]:
    env = dict(os.environ)
    fixture_port, serve_port, bare_port, base_port = free_port(), free_port(), free_port(), free_port()
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    home.mkdir(parents=True, exist_ok=True)
    (home / "profile.toml").write_text('loading = "eager"\n')  # the benchmark calls dice_roll by name
    procs = [
        subprocess.Popen([PY, "-m", "bench.serve_bench", "--fixture", str(fixture_port)], cwd=ROOT, **quiet),
        subprocess.Popen([TOOLDECK, "serve", "--home", str(home), "--http", f"127.0.0.1:{serve_port}"], **quiet),
        subprocess.Popen([TOOLDECK, "serve", "--home", str(home), "--no-records", "--http",
                          f"127.0.0.1:{bare_port}"], **quiet),
    ]
    servers = SERVERS
    base_env = {**env, "PYTHONPATH": baseline_src} if baseline_src else env
    base_home = home.with_name("base-home")  # its own records file: two writers on one would slow both
    if baseline_src:
        servers = (*SERVERS, "base")
        base_home.mkdir(parents=True, exist_ok=True)
        (base_home / "profile.toml").write_text('loading = "eager"\n')
        procs.append(subprocess.Popen([TOOLDECK, "serve", "--home", str(base_home), "--http",
                                       f"127.0.0.1:{base_port}"], env=base_env, **quiet))
    try:
        for port in (fixture_port, serve_port, bare_port, *([base_port] if baseline_src else [])):
            wait_port(port)
        targets: dict[str, dict[str, Any]] = {
            "fixture": {"stdio": StdioServerParameters(command=PY, args=["-m", "bench.serve_bench", "--fixture"],
                                                       cwd=str(ROOT), env=env),
                        "http": f"http://127.0.0.1:{fixture_port}/mcp"},
            "serve": {"stdio": StdioServerParameters(command=TOOLDECK, args=["serve", "--stdio", "--home", str(home)],
                                                     env=env),
                      "http": f"http://127.0.0.1:{serve_port}/mcp"},
            "serve-nr": {"stdio": StdioServerParameters(command=TOOLDECK, env=env, args=[
                             "serve", "--stdio", "--no-records", "--home", str(home)]),
                         "http": f"http://127.0.0.1:{bare_port}/mcp"},
            "base": {"stdio": StdioServerParameters(command=TOOLDECK, env=base_env,
                                                    args=["serve", "--stdio", "--home", str(base_home)]),
                     "http": f"http://127.0.0.1:{base_port}/mcp"},
        }
        variants: dict[str, Callable[[], Awaitable[Any]]] = {}
        async with AsyncExitStack() as stack:
            for transport in ("stdio", "http"):
                for mode in MODES:
                    for server in servers:
                        client = await stack.enter_async_context(
                            Client(targets[server][transport], mode=mode, cache=None))
                        variants[f"{server} {transport} {mode}"] = _call(client)
            return await ainterleaved_ms(variants, INNER, REPEATS)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)


def main(baseline_src: str | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = asyncio.run(measure(Path(tmp) / "home", baseline_src))
    print(f"call_tool dice_roll {ARGS}: median ms per call ({REPEATS} batches of {INNER}, interleaved)")
    extra = f" {'base':>9} {'serve/base':>10}" if baseline_src else ""
    print(f"  {'transport':<9} {'mode':<7} {'fixture':>9} {'serve':>9} {'ratio':>7} {'no-rec':>9} {'ratio':>7}{extra}")
    for transport in ("stdio", "http"):
        for mode in MODES:
            f, s, n = (results[f"{server} {transport} {mode}"] for server in SERVERS)
            line = f"  {transport:<9} {mode:<7} {f:9.3f} {s:9.3f} {s / f:6.2f}× {n:9.3f} {n / f:6.2f}×"
            if baseline_src:
                b = results[f"base {transport} {mode}"]
                line += f" {b:9.3f} {s / b:9.2f}×"
            print(line)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--fixture":
        fixture(int(sys.argv[2]) if len(sys.argv) > 2 else None)
    elif len(sys.argv) > 2 and sys.argv[1] == "--baseline-src":
        main(str(Path(sys.argv[2]).resolve()))
    else:
        main()
