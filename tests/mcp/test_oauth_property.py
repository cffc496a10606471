"""Hypothesis tests of what tooldeck's OAuth code parses: the browser's redirect to the loopback listener
(`login.read_redirect`), the token file (`tokens.TokenFile`), whatever is in it, legacy authorization-server
metadata (`legacy_metadata.same_origin_metadata`), and the identity provider's token-exchange answer and request
(`id_jag.read_exchange_response`, `id_jag.exchange_form`)."""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
from pathlib import Path
from urllib.parse import urlencode

from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.sources.mcp.id_jag import (
    ID_JAG,
    ID_TOKEN,
    TOKEN_EXCHANGE,
    IdentityAssertionError,
    exchange_form,
    read_exchange_response,
)
from tooldeck.sources.mcp.legacy_metadata import origin_of, same_origin_metadata
from tooldeck.sources.mcp.login import CALLBACK_PATH, read_redirect
from tooldeck.sources.mcp.oauth_config import IdentityProviderPlan
from tooldeck.sources.mcp.tokens import FORMAT, TokenFile, expiry_of

URL = "http://127.0.0.1:9/mcp"
_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)
_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | _text,
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
                     max_leaves=12)


@settings(derandomize=True, max_examples=400, deadline=None)
@given(_text)
def test_any_request_line_gives_an_answer(line: str) -> None:
    redirect = read_redirect(line)
    assert redirect.status in (200, 400, 404)
    assert (redirect.status == 200) == (redirect.result is not None)
    assert redirect.error is None or redirect.status == 400


@settings(derandomize=True, max_examples=300, deadline=None)
@given(code=_text.filter(bool), state=_text, extra=st.dictionaries(st.sampled_from(["iss", "x", "scope"]), _text))
def test_a_redirect_with_a_code_round_trips(code: str, state: str, extra: dict[str, str]) -> None:
    query = urlencode({"code": code, "state": state, **extra})
    redirect = read_redirect(f"GET {CALLBACK_PATH}?{query} HTTP/1.1")
    assert redirect.status == 200 and redirect.result is not None
    assert redirect.result.code == code
    assert redirect.result.state == (state or None)  # parse_qs drops empty values, as a browser sends none
    assert redirect.result.iss == (extra.get("iss") or None)


@settings(derandomize=True, max_examples=200, deadline=None)
@given(error=_text.filter(bool), description=_text)
def test_an_error_redirect_ends_the_login_with_its_text(error: str, description: str) -> None:
    query = urlencode({"error": error, "error_description": description, "code": "c"})
    redirect = read_redirect(f"GET {CALLBACK_PATH}?{query} HTTP/1.1")
    assert redirect.status == 400 and redirect.result is None
    assert redirect.error is not None and f"error={error}" in redirect.error


