"""`tooldeck records list|show` and `tooldeck replay`: read the records store of a home directory."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tooldeck.cli.common import (
    DEFAULT_HOME,
    HomeOption,
    JsonOption,
    cli_app,
    fail_usage,
    print_json,
    started,
    usage_errors,
)

if TYPE_CHECKING:
    from tooldeck.records.reader import CallRecord, InvocationSummary
    from tooldeck.records.store import SqliteRecorder

RECORDS_FILE = "records.sqlite"
RELAYED_KIND = "mcp_relayed_request"
"""Run events of `tooldeck serve` for a request relayed during a call (`server/relay_requests.py`)."""
PROVIDERS_HELP = "openai | openai_responses | anthropic | gemini | mistral"

records_app = cli_app(name="records", no_args_is_help=True, help="Recorded invocations: list them, show their calls.")


def _store(home: Path) -> SqliteRecorder:
    from tooldeck.core.errors import TooldeckError
    from tooldeck.records.store import SqliteRecorder

    path = home / RECORDS_FILE
    if not path.is_file():
        fail_usage(f"records.not_found: no records store at {path}; run tools with records on "
                   "(the default) or pass --home")
    try:
        store = SqliteRecorder(path)
    except TooldeckError as exc:
        usage_errors(exc)
    started()
    return store


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


def summary_dict(s: InvocationSummary) -> dict[str, Any]:
    """One invocation in `records list --json` (and `records show --json`'s `invocation`)."""
    return {"invocation_id": s.invocation_id, "run_id": s.run_id, "provider": s.provider, "scene": s.scene,
            "headless": s.headless, "snapshot_id": s.snapshot_id, "created_at": s.created_at, "rounds": s.rounds,
            "calls": s.calls, "errors": s.errors, "unknown_outcomes": s.unknown_outcomes, "open_calls": s.open_calls}


def call_dict(c: CallRecord) -> dict[str, Any]:
    """One call in `records show --json`."""
    result = None if c.result is None else {
        "content": c.result.content, "is_error": c.result.is_error, "error_code": c.result.error_code,
        "structured": c.result.structured, "resource_refs": c.result.resource_refs}
    return {"round": c.round, "index": c.index, "call_id": c.call_id, "name": c.call_name, "tool_id": c.tool_id,
            "raw_arguments": c.raw_arguments, "arguments": c.arguments, "status": c.status,
            "requested_at": c.requested_at, "started_at": c.started_at, "finished_at": c.finished_at,
            "result": result}


def list_cmd(
    home: HomeOption = DEFAULT_HOME,
    limit: Annotated[int, typer.Option("--limit", "-n", metavar="N", help="How many, newest first.")] = 20,
    run: Annotated[str | None, typer.Option("--run", metavar="RUN_ID", help="Only this run's invocations.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Recent invocations, newest first: id, time, provider, calls, errors; run, scene, rounds when wide enough."""
    from tooldeck.cli.table import Column, show_rows

    store = _store(home)
    try:
        rows = store.list_invocations(limit, run)
    finally:
        store.close()
    columns = [Column("invocation", "id"), Column("created (utc)", "id"), Column("provider", "text", min_width=8),
               Column("calls", "number"), Column("errors", "number", drop=5), Column("open", "number", drop=4),
               Column("unknown", "number", drop=3), Column("scene", "text", drop=2, min_width=7),
               Column("rounds", "number", drop=2), Column("run", "id", drop=1)]
    noun = "invocation" if len(rows) == 1 else "invocations"
    show_rows([summary_dict(s) for s in rows], columns,
              [(s.invocation_id, _when(s.created_at), s.provider, str(s.calls), str(s.errors), str(s.open_calls),
                str(s.unknown_outcomes), s.scene, str(s.rounds), s.run_id) for s in rows], as_json=as_json,
              empty=f"no invocations in {home / RECORDS_FILE}" + (f" for run {run}" if run else ""),
              footer=f"\n{len(rows)} {noun}, newest first; --json for every field.")


def show_cmd(
    invocation_id: Annotated[str, typer.Argument(metavar="INVOCATION_ID", help="An id from `records list`.")],
    home: HomeOption = DEFAULT_HOME,
    as_json: Annotated[bool, typer.Option("--json", help="Print the invocation and its calls as JSON (shapes "
                                                         "in docs/cli.md).")] = False,
    long: Annotated[bool, typer.Option("--long", "-l", help="Raw arguments and results in full, not cut to "
                                                            "one line.")] = False,
) -> None:
    """The calls of one invocation: call id, name, status, time; raw arguments as sent; the result."""
    from tooldeck.core.errors import TooldeckError

    store = _store(home)
    try:
        history = store.history(invocation_id)
        relayed = _relayed(store, history.summary.run_id, invocation_id)
        parent = _parent(store, history.summary.run_id)
    except TooldeckError as exc:
        usage_errors(exc)
    finally:
        store.close()
    if as_json:
        calls = [{**call_dict(c), "relayed": relayed.get(c.call_id, [])} for c in history.calls]
        print_json({"invocation": summary_dict(history.summary), "calls": calls, "parent": parent})
        return
    if parent is not None:  # a delegated child run: the run, task and invocation it was started from
        typer.echo(f"{'parent':<10}  run {parent['run_id']} (task {parent['task_id']}, agent {parent['agent_id']}, "
                   f"invocation {parent['invocation_id']})")
    _print_history(history.summary, history.calls, long=long, relayed=relayed)


def _parent(store: SqliteRecorder, run_id: str | None) -> dict[str, Any] | None:
    """What a delegated child run's `run_started` event names of its parent (docs/agent.md), else None."""
    if run_id is None:
        return None
    for event in store.run_events(run_id, "agent"):
        if event.get("type") == "run_started" and event.get("parent_run_id"):
            return {"run_id": event["parent_run_id"], "task_id": event.get("task_id"),
                    "agent_id": event.get("agent_id"), "invocation_id": event.get("parent_invocation_id")}
    return None


def _relayed(store: SqliteRecorder, run_id: str | None, invocation_id: str) -> dict[str, list[dict[str, Any]]]:
    """What `tooldeck serve` relayed to its client during each call of the invocation (sampling, elicitation,
    roots), by call id."""
    out: dict[str, list[dict[str, Any]]] = {}
    if run_id is None:
        return out
    for event in store.run_event_log(run_id, RELAYED_KIND):
        data = event.data
        if data.get("invocation_id") == invocation_id:
            out.setdefault(str(data.get("call_id")), []).append({**data, "at": event.at})
    return out


def _exchange_line(data: dict[str, Any]) -> str:
    """One relayed request in `records show`: the method, the outcome, and the request and answer."""
    import orjson

    answer = data.get("result") if data.get("outcome") == "ok" else data.get("error")
    return (f"{data.get('method')} {data.get('outcome')}: {orjson.dumps(data.get('request')).decode()} -> "
            f"{orjson.dumps(answer).decode()}")


def events_cmd(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="A run id (`records list` shows them).")],
    home: HomeOption = DEFAULT_HOME,
    as_json: JsonOption = False,
    long: Annotated[bool, typer.Option("--long", "-l", help="Each event in full, not cut to one line.")] = False,
) -> None:
    """What `tooldeck serve` recorded for a run besides its calls: resource reads, prompt gets, completions, and the
    requests relayed between the upstream servers and the client (sampling, elicitation, roots)."""
    import orjson

    from tooldeck.cli.table import clean, cut, terminal_width

    store = _store(home)
    try:
        events = store.run_event_log(run_id, "mcp_")
    finally:
        store.close()
    if as_json:
        print_json([{"kind": e.kind, "at": e.at, "data": e.data} for e in events])
        return
    if not events:
        typer.echo(f"no MCP gateway events for run {run_id} in {home / RECORDS_FILE}")
        return
    width = max(40, terminal_width())
    for e in events:
        line = f"{_when(e.at)}  {e.kind}  {orjson.dumps(e.data).decode()}"
        typer.echo(clean(line, one_line=True) if long else cut(clean(line, one_line=True), width))


def _print_history(s: InvocationSummary, calls: list[CallRecord], *, long: bool,
                   relayed: dict[str, list[dict[str, Any]]] | None = None) -> None:
    from tooldeck.cli.table import clean, cut, terminal_width

    width = max(40, terminal_width())
    for label, value in (("invocation", s.invocation_id), ("run", s.run_id),
                         ("provider", f"{s.provider} (scene {s.scene})"), ("created", f"{_when(s.created_at)} UTC"),
                         ("calls", f"{s.calls} in {s.rounds} rounds: {s.errors} errors, {s.open_calls} open, "
                                   f"{s.unknown_outcomes} unknown outcomes")):
        typer.echo(f"{label:<10}  {clean(value, one_line=True)}")
    for c in calls:
        elapsed = "" if c.started_at is None or c.finished_at is None else \
            f", {(c.finished_at - c.started_at) * 1e3:.1f} ms"
        typer.echo("")
        call_id, name = clean(c.call_id, one_line=True), clean(c.call_name, one_line=True)
        typer.echo(f"round {c.round} #{c.index}  {call_id}  {name}  {c.status}{elapsed}")
        raw = "(absent)" if c.raw_arguments is None else str(c.raw_arguments)
        result = "-" if c.result is None else \
            (f"[{c.result.error_code or 'error'}] " if c.result.is_error else "") + c.result.content
        exchanges = [("relayed", _exchange_line(d)) for d in (relayed or {}).get(c.call_id, [])]
        for label, text in (("arguments", raw), ("result", result), *exchanges):
            head = f"  {label:<9}  "
            if long:
                typer.echo(textwrap.fill(clean(text, one_line=True), width, initial_indent=head,
                                         subsequent_indent=" " * len(head), break_on_hyphens=False))
            else:
                typer.echo(head + cut(clean(text, one_line=True), width - len(head)))


def replay_cmd(
    invocation_id: Annotated[str, typer.Argument(metavar="INVOCATION_ID", help="An id from `records list`.")],
    provider: Annotated[str, typer.Option("--provider", metavar="NAME", help=PROVIDERS_HELP)] = "openai",
    home: HomeOption = DEFAULT_HOME,
) -> None:
    """Print an invocation's tool history as the provider's messages (JSON)."""
    from tooldeck.core.errors import TooldeckError
    from tooldeck.records.replay import replay

    store = _store(home)
    try:  # the images the model got come back from their copies in the run's workspace
        run_id = store.history(invocation_id).summary.run_id
        messages = replay(store, invocation_id, provider, workspace=home / "workspaces" / run_id)
    except TooldeckError as exc:
        usage_errors(exc)
    finally:
        store.close()
    print_json(messages)


records_app.command("list")(list_cmd)
records_app.command("show")(show_cmd)
records_app.command("events")(events_cmd)
replay_app = cli_app(replay_cmd)
