"""The identity-assertion grant (`sources/mcp/id_jag.py`) against the loopback authorization server with its
identity provider (`fixtures/oauth_server.py --idp`): the runtime gets its own token (RFC 8693 token exchange for
an ID-JAG, then the RFC 7523 jwt-bearer grant), runs both legs again when the server stops taking it, reads an
ID token file at each exchange, refuses a pinned issuer that differs before the ID token leaves, and keeps the
ID token, the ID-JAG and the client secret out of the token file, records, logs, errors and CLI output."""

from __future__ import annotations

import logging
import os
import socket
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tooldeck.runtime import Runtime
from tooldeck.sources.mcp import McpManager, id_jag
from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp.tokens import token_path

from .conftest import TOOLDECK, call
from .test_oauth import AuthFixture, _home, _serve

ID_TOKEN = "eyJ.id-token-of-the-user.sig"
SECRET = "hunter22"


@pytest.fixture
def idp() -> Iterator[AuthFixture]:
    yield from _serve("--client", f"svc:{SECRET}", "--idp", ID_TOKEN)


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    values = {"WEB_SECRET": SECRET, "IDP_ID_TOKEN": ID_TOKEN}
    os.environ.update(values)
    yield values
    for name in values:
        os.environ.pop(name, None)


def _oauth(fx: AuthFixture, **idp: Any) -> dict[str, Any]:
    provider = {"token_endpoint": f"{fx.base}/idp/token", "client_id": "idp-client", **idp}
    if "id_token_file" not in provider:
        provider.setdefault("id_token", "${IDP_ID_TOKEN}")
    return {"grant": "identity_assertion", "client_id": "svc", "client_secret": "${WEB_SECRET}",
            "identity_provider": provider}


def _refresh(home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(TOOLDECK), "mcp", "refresh", "web", "--home", str(home)], capture_output=True,
                          text=True, timeout=120, env=os.environ.copy())


