"""The legacy HTTP+SSE transport (2024-11-05) against real SDK servers: `"type": "sse"` / `"transport": "sse"`,
its config errors, and OAuth over it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tooldeck.runtime import Runtime
from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp.errors import McpConfigError
from tooldeck.sources.mcp.login import login

from .conftest import FIXTURE, PYTHON, call, free_port, start_http, stop, write_mcp_json
from .test_oauth import OAUTH_SERVER


@pytest.fixture(scope="module")
def sse_fixture() -> Iterator[str]:
    port = free_port()
    proc = start_http([PYTHON, str(FIXTURE), "--sse", str(port)], port)
    yield f"http://127.0.0.1:{port}/sse"
    stop(proc)


@pytest.mark.parametrize("key", ["type", "transport"])
def test_sse_server_lists_and_calls(sse_fixture: str, tmp_path: Path, key: str) -> None:
    write_mcp_json(tmp_path, {"old": {"url": sse_fixture, key: "sse"}})
    with Runtime(tmp_path) as rt:
        assert rt.mcp is not None
        [status] = rt.mcp.status()
        assert status.transport == "sse" and status.tools_total >= 14
        inv = rt.invocation()
        assert call(inv, "mcp__old__echo", {"message": "over sse"}).content == "Echo: over sse"
        assert call(inv, "mcp__old__add", {"a": 2, "b": 40}).content == "42"
        assert call(inv, "mcp__old__fail").error_code == "mcp.tool_error"


def test_streamable_http_config_at_an_sse_endpoint_is_reported(sse_fixture: str, tmp_path: Path) -> None:
    """No auto-detection: an SSE URL configured as streamable HTTP fails with the HTTP status it answered."""
    write_mcp_json(tmp_path, {"old": {"url": sse_fixture}})
    with Runtime(tmp_path) as rt:
        assert rt.mcp is not None
        [report] = rt.mcp.refresh("old")
        assert not report.ok and report.failure is not None
        assert report.failure.code.startswith("mcp.http_")


def test_sse_config_errors(tmp_path: Path) -> None:
    write_mcp_json(tmp_path, {"bad": {"command": "x", "type": "sse"}})
    with pytest.raises(McpConfigError, match="type` is sse but the entry has no `url`"):
        cfg.load(tmp_path)
    write_mcp_json(tmp_path, {"bad": {"url": "http://127.0.0.1:9/sse", "type": "http", "transport": "sse"}})
    with pytest.raises(McpConfigError, match="both `type`"):
        cfg.load(tmp_path)
    write_mcp_json(tmp_path, {"bad": {"url": "http://127.0.0.1:9/sse", "type": "websocket"}})
    with pytest.raises(McpConfigError, match=r"expected stdio, http .* or sse"):
        cfg.load(tmp_path)
    write_mcp_json(tmp_path, {"a": {"url": "http://127.0.0.1:9/x", "type": "sse"}})
    first = cfg.load(tmp_path)
    write_mcp_json(tmp_path, {"a": {"url": "http://127.0.0.1:9/x"}})
    second = cfg.load(tmp_path)
    assert first is not None and second is not None  # the transport is part of the endpoint: a new registration
    assert first.servers["a"].endpoint_key() != second.servers["a"].endpoint_key()


def test_oauth_over_sse(tmp_path: Path) -> None:
    port = free_port()
    proc = start_http([PYTHON, str(OAUTH_SERVER), str(port), "--sse"], port)
    try:
        url = f"http://127.0.0.1:{port}/sse"
        write_mcp_json(tmp_path, {"web": {"url": url, "type": "sse"}})
        config = cfg.load(tmp_path)
        assert config is not None
        plan = cfg.oauth_plan(config.servers["web"], tmp_path)
        assert plan is not None

        async def browser(link: str) -> None:
            async with httpx.AsyncClient() as client:
                await client.get(link, follow_redirects=True)

        with Runtime(tmp_path) as rt:  # not signed in: a clear failure
            result = call(rt.invocation(), "mcp__web__echo", {"message": "x"})
            assert "tooldeck mcp login web" in result.content
        asyncio.run(login(plan, browser, timeout=30))
        with Runtime(tmp_path) as rt:
            assert call(rt.invocation(), "mcp__web__echo", {"message": "sse+oauth"}).content == "Echo: sse+oauth"
    finally:
        stop(proc)
