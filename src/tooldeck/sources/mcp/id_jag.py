"""The identity-assertion grant (MCP enterprise-managed authorization, SEP-990): an ID-JAG for the MCP server.

Two legs, no person and no browser:

1. token exchange at the enterprise identity provider (RFC 8693): the user's ID token
   (`subject_token_type` id_token) for an Identity Assertion JWT Authorization Grant (`requested_token_type`
   id-jag), whose `audience` is the MCP server's authorization server (its issuer) and whose `resource` is the
   MCP server (RFC 8707);
2. the jwt-bearer grant (RFC 7523) at that authorization server's token endpoint, with the ID-JAG as
   `assertion` and this client's own credentials (`client_secret_basic` unless configured otherwise).

`IdentityAssertionGrant` is the SDK's `OAuthClientProvider` with leg 2 as its authorization step, so discovery
is the SDK's (protected-resource metadata, the authorization server's metadata with its issuer check, scope
selection, `resource`) and a 401 later runs both legs again. The authorization server is the one the
protected-resource metadata names unless `oauth.issuer` pins it (then no other receives the client secret or
an ID-JAG). The ID token is sent only to the configured identity provider's token endpoint.

The ID token, the ID-JAG and the secrets are never logged, stored or put in an error: an identity provider's
refusal is reported with its `error` and `error_description`, with any of those values blanked out.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any
from urllib.parse import quote

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.utils import issuers_match
from mcp.shared.auth import JWT_BEARER_GRANT_TYPE, OAuthClientInformationFull, OAuthClientMetadata

from tooldeck.sources.mcp.evidence import clean_line, shown_url
from tooldeck.sources.mcp.oauth_config import IdentityProviderPlan, OAuthPlan

log = logging.getLogger("tooldeck.mcp")

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
EXCHANGE_TIMEOUT_S = 30.0
"""How long the identity provider may take to answer the token exchange (connect, send, each read)."""


class IdentityAssertionError(OAuthFlowError):
    """Leg 1 failed: no ID token, or the identity provider refused or answered nonsense. The text holds no secret."""


def read_id_token(idp: IdentityProviderPlan) -> str:
    """The user's ID token: the expanded `id_token`, else the first line of `id_token_file`, read now."""
    if idp.id_token_file is None:
        token = idp.id_token or ""
    else:
        try:
            token = idp.id_token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise IdentityAssertionError(f"cannot read the ID token file {idp.id_token_file}: "
                                         f"{type(exc).__name__}") from None
    if not token:
        where = f"the file {idp.id_token_file}" if idp.id_token_file else "`identity_provider.id_token`"
        raise IdentityAssertionError(f"no ID token in {where}: sign in to the identity provider and put the ID "
                                     "token there")
    return token


def exchange_form(idp: IdentityProviderPlan, id_token: str, audience: str, resource: str,
                  scope: str | None) -> tuple[dict[str, str], dict[str, str]]:
    """The RFC 8693 request body and headers, with this client's authentication at the identity provider."""
    form = {"grant_type": TOKEN_EXCHANGE, "requested_token_type": ID_JAG, "audience": audience,
            "resource": resource, "subject_token": id_token, "subject_token_type": ID_TOKEN}
    if scope:
        form["scope"] = scope
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
    method = idp.token_endpoint_auth_method or ("client_secret_basic" if idp.client_secret else "none")
    if idp.client_id and idp.client_secret and method == "client_secret_basic":
        pair = f"{quote(idp.client_id, safe='')}:{quote(idp.client_secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    elif idp.client_id:
        form["client_id"] = idp.client_id
        if idp.client_secret and method == "client_secret_post":
            form["client_secret"] = idp.client_secret
    return form, headers


def read_exchange_response(status: int, body: bytes, endpoint: str, secrets: tuple[str, ...] = ()) -> str:
    """The ID-JAG of the identity provider's answer, or IdentityAssertionError saying what was wrong.
    Total over any status and body; `secrets` are blanked out of anything quoted from the answer."""
    where = f"the identity provider's token endpoint {shown_url(endpoint)}"
    try:
        data: Any = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        data = None
    if status != 200:
        said = ""
        if isinstance(data, dict) and isinstance(data.get("error"), str):
            described = data.get("error_description")
            said = f": error={data['error']}" + (f": {described}" if isinstance(described, str) else "")
        raise IdentityAssertionError(f"{where} refused the token exchange (HTTP {status}){_quoted(said, secrets)}")
    if not isinstance(data, dict):
        raise IdentityAssertionError(f"{where} answered HTTP 200 without a JSON object")
    token, issued = data.get("access_token"), data.get("issued_token_type")
    if not isinstance(token, str) or not token.strip():
        raise IdentityAssertionError(f"{where} answered without an `access_token` (the ID-JAG)")
    if issued != ID_JAG:
        shown = _quoted(repr(issued), (*secrets, token)) if isinstance(issued, str) else "none"
        raise IdentityAssertionError(f"{where} issued a token of type {shown}, not an ID-JAG ({ID_JAG})")
    return token.strip()


