"""Options and helpers shared by the CLI command modules."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tooldeck.core.errors import TooldeckError

HomeOption = Annotated[Path, typer.Option("--home", help="tooldeck home: workspaces, records, config.")]
DEFAULT_HOME = Path(".tooldeck")
ProviderOption = Annotated[str, typer.Option("--provider", help="openai | anthropic | gemini | bedrock | mistral")]
ProfileOption = Annotated[Path | None, typer.Option("--profile", help="A Profile file (TOML or JSON).")]


def fail_usage(message: str) -> None:
    """Bad CLI input: message on stderr, exit code 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def usage_errors(exc: TooldeckError) -> None:
    fail_usage(f"{exc.code}: {exc.message}")
