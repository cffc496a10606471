"""`tooldeck approvals list|revoke`: the home's remembered confirmation answers (docs/configuration.md,
"Remembered approvals"). Imports only typer and the standard library at start-up; the store loads when
a command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tooldeck.cli.common import DEFAULT_HOME, HomeOption, JsonOption, cli_app, fail_usage, started

if TYPE_CHECKING:
    from tooldeck.records.approvals import ApprovalStore

approvals_app = cli_app(name="approvals", no_args_is_help=True,
                        help="Remembered confirmation answers: list them, revoke one.")


def _store(home: Path) -> ApprovalStore:
    from tooldeck.records.approvals import ApprovalStore

    home = Path(home)
    if not home.is_dir():
        fail_usage(f"approvals.unavailable: no tooldeck home at {home}; pass --home")
    started()
    return ApprovalStore.of_home(home.resolve())


def list_cmd(
    home: HomeOption = DEFAULT_HOME,
    include_revoked: Annotated[bool, typer.Option("--all", help="Also the revoked ones.")] = False,
    as_json: JsonOption = False,
) -> None:
    """The approvals in effect, newest first: id, decision, scope, tool, pattern, run, who, when."""
    from tooldeck.cli.table import Column, show_rows
    from tooldeck.core.errors import TooldeckError

    try:
        listed = [a.to_dict() for a in _store(home).list(include_revoked)]
    except TooldeckError as exc:
        fail_usage(f"{exc.code}: {exc.message}")
    columns = [Column("id", "id"), Column("decision", "id"), Column("scope", "id"), Column("tool", "id"),
               Column("pattern", "text", min_width=8, weight=3), Column("run", "id", drop=3),
               Column("by", "text", drop=1), Column("when", "id", drop=2)]
    rows = [(d["id"], d["decision"] + (" (revoked)" if d["revoked_at"] else ""), d["scope"], d["tool_id"],
             _pattern(d["pattern"]), d["run_id"] if d["scope"] == "run" else "every run",
             f"{d['confirmer']}@{d['host']}", d["created_at"]) for d in listed]
    show_rows(listed, columns, rows, as_json=as_json,
              empty="no remembered approvals" + ("" if include_revoked else " (--all shows the revoked ones too)"))


def _pattern(pattern: dict[str, object] | None) -> str:
    if not pattern:
        return "(any)"
    return ", ".join(f"{k}={v}" for k, v in pattern.items())


def revoke_cmd(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="An approval id from `approvals list`.")],
    home: HomeOption = DEFAULT_HOME,
    as_json: JsonOption = False,
) -> None:
    """Revoke an approval: no process of the home uses it from now on (its row stays, marked revoked)."""
    import getpass
    import socket

    from tooldeck.cli.table import show_one
    from tooldeck.core.errors import TooldeckError

    store = _store(home)
    try:
        who = getpass.getuser()
    except (KeyError, OSError):
        who = "unknown"
    try:
        gone = store.revoke(approval_id, f"{who}@{socket.gethostname()}")
    except TooldeckError as exc:
        fail_usage(f"{exc.code}: {exc.message}")
    show_one(gone.to_dict(), f"revoked {gone.id} ({gone.decision} {gone.tool_id}, scope {gone.scope})",
             as_json=as_json)


approvals_app.command("list")(list_cmd)
approvals_app.command("revoke")(revoke_cmd)