def _quoted(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return clean_line(text, 300)


async def fetch_id_jag(idp: IdentityProviderPlan, audience: str, resource: str, scope: str | None) -> str:
    """Leg 1: the ID-JAG for `audience` (the authorization server's issuer) and `resource` (the MCP server)."""
    id_token = read_id_token(idp)
    form, headers = exchange_form(idp, id_token, audience, resource, scope)
    # Its own client: the identity provider is not the MCP server, so none of the transport's hooks or auth apply.
    async with httpx2.AsyncClient(timeout=EXCHANGE_TIMEOUT_S, follow_redirects=False) as http:
        try:
            response = await http.post(idp.token_endpoint, data=form, headers=headers)
        except httpx2.HTTPError as exc:
            raise IdentityAssertionError(f"cannot reach the identity provider's token endpoint "
                                         f"{shown_url(idp.token_endpoint)}: {type(exc).__name__}") from None
    secrets = (id_token, idp.client_secret or "")
    return read_exchange_response(response.status_code, response.content, idp.token_endpoint, secrets)


class IdentityAssertionGrant(OAuthClientProvider):
    """The SDK's provider with the jwt-bearer grant, fed by `fetch_id_jag`, as its authorization step."""

    def __init__(self, plan: OAuthPlan, storage: Any) -> None:
        if not (plan.client_id and plan.client_secret and plan.identity_provider):
            raise OAuthFlowError(f"MCP server `{plan.server}` uses the identity_assertion grant but lacks "
                                 "`oauth.client_id`, `oauth.client_secret` or `oauth.identity_provider`")
        method = plan.token_endpoint_auth_method or "client_secret_basic"
        metadata = OAuthClientMetadata(redirect_uris=None, grant_types=[JWT_BEARER_GRANT_TYPE],
                                       token_endpoint_auth_method=method,  # type: ignore[arg-type]
                                       scope=plan.scope)
        super().__init__(plan.url, metadata, storage)
        self.idp = plan.identity_provider
        self.issuer = plan.issuer
        self._client = OAuthClientInformationFull(
            redirect_uris=None, client_id=plan.client_id, client_secret=plan.client_secret,
            grant_types=[JWT_BEARER_GRANT_TYPE], token_endpoint_auth_method=method,  # type: ignore[arg-type]
            scope=plan.scope)

    async def _initialize(self) -> None:
        self.context.current_tokens = await self.context.storage.get_tokens()
        self.context.client_info = self._client  # pre-registered: never a dynamic registration
        self._initialized = True

    def _select_authorization_server(self, advertised: list[str]) -> str:
        if self.issuer is not None:
            return next((s for s in advertised if issuers_match(s, self.issuer)), advertised[0])
        return advertised[0]

    def _audience(self) -> str:
        """The authorization server's issuer, checked against `oauth.issuer` when one is configured."""
        metadata = self.context.oauth_metadata
        if metadata is None:
            raise OAuthFlowError(f"no authorization server metadata for {shown_url(self.context.server_url)}: "
                                 "the identity-assertion grant needs the authorization server's issuer (the ID-JAG's "
                                 "audience); set `oauth.issuer`, or check the server's protected-resource metadata")
        issuer = str(metadata.issuer)
        if self.issuer is not None and not issuers_match(issuer, self.issuer):
            self.context.oauth_metadata = None
            self.context.clear_tokens()
            raise OAuthFlowError(f"Authorization server metadata issuer mismatch: {issuer} != {self.issuer} "
                                 "(`oauth.issuer`); no ID-JAG is requested for another authorization server")
        return issuer

    async def _perform_authorization(self) -> httpx2.Request:
        assert self.idp is not None
        audience = self._audience()
        resource = self.context.get_resource_url()
        scope = self.context.client_metadata.scope
        assertion = await fetch_id_jag(self.idp, audience, resource, scope)
        form = {"grant_type": JWT_BEARER_GRANT_TYPE, "assertion": assertion, "resource": resource}
        if scope:
            form["scope"] = scope
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        form, headers = self.context.prepare_token_auth(form, headers)
        return httpx2.Request("POST", self._get_token_endpoint(), data=form, headers=headers)
