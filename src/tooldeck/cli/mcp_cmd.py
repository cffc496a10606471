"""`tooldeck mcp list | tools SERVER | refresh [SERVER] | diff SERVER | approve SERVER [TOOL] [--expect DIGEST] |
login SERVER | logout SERVER`: the configured MCP servers, their tools, their changed tool definitions
(`sources/mcp/pins.py`), and the OAuth sign-in of HTTP servers (`sources/mcp/login.py`).

A server that failed shows its failure code, the cause and the next step; these commands print it
themselves, so the `tooldeck.mcp` warnings that say the same are held back while they run. The MCP
package (and with it the SDK) is imported when one of these commands runs, not when the CLI starts.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
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
    from tooldeck.sources.mcp import AuthState, Failure, McpManager, OAuthPlan

mcp_app = cli_app(name="mcp", no_args_is_help=True,
                  help="MCP servers: list them, show their tools, refresh catalogs, review and approve changed "
                       "tool definitions, sign in (OAuth).")
ServerArgument = Annotated[str, typer.Argument(metavar="SERVER", help="The server's name, as in the config.")]


def _no_servers(home: Path) -> str:
    return (f"no MCP servers are configured in {home}: add `[mcp.servers.NAME]` to {home / 'tooldeck.toml'} "
            f"or a {{\"mcpServers\": {{...}}}} object to {home / 'mcp.json'}")


def _manager(home: Path) -> McpManager | None:
    from tooldeck.core.errors import TooldeckError
    from tooldeck.sources.mcp import McpManager

    try:
        manager = McpManager.from_home(home, start=False)
    except TooldeckError as exc:
        usage_errors(exc)
    started()
    return manager


def _require_manager(home: Path) -> McpManager:
    manager = _manager(home)
    if manager is None:
        fail_usage(_no_servers(home))
    return manager


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
    """The configured servers: state, tools offered/listed, transport, endpoint, last problem (from the cache;
    connects nothing). No server configured is an empty list."""
    from tooldeck.cli.table import Column, clean, render

    manager = _manager(home)
    if manager is None:
        if as_json:
            print_json([])
        else:
            typer.echo(_no_servers(home))
        return
    try:
        statuses = manager.status()
        auth = _auth_states(manager)
    finally:
        manager.close()
    if as_json:
        print_json([{**s.to_dict(), "auth": auth[s.name].to_dict() if s.name in auth else None} for s in statuses])
        return
    columns = [Column("server", "id"), Column("state", "text", min_width=6), Column("tools", "number"),
               Column("auth", "text", drop=6, min_width=4),
               Column("transport", "text", drop=2, min_width=5), Column("registration", "id", drop=1),
               Column("discovered", "id", drop=3), Column("endpoint", "text", drop=4, min_width=16),
               Column("problem", "text", drop=5, min_width=20)]
    rows = []
    for s in statuses:
        problems = [d.message for d in s.diagnostics if d.code != "mcp.server_paused"]
        problem = (f"{s.failure.summary} [{s.failure.code}, {_when(s.failure.at)}]" if s.failure
                   else "; ".join(problems[:2]))
        sign_in = auth[s.name].text() if s.name in auth else "-"
        rows.append((s.name, s.state, f"{s.tools_offered}/{s.tools_total}", sign_in, s.transport, s.registration_id,
                     _when(s.fetched_at), s.endpoint, problem))
    typer.echo(render(columns, rows), nl=False)
    for s in statuses:
        if s.failure is not None:
            typer.echo(clean(f"{s.name}: {s.failure.code}: {s.failure.summary}", one_line=True))
            for line in _failure_lines(s.failure):
                typer.echo(clean(line, one_line=False))


def _auth_states(manager: McpManager) -> dict[str, AuthState]:
    """The OAuth sign-in of every server OAuth applies to (read from the token files; no token is shown)."""
    from tooldeck.sources.mcp import sign_in_state

    states = {name: sign_in_state(manager.home, server) for name, server in manager.config.servers.items()}
    return {name: state for name, state in states.items() if state is not None}


def _plan(home: Path, server: str) -> OAuthPlan:
    """The OAuth plan of a configured server, or a usage error saying why it has none."""
    from tooldeck.core.errors import TooldeckError
    from tooldeck.sources.mcp import load, oauth_plan

    try:
        config = load(home)
        if config is None:
            fail_usage(_no_servers(home))
        entry = config.servers.get(server)
        if entry is None:
            known = ", ".join(sorted(config.servers)) or "none"
            fail_usage(f"mcp.unknown_server: no MCP server named {server!r}; configured: {known}")
        plan = oauth_plan(entry, home)
    except TooldeckError as exc:
        usage_errors(exc)
    if plan is None:
        why = ("it is a stdio server (OAuth is for HTTP servers)" if entry.url is None else
               "its entry sets `\"oauth\": false`" if not entry.oauth.enabled else
               "its entry sends its own `Authorization` header")
        fail_usage(f"MCP server {server!r} does not sign in with OAuth: {why}")
    return plan


def login(
    server: ServerArgument,
    home: HomeOption = DEFAULT_HOME,
    open_browser: Annotated[bool, typer.Option("--open", help="Also open the URL in the default browser.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS", min=1,
                                           help="How long to wait for the sign-in.")] = 300.0,
) -> None:
    """Sign in to an HTTP server with OAuth: prints the authorization URL, takes the redirect on 127.0.0.1 and
    stores the token under the home dir (mode 0600). Client-credentials and identity-assertion servers just get a
    token."""
    import asyncio
    import webbrowser

    from tooldeck.cli.table import clean
    from tooldeck.sources.mcp import NotNeeded, client_credentials_login, first_cause
    from tooldeck.sources.mcp import login as run_login

    plan = _plan(home, server)
    started()

    async def show(url: str) -> None:
        typer.echo(f"Open this URL in a browser to sign in to {server}:\n\n  {url}\n")
        typer.echo("Waiting for the sign-in (the browser is sent back to 127.0.0.1) ...")
        if open_browser:
            webbrowser.open(url)

    try:
        with _own_report():
            if plan.grant != "authorization_code":  # client credentials, identity assertion: no person
                state = asyncio.run(client_credentials_login(plan))
            else:
                state = asyncio.run(run_login(plan, show, timeout=timeout))
    except NotNeeded as exc:
        typer.echo(clean(f"{server}: no sign-in needed: {exc}", one_line=True))
        return
    except TimeoutError:
        typer.echo(f"error: mcp.login_failed: no sign-in within {timeout:g} s; run `tooldeck mcp login {server}` "
                   "again", err=True)
        raise typer.Exit(1) from None
    except Exception as exc:  # the flow's own errors, the server's, the network's; never a token in them
        cause = first_cause(exc)
        typer.echo(clean(f"error: mcp.login_failed: {server}: {type(cause).__name__}: {cause}", one_line=True),
                   err=True)
        raise typer.Exit(1) from None
    typer.echo(clean(f"{server}: {state.text()}; tokens in {plan.token_path}", one_line=True))


def logout(server: ServerArgument, home: HomeOption = DEFAULT_HOME) -> None:
    """Forget a server's OAuth tokens and client registration."""
    from tooldeck.sources.mcp import logout as run_logout

    plan = _plan(home, server)
    typer.echo(f"{server}: signed out" if run_logout(plan) else f"{server}: was not signed in")