@settings(derandomize=True, max_examples=300, deadline=None)
@given(content=_json, raw=st.binary(max_size=80), use_raw=st.booleans(), same_url=st.booleans())
def test_any_token_file_reads_as_state_or_nothing(content: object, raw: bytes, use_raw: bool,
                                                  same_url: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.json"
        if use_raw:
            path.write_bytes(raw)
        else:
            if isinstance(content, dict) and same_url:
                content = {**content, "format": FORMAT, "url": URL}
            path.write_text(json.dumps(content))
        file = TokenFile(path, URL)
        data = file.read()
        assert isinstance(data, dict)
        assert not data or data["url"] == URL
        state = file.state()
        state.text()  # never raises, whatever the expiry
        assert state.expires_at is None or math.isfinite(state.expires_at)
        file.update(client_info={"client_id": "c"})  # any old content is replaced by a whole, private file
        assert file.read()["client_info"] == {"client_id": "c"}
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


@settings(derandomize=True, max_examples=200, deadline=None)
@given(_json)
def test_expiry_is_a_finite_time_or_none(value: object) -> None:
    got = expiry_of(value)
    assert got is None or (math.isfinite(got) and got > 0)


_SERVER = "http://127.0.0.1:9/mcp"
_issuers = st.sampled_from(["http://127.0.0.1:9", "http://127.0.0.1:9/", "http://127.0.0.1:80/as", "http://127.0.0.1/as",
                            "https://127.0.0.1:9/as", "http://127.0.0.2:9/as", "http://LOCALHOST:9/as"]) | st.builds(
    lambda path: f"http://127.0.0.1:9/{path}", _text)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(issuer=_issuers, extra=st.dictionaries(_text, _json, max_size=3), raw=st.binary(max_size=80),
       use_raw=st.booleans())
def test_legacy_metadata_is_taken_only_for_an_issuer_under_the_servers_origin(
        issuer: str, extra: dict[str, object], raw: bytes, use_raw: bool) -> None:
    document = {**extra, "issuer": issuer, "authorization_endpoint": "http://127.0.0.1:9/as/authorize",
                "token_endpoint": "http://127.0.0.1:9/as/token"}
    body = raw if use_raw else json.dumps(document).encode()
    taken = same_origin_metadata(body, _SERVER)  # never raises, whatever the body
    if taken is not None:
        assert origin_of(str(taken.issuer)) == origin_of(_SERVER) == ("http", "127.0.0.1", 9)
        assert str(taken.issuer).rstrip("/") != "http://127.0.0.1:9"  # the origin itself is the SDK's to accept
    if not use_raw and origin_of(issuer) != origin_of(_SERVER):
        assert taken is None


@settings(derandomize=True, max_examples=300, deadline=None)
@given(_text)
def test_any_text_has_an_origin_or_none(url: str) -> None:
    got = origin_of(url)
    assert got is None or (got[0] in ("http", "https") and got[1] and isinstance(got[2], int))


_secret = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=6, max_size=30).map(
    lambda s: f"S3CR{s}")  # never part of tooldeck's own text


@settings(derandomize=True, max_examples=400, deadline=None)
@given(status=st.integers(100, 599), body=_json, raw=st.binary(max_size=80), use_raw=st.booleans(),
       secret=_secret, echo=st.booleans())
def test_any_token_exchange_answer_gives_an_id_jag_or_a_clear_error_without_the_secret(
        status: int, body: object, raw: bytes, use_raw: bool, secret: str, echo: bool) -> None:
    if echo and isinstance(body, dict):  # an identity provider that quotes the subject token back
        body = {**body, "error": f"bad {secret}", "error_description": f"token {secret} refused"}
    data = raw if use_raw else json.dumps(body).encode()
    try:
        jag = read_exchange_response(status, data, "https://idp.example/token?x=1", (secret,))
    except IdentityAssertionError as exc:
        text = str(exc)
        assert secret not in text and "?x=1" not in text and "\n" not in text
        assert "https://idp.example/token" in text
    else:
        assert status == 200 and isinstance(body, dict) and not use_raw
        assert body.get("issued_token_type") == ID_JAG and jag == str(body["access_token"]).strip() and jag


@settings(derandomize=True, max_examples=200, deadline=None)
@given(client_id=st.none() | _secret, client_secret=st.none() | _secret, token=_secret, scope=st.none() | _text,
       method=st.sampled_from([None, "client_secret_basic", "client_secret_post", "none"]))
def test_the_token_exchange_form_is_rfc_8693_and_sends_the_secret_once_at_most(
        client_id: str | None, client_secret: str | None, token: str, scope: str | None, method: str | None) -> None:
    idp = IdentityProviderPlan("https://idp.example/token", client_id, client_secret, method, token)
    form, headers = exchange_form(idp, token, "https://as.example", "https://mcp.example/mcp", scope)
    assert form["grant_type"] == TOKEN_EXCHANGE and form["requested_token_type"] == ID_JAG
    assert form["subject_token"] == token and form["subject_token_type"] == ID_TOKEN
    assert (form["audience"], form["resource"]) == ("https://as.example", "https://mcp.example/mcp")
    assert form.get("scope") == (scope or None)
    basic = "Authorization" in headers
    assert not (basic and "client_secret" in form)
    if client_secret is None or client_id is None or method == "none":
        assert not basic and "client_secret" not in form
    if basic:
        assert "client_id" not in form and headers["Authorization"].startswith("Basic ")
