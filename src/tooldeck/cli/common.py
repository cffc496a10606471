"""Options and helpers shared by the CLI command modules."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from tooldeck.core.errors import TooldeckError
from tooldeck.runtime import Runtime

HomeOption = Annotated[Path, typer.Option("--home", help="tooldeck home: workspaces, records, config.")]
DEFAULT_HOME = Path(".tooldeck")
ProviderOption = Annotated[str, typer.Option("--provider", help="openai | anthropic | gemini | bedrock | mistral")]
ProfileOption = Annotated[Path | None, typer.Option("--profile", help="A Profile file (TOML or JSON).")]


class Loading(StrEnum):
    eager = "eager"
    deferred = "deferred"
    names_only = "names_only"


LoadingOption = Annotated[Loading | None, typer.Option(
    "--loading", help="eager: every schema in the tools array; deferred: find_tools + run_tool; names_only.")]


def fail_usage(message: str) -> None:
    """Bad CLI input: message on stderr, exit code 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def usage_errors(exc: TooldeckError) -> None:
    fail_usage(f"{exc.code}: {exc.message}")


def with_loading(runtime: Runtime, loading: Loading | None) -> Runtime:
    """Apply a `--loading` flag on top of the runtime's Profile."""
    if loading is not None:
        runtime.profile = runtime.profile.model_copy(update={"loading": loading.value})
    return runtime