def test_the_runtime_gets_its_token_by_identity_assertion_and_keeps_secrets_out(
        idp: AuthFixture, env: dict[str, str], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    home = _home(tmp_path, idp.url, oauth=_oauth(idp))
    with Runtime(home) as rt:
        assert call(rt.invocation(), "mcp__web__echo", {"message": "xaa"}).content == "Echo: xaa"
    [exchange] = idp.events("exchange")
    assert exchange["grant"] == "urn:ietf:params:oauth:grant-type:token-exchange"
    assert exchange["audience"] == f"{idp.base}/as" and exchange["resource"] == idp.url  # the AS's issuer; RFC 8707
    assert exchange["subject_type"] == "urn:ietf:params:oauth:token-type:id_token"
    [grant] = idp.events("token")
    assert grant["grant"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" and grant["resource"] == idp.url
    assert not idp.events("register") and not idp.events("authorize")  # no person, no registration

    path = token_path(home, "web")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    state = idp.state()
    assert state["access"][0] in path.read_text()
    [jag] = state["jags"]
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())  # the token file included
    for secret in (ID_TOKEN, jag, SECRET):
        assert secret.encode() not in stored and secret not in caplog.text


def test_a_server_that_stops_taking_the_token_gets_a_new_one_from_both_legs(
        idp: AuthFixture, env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "id_token").write_text(ID_TOKEN + "\n")
    home = _home(tmp_path, idp.url, oauth=_oauth(idp, id_token_file="id_token"))  # relative to the home
    with Runtime(home) as rt:
        inv = rt.invocation()
        assert call(inv, "mcp__web__echo", {"message": "one"}).content == "Echo: one"
        idp.admin("expire")
        assert call(inv, "mcp__web__echo", {"message": "two"}).content == "Echo: two"
    assert len(idp.events("exchange")) == 2 and len(idp.events("token")) == 2


def test_a_refused_id_token_is_a_clear_failure_that_quotes_no_token(
        idp: AuthFixture, env: dict[str, str], tmp_path: Path) -> None:
    os.environ["IDP_ID_TOKEN"] = stale = "eyJ.stale-token.sig"
    home = _home(tmp_path, idp.url, oauth=_oauth(idp))
    out = _refresh(home)
    assert out.returncode == 1 and "[mcp.oauth_failed]" in out.stdout, out.stdout + out.stderr
    assert "refused the token exchange (HTTP 400): error=invalid_grant" in out.stdout
    assert "[redacted]" in out.stdout  # the identity provider quoted the token back; tooldeck does not
    assert "Check `oauth.identity_provider`" in out.stdout
    assert stale not in out.stdout + out.stderr
    assert not idp.events("token")  # nothing reached the authorization server
    assert "tokens" not in (token_path(home, "web").read_text() if token_path(home, "web").exists() else "")


def test_a_pinned_issuer_that_differs_sends_the_id_token_nowhere(
        idp: AuthFixture, env: dict[str, str], tmp_path: Path) -> None:
    home = _home(tmp_path, idp.url, oauth={**_oauth(idp), "issuer": "https://login.example/tenant"})
    out = _refresh(home)
    assert out.returncode == 1 and "[mcp.oauth_failed]" in out.stdout and "issuer mismatch" in out.stdout
    assert not idp.events("exchange") and not idp.events("token")


class SilentIdp:
    """Takes one connection on 127.0.0.1, reads the request and never answers; notes when the client hangs up."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.got_request, self.hung_up = threading.Event(), threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            if conn.recv(65536):
                self.got_request.set()
            while conn.recv(65536):  # until the client closes its end
                pass
            self.hung_up.set()


def test_an_identity_provider_that_never_answers_is_given_up_on(
        idp: AuthFixture, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    silent = SilentIdp()
    monkeypatch.setattr(id_jag, "EXCHANGE_TIMEOUT_S", 1.0)
    home = _home(tmp_path, idp.url, oauth=_oauth(idp, token_endpoint=f"http://127.0.0.1:{silent.port}/token"))
    manager = McpManager.from_home(home, start=False)
    try:
        [report] = manager.refresh("web")
    finally:
        manager.close()
    assert not report.ok and report.failure is not None and report.failure.code == "mcp.oauth_failed"
    assert "cannot reach the identity provider's token endpoint" in report.failure.full_text
    assert "ReadTimeout" in report.failure.full_text
    assert silent.got_request.is_set() and silent.hung_up.wait(30)  # the connection is closed, not left waiting
    assert not idp.events("token")
    silent.sock.close()


def test_login_of_an_identity_assertion_server_just_gets_a_token(
        idp: AuthFixture, env: dict[str, str], tmp_path: Path) -> None:
    home = _home(tmp_path, idp.url, oauth=_oauth(idp))
    out = subprocess.run([str(TOOLDECK), "mcp", "login", "web", "--home", str(home)], capture_output=True,
                         text=True, timeout=120, env=os.environ.copy())
    assert out.returncode == 0 and "web: logged in, expires" in out.stdout, out.stderr
    assert "/authorize" not in out.stdout and len(idp.events("exchange")) == 1


def test_identity_assertion_config_is_checked(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/mcp"
    bad: list[tuple[dict[str, Any], str]] = [
        ({"grant": "identity_assertion", "client_id": "svc", "client_secret": "s"}, "identity_provider"),
        ({"grant": "identity_assertion", "client_id": "svc", "client_secret": "s",
          "identity_provider": {"token_endpoint": "https://idp.example/token"}}, "exactly one of `id_token`"),
        ({"grant": "identity_assertion", "client_id": "svc", "client_secret": "s",
          "identity_provider": {"token_endpoint": "idp.example/token", "id_token": "${T}"}}, "token endpoint"),
        ({"grant": "client_credentials", "client_id": "svc", "client_secret": "s",
          "identity_provider": {"token_endpoint": "https://idp.example/token", "id_token": "${T}"}},
         "only used with grant"),
    ]
    for oauth, why in bad:
        _home(tmp_path, url, oauth=oauth)
        with pytest.raises(cfg.McpConfigError, match="oauth") as caught:
            cfg.load(tmp_path)
        assert why in str(caught.value) and caught.value.code == "mcp.config_invalid"
    _home(tmp_path, url, oauth={"grant": "identity_assertion", "client_id": "svc", "client_secret": "${S}",
                                "identity_provider": {"token_endpoint": "https://idp.example/token",
                                                      "client_id": "${IDP_ID}", "id_token": "${T}"}})
    config = cfg.load(tmp_path)
    assert config is not None
    with pytest.raises(cfg.McpConfigError, match=r"identity_provider\.id_token: environment variable T"):
        cfg.oauth_plan(config.servers["web"], tmp_path, environ={"S": "s", "IDP_ID": "i"})
    plan = cfg.oauth_plan(config.servers["web"], tmp_path, environ={"S": "S-VALUE", "IDP_ID": "i", "T": "T-VALUE"})
    assert plan is not None and plan.identity_provider is not None
    assert (plan.identity_provider.client_id, plan.identity_provider.id_token) == ("i", "T-VALUE")
    assert "T-VALUE" not in repr(plan) and "S-VALUE" not in repr(plan)
