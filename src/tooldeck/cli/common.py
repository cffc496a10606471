"""Options and helpers shared by the CLI command modules.

Imports only typer and the standard library: every command module imports this at start-up, and the
runtime, the records store, the MCP SDK and the server stack are imported by the command that needs
them, when it runs.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

if TYPE_CHECKING:
    from tooldeck.core.errors import TooldeckError
    from tooldeck.runtime import Runtime

DEFAULT_HOME = Path(".tooldeck")
HomeOption = Annotated[Path, typer.Option("--home", metavar="DIR",
                                          help="tooldeck home: workspaces, records, config.")]
ProviderOption = Annotated[str, typer.Option("--provider", metavar="NAME",
                                             help="openai | anthropic | gemini | bedrock | mistral")]
ProfileOption = Annotated[Path | None, typer.Option("--profile", metavar="FILE",
                                                    help="A Profile file (TOML or JSON).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON (the shapes are in docs/cli.md).")]


class Loading(StrEnum):
    eager = "eager"
    deferred = "deferred"
    names_only = "names_only"


LoadingOption = Annotated[Loading | None, typer.Option(
    "--loading", metavar="MODE",
    help="eager (every schema in the tools array) | deferred (find_tools + run_tool) | names_only.")]


def cli_app(command: Callable[..., None] | None = None, **settings: Any) -> typer.Typer:
    """A typer app as every tooldeck command is built: plain help (no rich: it fits 80 columns and
    costs no start-up), no completion commands, tracebacks as Python prints them. With `command`,
    an app of that one command (what `app.py` loads on demand)."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None, **settings)
    if command is not None:
        app.command()(command)
    return app


def fail_usage(message: str) -> NoReturn:
    """Bad CLI input: message on stderr, exit code 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def usage_errors(exc: TooldeckError) -> NoReturn:
    fail_usage(f"{exc.code}: {exc.message}")


def started() -> None:
    """The command has imported what it needs and opened its runtime, store or manager: the cyclic GC,
    off during start-up (`app.main`), is on again for the work itself."""
    gc.enable()


def open_runtime(home: Path, profile: Path | None, *, records: bool = True,
                 loading: Loading | None = None) -> Runtime:
    """The home's Runtime; a bad Profile or config is a usage error."""
    from tooldeck.core.errors import TooldeckError
    from tooldeck.runtime import Runtime

    try:
        runtime = with_loading(Runtime(home, profile=profile, records=records), loading)
    except TooldeckError as exc:
        usage_errors(exc)
    started()
    return runtime


def with_loading(runtime: Runtime, loading: Loading | None) -> Runtime:
    """Apply a `--loading` flag on top of the runtime's Profile."""
    if loading is not None:
        runtime.profile = runtime.profile.replace(loading=loading.value)
    return runtime


def print_json(value: Any) -> None:
    """Indented JSON of recorded values: orjson, or Python's encoder for what orjson cannot write (integers
    beyond 64 bits, lone surrogates as `\\udXXX` escapes); raw arguments no JSON text holds as their
    record form."""
    import orjson

    try:
        text = orjson.dumps(value, option=orjson.OPT_INDENT_2, default=_json_default).decode()
    except TypeError:
        import json

        text = json.dumps(value, indent=2, default=_json_default)
    sys.stdout.write(text + "\n")


def _json_default(value: object) -> object:
    from tooldeck.core.rawvalue import RawObject

    return value.to_record() if isinstance(value, RawObject) else repr(value)
