"""The root `tooldeck` command."""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="tooldeck: the tool runtime for LLM agents.")


def _register() -> None:
    from tooldeck.cli import mcp_cmd, records_cmd, serve_cmd, tools_cmd

    for module in (tools_cmd, serve_cmd, records_cmd, mcp_cmd):
        module.register(app)


_register()


def main() -> None:
    app()
