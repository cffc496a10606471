"""`oauth` of an HTTP server entry (`OAuthSettings`, docs/mcp.md, Authorization) and what one connection
makes of it (`OAuthPlan`, with `${VAR}` expanded: `auth.py` builds its provider from it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tooldeck.sources.mcp.config_checks import expand, url_problem
from tooldeck.sources.mcp.tokens import token_path

if TYPE_CHECKING:
    from tooldeck.sources.mcp.config import ServerConfig

Grant = Literal["authorization_code", "client_credentials", "identity_assertion"]
AuthMethod = Literal["client_secret_basic", "client_secret_post", "none"]


class IdentityProviderSettings(BaseModel):
    """`oauth.identity_provider` of an entry with `grant = "identity_assertion"` (docs/mcp.md, Authorization): the
    enterprise identity provider that exchanges the user's ID token for an ID-JAG (RFC 8693)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    token_endpoint: str
    client_id: str | None = None
    """This client at the identity provider (`${VAR}`)."""
    client_secret: str | None = None
    token_endpoint_auth_method: AuthMethod | None = None
    id_token: str | None = None
    """The user's ID token from the identity provider, as `${VAR}` (the value never belongs in a file)."""
    id_token_file: str | None = None
    """Or a file holding it, read at each exchange (a sign-in tool can renew it); `~` and paths relative to the
    home dir."""

    @field_validator("token_endpoint")
    @classmethod
    def _endpoint_shape(cls, value: str) -> str:
        problem = url_problem(value) if "${" not in value else None
        if problem:
            raise ValueError(f"the token endpoint {value!r} {problem}")
        return value

    @model_validator(mode="after")
    def _one_id_token(self) -> IdentityProviderSettings:
        if (self.id_token is None) == (self.id_token_file is None):
            raise ValueError("give the user's ID token as exactly one of `id_token` (\"${VAR}\") or `id_token_file`")
        return self


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
    token_endpoint_auth_method: AuthMethod | None = None
    issuer: str | None = None
    """The authorization server the client credentials belong to (they are sent to no other). With the
    identity-assertion grant also the ID-JAG's audience; without it, the one the protected-resource metadata
    names."""
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
    identity_provider: IdentityProviderSettings | None = None
    """With the identity-assertion grant: where the ID-JAG comes from."""

    @model_validator(mode="after")
    def _grant_needs(self) -> OAuthSettings:
        if self.grant == "identity_assertion" and not (self.identity_provider and self.client_id
                                                       and self.client_secret):
            raise ValueError("the identity_assertion grant needs `client_id` and `client_secret` (this client at "
                             "the MCP server's authorization server) and `identity_provider` (token_endpoint, "
                             "client_id, id_token or id_token_file)")
        if self.identity_provider is not None and self.grant != "identity_assertion":
            raise ValueError("`identity_provider` is only used with grant = \"identity_assertion\"")
        return self

    @property
    def scope(self) -> str | None:
        if self.scopes is None:
            return None
        return " ".join(self.scopes) if isinstance(self.scopes, list) else self.scopes


@dataclass(frozen=True, slots=True)
class IdentityProviderPlan:
    """The identity provider of an identity-assertion grant, after `${VAR}` expansion."""

    token_endpoint: str
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    token_endpoint_auth_method: str | None = None
    id_token: str | None = field(default=None, repr=False)
    id_token_file: Path | None = None


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
    identity_provider: IdentityProviderPlan | None = None


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
        settings.signing_algorithm, settings.client_metadata_url,
        _idp_plan(settings.identity_provider, f"{where}.identity_provider", home, environ)
        if settings.identity_provider else None)


def _idp_plan(idp: IdentityProviderSettings, where: str, home: Path,
              environ: Mapping[str, str] | None) -> IdentityProviderPlan:
    def opt(value: str | None, key: str) -> str | None:
        return expand(value, f"{where}.{key}", environ) if value else None

    token_file = None
    if idp.id_token_file:
        token_file = Path(expand(idp.id_token_file, f"{where}.id_token_file", environ)).expanduser()
        token_file = token_file if token_file.is_absolute() else home / token_file
    return IdentityProviderPlan(
        expand(idp.token_endpoint, f"{where}.token_endpoint", environ), opt(idp.client_id, "client_id"),
        opt(idp.client_secret, "client_secret"), idp.token_endpoint_auth_method, opt(idp.id_token, "id_token"),
        token_file)