def tools(
    server: ServerArgument,
    home: HomeOption = DEFAULT_HOME,
    as_json: JsonOption = False,
) -> None:
    """A server's tools: call name, permission, description (discovers the server first if it has no cached
    catalog)."""
    from tooldeck.cli.table import Column, render
    from tooldeck.cli.tools_cmd import summary
    from tooldeck.core.errors import TooldeckError

    manager = _require_manager(home)
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
    finally:
        manager.close()
    if as_json:
        print_json([t.to_dict() for t in infos])
        return
    columns = [Column("call name", "id"), Column("permission", "text", min_width=5),
               Column("pin", "text", min_width=5), Column("flags", "text", min_width=5),
               Column("description", "text", min_width=24), Column("native name", "id", drop=1),
               Column("tool id", "id", drop=2)]
    typer.echo(render(columns, [(t.model_name, t.permission, f"{t.pin}, withheld" if t.withheld else t.pin,
                                 ", ".join(sorted({f.kind for f in t.flags})) or "-", summary(t.description), t.name,
                                 t.tool_id) for t in infos]), nl=False)
    flagged = [t for t in infos if t.flags]
    if flagged:
        from tooldeck.cli.table import clean

        typer.echo("")
        typer.echo("Flagged descriptions (text that may be aimed at the model rather than the user):")
        for t in flagged:
            for finding in t.flags:
                typer.echo(clean(f"  {t.name}: {finding.text()}", one_line=True))


