"""Issue 11, item 7: a broken MCP server says why, everywhere: `tooldeck call` (the model's unknown-tool
result), `tooldeck mcp list` (in a fresh process), `tooldeck mcp refresh`, and `tooldeck serve`'s log.

Only the CLI and the public Runtime are used here, so these are the reproducers of the issue.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tooldeck.cli.app import app

from .conftest import TOOLDECK, write_mcp_json
from .fixtures.http_faults import FaultServer

runner = CliRunner()


def _cli(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _fresh_process(*args: str, env: dict[str, str] | None = None) -> Any:
    """Run `tooldeck ARGS` in a new process and parse its JSON output."""
    done = subprocess.run([str(TOOLDECK), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def no_uvx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A PATH without `uvx` (as on a machine where uv is not installed)."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return {"PATH": str(empty)}


def test_missing_uvx_is_named_in_the_call_result_the_list_and_refresh(tmp_path: Path, no_uvx: dict[str, str]) -> None:
    home = tmp_path / "home"
    write_mcp_json(home, {"time": {"command": "uvx", "args": ["mcp-server-time"]}})

    # The model's view: the server is down and why, not a misspelled name.
    code, out, _ = _cli("call", "mcp__time__get_current_time", "{}", "--home", str(home))
    assert code == 0
    result = json.loads(out)
    assert result["error_code"] == "tool.unknown_tool"
    assert result["content"].startswith("`mcp__time__get_current_time` is not available: MCP server `time` could "
                                        "not start: the command was not found (uvx). Nothing was run.")
    assert "Install uv" in result["content"] and "`command`" in result["content"]
    assert "is not an available tool" not in result["content"]

    # A fresh process that tries nothing knows the last failure (persisted by the process that saw it).
    [listed] = _fresh_process("mcp", "list", "--home", str(home), "--json", env=no_uvx)
    assert listed["state"] == "failed"
    assert listed["error"] == "could not start: the command was not found (uvx)"
    assert listed["failure"]["code"] == "mcp.command_not_found"
    assert "Install uv" in listed["failure"]["advice"]
    assert [d["code"] for d in listed["diagnostics"]] == ["mcp.command_not_found"]

    code, out, _ = _cli("mcp", "refresh", "--home", str(home))
    assert code == 1
    assert "time: failed: could not start: the command was not found (uvx) [mcp.command_not_found]" in out
    assert "next: Install uv" in out


def test_never_tried_says_so_and_how_to_find_out(tmp_path: Path) -> None:
    write_mcp_json(tmp_path, {"time": {"command": "uvx", "args": ["mcp-server-time"]}})
    [listed] = _fresh_process("mcp", "list", "--home", str(tmp_path), "--json")
    assert listed["state"] == "not discovered" and listed["error"] is None and listed["failure"] is None
    [diagnostic] = listed["diagnostics"]
    assert diagnostic["code"] == "mcp.server_not_discovered"
    assert "has not been tried yet" in diagnostic["message"]
    assert "`tooldeck mcp refresh time`" in diagnostic["message"]


def test_an_authorization_demand_is_named_with_status_metadata_and_what_to_do(tmp_path: Path,
                                                                              fault_http: FaultServer) -> None:
    write_mcp_json(tmp_path, {"remote": {"type": "http", "url": fault_http.url("/401")}})
    code, out, _ = _cli("mcp", "refresh", "--home", str(tmp_path), "--json")
    assert code == 1
    [report] = json.loads(out)
    failure = report["failure"]
    assert failure["code"] == "mcp.auth_required"
    metadata = f"{fault_http.base}/.well-known/oauth-protected-resource/401"
    assert "answered HTTP 401" in failure["summary"] and "error=invalid_token" in failure["summary"]
    assert metadata in failure["summary"]
    assert failure["details"]["http"]["status"] == 401
    assert failure["details"]["resource_metadata"] == metadata
    assert '"headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}' in failure["advice"]

    [listed] = _fresh_process("mcp", "list", "--home", str(tmp_path), "--json")
    assert listed["failure"]["code"] == "mcp.auth_required" and "HTTP 401" in listed["error"]

    code, out, _ = _cli("call", "mcp__remote__anything", "{}", "--home", str(tmp_path))
    content = json.loads(out)["content"]
    assert content.startswith("`mcp__remote__anything` is not available: MCP server `remote` requires authorization: ")
    assert "HTTP 401" in content and "Authorization" in content


def test_serve_logs_why_a_server_is_down(tmp_path: Path, no_uvx: dict[str, str]) -> None:
    """`tooldeck serve` (a real process) logs the cause; its clients get it in the unknown-tool error."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.shared.exceptions import MCPError

    write_mcp_json(tmp_path, {"time": {"command": "uvx", "args": ["mcp-server-time"]}})
    errlog = tmp_path / "serve-stderr.txt"

    async def run() -> str:
        env = {**os.environ, **no_uvx, "PYTHONPATH": os.pathsep.join(sys.path)}
        params = StdioServerParameters(command=str(TOOLDECK), args=["serve", "--stdio", "--home", str(tmp_path),
                                                                    "--loading", "eager"], env=env)
        with errlog.open("w") as err:
            async with Client(stdio_client(params, errlog=err), cache=None) as client:
                try:
                    await client.call_tool("mcp__time__get_current_time", {})
                except MCPError as exc:
                    return exc.error.message
                result = await client.call_tool("mcp__time__get_current_time", {})
                return "".join(getattr(block, "text", "") for block in result.content)

    message = anyio.run(run)
    assert "MCP server `time` could not start: the command was not found (uvx)" in message
    logged = errlog.read_text()
    assert "WARNING MCP server `time` could not start: the command was not found (uvx). [mcp.command_not_found]" \
        in logged
