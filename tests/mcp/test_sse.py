"""The legacy HTTP+SSE transport (2024-11-05) against real SDK servers: `"type": "sse"` / `"transport": "sse"`,
its config errors, OAuth over it, and its bounds against broken servers (`sse_transport.py`)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tooldeck.runtime import Runtime
from tooldeck.sources.mcp import McpManager, transport
from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp.errors import McpConfigError
from tooldeck.sources.mcp.login import login
from tooldeck.sources.mcp.reports import RefreshReport
from tooldeck.sources.mcp.sse_transport import EndpointRefused, endpoint_url

from .conftest import FIXTURE, PYTHON, assert_big_result_whole, call, free_port, start_http, stop, write_mcp_json
from .fixtures.http_faults import FaultServer
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


def test_a_result_of_several_megabytes_comes_through_sse(sse_fixture: str, tmp_path: Path) -> None:
    """The SDK's SSE client refuses any event over 1 MiB, and on this transport every message from the server is
    an event: a 3 MB result failed as "the connection closed". tooldeck takes an event as large as a stdio line."""
    write_mcp_json(tmp_path, {"old": {"url": sse_fixture, "type": "sse"}})
    with Runtime(tmp_path, records=False) as rt:
        inv = rt.invocation()
        assert_big_result_whole(inv, "mcp__old__big", 3_000_000)
        assert call(inv, "mcp__old__echo", {"message": "after"}).content == "Echo: after"


def test_an_event_over_the_message_limit_ends_the_connection_and_says_so(
        sse_fixture: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport, "MAX_MESSAGE_BYTES", 1 << 20)
    write_mcp_json(tmp_path, {"old": {"url": sse_fixture, "type": "sse"}})
    with Runtime(tmp_path, records=False) as rt:
        inv = rt.invocation()
        result = call(inv, "mcp__old__big", {"chars": 2_000_000})
        # the call was sent, so whether it ran is unknown; the cause is named
        assert result.is_error and result.error_code == "mcp.call_outcome_unknown", result.content
        assert "answered with a message of more than 1048576 bytes" in result.content
        assert call(inv, "mcp__old__echo", {"message": "again"}).content == "Echo: again"  # a new connection


def test_a_message_the_server_refuses_with_an_http_error_fails_at_once(tmp_path: Path) -> None:
    """Every POST of this server answers 500. The SDK's client stopped posting after the first failure and the
    handshake waited for its timeout (`mcp.connect_timeout`); the refusal is the answer, and its cause is named."""
    with FaultServer() as server:
        write_mcp_json(tmp_path, {"x": {"url": server.url("/sse-post-500"), "type": "sse", "connect_timeout_s": 60}})
        [report] = _refresh(tmp_path)
        assert report.failure is not None
        assert report.failure.code == "mcp.http_server_error"
        assert "answered HTTP 500" in report.failure.summary
        assert server.seen["/500"] >= 1


def test_an_endpoint_on_another_origin_is_refused(tmp_path: Path) -> None:
    with FaultServer() as server:
        write_mcp_json(tmp_path, {"x": {"url": server.url("/sse-elsewhere"), "type": "sse", "connect_timeout_s": 20}})
        [report] = _refresh(tmp_path)
        assert report.failure is not None and "is not on the origin of" in report.failure.summary
        assert not server.seen["/messages"]


def _refresh(home: Path) -> list[RefreshReport]:
    manager = McpManager.from_home(home, start=False)
    assert manager is not None
    try:
        return manager.refresh()
    finally:
        manager.close()


_URL_PART = st.text(st.characters(codec="ascii", exclude_categories=("Cc",)), max_size=40)


@given(base_path=_URL_PART, data=st.one_of(_URL_PART, st.builds(
    lambda scheme, host, rest: f"{scheme}://{host}{rest}", st.sampled_from(["http", "https", "ftp", "HTTP"]),
    st.sampled_from(["127.0.0.1:8000", "127.0.0.1", "127.0.0.2:8000", "evil.example", "127.0.0.1:8000@evil"]),
    _URL_PART)))
def test_an_endpoint_is_always_on_the_streams_origin_or_refused(base_path: str, data: str) -> None:
    stream = "http://127.0.0.1:8000/" + base_path.lstrip("/")
    try:
        url = endpoint_url(stream, data)
    except (EndpointRefused, ValueError):
        return
    stream_parts, url_parts = urlsplit(stream), urlsplit(url)
    assert (url_parts.scheme, url_parts.hostname, url_parts.port) == ("http", "127.0.0.1", 8000)
    assert url_parts.netloc == stream_parts.netloc
