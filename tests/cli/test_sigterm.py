"""SIGTERM stops `tooldeck serve` (and `make run`) quietly: the same way out as Ctrl-C, the runtime
closed, exit 0, nothing but the banner on stderr (issue 13.7). Real processes, real signals."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from .support import ROOT, TOOLDECK, env


def _start(home: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([TOOLDECK, "serve", "--home", str(home), *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    if "--stdio" in args:
        return proc, _serving_on_stdio(proc)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert " serving MCP on http://" in line, (line, proc.poll())
    time.sleep(0.5)  # the URL is printed just before uvicorn starts: let it start
    return proc, line.split(" on ", 1)[1].split()[0]


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test_sigterm", "version": "0"}}}


def _serving_on_stdio(proc: subprocess.Popen[str]) -> str:
    """Wait for the real events, however slow the machine: the banner on stderr, then the answer to an
    `initialize` (the server reads stdin). The banner, for the caller to put before the rest of stderr."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    banner = proc.stderr.readline()  # the line, or "" once the process ended: never a hang
    assert banner.startswith("tooldeck serving MCP on stdio"), (banner, proc.poll())
    proc.stdin.write(json.dumps(INITIALIZE) + "\n")
    proc.stdin.flush()
    reply = json.loads(proc.stdout.readline() or "null")
    assert isinstance(reply, dict) and reply.get("id") == 1 and "result" in reply, (reply, proc.poll())
    return banner


def _stop(proc: subprocess.Popen[str]) -> tuple[int, str]:
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err


def _store_closed(home: Path) -> bool:
    """SQLite removes the WAL files when the last connection closes cleanly; a killed process leaves them."""
    return (home / "records.sqlite").is_file() and not (home / "records.sqlite-wal").exists()


def test_sigterm_stops_http_serve_with_exit_zero_and_closes_the_runtime(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc, _ = _start(home, "--http", "127.0.0.1:0")
    assert (home / "records.sqlite-wal").exists()  # the store is open while it serves
    code, err = _stop(proc)
    assert code == 0, err
    assert err.splitlines() == [f"home {home.resolve()}; stop with Ctrl-C"]
    assert _store_closed(home)


def test_sigterm_with_a_client_session_open_stops_without_a_traceback(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc, url = _start(home, "--http", "127.0.0.1:0")

    async def session() -> None:
        async with Client(streamable_http_client(url), mode="legacy") as client:
            assert (await client.call_tool("find_tools", {"names": ["dice_roll"]})).is_error is not True
            proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 60
            while proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.1)

    with contextlib.suppress(Exception):  # the client sees its server go away; what matters is how it went
        asyncio.run(session())
    code, err = _stop(proc) if proc.poll() is None else (proc.wait(), proc.communicate()[1])
    assert code == 0, err
    assert "Traceback" not in err
    assert _store_closed(home)


def test_sigterm_stops_stdio_serve_with_exit_zero(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc, banner = _start(home, "--stdio")  # stdin stays open: only the signal can stop it
    assert proc.poll() is None
    code, rest = _stop(proc)
    err = banner + rest
    assert code == 0, err
    assert err.splitlines() == [f"tooldeck serving MCP on stdio (home {home.resolve()})"], err
    assert _store_closed(home)


def test_sigterm_while_starting_is_quiet(tmp_path: Path) -> None:
    for delay in (0.05, 0.3, 0.8):  # in the interpreter's start-up, in the imports, in opening the home
        proc = subprocess.Popen([TOOLDECK, "serve", "--home", str(tmp_path / f"home{delay}"), "--http",
                                 "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
        time.sleep(delay)
        code, err = _stop(proc)
        assert code in (0, -signal.SIGTERM), (delay, code, err)
        assert "Traceback" not in err, err


def test_sigterm_of_make_run_is_quiet(tmp_path: Path) -> None:
    """`make run` gets the signal and passes it on; tooldeck exits 0, so make reports no failed recipe
    (a child killed by the signal would print `make: *** [Makefile: run] Terminated`)."""
    home = tmp_path / "home"
    proc = subprocess.Popen(["make", "-s", "-C", str(ROOT), "run", "STAMP=", f"BIN={Path(sys.executable).parent}",
                             f"TOOLDECK_HOME={home}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env())
    assert proc.stdout is not None
    assert " serving MCP on http://" in proc.stdout.readline()
    time.sleep(0.5)
    code, err = _stop(proc)
    assert code in (0, -signal.SIGTERM), err  # make ends by the signal it got, once its recipe ended well
    assert err in ("", f"home {home.resolve()}; stop with Ctrl-C\n"), err  # no "*** [run] Terminated"
    assert _store_closed(home)
