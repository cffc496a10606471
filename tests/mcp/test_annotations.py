"""MCP tool annotations set default permissions and concurrency (issue 19 item 3), from a real fixture
server process: destructive → `ask` unless the Profile names the tool, read-only → calls run together."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tooldeck.runtime import Runtime

from .conftest import fixture_server, write_mcp_json

ALLOW_MCP = {"allow": ["mcp/*"]}


def runtime(home: Path, profile: dict[str, Any] | None = None, confirm: Any = None) -> Runtime:
    write_mcp_json(home, {"db": fixture_server("--annotated")})
    return Runtime(home, records=True, profile=profile or ALLOW_MCP, confirm=confirm)


def test_annotations_reach_the_descriptors_and_the_gate(tmp_path: Path) -> None:
    with runtime(tmp_path) as rt:
        inv = rt.invocation()
        by_name = {b.call_name: b for b in inv.snapshot.bindings}
        assert by_name["mcp__db__slow_read"].descriptor.annotations.flags() == ["read_only", "concurrency_safe"]
        assert by_name["mcp__db__drop_table"].descriptor.annotations.flags() == ["mutating", "destructive"]
        assert by_name["mcp__db__append_row"].descriptor.annotations.flags() == ["mutating", "idempotent",
                                                                                 "open_world"]
        assert by_name["mcp__db__echo"].descriptor.annotations.flags() == ["mutating"]  # stated nothing
        perms = {n: e.permission for n, e in inv.gate.entries.items()}
        assert perms["mcp__db__drop_table"] == "ask"
        assert perms["mcp__db__append_row"] == perms["mcp__db__echo"] == perms["mcp__db__slow_read"] == "allow"


def test_a_destructive_tool_asks_and_without_an_answer_does_not_run(tmp_path: Path) -> None:
    asked: list[str] = []

    def confirm(request: Any) -> bool:
        asked.append(request.tool_id)
        return len(asked) > 1  # refuse the first, accept the second

    with runtime(tmp_path, confirm=confirm) as rt:
        inv = rt.invocation()
        first = inv.run([{"id": "a", "name": "mcp__db__drop_table", "arguments": {"table": "users"}}])[0]
        assert first.error_code == "tool.permission_denied" and "dropped" not in first.content
        second = inv.run([{"id": "b", "name": "mcp__db__drop_table", "arguments": {"table": "orders"}}])[0]
        assert second.content == "dropped orders"
        assert len(asked) == 2 and asked[0].endswith(":drop_table")
        appended = inv.run([{"id": "c", "name": "mcp__db__append_row", "arguments": {"row": "x"}}])[0]
        assert appended.content == "appended x" and len(asked) == 2  # not destructive: not asked


def test_the_profile_says_otherwise(tmp_path: Path) -> None:
    explicit = {**ALLOW_MCP, "permissions": {"mcp/*:drop_table": "allow"}}
    with runtime(tmp_path / "a", explicit) as rt:
        assert rt.invocation().gate.entries["mcp__db__drop_table"].permission == "allow"
    with runtime(tmp_path / "b", {**ALLOW_MCP, "annotation_defaults": False}) as rt:
        entries = rt.invocation().gate.entries
        assert entries["mcp__db__drop_table"].permission == "allow"
        assert not entries["mcp__db__slow_read"].concurrency_safe
    with runtime(tmp_path / "c", {**ALLOW_MCP, "default_permission": "deny"}) as rt:
        assert rt.invocation().gate.entries["mcp__db__drop_table"].permission == "deny"  # deny beats ask
    with runtime(tmp_path / "d", {**ALLOW_MCP, "serial": ["mcp/*:slow_read"]}) as rt:
        assert not rt.invocation().gate.entries["mcp__db__slow_read"].concurrency_safe


def _peak(rt: Runtime, tool: str, tmp_path: Path) -> int:
    log = tmp_path / f"{tool}.peak"
    calls = [{"id": f"{tool}{i}", "name": f"mcp__db__{tool}", "arguments": {"log": str(log)}} for i in range(3)]
    results = rt.invocation().run(calls)
    assert [r.is_error for r in results] == [False] * 3, [r.content for r in results]
    return int(log.read_text())


def test_read_only_calls_run_together_and_others_one_at_a_time(tmp_path: Path) -> None:
    with runtime(tmp_path / "home") as rt:
        assert _peak(rt, "slow_read", tmp_path) == 3  # the server saw all three in flight at once
        assert _peak(rt, "slow_write", tmp_path) == 1


def test_tooldeck_tools_shows_permission_and_annotations(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_mcp_json(home, {"db": fixture_server("--annotated")})
    (home / "profile.toml").write_text('allow = ["mcp/*"]\nloading = "eager"\n', encoding="utf-8")
    cli = [sys.executable, "-m", "tooldeck.cli", "tools", "--home", str(home)]
    listed = json.loads(subprocess.run([*cli, "--json"], capture_output=True, text=True, check=True,
                                       timeout=120).stdout)
    rows = {r["call_name"]: r for r in listed["tools"]}
    assert rows["mcp__db__drop_table"]["permission"] == "ask"
    assert rows["mcp__db__drop_table"]["annotations"] == ["mutating", "destructive"]
    assert rows["mcp__db__slow_read"]["concurrency_safe"] is True
    long = subprocess.run([*cli, "--long"], capture_output=True, text=True, check=True, timeout=120,
                          env={**os.environ, "COLUMNS": "80"}).stdout
    assert "permission ask; mutating; destructive" in long
    assert "permission allow; read-only; calls run concurrently" in long


def test_the_gateway_relays_the_hints_the_server_stated(tmp_path: Path) -> None:
    from tooldeck.server.mapping import to_mcp_tool

    with runtime(tmp_path) as rt:
        bindings = {b.call_name: b for b in rt.invocation().snapshot.bindings}
        hints = {name: to_mcp_tool(bindings[f"mcp__db__{name}"]).annotations
                 for name in ("slow_read", "drop_table", "append_row", "echo")}
    assert hints["slow_read"].read_only_hint is True and hints["slow_read"].destructive_hint is None
    assert hints["drop_table"].destructive_hint is True
    assert (hints["append_row"].idempotent_hint, hints["append_row"].open_world_hint) == (True, True)
    # nothing stated: nothing claimed (a client applies the spec's defaults, destructive and open-world)
    echo = hints["echo"]
    assert (echo.read_only_hint, echo.destructive_hint, echo.idempotent_hint, echo.open_world_hint) == \
        (None, None, None, None)