def refresh(
    server: Annotated[str | None, typer.Argument(metavar="[SERVER]",
                                                 help="One server; all unpaused servers when omitted.")] = None,
    home: HomeOption = DEFAULT_HOME,
    as_json: JsonOption = False,
) -> None:
    """Connect, list the tools again and rewrite the cached catalog. Exit code 1 when a server failed."""
    from tooldeck.core.errors import TooldeckError

    manager = _require_manager(home)
    try:
        with _own_report():
            reports = manager.refresh(server)
    except TooldeckError as exc:
        usage_errors(exc)
    finally:
        manager.close()
    if as_json:
        print_json([r.to_dict() for r in reports])
    else:
        from tooldeck.cli.table import clean

        def say(text: str) -> None:  # server names, messages and stderr lines are not ours: escape controls
            typer.echo(clean(text, one_line=False))

        for r in reports:
            if r.ok:
                change = "".join([f", +{len(r.added)}" if r.added else "", f", -{len(r.removed)}" if r.removed else ""])
                say(f"{r.name}: {r.tools} tools{change}")
            elif r.failure is not None:
                say(f"{r.name}: failed: {r.failure.summary} [{r.failure.code}]")
                for line in _failure_lines(r.failure):
                    say(line)
            else:
                say(f"{r.name}: failed: {r.error}")
            failure_code = r.failure.code if r.failure else None
            for d in r.diagnostics:
                if d.code != failure_code:  # the failure itself is printed above
                    say(f"  {d.code}: {d.message}")
    if any(not r.ok for r in reports):
        raise typer.Exit(1)


def diff(server: ServerArgument, home: HomeOption = DEFAULT_HOME, as_json: JsonOption = False) -> None:
    """The tools whose listed definition differs from the approved (first seen) one, field by field: old `-`, new
    `+`, invisible characters spelled out. Reads the cached catalog (run `tooldeck mcp refresh` first to re-list)."""
    from tooldeck.core.errors import TooldeckError

    manager = _require_manager(home)
    try:
        diffs = manager.diff(server)
    except TooldeckError as exc:
        usage_errors(exc)
    finally:
        manager.close()
    if as_json:
        print_json([d.to_dict() for d in diffs])
        return
    if not diffs:
        typer.echo(f"{server}: every listed tool matches its approved definition")
        return
    for d in diffs:
        for line in d.lines():
            typer.echo(line)
        if d.digest is not None:
            typer.echo(f"  approve exactly this: tooldeck mcp approve {server} {d.tool} --expect {d.digest}")
    every = " ".join(f"--expect {d.digest}" for d in diffs if d.digest is not None)
    typer.echo(f"\nApprove what is shown above with `tooldeck mcp approve {server} {every}` (every tool) or the "
               "line under a tool; without --expect, approve takes whatever the cached catalog holds then.")


def approve(
    server: ServerArgument,
    tool: Annotated[str | None, typer.Argument(metavar="[TOOL]", help="One tool's native name; every changed "
                                               "tool of the server when omitted.")] = None,
    home: HomeOption = DEFAULT_HOME,
    by: Annotated[str | None, typer.Option("--by", metavar="NAME", help="Who approves (recorded); the OS user "
                                           "by default.")] = None,
    expect: Annotated[list[str] | None, typer.Option(
        "--expect", metavar="DIGEST", help="The definition digest `tooldeck mcp diff` printed (repeat it for every "
        "tool when TOOL is omitted): refuse (mcp.pin_mismatch, nothing approved) if what would be approved now is "
        "not exactly what was reviewed.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Approve the listed definition of a tool (or of every changed tool): it becomes the pinned one, with who and
    when, and a pinned server offers the tool again."""
    import getpass
    import sqlite3

    from tooldeck.core.errors import TooldeckError
    from tooldeck.sources.mcp import errors

    who = by or _user(getpass)
    manager = _require_manager(home)
    try:
        approved = manager.approve(server, tool, who, expect or None)
    except TooldeckError as exc:
        if exc.code == errors.PIN_MISMATCH:  # not bad input: the server's definition moved under the user
            typer.echo(f"error: {exc.code}: {exc.message}", err=True)
            raise typer.Exit(1) from None
        usage_errors(exc)
    except sqlite3.Error as exc:
        typer.echo(f"error: mcp.pins_unavailable: {manager.servers.pin_store.path}: {exc}", err=True)
        raise typer.Exit(1) from None
    finally:
        manager.close()
    if as_json:
        print_json({"server": server, "approved": approved, "by": who})
    elif approved:
        typer.echo(f"{server}: approved {', '.join(approved)} (by {who})")
    else:
        typer.echo(f"{server}: nothing to approve; every listed tool matches its approved definition")


def _user(getpass: Any) -> str:
    try:
        return str(getpass.getuser())
    except Exception:  # no user name in the environment nor the password database
        return "unknown"


mcp_app.command("list")(list_servers)
mcp_app.command("tools")(tools)
mcp_app.command("refresh")(refresh)
mcp_app.command("diff")(diff)
mcp_app.command("approve")(approve)
mcp_app.command("login")(login)
mcp_app.command("logout")(logout)
