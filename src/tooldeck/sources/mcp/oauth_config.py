"""`oauth` of an HTTP server entry (`OAuthSettings`, docs/mcp.md, Authorization) and what one connection
makes of it (`OAuthPlan`, with `${VAR}` expanded: `auth.py` builds its provider from it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from tooldeck.sources.mcp.config_checks import expand
from tooldeck.sources.mcp.tokens import token_path

if TYPE_CHECKING:
    from tooldeck.sources.mcp.config import ServerConfig

Grant = Literal["authorization_code", "client_credentials"]


class OAuthSettings(BaseModel):
    """`oauth` of an HTTP server entry (docs/mcp.md, Authorization). Client id and secret take `${VAR}`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = True
    """`"oauth": false` in an entry is short for `{"enabled": false}`."""
    grant: Grant = "authorization_code"
    client_id: str | None = None
    """A pre-registered client; without it the client registers itself (RFC 7591) on the first login."""
    client_secret: str | None = None
    scopes: list[str] | str | None = None
    token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post", "none"] | None = None
    issuer: str | None = None
    """The authorization server the client credentials belong to (they are sent to no other)."""
    private_key: str | None = None
    """With the client-credentials grant: a PEM private key (`${VAR}`) to authenticate with a signed JWT
    (`private_key_jwt`, RFC 7523) instead of `client_secret`."""
    signing_algorithm: str = "RS256"
    client_metadata_url: str | None = None
    """An https URL of this client's metadata document, used as its client id where the authorization
    server supports that (client ID metadata documents) instead of registering."""
    callback_port: int = Field(default=0, ge=0, le=65535)
    """The loopback port of `tooldeck mcp login`'s redirect (0: any free port) for a client registered with
    a fixed redirect URI."""

    @property
    def scope(self) -> str | None:
        if self.scopes is None:
            return None
        return " ".join(self.scopes) if isinstance(self.scopes, list) else self.scopes


@dataclass(frozen=True, slots=True)
class OAuthPlan:
    """How one HTTP connection authenticates with OAuth (`auth.py`), after `${VAR}` expansion."""

    server: str
    url: str
    token_path: Path
    grant: Grant = "authorization_code"
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    scope: str | None = None
    token_endpoint_auth_method: str | None = None
    issuer: str | None = None
    callback_port: int = 0
    transport: str = "http"
    """`http` or `sse`."""
    private_key: str | None = field(default=None, repr=False)
    signing_algorithm: str = "RS256"
    client_metadata_url: str | None = None


def oauth_plan(server: ServerConfig, home: Path, environ: Mapping[str, str] | None = None) -> OAuthPlan | None:
    """The OAuth plan of an HTTP entry, or None (stdio, `"oauth": false`, or its own `Authorization` header)."""
    if not server.uses_oauth or server.url is None:
        return None
    settings = server.oauth
    where = f"{server.source}: server {server.name!r} oauth"
    secret = settings.client_secret
    return OAuthPlan(
        server.name, server.url, token_path(home, server.name), settings.grant,
        expand(settings.client_id, f"{where}.client_id", environ) if settings.client_id else None,
        expand(secret, f"{where}.client_secret", environ) if secret else None, settings.scope,
        settings.token_endpoint_auth_method, settings.issuer, settings.callback_port, server.transport,
        expand(settings.private_key, f"{where}.private_key", environ) if settings.private_key else None,
        settings.signing_algorithm, settings.client_metadata_url)
