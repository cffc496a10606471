"""Authorization-server metadata on the 2025-03-26 path (`sources/mcp/legacy_metadata.py`), against the loopback
authorization server (`fixtures/oauth_server.py --legacy-issuer`): a server without protected-resource metadata
whose root metadata names an issuer with a path on its own origin is signed in to; an issuer on another origin
is refused on that path, and any other issuer is refused on the RFC 9728 path (the SDK's exact check)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.client.auth import OAuthFlowError

from tooldeck.runtime import Runtime
from tooldeck.sources.mcp.login import first_cause

from .conftest import call
from .test_oauth import _home, _serve, _sign_in, _stored


def test_a_legacy_server_whose_issuer_has_a_path_on_its_origin_is_signed_in_to(tmp_path: Path) -> None:
    for fx in _serve("--legacy-issuer", "/as"):
        home = _home(tmp_path, fx.url)
        _sign_in(home)
        with Runtime(home) as rt:
            assert call(rt.invocation(), "mcp__web__echo", {"message": "legacy"}).content == "Echo: legacy"
        kinds = [e["kind"] for e in fx.state()["events"]]
        assert kinds[:4] == ["metadata", "register", "authorize", "token"]
        stored = _stored(home)
        assert stored["auth_server_metadata"]["issuer"] == f"{fx.base}/as"
        assert stored["auth_server_metadata"]["token_endpoint"] == f"{fx.base}/as/token"
        assert "resource_metadata" not in stored


@pytest.mark.parametrize("issuer", ["http://127.0.0.2:9/as", "https://127.0.0.1:9/as", "https://elsewhere.example"])
def test_a_legacy_server_naming_an_issuer_on_another_origin_is_refused(tmp_path: Path, issuer: str) -> None:
    for fx in _serve("--legacy-issuer", issuer):
        home = _home(tmp_path, fx.url)
        with pytest.raises(BaseException) as caught:
            _sign_in(home)
        cause = first_cause(caught.value)
        assert isinstance(cause, OAuthFlowError) and "issuer mismatch" in str(cause)
        assert [e["kind"] for e in fx.state()["events"]] == ["metadata"]  # nothing registered, nothing sent
        assert "tokens" not in _stored(home)


def test_an_issuer_mismatch_on_the_protected_resource_path_is_refused_even_on_the_same_origin(
        tmp_path: Path) -> None:
    for fx in _serve("--claim-issuer", "/other"):
        home = _home(tmp_path, fx.url)
        with pytest.raises(BaseException) as caught:
            _sign_in(home)
        cause = first_cause(caught.value)
        assert isinstance(cause, OAuthFlowError) and "issuer mismatch" in str(cause)
        assert [e["kind"] for e in fx.state()["events"]] == ["metadata"]
