"""The root `tooldeck` command.

Start-up is part of the CLI's interface (`tooldeck call` in a few hundred milliseconds, docs/cli.md):
the root group loads a command's module only when that command runs (or `--help` lists them all),
the command modules import only typer and the standard library, and each command imports what it
needs (the runtime, the records store, the MCP SDK, the server stack) when it runs.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import sys
import threading
from typing import TYPE_CHECKING, Annotated

import typer
from typer.core import TyperGroup

from tooldeck.cli.common import cli_app

if TYPE_CHECKING:
    from typer._click import Command, Context  # typer 0.26+ vendors click

# command name -> (module in tooldeck.cli, the typer app in it that holds the command or group)
COMMANDS = {
    "tools": ("tools_cmd", "tools_app"),
    "call": ("tools_cmd", "call_app"),
    "serve": ("serve_cmd", "serve_app"),
    "records": ("records_cmd", "records_app"),
    "replay": ("records_cmd", "replay_app"),
    "mcp": ("mcp_cmd", "mcp_app"),
    "run": ("run_cmd", "run_app"),
    "secret": ("secret_cmd", "secret_app"),
    "schedules": ("schedules_cmd", "schedules_app"),
    "chat": ("chat_cmd", "chat_app"),
    "approvals": ("approvals_cmd", "approvals_app"),
}


class LazyGroup(TyperGroup):
    """Builds a command from its module the first time it is looked up."""

    def list_commands(self, ctx: Context) -> list[str]:
        return [*COMMANDS, *(name for name in self.commands if name not in COMMANDS)]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module_name, attr = COMMANDS[cmd_name]
            module = importlib.import_module(f"tooldeck.cli.{module_name}")
            command = typer.main.get_command(getattr(module, attr))
            command.name = cmd_name
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)


app = cli_app(cls=LazyGroup, no_args_is_help=True,
              help="tooldeck: the tool runtime for LLM agents. Every command but --version takes --home DIR "
                   "(default: ./.tooldeck).")


def _print_version(value: bool) -> None:
    if value:
        from tooldeck import __version__

        typer.echo(f"tooldeck {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """The root options."""


def main() -> None:
    """The `tooldeck` console script. The cyclic GC is off while the command imports what it needs (its
    passes over the objects that pydantic and the runtime build at import cost 5-7 % of start-up): the
    command turns it back on (`common.started`) once its runtime, store or manager is open, before
    any tool runs. Then it leaves without tearing the interpreter down (`_exit`)."""
    gc.disable()
    try:
        app()
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    _exit(code)


def _exit(code: object) -> None:
    """Exit as `sys.exit(code)` would, but skip the interpreter's teardown (freeing every module and
    object: 45-60 ms here, a fifth of `tooldeck call`) once nothing is left that it would do for us: the
    command has closed what it opened, the atexit handlers (logging, weakref finalizers, the MCP
    manager's close) run here, and the output is flushed. With another thread still alive, the normal
    exit joins it."""
    if isinstance(code, str):
        sys.stderr.write(code + "\n")
        code = 1
    status = 0 if code is None else code if isinstance(code, int) else 1
    if threading.active_count() > 1:
        sys.exit(status)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`tooldeck tools | head`) or stream: nothing more to say
            status = status or 1
    os._exit(status)
