"""`tooldeck mcp list | tools SERVER | refresh [SERVER]`: the configured MCP servers and their tools."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from tooldeck.cli.common import DEFAULT_HOME, HomeOption, fail_usage, usage_errors
from tooldeck.core.errors import TooldeckError
from tooldeck.sources.mcp import McpManager

mcp_app = typer.Typer(no_args_is_help=True, help="MCP servers: list them, show their tools, refresh catalogs.")
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _manager(home: Path) -> McpManager:
    try:
        manager = McpManager.from_home(home, start=False)
    except TooldeckError as exc:
        usage_errors(exc)
        raise
    if manager is None:
        fail_usage(f"no MCP servers are configured in {home}: add `[mcp.servers.NAME]` to {home / 'tooldeck.toml'} "
                   f"or a {{\"mcpServers\": {{...}}}} object to {home / 'mcp.json'}")
        raise typer.Exit(2)
    return manager


def _print_json(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "never"


def list_servers(home: HomeOption = DEFAULT_HOME, as_json: JsonOption = False) -> None:
    """The configured servers: registration, transport, state, tool counts (from the cache; connects nothing)."""
    manager = _manager(home)
    try:
        statuses = manager.status()
    finally:
        manager.close()
    if as_json:
        _print_json([s.to_dict() for s in statuses])
        return
    table = Table(title=f"{len(statuses)} MCP servers ({home})")
    for col in ("server", "registration", "transport", "endpoint", "state", "tools offered/listed", "discovered",
                "problem"):
        table.add_column(col, overflow="fold")
    for s in statuses:
        problems = [d.message for d in s.diagnostics if d.code != "mcp.server_paused"]
        table.add_row(s.name, s.registration_id, s.transport, s.endpoint, s.state,
                      f"{s.tools_offered}/{s.tools_total}", _when(s.fetched_at), s.error or "; ".join(problems[:2]))
    Console().print(table)


def tools(
    server: Annotated[str, typer.Argument(help="The server name, as in the config.")],
    home: HomeOption = DEFAULT_HOME,
    as_json: JsonOption = False,
) -> None:
    """A server's tools with their permission (discovers the server first if it has no cached catalog)."""
    manager = _manager(home)
    try:
        infos = manager.tools(server)
        status = next(s for s in manager.status() if s.name == server)
        if not infos and status.fetched_at is None and not status.paused:
            [report] = manager.refresh(server)
            if not report.ok:
                fail_usage(f"MCP server {server!r} could not be discovered: {report.error}")
            infos = manager.tools(server)
    except TooldeckError as exc:
        usage_errors(exc)
        return
    finally:
        manager.close()
    if as_json:
        _print_json([{"tool_id": t.tool_id, "name": t.name, "call_name": t.model_name, "permission": t.permission,
                      "description": t.description} for t in infos])
        return
    table = Table(title=f"{len(infos)} tools of MCP server {server}")
    for col in ("call name", "native name", "permission", "tool id", "description"):
        table.add_column(col, overflow="fold")
    for t in infos:
        table.add_row(t.model_name, t.name, t.permission, t.tool_id, t.description)
    Console().print(table)


def refresh(
    server: Annotated[str | None, typer.Argument(help="One server; all unpaused servers when omitted.")] = None,
    home: HomeOption = DEFAULT_HOME,
    as_json: JsonOption = False,
) -> None:
    """Connect, list the tools again and rewrite the cached catalog. Exit code 1 when a server failed."""
    manager = _manager(home)
    try:
        reports = manager.refresh(server)
    except TooldeckError as exc:
        usage_errors(exc)
        return
    finally:
        manager.close()
    if as_json:
        _print_json([r.to_dict() for r in reports])
    else:
        for r in reports:
            if r.ok:
                change = "".join([f", +{len(r.added)}" if r.added else "", f", -{len(r.removed)}" if r.removed else ""])
                typer.echo(f"{r.name}: {r.tools} tools{change}")
            else:
                typer.echo(f"{r.name}: failed: {r.error}")
            for d in r.diagnostics:
                if d.code not in ("mcp.server_unavailable",):
                    typer.echo(f"  {d.code}: {d.message}")
    if any(not r.ok for r in reports):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    mcp_app.command("list")(list_servers)
    mcp_app.command("tools")(tools)
    mcp_app.command("refresh")(refresh)
    app.add_typer(mcp_app, name="mcp")
