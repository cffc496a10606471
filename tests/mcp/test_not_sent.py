"""A tool call whose HTTP request could not leave at all (no connection to the server could be made) is "not sent",
safe to repeat, not "sent, outcome unknown". Before, the SDK's client reported it only as a closed connection, and
tooldeck told the model the tool may have run (streamable HTTP, handshake era). Over SSE the event stream's end
closes the connection first, so there the next call finds nothing to connect to: not sent as well."""

from __future__ import annotations

from pathlib import Path

import pytest

from tooldeck.runtime import Runtime
from tooldeck.sources.mcp import errors

from .conftest import FIXTURE, PYTHON, call, free_port, start_http, stop, write_mcp_json


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_a_call_to_a_server_that_is_gone_was_not_sent(tmp_path: Path, transport: str) -> None:
    port = free_port()
    if transport == "sse":
        proc = start_http([PYTHON, str(FIXTURE), "--sse", str(port)], port)
        entry = {"url": f"http://127.0.0.1:{port}/sse", "type": "sse"}
    else:  # handshake era: its session outlives the server until a request finds the server gone
        proc = start_http([PYTHON, str(FIXTURE), "--http", str(port)], port)
        entry = {"url": f"http://127.0.0.1:{port}/mcp", "type": "http", "protocol": "legacy"}
    write_mcp_json(tmp_path, {"web": {**entry, "call_timeout_s": 10}})
    with Runtime(tmp_path, records=False) as rt:
        inv = rt.invocation()
        assert call(inv, "mcp__web__echo", {"message": "up"}).content == "Echo: up"
        stop(proc)  # nothing listens on the port any more
        gone = call(inv, "mcp__web__echo", {"message": "down"})
        assert gone.error_code == errors.NOT_SENT, gone.content
        assert "connection refused" in gone.content and "Nothing was run" in gone.content
        assert rt.mcp is not None
        [status] = rt.mcp.status()
        assert status.failure is not None and status.failure.code == "mcp.connection_refused"
