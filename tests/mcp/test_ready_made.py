"""Ready-made servers: PyPI `mcp-server-time` (stdio) and npm `@modelcontextprotocol/server-everything`
(stdio and streamable HTTP), called through tooldeck."""

from __future__ import annotations

import json
import os
import shutil
import sys
from datetime import UTC, datetime, timedelta
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
        before = datetime.now(UTC).replace(microsecond=0)
        result = call(inv, "mcp__time__get_current_time", {"timezone": "UTC"})
        after = datetime.now(UTC)
        assert not result.is_error
        now = json.loads(result.content)
        assert result.structured == now  # the server's structured content, and its text is that JSON
        assert set(now) == {"timezone", "datetime", "day_of_week", "is_dst"}
        assert now["timezone"] == "UTC" and now["is_dst"] is False
        said = datetime.fromisoformat(now["datetime"])
        assert said.utcoffset() == timedelta(0) and before <= said <= after
        assert now["day_of_week"] == said.strftime("%A")
        converted = call(inv, "mcp__time__convert_time",
                         {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
        assert not converted.is_error and converted.structured == json.loads(converted.content)
        assert converted.structured["time_difference"] == "+9.0h"
        assert converted.structured["source"]["datetime"].endswith("T12:00:00+00:00")
        assert converted.structured["target"]["datetime"].endswith("T21:00:00+09:00")


def _check_everything(rt: Runtime, prefix: str) -> None:
    inv = rt.invocation()
    names = inv.call_names()
    for tool in ("echo", "get-sum", "get-tiny-image", "get-structured-content"):
        assert f"mcp__{prefix}__{tool}" in names, sorted(names)
    assert call(inv, f"mcp__{prefix}__echo", {"message": "hello"}).content == "Echo: hello"
    total = call(inv, f"mcp__{prefix}__get-sum", {"a": 1, "b": 2})
    assert (total.content, total.structured, total.is_error) == ("The sum of 1 and 2 is 3.", None, False)
    image = call(inv, f"mcp__{prefix}__get-tiny-image")
    [ref] = image.resource_refs
    assert not image.is_error and ref.startswith("tool-results/") and ref.endswith(".png")
    assert f"image/png, 4033 bytes, saved at `{ref}`" in image.content
    png = inv.run_state.workspace_root / ref
    assert png.read_bytes().startswith(b"\x89PNG") and png.stat().st_size == 4033
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
