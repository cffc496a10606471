"""The `[serve]` table of `<home>/tooldeck.toml`: the bearer token (with `${VAR}` expansion so the secret can
stay in the environment) and the bounds that keep `tooldeck serve --http` answering under hostile or broken
clients. Every key, its default and what happens at the bound is in docs/serve.md ("Limits and hostile
clients"). Unknown keys and out-of-range values are `serve.config_invalid` (exit 2), naming the key.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tooldeck.core.errors import TooldeckError
from tooldeck.sources.mcp.config import expand

CONFIG_FILE = "tooldeck.toml"
CONFIG_INVALID = "serve.config_invalid"
MIB = 1024 * 1024
DEFAULT_MAX_LINE_BYTES = 64 * MIB
"""`max_line_bytes`: the longest line (one JSON-RPC message) a `--stdio` client may send."""


class ServeConfig(BaseModel):
    """`[serve]` settings. Times are seconds; sizes are bytes."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    token: str | None = None
    """Require `Authorization: Bearer TOKEN` on every HTTP request (`--token` / TOOLDECK_TOKEN win)."""
    header_timeout: float = Field(10.0, gt=0, le=3600)
    """From a connection's opening (or the first byte of its next request) to the end of the request headers."""
    body_timeout: float = Field(30.0, gt=0, le=3600)
    """From the end of the headers to the end of the request body."""
    keep_alive_timeout: float = Field(5.0, gt=0, le=3600)
    """An idle connection between two requests is closed after this long."""
    max_connections: int = Field(512, ge=1, le=1_000_000)
    """Open HTTP connections; never more than the process's open-file limit allows (docs/serve.md)."""
    max_header_bytes: int = Field(16 * 1024, ge=1024, le=MIB)
    """Request line plus headers."""
    max_body_bytes: int = Field(4 * MIB, ge=1024, le=1024 * MIB)
    """One request body."""
    max_line_bytes: int = Field(DEFAULT_MAX_LINE_BYTES, ge=1024, le=1024 * MIB)
    """One line (one JSON-RPC message) a `--stdio` client sends."""
    max_sessions: int = Field(256, ge=1, le=1_000_000)
    """Open MCP sessions (handshake-era HTTP clients); at the cap the least recently used idle one is closed."""
    session_idle_timeout: float = Field(30 * 60.0, gt=0, le=7 * 24 * 3600)
    """An MCP session with no request in flight (and no open stream) for this long is closed."""


def load_serve_config(home: Path, *, with_token: bool = True) -> ServeConfig:
    """The `[serve]` table of the home's tooldeck.toml (defaults when the file or the table is absent). Without
    `with_token` (`--stdio`, which takes no token) the token is left out, unexpanded: a `${VAR}` that is not set
    is no error there."""
    path = home / CONFIG_FILE
    if not path.is_file():
        return ServeConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise TooldeckError(CONFIG_INVALID, f"cannot read {path}: {exc}") from exc
    serve = data.get("serve", {})
    if not isinstance(serve, dict):
        raise TooldeckError(CONFIG_INVALID, f"{path}: `serve` must be a table ([serve])")
    token = serve.get("token") if with_token else None
    if token is not None:
        if not isinstance(token, str) or not token.strip():
            raise TooldeckError(CONFIG_INVALID, f"{path}: serve.token must be a non-empty string")
        try:
            token = expand(token, f"{path}: serve.token") or None
        except TooldeckError as exc:
            raise TooldeckError(CONFIG_INVALID, exc.message) from exc
    try:
        return ServeConfig.model_validate({**serve, "token": token})
    except ValidationError as exc:
        raise TooldeckError(CONFIG_INVALID, f"{path}: {_problems(exc)}") from exc


def _problems(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        key = "serve." + ".".join(str(p) for p in err["loc"])
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            known = ", ".join(k for k in ServeConfig.model_fields if k != "token")
            msg = f"unknown key (the [serve] keys are token, {known}; see docs/serve.md)"
        parts.append(f"`{key}`: {msg}")
    return "; ".join(parts)
