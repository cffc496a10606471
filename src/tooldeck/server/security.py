"""HTTP request checks for `tooldeck serve --http`: one value per header that decides something, a request
target that names this server, Host and Origin (DNS-rebinding protection, as the MCP transport spec asks)
and an optional bearer token. Pure rules; `gateway.py` applies them in front of the MCP app.

A request is judged on exactly what it says, once: a header that decides something (Host, Origin,
Authorization, the MCP session and version headers, the body framing) may appear only once, so no two
readers (this guard, the SDK, a proxy) can pick different copies; an Origin must be one serialized origin;
an absolute-form target must name the same authority as Host. Refusals carry stable codes:

| status | code |
| --- | --- |
| 400 | `serve.header_duplicated`, `serve.header_invalid`, `serve.request_target_invalid` |
| 421 | `serve.host_not_allowed` |
| 403 | `serve.origin_not_allowed` |
| 401 | `serve.unauthorized` |
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

LOOPBACK_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")
HOST_NOT_ALLOWED = "serve.host_not_allowed"
ORIGIN_NOT_ALLOWED = "serve.origin_not_allowed"
UNAUTHORIZED = "serve.unauthorized"
HEADER_DUPLICATED = "serve.header_duplicated"
HEADER_INVALID = "serve.header_invalid"
TARGET_INVALID = "serve.request_target_invalid"

SINGLE_VALUED: frozenset[bytes] = frozenset({
    b"host", b"origin", b"authorization", b"content-type", b"content-length", b"transfer-encoding",
    b"mcp-session-id", b"mcp-protocol-version", b"mcp-method", b"mcp-name", b"last-event-id",
})
"""Headers whose value decides something here or in the SDK; a second copy is refused, never merged."""

_HOST = re.compile(r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9._-]+))(?::(?P<port>[0-9]{1,5}))?")
_ORIGIN = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*)://(?P<host>\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::[0-9]{1,5})?")


class Refusal(NamedTuple):
    status: int
    code: str
    message: str


def host_name(value: str) -> str | None:
    """The host part of a `Host` header value (`name`, `name:port`, `[v6]`, `[v6]:port`), lower-cased; None
    when the value is not of that form (userinfo, a path, a list, spaces...)."""
    m = _HOST.fullmatch(value.strip().lower())
    if m is None:
        return None
    return m.group("v6") or m.group("name")


def origin_host(value: str) -> tuple[str, str] | None:
    """(scheme, host) of one serialized origin `scheme://host[:port]` (a trailing `/` is tolerated); None for
    anything else, `null` included."""
    m = _ORIGIN.fullmatch(value.strip().lower().removesuffix("/"))
    if m is None:
        return None
    return m.group("scheme"), m.group("host").strip("[]")


@functools.lru_cache(maxsize=256)  # every request's Host (and Origin) is judged: parse each name once
def is_loopback(name: str) -> bool:
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def single_headers(raw: Iterable[tuple[bytes, bytes]]) -> tuple[dict[str, str], str | None]:
    """The single-valued headers of a request (names lower-case, as the ASGI server gives them) and the
    name of the first one that came twice, if any."""
    found: dict[str, str] = {}
    duplicated: str | None = None
    for name, value in raw:
        if name in SINGLE_VALUED:
            key = name.decode("latin-1")
            if key in found and duplicated is None:
                duplicated = key
            found[key] = value.decode("latin-1")
    return found, duplicated


def origin_form(raw_target: bytes, host: str | None) -> tuple[Refusal | None, str | None]:
    """Check a request target that is not origin-form (`/mcp`). An absolute-form target
    (`http://127.0.0.1:8808/mcp`) is accepted when its authority is exactly the Host header (RFC 9112 says
    the target's authority wins; two different answers are refused) and its path is returned; anything else
    (`*`, `host:port`, another authority) is refused."""
    text = raw_target.decode("latin-1")
    try:
        parts = urlsplit(text)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        return Refusal(400, TARGET_INVALID,
                       f"Request target {text[:200]!r} is not a path. Send `POST /mcp` (origin-form)."), None
    if host is None or parts.netloc.lower() != host.strip().lower():
        return Refusal(400, TARGET_INVALID,
                       f"Request target {text[:200]!r} names authority {parts.netloc[:100]!r} but the Host header is "
                       f"{(host or '')[:100]!r}; they must be the same. Send `POST /mcp` with the Host header."), None
    return None, unquote(parts.path or "/")


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
        parsed = origin_host(origin)
        return parsed is not None and parsed[0] in ("http", "https") and is_loopback(parsed[1])

    def token_ok(self, header: str | None) -> bool:
        if self.token is None:
            return True
        if not header:
            return False
        scheme, _, value = header.strip().partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token.encode())

    def refusal(self, headers: Mapping[str, str]) -> Refusal | None:
        """The Host, Origin and token checks on a request's (single-valued) headers; None lets it through."""
        host = headers.get("host")
        if not self.host_ok(host):
            if host is None or host_name(host) is None:
                return Refusal(400, HEADER_INVALID,
                               f"Host {host!r} is not `name[:port]`. Send one Host header naming the server, "
                               "e.g. `Host: 127.0.0.1:8808`.")
            return Refusal(421, HOST_NOT_ALLOWED,
                           f"Host {host!r} is not allowed. tooldeck serve accepts loopback hosts only; "
                           "start it with --allow-host NAME to accept another name.")
        origin = headers.get("origin")
        if not self.origin_ok(origin):
            if origin_host(origin or "") is None and (origin or "").strip().lower() != "null":
                return Refusal(400, HEADER_INVALID,
                               f"Origin {origin!r} is not one origin. An Origin header holds exactly one "
                               "`scheme://host[:port]` (no path, user name, list or spaces).")
            return Refusal(403, ORIGIN_NOT_ALLOWED,
                           f"Origin {origin!r} is not allowed. tooldeck serve accepts loopback origins only; "
                           "start it with --allow-origin ORIGIN to accept another one.")
        if not self.token_ok(headers.get("authorization")):
            return Refusal(401, UNAUTHORIZED,
                           "Missing or wrong bearer token. Send `Authorization: Bearer <token>` with the token the "
                           "server was started with (--token, TOOLDECK_TOKEN or [serve] token).")
        return None

    def request_refusal(self, raw_headers: Iterable[tuple[bytes, bytes]],
                        raw_target: bytes) -> tuple[Refusal | None, dict[str, str], str | None]:
        """Every check, in order: duplicated headers, body framing, the request target, then `refusal`.
        Returns the refusal (or None), the single-valued headers, and the path of an absolute-form target."""
        headers, duplicated = single_headers(raw_headers)
        if duplicated is not None:
            return Refusal(400, HEADER_DUPLICATED,
                           f"The {duplicated!r} header appears more than once. Send it once; tooldeck serve "
                           "does not pick one of several values."), headers, None
        if "content-length" in headers and "transfer-encoding" in headers:
            return Refusal(400, HEADER_INVALID,
                           "The request has both Content-Length and Transfer-Encoding. Send one of them."), \
                headers, None
        path = None
        if not raw_target.startswith(b"/"):
            refused, path = origin_form(raw_target, headers.get("host"))
            if refused is not None:
                return refused, headers, None
        return self.refusal(headers), headers, path
