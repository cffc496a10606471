"""`tooldeck serve`: the Runtime's tools as an MCP server, over streamable HTTP (default) or stdio.

The server stack (the MCP SDK, uvicorn, starlette) is imported when `serve` runs, never by the other
commands. SIGTERM stops the server as Ctrl-C does: open streams get their grace period, the runtime is
closed (records, MCP server processes), and the exit code is 0, without a traceback, so `make run`
ends quietly under a process manager or `kill`.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, cast

import typer

from tooldeck.cli.common import (
    DEFAULT_HOME,
    HomeOption,
    Loading,
    LoadingOption,
    ProfileOption,
    cli_app,
    fail_usage,
    started,
    usage_errors,
    with_loading,
)

if TYPE_CHECKING:
    from tooldeck.server.address import HttpAddress
    from tooldeck.server.mcp_server import TooldeckMCPServer

TOKEN_ENV = "TOOLDECK_TOKEN"
SCENES = ("chat", "session")
LOG_LEVELS = ("debug", "info", "warning", "error")
NAMES_MODES = ("prefixed", "original")
"""`sources.mcp.config.NAMES_MODES`, named here so that a usage error needs no MCP import."""
NAMES_INVALID = "serve.names_invalid"


def serve(
    home: HomeOption = DEFAULT_HOME,
    stdio: Annotated[bool, typer.Option("--stdio", help="Speak MCP on stdin/stdout (for a client that spawns "
                                                        "tooldeck).")] = False,
    http: Annotated[str | None, typer.Option("--http", metavar="HOST:PORT",
                                             help="Streamable HTTP address (the default transport). Port 0 or no "
                                                  "port: 8808 when free, else any free port.")] = None,
    profile: ProfileOption = None,
    token: Annotated[str | None, typer.Option("--token", metavar="TOKEN", envvar=TOKEN_ENV, show_envvar=True,
                                              help="Require `Authorization: Bearer TOKEN` on HTTP requests.")] = None,
    allow_host: Annotated[list[str] | None, typer.Option("--allow-host", metavar="NAME",
                                                         help="Accept this Host name besides loopback (repeatable; "
                                                              "'*' turns the Host check off).")] = None,
    allow_origin: Annotated[list[str] | None, typer.Option("--allow-origin", metavar="ORIGIN",
                                                           help="Accept this browser Origin besides loopback, e.g. "
                                                                "https://app.example (repeatable).")] = None,
    loading: LoadingOption = None,
    connect: Annotated[str | None, typer.Option(
        "--connect", metavar="WHEN", help="lazy | start: connect MCP servers on their first call (lazy) or now "
                                          "(start); default: `connect` in tooldeck.toml, else lazy.")] = None,
    names: Annotated[str | None, typer.Option(
        "--names", metavar="MODE", help="prefixed | original: call names of proxied MCP tools, mcp__<server>__<tool> "
                                        "(prefixed) or the upstream name where unique (original); default: `names` "
                                        "in the [mcp] table of tooldeck.toml, else prefixed.")] = None,
    scene: Annotated[str, typer.Option("--scene", metavar="SCENE",
                                       help="chat | session: which scene's tools to offer.")] = "session",
    records: Annotated[bool, typer.Option("--records/--no-records",
                                          help="Record every call in <home>/records.sqlite (replayable audit).")]
    = True,
    log_level: Annotated[str, typer.Option("--log-level", metavar="LEVEL",
                                           help="debug | info | warning | error (on stderr).")] = "warning",
    schedules: Annotated[bool, typer.Option("--schedules/--no-schedules",
                                            help="Run the home's due schedules while serving (docs/schedules.md).")]
    = True,
) -> None:
    """Serve the tools of the snapshot as an MCP server; every call goes through the gate. Ctrl-C or SIGTERM
    stops it (exit 0)."""
    # KeyboardInterrupt here: Ctrl-C or SIGTERM before the server ran (while importing, opening the home)
    with _stop_on_sigterm(), contextlib.suppress(KeyboardInterrupt):
        _serve(home, stdio, http, profile, token, allow_host, allow_origin, loading, connect, scene, records,
               log_level, names, schedules)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """Do what Ctrl-C does now: asyncio's runner, while it runs, holds SIGINT and cancels its main task (the
    stdio server then ends its session in order); raising KeyboardInterrupt here instead would land in
    whatever task the loop was running and end the serve with an "unhandled exception" traceback."""
    on_sigint = signal.getsignal(signal.SIGINT)
    if callable(on_sigint):
        on_sigint(signal.SIGINT, frame)
        return
    raise KeyboardInterrupt  # SIGINT ignored (a background job of a shell): SIGTERM still stops the server


class _StartingSigterm:
    """A SIGTERM while serve starts (imports, opening the home) is kept until start-up is over: raised there, the
    KeyboardInterrupt could land inside a library building its models (pydantic turns it into a SchemaError) and
    end the serve with a traceback and exit 1 instead of quietly."""

    asked = False

    @classmethod
    def keep(cls, signum: int, frame: FrameType | None) -> None:
        cls.asked = True


def _sigterm_stops_now() -> None:
    """Start-up is over: a SIGTERM kept during it stops the serve now (exit 0), a later one at once."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    if _StartingSigterm.asked:
        raise KeyboardInterrupt


