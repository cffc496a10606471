"""What an MCP server's authorization failures say (`classify.RULES`' `mcp.auth_required`, `mcp.auth_forbidden`,
`mcp.oauth_failed`): the challenge and metadata the server sent, and the way to a token for the entry (a
header of its own, or `tooldeck mcp login` where OAuth applies). Split from `causes.py`, whose helpers it
uses; the same rules hold: server text is quoted bounded and cleaned, nothing here decides which cause
applies.
"""

from __future__ import annotations

from tooldeck.sources.mcp.causes import Said, _refresh, _url, _where
from tooldeck.sources.mcp.evidence import clean_line
from tooldeck.sources.mcp.failures import Facts


def _challenge_text(f: Facts) -> str:
    c = f.challenge
    if c is None:
        return ""
    error, description = c.params.get("error"), c.params.get("error_description")
    said = ", ".join(filter(None, [f"error={error}" if error else "", clean_line(description, 200)
                                   if description else ""]))
    return f" ({c.scheme}{': ' + said if said else ''})"


def _metadata(f: Facts) -> str | None:
    if f.challenge is None:
        return None
    url = f.challenge.params.get("resource_metadata")
    return clean_line(url, 500) if url else None


def _token_var(f: Facts) -> str:
    """An environment variable name for the server's token, e.g. `TIME_TOKEN` (valid in `${...}`)."""
    stem = "".join(ch if ch.isascii() and ch.isalnum() else "_" for ch in f.target.name.upper()).strip("_")
    if not stem or stem[0].isdigit():
        stem = f"MCP_{stem}".rstrip("_")
    return f"{stem}_TOKEN"


def _header_example(f: Facts) -> str:
    var = _token_var(f)
    if f.target.source.split(" + ")[0].endswith(".json"):
        return f'`"headers": {{"Authorization": "Bearer ${{{var}}}"}}`'
    return f'`headers = {{ Authorization = "Bearer ${{{var}}}" }}`'


def auth_required(f: Facts) -> Said:
    reply = f.reply
    status = f"HTTP {reply.status}" if reply else "an authorization challenge"
    meta = _metadata(f)
    summary = f"requires authorization: {_url(f)} answered {status}{_challenge_text(f)}"
    if meta:
        summary += f"; resource metadata: {meta}"
    where_tokens = (f" The resource metadata at {meta} names the authorization server that issues tokens."
                    if meta else "")
    if f.target.authorization:
        advice = (f"The server rejected the `Authorization` header configured in {_where(f)}: the token is wrong "
                  f"or has expired. Renew it, update the variable it comes from, {_refresh(f)}.{where_tokens}")
    elif f.target.oauth:
        advice = (f"Sign in with `tooldeck mcp login {f.target.name}` (it runs the server's OAuth flow in a browser "
                  f"and stores the token under the home dir), {_refresh(f)}. A server without OAuth takes a "
                  f"token from {_where(f)}: {_header_example(f)} (docs/mcp.md, Authorization).{where_tokens}")
    else:
        advice = (f"Get an access token for this server and send it from {_where(f)}: {_header_example(f)}, with "
                  f"{_token_var(f)} set in the environment tooldeck runs in (docs/mcp.md, Authorization)."
                  f"{where_tokens}")
    return summary, advice


def oauth_failed(f: Facts) -> Said:
    """The OAuth flow itself failed (discovery, registration, the token endpoint)."""
    from mcp.client.auth import OAuthFlowError

    from tooldeck.sources.mcp.id_jag import IdentityAssertionError

    error = f.first(OAuthFlowError)
    summary = f"could not get an OAuth token for {_url(f)}: {clean_line(str(error), 500)}"
    if isinstance(error, IdentityAssertionError):
        return summary, (f"Check `oauth.identity_provider` in {_where(f)} (token endpoint, client id, the ID token: "
                         "an expired one needs a new sign-in at the identity provider; docs/mcp.md, Authorization).")
    return summary, (f"Check `oauth` in {_where(f)} (client id, secret variable, scopes, grant; docs/mcp.md, "
                     f"Authorization); for a browser sign-in run `tooldeck mcp login {f.target.name}`.")


def auth_forbidden(f: Facts) -> Said:
    reply = f.reply
    status = f"HTTP {reply.status}" if reply else "an insufficient_scope challenge"
    scope = f.challenge.params.get("scope") if f.challenge else None
    needs = f" (it needs the scope `{clean_line(scope, 200)}`)" if scope else ""
    summary = f"refused access: {_url(f)} answered {status}{_challenge_text(f)}"
    if f.target.authorization:
        advice = (f"The token configured in {_where(f)} is valid but not allowed to use this server{needs}. Get a "
                  f"token with that permission and update the header, {_refresh(f)}.")
    elif f.target.oauth:
        advice = (f"Sign in again with `tooldeck mcp login {f.target.name}`{needs}: it asks for the permission the "
                  f"server named (an account without it cannot get it), {_refresh(f)}.")
    else:
        advice = (f"The server refuses requests without a token{needs}: send one from {_where(f)}: "
                  f"{_header_example(f)} (docs/mcp.md, Authorization).")
    meta = _metadata(f)
    if meta:
        advice += f" The resource metadata at {meta} names the authorization server."
    return summary, advice
