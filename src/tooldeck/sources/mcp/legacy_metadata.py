"""Authorization-server metadata on the 2025-03-26 path (a server without protected-resource metadata).

Under the 2025-03-26 authorization spec the MCP server's origin *is* the authorization base URL: the client
reads `<origin>/.well-known/oauth-authorization-server` (and falls back to `/authorize`, `/token`,
`/register` there when nothing is served). Some servers of that era serve metadata whose `issuer` carries
a path (`<origin>/oauth`, with the endpoints under it) at the root well-known URL. The SDK requires the
issuer the URL was built from (RFC 8414 section 3.3, its SEP-2468 check), which is the origin, and stops.

tooldeck accepts such a document on this path only, and only when its issuer is on the MCP server's own
origin (same scheme, host and port): the document comes from that origin, which the legacy spec already
trusts as the authorization server, so a path under it names no other party. An issuer on any other
origin is left to the SDK's check, which refuses it (a mix-up attempt looks exactly like that), and the
protected-resource path (RFC 9728, every server of 2025-06-18 on) keeps the SDK's exact comparison.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from mcp.client.auth.utils import issuers_match
from mcp.shared.auth import OAuthMetadata
from pydantic import ValidationError

WELL_KNOWN = "/.well-known/oauth-authorization-server"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> tuple[str, str, int | None] | None:
    """(scheme, host, port) with the scheme's default port filled in; None for what is not an http(s) URL."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port if port is not None else _DEFAULT_PORTS[scheme]


def legacy_metadata_url(server_url: str) -> str:
    """The one metadata URL of the 2025-03-26 discovery: the well-known path at the server's origin."""
    parts = urlsplit(server_url)
    return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}"


def same_origin_metadata(body: bytes, server_url: str) -> OAuthMetadata | None:
    """The metadata document `body` when tooldeck takes it where the SDK would not: valid metadata whose issuer
    is on the origin of `server_url` but is not the origin itself. None otherwise (the SDK decides: it accepts
    the origin's own issuer and refuses any other)."""
    try:
        metadata = OAuthMetadata.model_validate_json(body)
    except ValidationError:
        return None
    issuer = str(metadata.issuer)
    here = origin_of(server_url)
    if here is None or origin_of(issuer) != here:
        return None
    parts = urlsplit(server_url)
    if issuers_match(issuer, f"{parts.scheme}://{parts.netloc}"):
        return None  # the origin itself: nothing to make up for
    return metadata
