"""`tooldeck mcp list | tools | refresh`, and MCP tools through `tooldeck tools` / `tooldeck call`."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tooldeck.cli.app import app

from .conftest import fixture_server, write_mcp_json, write_toml

runner = CliRunner()


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_mcp_commands(tmp_path: Path) -> None:
    write_mcp_json(tmp_path, {"fx": fixture_server(), "gone": {"command": str(tmp_path / "missing")}})
    write_toml(tmp_path, "[mcp.servers.fx]\ndefault_permission = 'ask'\ntools = { echo = 'allow', pid = 'off' }\n")
    home = str(tmp_path)

    code, out = _run("mcp", "list", "--home", home, "--json")
    assert code == 0
    listed = {s["name"]: s for s in json.loads(out)}
    assert listed["fx"]["state"] == "not discovered" and listed["fx"]["tools_total"] == 0  # list connects nothing

    code, out = _run("mcp", "tools", "fx", "--home", home, "--json")  # no cache yet: discovers first
    assert code == 0
    perms = {t["name"]: t["permission"] for t in json.loads(out)}
    assert perms["echo"] == "allow" and perms["pid"] == "off" and perms["add"] == "ask"
    assert next(t for t in json.loads(out) if t["name"] == "echo")["call_name"] == "mcp__fx__echo"

    code, out = _run("mcp", "refresh", "--home", home)
    assert code == 1  # `gone` failed
    assert "fx: 15 tools" in out and "gone: failed: could not start: the command was not found" in out
    assert "[mcp.command_not_found]" in out and "  next: Install it, or set `command`" in out

    code, out = _run("mcp", "refresh", "fx", "--home", home, "--json")
    assert code == 0 and json.loads(out)[0]["ok"] is True

    code, out = _run("mcp", "list", "--home", home, "--json")
    listed = {s["name"]: s for s in json.loads(out)}
    assert listed["fx"]["state"] == "cached" and listed["fx"]["tools_offered"] == 14  # pid is off

    code, out = _run("mcp", "tools", "nope", "--home", home)
    assert code == 2 and "mcp.unknown_server" in out

    code, out = _run("tools", "--home", home, "--json")
    assert code == 0 and "mcp__fx__echo" in {t["call_name"] for t in json.loads(out)["tools"]}
    code, out = _run("call", "mcp__fx__echo", '{"message": "from the cli"}', "--home", home)
    assert code == 0 and json.loads(out)["content"] == "Echo: from the cli"


def test_cli_errors(tmp_path: Path) -> None:
    code, out = _run("mcp", "list", "--home", str(tmp_path))  # nothing configured: an empty list, with the hint
    assert code == 0 and "no MCP servers are configured" in out
    code, out = _run("mcp", "list", "--home", str(tmp_path), "--json")
    assert code == 0 and json.loads(out) == []
    code, out = _run("mcp", "tools", "x", "--home", str(tmp_path))  # but a server that cannot be there is an error
    assert code == 2 and "no MCP servers are configured" in out
    (tmp_path / "mcp.json").write_text('{"mcpServers": {"x": {"command": 3}}}', encoding="utf-8")
    code, out = _run("mcp", "list", "--home", str(tmp_path))
    assert code == 2 and "mcp.config_invalid" in out and "mcpServers.x.command" in out
