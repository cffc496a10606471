"""Checks of MCP configuration values (pure apart from the environment): `${VAR}` expansion, server
URLs, pydantic's complaints as `file: key: problem` text."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pydantic import ValidationError

from tooldeck.core.errors import TooldeckError
from tooldeck.naming import mcp_model_name
from tooldeck.policy.known_secrets import KNOWN
from tooldeck.sources.mcp.errors import CONFIG_ENV_MISSING, CONFIG_INVALID, McpConfigError

if TYPE_CHECKING:
    from tooldeck.sources.mcp.config import ServerConfig

_VAR = re.compile(r"\$\{(secret:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand(value: str, where: str, environ: Mapping[str, str] | None = None) -> str:
    """`${VAR}`, `${VAR:-default}` from the environment; `${secret:NAME}` (`:-default` too) from the secrets
    store, else the environment variable NAME (docs/configuration.md, Secrets). Every value taken from the
    environment or the store is a known secret from then on (policy/known_secrets.py); a default is not."""
    env = os.environ if environ is None else environ

    def sub(m: re.Match[str]) -> str:
        secret, name, default = m.group(1), m.group(2), m.group(3)
        if secret:
            from tooldeck.secrets.store import lookup  # only configs that name a secret open the store

            try:
                value = lookup(name)
            except TooldeckError as exc:  # the store cannot be read: say where it was needed
                raise McpConfigError(CONFIG_INVALID, f"{where}: secret {name}: {exc.message}") from None
            if value is not None:
                KNOWN.remember(name, value)
                return value
            if default is not None:
                return default
            raise McpConfigError(CONFIG_ENV_MISSING, f"{where}: secret {name} is not stored; store it with "
                                 f"`tooldeck secret set {name}` (or the store_secret tool), or set the "
                                 f"environment variable {name}")
        if name in env:
            KNOWN.remember_variable(name, env[name])
            return env[name]
        if default is not None:
            return default
        raise McpConfigError(CONFIG_ENV_MISSING, f"{where}: environment variable {name} is not set; set it, or "
                             f"write ${{{name}:-default}} to give a default")

    return _VAR.sub(sub, value)


def url_problem(url: str) -> str | None:
    """Why `url` cannot be an MCP server's address, or None: http(s), a host, a port in range, no
    whitespace or control characters (a URL with them fails only at connect time, far from its cause)."""
    if not re.match(r"^https?://", url, re.IGNORECASE):
        return "must start with http:// or https://"
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        return "holds whitespace or a control character; percent-encode it (a space is %20)"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # a bad port, an unclosed IPv6 bracket
        return f"is not a valid URL ({exc}); write it as http://host:port/path"
    if not parts.hostname:
        return "has no host; write it as http://host:port/path"
    if port == 0:
        return "has port 0; use the server's real port"
    import httpx2  # the MCP SDK's HTTP client, which will connect to it (only configs with a URL get here)

    try:
        httpx2.URL(url)
    except httpx2.InvalidURL as exc:  # a host name IDNA cannot encode, …
        return f"is not a valid URL ({exc}); write it as http://host:port/path"
    return None




def problems(exc: ValidationError, prefix: str) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        key = f"{prefix}.{loc}" if prefix and loc else prefix or loc or "(root)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key (check the spelling; see docs/mcp.md)"
        parts.append(f"`{key}`: {msg}")
    return "; ".join(parts)


def check_aliases(servers: Mapping[str, ServerConfig]) -> None:
    """Two servers must not build their call names from the same label: an alias may not repeat another
    server's alias or name (compared as call names compare, case-insensitively, `-` as `_`)."""
    seen: dict[str, ServerConfig] = {}
    for server in servers.values():
        key = mcp_model_name(server.label, "x").casefold().replace("-", "_")
        other = seen.get(key)
        if other is not None and (server.alias is not None or other.alias is not None):
            aliased = server if server.alias is not None else other
            raise McpConfigError(CONFIG_INVALID, f"{aliased.source}: the alias {aliased.alias!r} of server "
                                 f"{aliased.name!r} gives the same call names as server "
                                 f"{(other if aliased is server else server).name!r}; pick another alias")
        seen[key] = server
