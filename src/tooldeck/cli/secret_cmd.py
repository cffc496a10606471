"""`tooldeck secret set NAME | list | remove NAME`: the secrets store by hand (docs/configuration.md,
Secrets). `set` reads the value without echoing it from the terminal, or from stdin when it is piped
(`printf %s "$TOKEN" | tooldeck secret set GITHUB_TOKEN`); values are never printed. The store is the
user's, not the home's, so these commands take no --home."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from tooldeck.cli.common import cli_app, fail_usage, started

if TYPE_CHECKING:
    from tooldeck.secrets import SecretStore

secret_app = cli_app(name="secret", no_args_is_help=True,
                     help="Secrets configs refer to as ${secret:NAME}: set, list, remove (values are never shown).")
NameArgument = Annotated[str, typer.Argument(metavar="NAME", help="The secret's name, e.g. GITHUB_TOKEN.")]


def _store() -> SecretStore:
    from tooldeck.core.errors import TooldeckError
    from tooldeck.secrets import SecretStore

    try:
        store = SecretStore()
    except TooldeckError as exc:
        fail_usage(f"{exc.code}: {exc.message}")
    started()
    return store


def _checked(name: str) -> str:
    from tooldeck.secrets import name_problem

    problem = name_problem(name)
    if problem is not None:
        fail_usage(f"secret.invalid_name: {problem}")
    return name


@secret_app.command("set")
def set_secret(name: NameArgument) -> None:
    """Store NAME: typed without echo at a terminal, else read from stdin (a trailing newline is dropped)."""
    import getpass

    from tooldeck.core.errors import TooldeckError

    _checked(name)
    if sys.stdin.isatty():
        value = getpass.getpass(f"{name} (not echoed): ")
    else:
        value = sys.stdin.read()
        value = value[:-1] if value.endswith("\n") else value
        value = value[:-1] if value.endswith("\r") else value
    if not value.strip():
        fail_usage(f"secret.empty: {name} is empty; nothing was stored")
    store = _store()
    try:
        store.set(name, value)
    except TooldeckError as exc:
        fail_usage(f"{exc.code}: {exc.message}")
    typer.echo(f"stored {name} ({store.backend})")


@secret_app.command("list")
def list_secrets() -> None:
    """The names of the stored secrets, one a line."""
    from tooldeck.core.errors import TooldeckError

    store = _store()
    try:
        names = store.names()
    except TooldeckError as exc:
        fail_usage(f"{exc.code}: {exc.message}")
    for name in names:
        typer.echo(name)


@secret_app.command("remove")
def remove_secret(name: NameArgument) -> None:
    """Forget NAME."""
    from tooldeck.core.errors import TooldeckError

    _checked(name)
    store = _store()
    try:
        removed = store.delete(name)
    except TooldeckError as exc:
        fail_usage(f"{exc.code}: {exc.message}")
    if not removed:
        fail_usage(f"secret.missing: no secret {name} is stored")
    typer.echo(f"removed {name}")
