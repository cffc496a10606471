"""HTTP request checks for `tooldeck serve --http`: Host and Origin (DNS-rebinding protection, as the
MCP transport spec asks) and an optional bearer token. One ASGI middleware in front of the MCP app.

Refusals are small JSON bodies `{"error": {"code": ..., "message": ...}}` with stable codes:
`serve.host_not_allowed` (421), `serve.origin_not_allowed` (403), `serve.unauthorized` (401).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

logger = logging.getLogger("tooldeck.serve")

LOOPBACK_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")
HOST_NOT_ALLOWED = "serve.host_not_allowed"
ORIGIN_NOT_ALLOWED = "serve.origin_not_allowed"
UNAUTHORIZED = "serve.unauthorized"


def host_name(value: str) -> str | None:
    """The host part of a `Host` header value (`name`, `name:port`, `[v6]`, `[v6]:port`), lower-cased."""
    value = value.strip().lower()
    if not value:
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        rest = value[end + 1:]
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return None
        return value[1:end]
    name, sep, port = value.rpartition(":")
    if sep and port.isdigit() and ":" not in name:
        return name or None
    return None if sep and ":" not in name else value


def is_loopback(name: str) -> bool:
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class HttpGuard:
    """What the HTTP transport accepts. Loopback hosts and origins are always allowed."""

    allowed_hosts: frozenset[str] = frozenset()
    """Extra `Host` names (no port), lower-case; `*` allows any host (turns the Host check off)."""
    allowed_origins: frozenset[str] = frozenset()
    """Extra origins (`scheme://host[:port]`), lower-case; `*` allows any origin."""
    token: str | None = field(default=None, repr=False)

    @classmethod
    def build(cls, bind_host: str, hosts: Iterable[str] = (), origins: Iterable[str] = (),
              token: str | None = None) -> HttpGuard:
        extra = {h.strip().lower().strip("[]") for h in hosts if h.strip()}
        bind = bind_host.strip().lower().strip("[]")
        if bind not in ("0.0.0.0", "::", "") and not is_loopback(bind):
            extra.add(bind)  # the address the server was told to listen on is a host clients will use
        return cls(frozenset(extra), frozenset(o.strip().lower().rstrip("/") for o in origins if o.strip()),
                   token or None)

    def host_ok(self, header: str | None) -> bool:
        if "*" in self.allowed_hosts:
            return True
        name = host_name(header or "")
        return name is not None and (is_loopback(name) or name in self.allowed_hosts)

    def origin_ok(self, header: str | None) -> bool:
        if header is None:
            return True  # not a browser request: nothing to rebind
        origin = header.strip().lower().rstrip("/")
        if "*" in self.allowed_origins or origin in self.allowed_origins:
            return True
        try:
            parts = urlsplit(origin)
            name = parts.hostname
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and name is not None and is_loopback(name)

    def token_ok(self, header: str | None) -> bool:
        if self.token is None:
            return True
        if not header:
            return False
        scheme, _, value = header.strip().partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token.encode())

    def refusal(self, headers: dict[str, str]) -> tuple[int, str, str] | None:
        """(status, code, message) for a request to refuse, or None to let it through."""
        if not self.host_ok(headers.get("host")):
            return (421, HOST_NOT_ALLOWED,
                    f"Host {headers.get('host')!r} is not allowed. tooldeck serve accepts loopback hosts only; "
                    "start it with --allow-host NAME to accept another name.")
        if not self.origin_ok(headers.get("origin")):
            return (403, ORIGIN_NOT_ALLOWED,
                    f"Origin {headers.get('origin')!r} is not allowed. tooldeck serve accepts loopback origins "
                    "only; start it with --allow-origin ORIGIN to accept another one.")
        if not self.token_ok(headers.get("authorization")):
            return (401, UNAUTHORIZED,
                    "Missing or wrong bearer token. Send `Authorization: Bearer <token>` with the token the server "
                    "was started with (--token or TOOLDECK_TOKEN).")
        return None


class GuardMiddleware:
    """ASGI middleware: refuse what `HttpGuard` refuses; report `DELETE`d MCP sessions to `on_session_end`."""

    def __init__(self, app: ASGIApp, guard: HttpGuard,
                 on_session_end: Callable[[str], Awaitable[None] | None] | None = None) -> None:
        self.app = app
        self.guard = guard
        self.on_session_end = on_session_end

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        refused = self.guard.refusal(headers)
        if refused is not None:
            status, code, message = refused
            logger.warning("refused %s %s: %s", scope.get("method"), scope.get("path"), code)
            extra = [(b"www-authenticate", b'Bearer realm="tooldeck"')] if status == 401 else []
            body = orjson.dumps({"error": {"code": code, "message": message}})
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode()), *extra]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)
        session_id = headers.get("mcp-session-id")
        if scope.get("method") == "DELETE" and session_id and self.on_session_end is not None:
            done = self.on_session_end(session_id)
            if done is not None:
                await done
