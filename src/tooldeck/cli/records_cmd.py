"""`tooldeck records list|show` and `tooldeck replay`: read the records store of a home directory."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tooldeck.cli.common import DEFAULT_HOME, HomeOption, usage_errors
from tooldeck.core.errors import TooldeckError
from tooldeck.core.rawvalue import RawObject
from tooldeck.protocols import FORMATS
from tooldeck.records.store import SqliteRecorder

RECORDS_FILE = "records.sqlite"
PREVIEW_CHARS = 120

records_app = typer.Typer(no_args_is_help=True, help="Recorded invocations: list them, show their calls.")


def _store(home: Path) -> SqliteRecorder:
    path = home / RECORDS_FILE
    if not path.is_file():
        typer.echo(f"error: records.not_found: no records store at {path}; run tools with records on "
                   "(the default) or pass --home", err=True)
        raise typer.Exit(2)
    try:
        return SqliteRecorder(path)
    except TooldeckError as exc:
        usage_errors(exc)
        raise


def _json_default(value: object) -> object:
    return value.to_record() if isinstance(value, RawObject) else repr(value)


def _json_out(value: object) -> str:
    """Indented JSON of recorded values: orjson, or Python's encoder for what orjson cannot write (integers
    beyond 64 bits, lone surrogates as `\\udXXX` escapes)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2, default=_json_default).decode()
    except TypeError:
        return json.dumps(value, indent=2, default=_json_default)


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _preview(text: str) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= PREVIEW_CHARS else one_line[:PREVIEW_CHARS - 1] + "…"


def list_cmd(
    home: HomeOption = DEFAULT_HOME,
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many, newest first.")] = 20,
    run: Annotated[str | None, typer.Option("--run", help="Only this run id.")] = None,
) -> None:
    """Recent invocations: id, run, provider, rounds, calls, errors, interrupted calls."""
    store = _store(home)
    try:
        rows = store.list_invocations(limit, run)
    finally:
        store.close()
    table = Table(title=f"{len(rows)} recent invocations ({home / RECORDS_FILE})")
    for col in ("invocation", "run", "provider", "scene", "created (UTC)", "rounds", "calls", "errors", "unknown",
                "open"):
        table.add_column(col, overflow="fold")
    for s in rows:
        table.add_row(escape(s.invocation_id), escape(s.run_id), s.provider, s.scene, _when(s.created_at),
                      str(s.rounds), str(s.calls), str(s.errors), str(s.unknown_outcomes), str(s.open_calls))
    Console().print(table)


def show_cmd(
    invocation_id: Annotated[str, typer.Argument(metavar="ID", help="An invocation id from `records list`.")],
    home: HomeOption = DEFAULT_HOME,
    as_json: Annotated[bool, typer.Option("--json", help="Print calls and results as JSON.")] = False,
) -> None:
    """The calls of one invocation: raw arguments as sent, status, result preview."""
    store = _store(home)
    try:
        history = store.history(invocation_id)
    except TooldeckError as exc:
        usage_errors(exc)
        return
    finally:
        store.close()
    if as_json:
        data = [{"round": c.round, "index": c.index, "call_id": c.call_id, "name": c.call_name, "tool_id": c.tool_id,
                 "raw_arguments": c.raw_arguments, "arguments": c.arguments, "status": c.status,
                 "requested_at": c.requested_at, "started_at": c.started_at, "finished_at": c.finished_at,
                 "result": None if c.result is None else {
                     "content": c.result.content, "is_error": c.result.is_error, "error_code": c.result.error_code,
                     "structured": c.result.structured, "resource_refs": c.result.resource_refs}}
                for c in history.calls]
        sys.stdout.write(_json_out({"invocation_id": invocation_id, "calls": data}) + "\n")
        return
    s = history.summary
    table = Table(title=f"{s.invocation_id} · run {s.run_id} · {s.provider} · {s.calls} calls")
    for col in ("round", "#", "call id", "name", "raw arguments", "status", "ms", "result"):
        table.add_column(col, overflow="fold")
    for c in history.calls:
        elapsed = "-" if c.started_at is None or c.finished_at is None else \
            f"{(c.finished_at - c.started_at) * 1e3:.1f}"
        result = "-" if c.result is None else _preview(
            (f"[{c.result.error_code or 'error'}] " if c.result.is_error else "") + c.result.content)
        raw = "(absent)" if c.raw_arguments is None else _preview(str(c.raw_arguments))
        table.add_row(str(c.round), str(c.index), escape(c.call_id), escape(c.call_name), escape(raw), c.status,
                      elapsed, escape(result))
    Console().print(table)


def replay_cmd(
    invocation_id: Annotated[str, typer.Argument(metavar="INVOCATION", help="An invocation id.")],
    provider: Annotated[str, typer.Option("--provider", help=" | ".join(FORMATS))] = "openai",
    home: HomeOption = DEFAULT_HOME,
) -> None:
    """Print an invocation's tool history as the provider's messages (JSON)."""
    from tooldeck.records.replay import replay

    store = _store(home)
    try:
        messages = replay(store, invocation_id, provider)
    except TooldeckError as exc:
        usage_errors(exc)
        return
    finally:
        store.close()
    sys.stdout.write(_json_out(messages) + "\n")


def register(app: typer.Typer) -> None:
    records_app.command("list")(list_cmd)
    records_app.command("show")(show_cmd)
    app.add_typer(records_app, name="records")
    app.command("replay")(replay_cmd)
