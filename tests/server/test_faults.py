"""A fault escaping a tool call reaches an MCP client as JSON-RPC -32603 (never code 0) with a short
message and the fault's code, over stdio and HTTP in both protocol eras; the details stay in the server
log. A tool's own error stays a result with isError."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters
from pydantic import ValidationError

from tests.server.faulty_serve import SECRET
from tests.server.support import ROOT, Served, served_process
from tooldeck.core.errors import HostFault
from tooldeck.server.faults import FaultBoundary

MODES = ["legacy", "auto"]


@pytest.fixture(scope="module")
def faulty_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("home")
    argv = [sys.executable, "-m", "tests.server.faulty_serve", str(home), "http"]
    with served_process(argv, log=home.parent / "faulty-http.log") as served:
        yield served


def faulty_stdio(home: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "tests.server.faulty_serve", str(home), "stdio"],
                                 cwd=str(ROOT))


async def check_fault_and_tool_error(target: Any, mode: str) -> None:
    async with Client(target, mode=mode, read_timeout_seconds=30) as client:
        with pytest.raises(MCPError) as fault:
            await client.call_tool("host_fault", {})
        error = fault.value.error
        assert error.code == types.INTERNAL_ERROR  # -32603, not the SDK's 0
        assert error.data == {"code": "host.test_fault"}
        assert "host_fault" in error.message and "server log" in error.message
        assert SECRET not in error.message and "on fire" not in error.message  # details stay on the server

        result = await client.call_tool("broken", {})  # the tool's own error: a result the model can read
        assert result.is_error is True
        assert (result.meta or {}).get("tooldeck/error_code") == "tool.execution_failed"

        ok = await client.call_tool("dice_roll", {"formula": "1d1"})  # the session is still fine
        assert ok.is_error is False and ok.content[0].text == "Rolled 1d1: 1."


@pytest.mark.parametrize("mode", MODES)
async def test_host_fault_over_http(faulty_http: Served, mode: str) -> None:
    await check_fault_and_tool_error(faulty_http.url, mode)
    log = faulty_http.stderr()
    assert "tools/call `host_fault` failed inside tooldeck serve (HostFault: host.test_fault)" in log
    assert SECRET in log  # the traceback, with the fault's own text, is in the server log


@pytest.mark.parametrize("mode", MODES)
async def test_host_fault_over_stdio(tmp_path: Path, mode: str) -> None:
    await check_fault_and_tool_error(faulty_stdio(tmp_path / "home"), mode)


class _Ctx:
    def __init__(self, method: str, params: dict[str, Any] | None, request_id: int | None) -> None:
        self.method, self.params, self.request_id = method, params, request_id


async def test_fault_boundary_maps_only_what_is_not_already_a_protocol_error() -> None:
    boundary = FaultBoundary()

    def raising(exc: BaseException) -> Any:
        async def call_next(_ctx: Any) -> Any:
            raise exc

        return call_next

    with pytest.raises(MCPError) as err:
        await boundary(_Ctx("tools/list", None, 1), raising(RuntimeError("x")))  # type: ignore[arg-type]
    assert err.value.error.code == types.INTERNAL_ERROR and err.value.error.data == {"code": "serve.internal_error"}
    with pytest.raises(MCPError) as err:
        await boundary(_Ctx("tools/call", {"name": "t"}, 1), raising(HostFault("host.disk_full", "x")))  # type: ignore[arg-type]
    assert err.value.error.data == {"code": "host.disk_full"} and "`t`" in err.value.error.message
    original = MCPError(types.INVALID_PARAMS, "bad")
    with pytest.raises(MCPError) as err:
        await boundary(_Ctx("tools/call", {}, 1), raising(original))  # type: ignore[arg-type]
    assert err.value is original
    with pytest.raises(ValidationError):
        await boundary(_Ctx("tools/call", {}, 1), raising(ValidationError.from_exception_data("x", [])))  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):  # a notification has no answer: the SDK logs it as before
        await boundary(_Ctx("notifications/x", None, None), raising(RuntimeError("n")))  # type: ignore[arg-type]

    async def fine(_ctx: Any) -> Any:
        return {"ok": True}

    assert await boundary(_Ctx("ping", None, 1), fine) == {"ok": True}  # type: ignore[arg-type]
