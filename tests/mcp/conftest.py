"""Shared helpers for the MCP tests: real server processes (stdio and HTTP), real homes, real records."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import node_missing
from tooldeck.runtime import Invocation, Runtime

from .fixtures.http_faults import FaultServer

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "fixtures" / "fixture_server.py"
PYTHON = sys.executable
NODE_DIR = ROOT / ".node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def fixture_server(*options: str, **extra: Any) -> dict[str, Any]:
    """An mcp.json entry that runs the fixture server over stdio."""
    return {"command": PYTHON, "args": [str(FIXTURE), *options], **extra}


def write_mcp_json(home: Path, servers: dict[str, Any]) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}, indent=1), encoding="utf-8")
    return path


def write_toml(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "tooldeck.toml"
    path.write_text(text, encoding="utf-8")
    return path


def call(inv: Invocation, name: str, args: Any = None, call_id: str | None = None) -> Any:
    [result] = inv.run([{"id": call_id or f"call_{time.monotonic_ns()}", "name": name,
                         "arguments": {} if args is None else args}])
    return result


def assert_big_result_whole(inv: Invocation, tool: str, chars: int) -> None:
    """Call the fixture's `big` (as `tool`) for `chars` characters: it succeeds and its spilled file holds them all."""
    result = call(inv, tool, {"chars": chars})
    assert not result.is_error, result.content
    saved = result.content.split("The full result is saved at `", 1)[1].split("`", 1)[0]
    assert len((inv.run_state.workspace_root / saved).read_text()) == chars


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def start_http(argv: list[str], port: int, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        wait_port(port, proc)
    except BaseException:
        proc.kill()
        raise
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


@pytest.fixture(scope="module")
def http_fixture() -> Iterator[str]:
    """The fixture server over streamable HTTP on a free loopback port; yields its URL."""
    port = free_port()
    proc = start_http([PYTHON, str(FIXTURE), "--http", str(port)], port)
    yield f"http://127.0.0.1:{port}/mcp"
    stop(proc)


@pytest.fixture(scope="session")
def everything_js() -> Path:
    """`@modelcontextprotocol/server-everything`, installed by scripts/install-node-tools when npm exists."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        node_missing("npm/node are not installed; the Node reference MCP server cannot run here")
    if not NODE_DIR.is_file():
        subprocess.run([str(ROOT / "scripts" / "install-node-tools")], check=True, timeout=300)
    return NODE_DIR


def open_runtime(home: Path, **kw: Any) -> Runtime:
    return Runtime(home, **kw)


TOOLDECK = Path(sys.executable).with_name("tooldeck")


@pytest.fixture(scope="module")
def fault_http() -> Iterator[FaultServer]:
    """A loopback HTTP server failing the way broken MCP endpoints do, one behaviour per path."""
    with FaultServer() as server:
        yield server


@pytest.fixture(scope="module")
def auth_fixture() -> Iterator[tuple[str, Path]]:
    """The fixture server over HTTP behind the SDK's own bearer-token middleware (token `s3cret`; `weak`
    lacks the scope); the token is revoked once the yielded flag file exists. Yields (url, flag)."""
    port = free_port()
    flag = Path(tempfile.mkdtemp(prefix="tooldeck-revoke-")) / "revoked"
    proc = start_http([PYTHON, str(FIXTURE), "--http", str(port), "--bearer", "s3cret", "--revoked-if", str(flag)],
                      port)
    yield f"http://127.0.0.1:{port}/mcp", flag
    stop(proc)
    shutil.rmtree(flag.parent, ignore_errors=True)


def poll(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    """Wait for `condition` to hold, polling; False if it still does not after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def pid_gone(pid: int, timeout: float = 20.0) -> bool:
    """Poll until process `pid` no longer exists (or is a zombie nobody waits for)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
        except (OSError, IndexError):
            state = ""
        if state == "Z":
            return True
        time.sleep(0.05)
    return False
