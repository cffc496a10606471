"""The root `tooldeck` command.

Start-up is part of the CLI's interface (`tooldeck call` runs in a few hundred milliseconds, see
docs/cli.md): the command modules import only typer and the standard library, and each command
imports what it needs (the runtime, the records store, the MCP SDK, the server stack) when it runs.
Help is typer's plain formatter: it fits 80 columns and needs no rich.
"""

from __future__ import annotations

from typing import Annotated

import typer

from tooldeck.cli import mcp_cmd, records_cmd, serve_cmd, tools_cmd

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
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


for _module in (tools_cmd, serve_cmd, records_cmd, mcp_cmd):
    _module.register(app)


def main() -> None:
    app()
