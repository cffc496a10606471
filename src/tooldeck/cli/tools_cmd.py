"""`tooldeck tools` and `tooldeck call`: the snapshot a model would get, and one call through the pipeline."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from tooldeck.cli.common import (
    DEFAULT_HOME,
    HomeOption,
    LoadingOption,
    ProfileOption,
    ProviderOption,
    usage_errors,
    with_loading,
)
from tooldeck.core.arguments import MISSING
from tooldeck.core.errors import TooldeckError
from tooldeck.runtime import Runtime


def _open(home: Path, profile: Path | None, records: bool = True) -> Runtime:
    try:
        return Runtime(home, profile=profile, records=records)
    except TooldeckError as exc:
        usage_errors(exc)
        raise


def tools(
    home: HomeOption = DEFAULT_HOME,
    provider: ProviderOption = "openai",
    profile: ProfileOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the snapshot as JSON.")] = False,
    loading: LoadingOption = None,
) -> None:
    """Show the tools a model would get: call name, tool id, description, parameters."""
    rt = with_loading(_open(home, profile, records=False), loading)
    try:
        inv = rt.invocation(provider=provider)
    except TooldeckError as exc:
        usage_errors(exc)
        return
    rows = [{"call_name": b.call_name, "tool_id": b.tool_id, "description": b.descriptor.description,
             "parameters": b.descriptor.input_schema} for b in inv.snapshot.bindings]
    if as_json:
        payload = {"provider": provider, "loading": inv.snapshot.loading, "tools": rows, "tools_array": inv.tools(),
                   "turn_context": inv.turn_context()}
        sys.stdout.write(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    table = Table(title=f"{len(rows)} tools ({provider})")
    for col in ("call name", "tool id", "description", "parameters"):
        table.add_column(col, overflow="fold")
    for r in rows:
        props = r["parameters"].get("properties") or {}
        required = set(r["parameters"].get("required") or [])
        params = ", ".join(f"{k}{'*' if k in required else ''}" for k in props)
        table.add_row(r["call_name"], r["tool_id"], r["description"], params)
    console = Console()
    console.print(table)
    if inv.turn_context():
        console.print(f"[bold]{inv.snapshot.loading}[/bold]: the tools array holds "
                      f"{', '.join(t.get('function', t).get('name', '?') for t in inv.tools()[:5])}; the turn "
                      "context lists the rest.")


def call(
    name: Annotated[str, typer.Argument(help="The call name, as the model would send it.")],
    raw_args: Annotated[str | None, typer.Argument(metavar="RAW_ARGS",
                                                   help="The raw wire arguments text ('' , null, [1,2] …).")] = None,
    home: HomeOption = DEFAULT_HOME,
    provider: ProviderOption = "openai",
    profile: ProfileOption = None,
    loading: LoadingOption = None,
) -> None:
    """Run one call through the whole pipeline and print the AgentToolResult as JSON."""
    rt = with_loading(_open(home, profile), loading)
    try:
        inv = rt.invocation(provider=provider)
        wire: Any = MISSING if raw_args is None else raw_args
        [result] = inv.run([{"id": "cli_call_1", "name": name, "arguments": wire}])
    except TooldeckError as exc:
        usage_errors(exc)
        return
    finally:
        rt.close()
    sys.stdout.write(orjson.dumps(result.to_dict(), option=orjson.OPT_INDENT_2).decode() + "\n")


def register(app: typer.Typer) -> None:
    app.command("tools")(tools)
    app.command("call")(call)
