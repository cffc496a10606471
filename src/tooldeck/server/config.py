"""The `[serve]` table of `<home>/tooldeck.toml`: settings for `tooldeck serve` that a command line
would otherwise repeat (today: the bearer token, with `${VAR}` expansion so the secret can stay in
the environment)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tooldeck.core.errors import TooldeckError
from tooldeck.sources.mcp.config import expand

CONFIG_FILE = "tooldeck.toml"
CONFIG_INVALID = "serve.config_invalid"


def configured_token(home: Path) -> str | None:
    """`[serve] token = "..."` (or `"${TOOLDECK_TOKEN}"`) from the home's tooldeck.toml, if set."""
    path = home / CONFIG_FILE
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise TooldeckError(CONFIG_INVALID, f"cannot read {path}: {exc}") from exc
    serve = data.get("serve", {})
    if not isinstance(serve, dict):
        raise TooldeckError(CONFIG_INVALID, f"{path}: `serve` must be a table ([serve])")
    token = serve.get("token")
    if token is None:
        return None
    if not isinstance(token, str) or not token.strip():
        raise TooldeckError(CONFIG_INVALID, f"{path}: serve.token must be a non-empty string")
    try:
        value = expand(token, f"{path}: serve.token")
    except TooldeckError as exc:
        raise TooldeckError(CONFIG_INVALID, exc.message) from exc
    return value or None
