"""The fixture server over streamable HTTP (127.0.0.1, free port), through the Runtime."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tooldeck.runtime import Runtime

from .conftest import assert_big_result_whole, call, write_mcp_json, write_toml


def test_http_list_call_structured_list_changed(tmp_path: Path, http_fixture: str) -> None:
    write_mcp_json(tmp_path, {"web": {"type": "http", "url": http_fixture,
                                      "headers": {"Authorization": "Bearer ${FIXTURE_TOKEN:-none}"}}})
    write_toml(tmp_path, "[mcp.servers.web]\ncall_timeout_s = 2\n")
    with Runtime(tmp_path) as rt:
        assert rt.mcp is not None
        [status] = rt.mcp.status()
        assert status.transport == "http" and status.tools_total >= 14
        inv = rt.invocation()
        assert call(inv, "mcp__web__echo", {"message": "over http"}).content == "Echo: over http"
        assert call(inv, "mcp__web__add", {"a": 20, "b": 22}).content == "42"
        weather = call(inv, "mcp__web__weather", {"city": "Bergen"})
        assert weather.structured["city"] == "Bergen"
        assert call(inv, "mcp__web__fail").error_code == "mcp.tool_error"
        hung = call(inv, "mcp__web__hang")
        assert hung.error_code == "mcp.call_outcome_unknown"
        assert call(inv, "mcp__web__add_tool", {"name": "http_added"}).content == "added http_added"
        deadline = time.monotonic() + 10
        while "mcp__web__http_added" not in rt.invocation().call_names() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert call(rt.invocation(), "mcp__web__http_added").content == "I am http_added"


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
def test_a_result_of_several_megabytes_comes_through_on_either_protocol(tmp_path: Path, http_fixture: str,
                                                                      protocol: str) -> None:
    """A handshake-era server answers a call on an event stream, and the SDK's client refused any event over
    1 MiB: a 3 MB result failed as "the connection closed". tooldeck takes an event as large as a stdio line."""
    write_mcp_json(tmp_path, {"web": {"type": "http", "url": http_fixture, "protocol": protocol}})
    with Runtime(tmp_path, records=False) as rt:
        assert_big_result_whole(rt.invocation(), "mcp__web__big", 3_000_000)

