"""Ready-made servers: PyPI `mcp-server-time` (stdio) and npm `@modelcontextprotocol/server-everything`
(stdio and streamable HTTP), called through tooldeck."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tooldeck.runtime import Runtime

from .conftest import call, free_port, start_http, stop, write_mcp_json


def test_mcp_server_time_over_stdio(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("mcp-server-time")
    if not exe.is_file():
        found = shutil.which("mcp-server-time")
        if found is None:
            pytest.skip("mcp-server-time is not installed (pip install -e '.[test]' installs it)")
        exe = Path(found)
    write_mcp_json(tmp_path, {"time": {"command": str(exe), "args": ["--local-timezone", "UTC"]}})
    with Runtime(tmp_path) as rt:
        inv = rt.invocation()
        assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= set(inv.call_names())
        result = call(inv, "mcp__time__get_current_time", {"timezone": "UTC"})
        assert not result.is_error
        assert json.loads(result.content)["timezone"] == "UTC"


def _check_everything(rt: Runtime, prefix: str) -> None:
    inv = rt.invocation()
    names = inv.call_names()
    for tool in ("echo", "get-sum", "get-tiny-image", "get-structured-content"):
        assert f"mcp__{prefix}__{tool}" in names, sorted(names)
    assert call(inv, f"mcp__{prefix}__echo", {"message": "hello"}).content == "Echo: hello"
    assert "3" in call(inv, f"mcp__{prefix}__get-sum", {"a": 1, "b": 2}).content
    image = call(inv, f"mcp__{prefix}__get-tiny-image")
    assert not image.is_error and any(r.endswith(".png") for r in image.resource_refs)
    png = inv.run_state.workspace_root / next(r for r in image.resource_refs if r.endswith(".png"))
    assert png.read_bytes().startswith(b"\x89PNG")
    structured = call(inv, f"mcp__{prefix}__get-structured-content", {"location": "New York"})
    weather = {"temperature": 33, "conditions": "Cloudy", "humidity": 82}  # what the pinned server returns
    assert not structured.is_error
    assert structured.structured == weather  # `structuredContent` as the server sent it
    assert json.loads(structured.content) == weather  # its text block is that JSON: no `## Details` repeat


def test_server_everything_over_stdio(tmp_path: Path, everything_js: Path) -> None:
    write_mcp_json(tmp_path, {"everything": {"command": "node", "args": [str(everything_js), "stdio"]}})
    with Runtime(tmp_path) as rt:
        _check_everything(rt, "everything")


def test_server_everything_over_streamable_http(tmp_path: Path, everything_js: Path) -> None:
    port = free_port()
    proc = start_http(["node", str(everything_js), "streamableHttp"], port, env={**os.environ, "PORT": str(port)})
    try:
        write_mcp_json(tmp_path, {"ev": {"url": f"http://127.0.0.1:{port}/mcp"}})
        with Runtime(tmp_path) as rt:
            _check_everything(rt, "ev")
    finally:
        stop(proc)