@contextlib.contextmanager
def _stop_on_sigterm() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt, as Ctrl-C does, so both take the same way out (kept until start-up is
    over: `_StartingSigterm`). uvicorn replaces the handler while it serves and, after its graceful shutdown,
    raises the signal again: it lands here."""
    _StartingSigterm.asked = False
    previous = signal.signal(signal.SIGTERM, _StartingSigterm.keep)
    # A background job of a non-interactive shell starts with SIGINT ignored; asyncio's runner then leaves
    # SIGINT alone and SIGTERM would have no orderly path. Serve takes Ctrl-C as its documented stop.
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def _serve(home: Path, stdio: bool, http: str | None, profile: Path | None, token: str | None,
           allow_host: list[str] | None, allow_origin: list[str] | None, loading: Loading | None,
           connect: str | None, scene: str, records: bool, log_level: str, names: str | None = None,
           schedules: bool = True) -> None:

    from tooldeck.core.descriptors import Scene
    from tooldeck.core.errors import TooldeckError
    from tooldeck.runtime import Runtime
    from tooldeck.server.config import load_serve_config
    from tooldeck.server.mcp_server import ServeOptions, TooldeckMCPServer

    if connect not in (None, "lazy", "start"):
        fail_usage(f"--connect must be lazy or start, not {connect!r}")
    if names not in (None, *NAMES_MODES):
        fail_usage(f"{NAMES_INVALID}: --names must be prefixed or original, not {names!r} (see docs/serve.md)")
    try:  # the bounds, and over HTTP (the default transport) the token, may come from tooldeck.toml
        settings = load_serve_config(Path(home), with_token=not stdio)
    except TooldeckError as exc:
        usage_errors(exc)
    if not stdio:
        token = token or settings.token
    address = _check_usage(stdio, http, scene, log_level, bool(token or allow_host or allow_origin))
    logging.basicConfig(level=log_level.upper(), stream=sys.stderr, format="tooldeck serve: %(levelname)s %(message)s")
    try:
        runtime = Runtime(Path(home), profile=profile, records=records)
        if loading is None and "loading" not in runtime.profile.fields_set:
            # A gateway's tool list should not change under its clients: serve defers schemas unless told.
            loading = Loading.deferred
        runtime = with_loading(runtime, loading)
        if names is not None and runtime.mcp is not None and names != runtime.mcp.config.names:
            runtime.mcp.config = runtime.mcp.config.model_copy(update={"names": names})
        if connect is not None and runtime.mcp is not None:
            runtime.mcp.config = runtime.mcp.config.model_copy(update={"connect": connect})
            if connect == "start":
                runtime.mcp.start()  # connects and re-lists every server in the background
    except TooldeckError as exc:
        usage_errors(exc)
    started()
    mcp = TooldeckMCPServer(runtime, ServeOptions(scene=cast(Scene, scene), limits=settings))
    try:
        _sigterm_stops_now()
        if address is None:
            typer.echo(f"tooldeck serving MCP on stdio (home {runtime.home})", err=True)
            mcp.run_stdio_blocking(schedules=schedules)
        else:
            _serve_http(mcp, address, allow_host or [], allow_origin or [], token, schedules)
    except KeyboardInterrupt:
        pass
    finally:
        runtime.close()


def _check_usage(stdio: bool, http: str | None, scene: str, log_level: str, http_only: bool) -> HttpAddress | None:
    """The HTTP address to serve on (None for stdio); bad combinations are usage errors (exit 2)."""
    from tooldeck.core.errors import TooldeckError
    from tooldeck.server.address import DEFAULT_HOST, HttpAddress, parse_http_address

    if stdio and http is not None:
        fail_usage("--stdio and --http exclude each other; pick one transport")
    if scene not in SCENES:
        fail_usage(f"--scene {scene!r} is not a scene; expected chat or session")
    if log_level.lower() not in LOG_LEVELS:
        fail_usage(f"--log-level {log_level!r} is not a level; expected one of {', '.join(LOG_LEVELS)}")
    if stdio:
        if http_only:
            fail_usage("--token, --allow-host and --allow-origin apply to --http only; stdio has no network peer")
        return None
    if http is None:
        return HttpAddress(DEFAULT_HOST, 0)
    try:
        return parse_http_address(http)
    except TooldeckError as exc:
        usage_errors(exc)
        raise


def _serve_http(mcp: TooldeckMCPServer, address: HttpAddress, hosts: list[str], origins: list[str],
                token: str | None, schedules: bool = True) -> None:
    from tooldeck.core.errors import TooldeckError
    from tooldeck.server.address import bind_socket
    from tooldeck.server.security import HttpGuard, is_loopback

    guard = HttpGuard.build(address.host, hosts, origins, token)
    try:
        sock = bind_socket(address)
    except TooldeckError as exc:
        typer.echo(f"error: {exc.code}: {exc.message}", err=True)
        raise typer.Exit(1) from exc
    url = address.url(sock.getsockname()[1])
    if not guard.token and not is_loopback(address.host.strip("[]").lower()):
        typer.echo(f"warning: listening on {address.host} without a token: anyone who reaches this port can call "
                   "these tools. Set TOOLDECK_TOKEN (or --token).", err=True)

    def ready() -> None:
        auth = " (bearer token required)" if guard.token else ""
        print(f"tooldeck serving MCP on {url}{auth}", flush=True)
        print(f"home {mcp.runtime.home}; stop with Ctrl-C", file=sys.stderr, flush=True)

    try:
        mcp.serve_http_blocking(sock, guard, ready, schedules=schedules)
    finally:
        sock.close()


serve_app = cli_app(serve)
