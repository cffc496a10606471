"""`tooldeck mcp list | tools SERVER | refresh [SERVER]`: the configured MCP servers and their tools.

A server that failed shows its failure code, the cause and the next step; these commands print it
themselves, so the `tooldeck.mcp` warnings that say the same are held back while they run.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tooldeck.cli.common import DEFAULT_HOME, HomeOption, fail_usage, usage_errors
from tooldeck.core.errors import TooldeckError
from tooldeck.sources.mcp import Failure, McpManager

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


@contextlib.contextmanager
def _own_report() -> Iterator[None]:
    """The command reports each failure itself, with its cause and next step: keep the MCP source's warnings
    (the same text) and the SDK's own log lines about the same failure (parse errors with tracebacks,
    "Unexpected content type") off stderr while it runs."""
    loggers = [logging.getLogger("tooldeck.mcp"), logging.getLogger("mcp")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _failure_lines(failure: Failure) -> list[str]:
    lines = [f"  next: {failure.advice}"]
    stderr = failure.details.get("stderr")
    if isinstance(stderr, list) and stderr:
        lines.append("  stderr (last lines):")
        lines.extend(f"    {line}" for line in stderr)
    return lines


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
        problem = (f"{s.failure.summary} [{s.failure.code}, {_when(s.failure.at)}]" if s.failure
                   else "; ".join(problems[:2]))
        cells = (s.name, s.registration_id, s.transport, s.endpoint, s.state, f"{s.tools_offered}/{s.tools_total}",
                 _when(s.fetched_at), problem)
        table.add_row(*(Text(cell) for cell in cells))  # not markup: `[...]` in a command or message is text
    console = Console()
    console.print(table)
    for s in statuses:
        if s.failure is not None:
            console.print(f"{s.name}: {s.failure.code}: {s.failure.summary}", markup=False, highlight=False)
            for line in _failure_lines(s.failure):
                console.print(line, markup=False, highlight=False)


def tools(
    server: Annotated[str, typer.Argument(help="The server name, as in the config.")],
    home: HomeOption = DEFAULT_HOME,
    as_json: JsonOption = False,
) -> None:
    """A server's tools with their permission (discovers the server first if it has no cached catalog)."""
    manager = _manager(home)
    try:
        with _own_report():
            infos = manager.tools(server)
            status = next(s for s in manager.status() if s.name == server)
            if not infos and status.fetched_at is None and not status.paused:
                [report] = manager.refresh(server)
                if not report.ok:
                    failure = report.failure
                    fail_usage(f"{failure.code}: {failure.full_text}" if failure else
                               f"MCP server {server!r} could not be discovered: {report.error}")
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
        with _own_report():
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
            elif r.failure is not None:
                typer.echo(f"{r.name}: failed: {r.failure.summary} [{r.failure.code}]")
                for line in _failure_lines(r.failure):
                    typer.echo(line)
            else:
                typer.echo(f"{r.name}: failed: {r.error}")
            failure_code = r.failure.code if r.failure else None
            for d in r.diagnostics:
                if d.code != failure_code:  # the failure itself is printed above
                    typer.echo(f"  {d.code}: {d.message}")
    if any(not r.ok for r in reports):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    mcp_app.command("list")(list_servers)
    mcp_app.command("tools")(tools)
    mcp_app.command("refresh")(refresh)
    app.add_typer(mcp_app, name="mcp")
