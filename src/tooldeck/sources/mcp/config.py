"""MCP server configuration: `<home>/tooldeck.toml` (`[mcp]`, `[mcp.servers.NAME]`) and `<home>/mcp.json`
(the Claude Desktop / Cursor format `{"mcpServers": {...}}`).

Both files are read when present. A server named in both is merged: mcp.json gives the base and the
TOML entry overrides it key by key (so permissions can live in tooldeck.toml next to a shared
mcp.json). `${VAR}` and `${VAR:-default}` are expanded in `args`, `env` and `headers` when the server
is connected, never stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tooldeck.sources.mcp import config_entries as entries
from tooldeck.sources.mcp.config_checks import check_aliases, expand, problems, url_problem
from tooldeck.sources.mcp.errors import (
    CONFIG_ENDPOINT_CONFLICT,
    CONFIG_ENDPOINT_MISSING,
    CONFIG_INVALID,
    CONFIG_UNPARSABLE,
    CONFIG_UNREADABLE,
    McpConfigError,
)
from tooldeck.sources.mcp.oauth_config import OAuthPlan, OAuthSettings, oauth_plan

TOML_FILE = "tooldeck.toml"
JSON_FILE = "mcp.json"

Permission = Literal["off", "ask", "allow"]
Transport = Literal["stdio", "http", "sse"]
Names = Literal["prefixed", "original"]
NAMES_MODES: tuple[str, ...] = ("prefixed", "original")
ALIAS_MAX = 20
"""An alias is at most as long as the server part of a call name can be (naming.MCP_SERVER_SHARE)."""
_ALIAS = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?")

DEFAULT_CONNECT_TIMEOUT_S = 30.0
DEFAULT_CALL_TIMEOUT_S = 60.0



class ToolSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    permission: Permission | None = None
    timeout_s: float | None = Field(default=None, gt=0)


class ServerConfig(BaseModel):
    """One server. Exactly one of `command` (stdio) or `url` (streamable HTTP, or legacy HTTP+SSE)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    source: str = ""
    """The file(s) the entry came from, for error messages."""
    type: Transport | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    default_permission: Permission | None = None
    tools: dict[str, ToolSettings] = Field(default_factory=dict)
    connect_timeout_s: float = Field(default=DEFAULT_CONNECT_TIMEOUT_S, gt=0)
    call_timeout_s: float = Field(default=DEFAULT_CALL_TIMEOUT_S, gt=0)
    paused: bool = False
    protocol: Literal["auto", "legacy"] = "auto"
    """`auto` probes for the 2026 protocol and falls back to the initialize handshake; `legacy` forces it."""
    alias: str | None = None
    """The server part of its tools' call names (`mcp__<alias>__<tool>`) instead of the server's name."""
    pin: bool | None = None
    """Withhold a tool whose definition changed since it was approved (`pins.py`); None: `[mcp] pin`."""
    oauth: OAuthSettings = Field(default_factory=OAuthSettings)
    """OAuth for an HTTP server (`auth.py`): on unless `false` or the entry sends its own `Authorization`."""

    @field_validator("oauth", mode="before")
    @classmethod
    def _oauth_switch(cls, value: Any) -> Any:
        return {"enabled": value} if isinstance(value, bool) else value

    @property
    def uses_oauth(self) -> bool:
        """OAuth applies: an HTTP server, `oauth` not off, and no `Authorization` header of its own."""
        return (self.url is not None and self.oauth.enabled
                and not any(k.lower() == "authorization" for k in self.headers))

    @field_validator("alias")
    @classmethod
    def _alias_shape(cls, value: str | None) -> str | None:
        if value is not None and (len(value) > ALIAS_MAX or not _ALIAS.fullmatch(value)):
            raise ValueError(f"alias {value!r} must be 1-{ALIAS_MAX} letters, digits or inner `-` (it becomes the "
                             "server part of call names, mcp__<alias>__<tool>)")
        return value

    @property
    def label(self) -> str:
        """What its call names are built from: the alias, else the server's name."""
        return self.alias or self.name

    @field_validator("tools", mode="before")
    @classmethod
    def _tool_shorthand(cls, value: Any) -> Any:
        """`tools = { search = "ask" }` is short for `tools.search.permission = "ask"`."""
        if isinstance(value, Mapping):
            return {k: {"permission": v} if isinstance(v, str) else v for k, v in value.items()}
        return value

    @property
    def transport(self) -> Transport:
        if self.url is None:
            return "stdio"
        return "sse" if self.type == "sse" else "http"

    def endpoint(self) -> dict[str, Any]:
        """What identifies the server: command + args, or the URL (as written, before `${VAR}` expansion)."""
        if self.url is not None:
            return {"transport": self.transport, "url": self.url}
        return {"transport": "stdio", "command": self.command, "args": list(self.args)}

    def endpoint_key(self) -> str:
        text = json.dumps(self.endpoint(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def endpoint_text(self) -> str:
        if self.url is not None:
            return self.url
        return " ".join([self.command or "", *self.args]).strip()

    def call_timeout_for(self, tool: str) -> float:
        settings = self.tools.get(tool)
        return settings.timeout_s if settings is not None and settings.timeout_s else self.call_timeout_s


class McpConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    servers: dict[str, ServerConfig] = Field(default_factory=dict)
    connect: Literal["lazy", "start"] = "lazy"
    """`lazy`: connect on the first call (servers never discovered are still listed at start);
    `start`: connect every server in the background when the runtime opens."""
    default_permission: Permission = "allow"
    """The permission of a tool with no per-tool setting, unless its server sets `default_permission`."""
    startup_wait_s: float = Field(default=15.0, ge=0)
    """How long opening the runtime waits for the first discovery of servers with no cached catalog."""
    files: list[str] = Field(default_factory=list)
    names: Names = "prefixed"
    """Call names of MCP tools: `prefixed` (`mcp__<server>__<tool>`) or `original` (the upstream name where no
    other tool claims it, the prefixed name on a clash; decided in `catalog.bindings.prepare`)."""

    pin: bool = False
    """The default of every server's `pin`: a changed tool is not offered until re-approved."""

    def pinned(self, server: ServerConfig) -> bool:
        return self.pin if server.pin is None else server.pin

    def permission_for(self, server: ServerConfig, tool: str) -> Permission:
        settings = server.tools.get(tool)
        if settings is not None and settings.permission is not None:
            return settings.permission
        return server.default_permission or self.default_permission


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A server's connection parameters after `${VAR}` expansion (built at connect time)."""

    transport: Transport
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    oauth: OAuthPlan | None = None


def resolve_endpoint(server: ServerConfig, environ: Mapping[str, str] | None = None,
                     base_dir: Path | None = None) -> Endpoint:
    """Expand `${VAR}` in args, env, headers and cwd; a relative `cwd` is taken from `base_dir` (the home
    dir). Raises McpConfigError(mcp.config_env_missing)."""
    where = f"{server.source}: server {server.name!r}"
    if server.url is not None:
        headers = {k: expand(v, f"{where} headers.{k}", environ) for k, v in server.headers.items()}
        plan = oauth_plan(server, base_dir, environ) if base_dir is not None else None
        return Endpoint(server.transport, url=server.url, headers=headers, oauth=plan)
    args = [expand(a, f"{where} args[{i}]", environ) for i, a in enumerate(server.args)]
    env = {k: expand(v, f"{where} env.{k}", environ) for k, v in server.env.items()}
    cwd = None
    if server.cwd is not None:
        path = Path(os.path.expanduser(expand(server.cwd, f"{where} cwd", environ)))
        cwd = str(path if path.is_absolute() or base_dir is None else base_dir / path)
    return Endpoint("stdio", command=server.command, args=args, env=env, cwd=cwd)


# -- loading ----------------------------------------------------------------------------------------


def config_files(home: Path) -> list[Path]:
    return [p for p in (home / TOML_FILE, home / JSON_FILE) if p.is_file()]


def has_config(home: Path) -> bool:
    """True when either file declares at least the `[mcp]` table or `mcpServers` (cheap check)."""
    toml_path, json_path = home / TOML_FILE, home / JSON_FILE
    if json_path.is_file():
        return True
    if toml_path.is_file():
        try:
            return "mcp" in tomllib.loads(toml_path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            return True  # let load() report the problem with its code
    return False


def load(home: str | Path) -> McpConfig | None:
    """The MCP configuration of a home dir, or None when neither file declares MCP servers."""
    home = Path(home)
    toml_path, json_path = home / TOML_FILE, home / JSON_FILE
    top: dict[str, Any] = {}
    toml_servers: dict[str, Any] = {}
    json_servers: dict[str, Any] = {}
    files: list[str] = []
    if toml_path.is_file():
        data = _read_toml(toml_path)
        section = data.get("mcp")
        if section is not None:
            if not isinstance(section, dict):
                raise McpConfigError(CONFIG_INVALID, f"{toml_path}: `mcp` must be a table ([mcp])")
            top = dict(section)
            toml_servers = top.pop("servers", {}) or {}
            if not isinstance(toml_servers, dict):
                raise McpConfigError(CONFIG_INVALID, f"{toml_path}: `mcp.servers` must be a table of servers")
            files.append(str(toml_path))
    if json_path.is_file():
        data = _read_json(json_path)
        json_servers = entries.json_servers(json_path, data)
        files.append(str(json_path))
    if not files:
        return None

    servers: dict[str, ServerConfig] = {}
    for name in sorted(set(json_servers) | set(toml_servers)):
        raw: dict[str, Any] = {}
        sources: list[str] = []
        prefix = ""
        if name in json_servers:
            raw.update(entries.normalize_json_entry(json_path, name, json_servers[name]))
            sources.append(str(json_path))
            prefix = f"mcpServers.{name}"
        if name in toml_servers:
            entry = toml_servers[name]
            if not isinstance(entry, dict):
                raise McpConfigError(CONFIG_INVALID, f"{toml_path}: `mcp.servers.{name}` must be a table")
            entry = entries.normalize_type(toml_path, f"mcp.servers.{name}", dict(entry))
            tools = {**raw.get("tools", {}), **entry.pop("tools", {})} if "tools" in entry or "tools" in raw else None
            raw.update(entry)
            if tools is not None:
                raw["tools"] = tools
            sources.append(str(toml_path))
            prefix = f"mcp.servers.{name}"
        servers[name] = _server(name, raw, " + ".join(sources), prefix)
    check_aliases(servers)
    try:
        return McpConfig(servers=servers, files=files, **top)
    except ValidationError as exc:
        raise McpConfigError(CONFIG_INVALID, f"{toml_path}: {problems(exc, 'mcp')}") from exc


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError(CONFIG_UNREADABLE, f"cannot read {path}: {exc}") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise McpConfigError(CONFIG_UNPARSABLE, f"{path} is not valid TOML: {exc}") from exc


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError(CONFIG_UNREADABLE, f"cannot read {path}: {exc}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(CONFIG_UNPARSABLE, f"{path} is not valid JSON: {exc.msg} at line {exc.lineno} "
                             f"column {exc.colno}") from exc


def _server(name: str, raw: dict[str, Any], source: str, prefix: str) -> ServerConfig:
    if not name.strip() or any(ord(c) < 32 for c in name):
        raise McpConfigError(CONFIG_INVALID, f"{source}: server name {name!r} must be non-empty printable text")
    try:
        server = ServerConfig(name=name, source=source, **raw)
    except ValidationError as exc:
        raise McpConfigError(CONFIG_INVALID, f"{source}: {problems(exc, prefix)}") from exc
    except TypeError as exc:  # a key clashing with `name`/`source`
        raise McpConfigError(CONFIG_INVALID, f"{source}: `{prefix}`: {exc}") from exc
    if server.command is None and server.url is None:
        raise McpConfigError(CONFIG_ENDPOINT_MISSING, f"{source}: `{prefix}` has neither `command` (stdio) nor `url` "
                             "(streamable HTTP); add one")
    if server.command is not None and server.url is not None:
        raise McpConfigError(CONFIG_ENDPOINT_CONFLICT, f"{source}: `{prefix}` has both `command` and `url`; keep one")
    if server.type == "sse" and server.url is None:
        raise McpConfigError(CONFIG_INVALID, f"{source}: `{prefix}.type` is sse but the entry has no `url`")
    if server.type is not None and server.type != server.transport:
        raise McpConfigError(CONFIG_INVALID, f"{source}: `{prefix}.type` is {server.type} but the entry has "
                             f"{'`url`' if server.url else '`command`'}")
    if server.command is not None and not server.command.strip():
        raise McpConfigError(CONFIG_INVALID, f"{source}: `{prefix}.command` is empty")
    if server.url is not None:
        problem = url_problem(server.url)
        if problem is not None:
            raise McpConfigError(CONFIG_INVALID, f"{source}: `{prefix}.url` {problem}")
    return server
