"""OAuth 2.1 for upstream HTTP servers, on the SDK's `mcp.client.auth` (the MCP authorization spec).

The SDK's `OAuthClientProvider` (an `httpx2.Auth`) does the protocol: protected-resource metadata from
the 401's `WWW-Authenticate` or the well-known URLs (RFC 9728), authorization-server discovery (RFC 8414
/ OIDC), dynamic client registration (RFC 7591), PKCE S256, RFC 8707 `resource`, refresh, and the
client-credentials grant (`ClientCredentialsOAuthProvider`); the identity-assertion grant is tooldeck's on the
same provider (`id_jag.py`). What this module adds:

- persistence that survives the process (`tokens.TokenFile`): the absolute expiry and the discovered
  metadata are restored, so a later process refreshes at the right token endpoint without a browser;
- one refresh across processes: an expired token is refreshed under the file's lock, after re-reading
  the file (another process may have refreshed already; a rotating authorization server would reject
  the second use of the same refresh token);
- no browser in the runtime: a connection (`interactive=False`) never starts an authorization-code
  flow. A 401 it cannot answer with a stored or refreshed token goes to the SDK as the server sent it
  and becomes `mcp.auth_required`, whose advice names `tooldeck mcp login SERVER` (`login.py` runs
  the flow with a browser).

- the 2025-03-26 path's metadata whose issuer is a path on the server's own origin (`legacy_metadata.py`).

`provider_for` decides per connection whether OAuth applies at all: an HTTP entry that sends its own
`Authorization` header, or says `"oauth": false`, never uses it; otherwise the provider is attached
when the server has stored tokens or uses a grant that needs no person (client credentials, identity
assertion).
"""

from __future__ import annotations

import contextlib
import logging
import time
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.utils import extract_field_from_www_auth, union_scopes
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import ValidationError

from tooldeck.sources.mcp.config import OAuthPlan
from tooldeck.sources.mcp.id_jag import IdentityAssertionGrant
from tooldeck.sources.mcp.legacy_metadata import legacy_metadata_url, same_origin_metadata
from tooldeck.sources.mcp.tokens import TokenFile, expiry_of

log = logging.getLogger("tooldeck.mcp")

CLIENT_NAME = "tooldeck"
REFRESH_MARGIN_S = 30.0
"""A token this close to its expiry is refreshed before use (it could expire in flight)."""


AUTH_REQUEST = "tooldeck_oauth"
"""Set in the `extensions` of the requests the OAuth flow makes itself (metadata, registration, token), so the
transport's response observer does not take their answers for the MCP server's."""


def tokens_of(plan: OAuthPlan) -> TokenFile:
    return TokenFile(plan.token_path, plan.url)


class FileTokenStorage:
    """The SDK's `TokenStorage` protocol on a `TokenFile`."""

    def __init__(self, file: TokenFile) -> None:
        self.file = file

    async def get_tokens(self) -> OAuthToken | None:
        raw = self.file.read().get("tokens")
        try:
            return OAuthToken.model_validate(raw) if isinstance(raw, dict) else None
        except ValidationError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        self.file.update(tokens=tokens.model_dump(mode="json", exclude_none=True), expires_at=expires)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = self.file.read().get("client_info")
        try:
            return OAuthClientInformationFull.model_validate(raw) if isinstance(raw, dict) else None
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.file.update(client_info=client_info.model_dump(mode="json", exclude_none=True))


