"""`tooldeck tools` and `tooldeck call`: the snapshot a model would get, and one call through the pipeline."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tooldeck.cli.common import (
    DEFAULT_HOME,
    HomeOption,
    LoadingOption,
    ProfileOption,
    ProviderOption,
    cli_app,
    open_runtime,
    print_json,
    usage_errors,
)

if TYPE_CHECKING:
    from tooldeck.runtime import Invocation


def tools(
    home: HomeOption = DEFAULT_HOME,
    provider: ProviderOption = "openai",
    profile: ProfileOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the snapshot as JSON: tools with full "
                                                         "descriptions and schemas, the tools array.")] = False,
    long: Annotated[bool, typer.Option("--long", "-l", help="Each tool's full description and parameters.")]
    = False,
    loading: LoadingOption = None,
    show_all: Annotated[bool, typer.Option("--all", "-a", help="Also the tools the Profile allows that this "
                                                               "invocation left out, each with the reason (a "
                                                               "scene, is_enabled or a failed `requires`).")]
    = False,
    headless: Annotated[bool, typer.Option("--headless", help="Prepare the snapshot as a headless origin would "
                                                              "get it.")] = False,
) -> None:
    """Show the tools a model would get: call name, tool id, description, parameters."""
    from tooldeck.core.errors import TooldeckError

    rt = open_runtime(home, profile, records=False, loading=loading)
    try:
        try:
            inv = rt.invocation(provider=provider, headless=headless)
        except TooldeckError as exc:
            usage_errors(exc)
        left_out = rt.snapshots.left_out(inv.snapshot)
        if rt.mcp is not None:  # tools a pinned MCP server lists but withholds (changed since approved)
            from tooldeck.catalog.profile import matches

            prof = inv.profile
            left_out += [(tid, why) for tid, why in rt.mcp.withheld()
                         if any(matches(p, tid) for p in prof.allow) and not prof.is_denied(tid)]
        _show(inv, provider, as_json=as_json, long=long, left_out=left_out, show_all=show_all)
    finally:
        rt.close()


def _show(inv: Invocation, provider: str, *, as_json: bool, long: bool,
          left_out: list[tuple[str, str]] | None = None, show_all: bool = False) -> None:
    entries = inv.gate.entries
    rows = [{"call_name": b.call_name, "tool_id": b.tool_id, "description": b.descriptor.description,
             "parameters": b.descriptor.input_schema, "permission": entries[b.call_name].permission,
             "concurrency_safe": entries[b.call_name].concurrency_safe,
             "annotations": b.descriptor.annotations.flags()} for b in inv.snapshot.bindings]
    dropped = [{"tool_id": tid, "reason": reason} for tid, reason in left_out or ()]
    if as_json:
        doc: dict[str, Any] = {"provider": provider, "loading": inv.snapshot.loading, "tools": rows,
                               "tools_array": inv.tools(), "turn_context": inv.turn_context()}
        if show_all:
            doc["left_out"] = dropped
        print_json(doc)
        return
    if long:
        _print_long(rows)
    else:
        _print_table(rows)
    from tooldeck.cli.table import terminal_width

    more = "." if long else "; --long or --json for more."
    if show_all:
        _print_left_out(dropped)
    notes = [f"{len(rows)} tools ({provider}, {inv.snapshot.loading}){more}"]
    if dropped and not show_all:
        notes.append(f"{len(dropped)} allowed tools left out (scene or conditions); --all shows which and why.")
    if inv.turn_context():
        names = ", ".join(_array_name(t) for t in inv.tools()[:5])
        notes.append(f"{inv.snapshot.loading}: the tools array holds {names}; the turn context lists the rest.")
    typer.echo("")
    for note in notes:
        typer.echo(textwrap.fill(note, max(40, terminal_width()), break_on_hyphens=False))


def _print_left_out(dropped: list[dict[str, str]]) -> None:
    from tooldeck.cli.table import Column, render

    typer.echo("")
    if not dropped:
        typer.echo("No tool was left out by a scene or an availability condition.")
        return
    typer.echo(f"Left out ({len(dropped)}):")
    typer.echo(render([Column("tool id", "id"), Column("reason", "text", min_width=30, weight=2)],
                      [(d["tool_id"], d["reason"]) for d in dropped]), nl=False)


def _array_name(tool: dict[str, Any]) -> str:
    return str(tool.get("function", tool).get("name", "?"))


def summary(description: str) -> str:
    """The first sentence of a description, on one line."""
    text = " ".join(description.split())
    end = text.find(". ")
    return text[:end + 1] if end > 0 else text


def _params(schema: dict[str, Any], *, types: bool = False) -> str:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for name, spec in props.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        kind = "|".join(kind) if isinstance(kind, list) else kind
        parts.append(f"{name}{'*' if name in required else ''}" + (f" ({kind})" if types and kind else ""))
    return ", ".join(parts)


def _print_table(rows: list[dict[str, Any]]) -> None:
    from tooldeck.cli.table import Column, render

    columns = [Column("call name", "id"), Column("tool id", "id", drop=2), Column("perm", "id", drop=3),
               Column("description", "text", min_width=40, weight=2), Column("parameters", "text", drop=1)]
    typer.echo(render(columns, [(r["call_name"], r["tool_id"], r["permission"], summary(r["description"]),
                                 _params(r["parameters"])) for r in rows]), nl=False)


def _print_long(rows: list[dict[str, Any]]) -> None:
    from tooldeck.cli.table import clean, terminal_width

    width = max(40, terminal_width()) - 2
    for i, r in enumerate(rows):
        if i:
            typer.echo("")
        typer.echo(f"{clean(r['call_name'], one_line=True)}  {clean(r['tool_id'], one_line=True)}")
        flags = [f.replace("_", "-") for f in r["annotations"] if f != "concurrency_safe"]
        flags += ["calls run concurrently"] if r["concurrency_safe"] else []
        typer.echo(textwrap.fill(f"permission {r['permission']}" + "".join(f"; {f}" for f in flags), width,
                                 initial_indent="  ", subsequent_indent="    "))
        for paragraph in r["description"].splitlines() or [""]:
            typer.echo(textwrap.fill(clean(paragraph, one_line=True), width, initial_indent="  ",
                                     subsequent_indent="  ", break_on_hyphens=False) or "  ")
        params = _params(r["parameters"], types=True)
        if params:
            typer.echo(textwrap.fill(clean(params, one_line=True), width, initial_indent="  parameters: ",
                                     subsequent_indent="    ", break_on_hyphens=False))


def call(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The call name, as the model would send it.")],
    raw_args: Annotated[str | None, typer.Argument(metavar="RAW_ARGS",
                                                   help="The raw wire arguments text ('' , null, [1,2] …).")] = None,
    home: HomeOption = DEFAULT_HOME,
    provider: ProviderOption = "openai",
    profile: ProfileOption = None,
    loading: LoadingOption = None,
    fail: Annotated[bool, typer.Option("--fail", help="Exit 1 when the result is an error (it is printed all "
                                       "the same); without it a tool error is a result like any other, exit 0.")]
    = False,
) -> None:
    """Run one call through the whole pipeline and print the AgentToolResult as JSON."""
    from tooldeck.core.arguments import MISSING
    from tooldeck.core.errors import TooldeckError

    rt = open_runtime(home, profile, loading=loading)
    try:
        inv: Invocation = rt.invocation(provider=provider)
        wire: Any = MISSING if raw_args is None else raw_args
        [result] = inv.run([{"id": "cli_call_1", "name": name, "arguments": wire}])
    except TooldeckError as exc:
        usage_errors(exc)
    finally:
        rt.close()
    print_json(result.to_dict())
    if fail and result.is_error:
        raise typer.Exit(1)


tools_app = cli_app(tools)
call_app = cli_app(call)