class _Persistent:
    """Behaviour shared by tooldeck's providers (a mixin in front of an SDK provider class)."""

    plan: OAuthPlan
    file: TokenFile
    interactive: bool
    context: Any
    _initialized: bool

    # -- state across processes -------------------------------------------------------------------
    async def _initialize(self) -> None:
        await super()._initialize()  # type: ignore[misc]  # tokens and client info, by the SDK
        self._restore(self.file.read())

    def _restore(self, data: dict[str, Any]) -> None:
        ctx = self.context
        ctx.token_expiry_time = expiry_of(data.get("expires_at"))
        if ctx.oauth_metadata is None and isinstance(data.get("auth_server_metadata"), dict):
            with contextlib.suppress(ValidationError):
                ctx.oauth_metadata = OAuthMetadata.model_validate(data["auth_server_metadata"])
        if ctx.protected_resource_metadata is None and isinstance(data.get("resource_metadata"), dict):
            try:
                ctx.protected_resource_metadata = ProtectedResourceMetadata.model_validate(data["resource_metadata"])
                servers = ctx.protected_resource_metadata.authorization_servers
                ctx.auth_server_url = str(servers[0]) if servers else None
            except ValidationError:
                pass

    def _adopt(self, data: dict[str, Any]) -> None:
        """Take tokens another process stored (after its refresh, or a new login)."""
        raw = data.get("tokens")
        if not isinstance(raw, dict):
            return
        try:
            tokens = OAuthToken.model_validate(raw)
        except ValidationError:
            return
        current = self.context.current_tokens
        if current is None or current.access_token != tokens.access_token:
            self.context.current_tokens = tokens
            self._restore(data)

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        await super()._handle_token_response(response)  # type: ignore[misc]
        self._save_metadata()

    def _save_metadata(self) -> None:
        ctx = self.context
        self.file.update(
            auth_server_metadata=ctx.oauth_metadata.model_dump(mode="json", exclude_none=True)
            if ctx.oauth_metadata else None,
            resource_metadata=ctx.protected_resource_metadata.model_dump(mode="json", exclude_none=True)
            if ctx.protected_resource_metadata else None)

    def _stale(self) -> bool:
        ctx = self.context
        expiry = ctx.token_expiry_time
        expired = ctx.current_tokens is None or (expiry is not None and time.time() >= expiry - REFRESH_MARGIN_S)
        return expired and ctx.can_refresh_token()

    # -- the flow ---------------------------------------------------------------------------------
    async def _refresh_shared(self, force: bool) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """Refresh under the file's lock, unless another process did it meanwhile. Yields the refresh request."""
        async with self.context.lock, self.file.locked():
            before = self.context.current_tokens.access_token if self.context.current_tokens else None
            self._adopt(self.file.read())
            now = self.context.current_tokens.access_token if self.context.current_tokens else None
            if now != before and not self._stale():
                return  # another process refreshed (or logged in) meanwhile
            if not (force or self._stale()) or not self.context.can_refresh_token():
                return
            response = yield await self._refresh_token()  # type: ignore[attr-defined]
            if await self._handle_refresh_response(response):  # type: ignore[attr-defined]
                self._save_metadata()
            elif response.status_code in (400, 401):  # invalid_grant: the refresh token is revoked or expired
                self.file.update(tokens=None, expires_at=None)

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        # Sub-flows are driven by hand: `out = await sub.asend((yield out))` is `yield from` for async generators.
        if not self._initialized:
            async with self.context.lock:
                if not self._initialized:
                    await self._initialize()
        refreshed = False
        if self._stale():
            async with contextlib.aclosing(self._refresh_shared(force=False)) as sub:
                with contextlib.suppress(StopAsyncIteration):
                    out = await sub.__anext__()
                    while True:
                        out = await sub.asend((yield out))
            refreshed = True
        if not self.interactive and self.plan.grant == "authorization_code":
            inner = self._unattended(request, refreshed)
        else:
            inner = super()._auth_flow(request)  # type: ignore[misc]
        async with contextlib.aclosing(inner) as sub:
            with contextlib.suppress(StopAsyncIteration):
                out = await sub.__anext__()
                while True:
                    response = yield out
                    out = await sub.asend(await self._legacy_metadata(out, response))

    async def _legacy_metadata(self, request: httpx2.Request, response: httpx2.Response) -> httpx2.Response:
        """On the 2025-03-26 path, metadata at the server's origin naming an issuer under that origin is taken
        here (`legacy_metadata.py` says why); the SDK is then told nothing was served there, and goes on with
        the metadata in its context (its registration, authorization and token endpoints)."""
        ctx = self.context
        if (ctx.auth_server_url is not None or ctx.protected_resource_metadata is not None
                or request.method != "GET" or response.status_code != 200
                or str(request.url) != legacy_metadata_url(ctx.server_url)):
            return response
        metadata = same_origin_metadata(await response.aread(), ctx.server_url)
        if metadata is None:
            return response
        log.debug("MCP server `%s`: legacy authorization server metadata with issuer %s on the server's origin",
                  self.plan.server, metadata.issuer)
        ctx.oauth_metadata = metadata
        return httpx2.Response(404, request=request)

    async def _unattended(self, request: httpx2.Request,
                          refreshed: bool) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The runtime's flow: the stored token, one refresh on a 401, and never a browser: a 401 that is left
        reaches the SDK as the server sent it, and is reported as `mcp.auth_required` naming `tooldeck mcp
        login` (`causes.auth_required`)."""
        tokens = self.context.current_tokens
        if tokens is not None:
            request.headers["Authorization"] = f"Bearer {tokens.access_token}"
        response = yield request
        if response.status_code == 403 and _refused(response):
            # Step-up: a refresh cannot widen the grant. Remember the scope, so `tooldeck mcp login` asks for it.
            wanted = extract_field_from_www_auth(response, "scope")
            if wanted:
                self.file.update(wanted_scope=union_scopes(self.file.read().get("wanted_scope"), wanted))
            return
        if not _refused(response) or refreshed or not self.context.can_refresh_token():
            return
        async with contextlib.aclosing(self._refresh_shared(force=True)) as sub:
            with contextlib.suppress(StopAsyncIteration):
                out = await sub.__anext__()
                while True:
                    out = await sub.asend((yield out))
        tokens = self.context.current_tokens
        if tokens is not None:
            request.headers["Authorization"] = f"Bearer {tokens.access_token}"
            yield request

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        async with contextlib.aclosing(super().async_auth_flow(request)) as flow:  # type: ignore[misc]
            with contextlib.suppress(StopAsyncIteration):
                out = await flow.__anext__()
                while True:
                    if out is not request:
                        out.extensions[AUTH_REQUEST] = True
                    out = await flow.asend((yield out))


def _refused(response: httpx2.Response) -> bool:
    return response.status_code == 401 or (
        response.status_code == 403 and extract_field_from_www_auth(response, "error") == "insufficient_scope")


class TooldeckOAuth(_Persistent, OAuthClientProvider):
    """Authorization code + PKCE (dynamic registration, or the configured client id)."""

    def __init__(self, plan: OAuthPlan, *, redirect_uri: str | None = None,
                 browser: Callable[[str], Awaitable[None]] | None = None,
                 callback: Callable[[], Awaitable[AuthorizationCodeResult]] | None = None,
                 extra_scope: str | None = None) -> None:
        metadata = OAuthClientMetadata(
            client_name=CLIENT_NAME, redirect_uris=[redirect_uri or f"http://127.0.0.1:{plan.callback_port or 1}"
                                                          "/callback"],
            grant_types=["authorization_code", "refresh_token"], response_types=["code"], scope=plan.scope,
            token_endpoint_auth_method=(plan.token_endpoint_auth_method or  # type: ignore[arg-type]
                                        ("client_secret_basic" if plan.client_secret else "none")))
        self.plan, self.file = plan, tokens_of(plan)
        self.interactive = browser is not None
        self.extra_scope = extra_scope
        """Scopes a server asked for with `insufficient_scope` since the last sign-in (requested on top)."""
        super().__init__(plan.url, metadata, FileTokenStorage(self.file), browser, callback,
                         client_metadata_url=plan.client_metadata_url)

    async def _perform_authorization(self) -> httpx2.Request:
        if self.extra_scope:
            metadata = self.context.client_metadata
            metadata.scope = union_scopes(metadata.scope, self.extra_scope)
        return await super()._perform_authorization()

    async def _initialize(self) -> None:
        await super()._initialize()
        if self.plan.client_id:  # pre-registered: no dynamic registration
            redirect = self.context.client_metadata.redirect_uris
            self.context.client_info = OAuthClientInformationFull(
                client_id=self.plan.client_id, client_secret=self.plan.client_secret, redirect_uris=redirect,
                token_endpoint_auth_method=self.context.client_metadata.token_endpoint_auth_method,
                grant_types=["authorization_code", "refresh_token"], scope=self.plan.scope)


class TooldeckClientCredentials(_Persistent, ClientCredentialsOAuthProvider):
    """The client-credentials grant (machine to machine): never needs a person."""

    def __init__(self, plan: OAuthPlan) -> None:
        if not plan.client_id or not plan.client_secret:
            raise OAuthFlowError(f"MCP server `{plan.server}` uses the client-credentials grant but has no "
                                 "`oauth.client_id` / `oauth.client_secret`")
        self.plan, self.file, self.interactive = plan, tokens_of(plan), True
        method = plan.token_endpoint_auth_method or "client_secret_basic"
        with warnings.catch_warnings():  # no `issuer` configured: the SDK warns that 3.0 will require one
            warnings.simplefilter("ignore")
            super().__init__(plan.url, FileTokenStorage(self.file), plan.client_id, plan.client_secret,
                             method, plan.scope, plan.issuer)  # type: ignore[arg-type]


class TooldeckPrivateKeyJWT(_Persistent, PrivateKeyJWTOAuthProvider):
    """The client-credentials grant authenticated with a JWT signed by the configured key (RFC 7523)."""

    def __init__(self, plan: OAuthPlan) -> None:
        if not plan.client_id or not plan.private_key:
            raise OAuthFlowError(f"MCP server `{plan.server}` uses private_key_jwt but has no `oauth.client_id` / "
                                 "`oauth.private_key`")
        self.plan, self.file, self.interactive = plan, tokens_of(plan), True
        signer = SignedJWTParameters(issuer=plan.client_id, subject=plan.client_id, signing_key=plan.private_key,
                                     signing_algorithm=plan.signing_algorithm)
        with warnings.catch_warnings():  # no `issuer` configured: the SDK warns that 3.0 will require one
            warnings.simplefilter("ignore")
            super().__init__(plan.url, FileTokenStorage(self.file), plan.client_id,
                             signer.create_assertion_provider(), plan.scope, plan.issuer)


class TooldeckIdentityAssertion(_Persistent, IdentityAssertionGrant):
    """The identity-assertion grant (an ID-JAG from the enterprise identity provider, `id_jag.py`): no person."""

    def __init__(self, plan: OAuthPlan) -> None:
        self.plan, self.file, self.interactive = plan, tokens_of(plan), True
        super().__init__(plan, FileTokenStorage(self.file))


def provider_for(plan: OAuthPlan | None) -> httpx2.Auth | None:
    """The provider a runtime connection uses, or None (no OAuth, or nothing stored to send yet)."""
    if plan is None:
        return None
    if plan.grant == "client_credentials":
        return TooldeckPrivateKeyJWT(plan) if plan.private_key else TooldeckClientCredentials(plan)
    if plan.grant == "identity_assertion":
        return TooldeckIdentityAssertion(plan)
    if not tokens_of(plan).read():
        return None  # never signed in: the server's own 401 says so, with `tooldeck mcp login` as the fix
    return TooldeckOAuth(plan)
