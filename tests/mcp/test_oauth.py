"""OAuth 2.1 against a loopback authorization server and protected MCP server (`fixtures/oauth_server.py`):
the browser flow of `tooldeck mcp login` driven by following the printed URL, the runtime's use of the
stored token, refresh when expired and on a 401, a revoked sign-in, client credentials, two processes
refreshing at once, and that no token reaches records, logs or CLI output."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tooldeck.runtime import Runtime
from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp.login import login
from tooldeck.sources.mcp.tokens import token_path

from .conftest import PYTHON, TOOLDECK, call, free_port, start_http, stop, write_mcp_json

OAUTH_SERVER = Path(__file__).parent / "fixtures" / "oauth_server.py"


class AuthFixture:
    def __init__(self, port: int, proc: subprocess.Popen[bytes]) -> None:
        self.base, self.proc = f"http://127.0.0.1:{port}", proc
        self.url = f"{self.base}/mcp"

    def state(self) -> dict[str, Any]:
        return httpx.get(f"{self.base}/admin/state").json()

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.state()["events"] if e["kind"] == kind]

    def admin(self, action: str) -> None:
        httpx.post(f"{self.base}/admin/{action}").raise_for_status()


def _serve(*options: str) -> Iterator[AuthFixture]:
    port = free_port()
    proc = start_http([PYTHON, str(OAUTH_SERVER), str(port), *options], port)
    yield AuthFixture(port, proc)
    stop(proc)


@pytest.fixture
def oauth() -> Iterator[AuthFixture]:
    yield from _serve()


def _home(home: Path, url: str, **entry: Any) -> Path:
    write_mcp_json(home, {"web": {"url": url, **entry}})
    return home


def _sign_in(home: Path) -> None:
    """`tooldeck mcp login web`'s flow in-process; the "browser" follows the URL (the server approves at once)."""
    config = cfg.load(home)
    assert config is not None
    plan = cfg.oauth_plan(config.servers["web"], home)
    assert plan is not None

    async def browser(url: str) -> None:
        async with httpx.AsyncClient() as client:
            await client.get(url, follow_redirects=True)

    asyncio.run(login(plan, browser, timeout=30))


def _stored(home: Path) -> dict[str, Any]:
    return json.loads(token_path(home, "web").read_text())


def _age_token(home: Path) -> None:
    """Make the stored token look expired (as if its hour had passed), keeping the file's mode."""
    path = token_path(home, "web")
    data = json.loads(path.read_text())
    data["expires_at"] = 1.0
    path.write_text(json.dumps(data))


def test_login_browser_flow_stores_tokens_0600_and_the_runtime_uses_them(
        oauth: AuthFixture, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    home = _home(tmp_path / "home", oauth.url)
    proc = subprocess.Popen([str(TOOLDECK), "mcp", "login", "web", "--home", str(home), "--timeout", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    output: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        output.append(line)
        found = re.search(r"(http://127\.0\.0\.1:\d+/as/authorize\?\S+)", line)
        if found:  # what a user does with the printed URL; the server redirects to tooldeck's listener
            page = httpx.get(found.group(1), follow_redirects=True)
            assert page.status_code == 200 and "Signed in." in page.text
    assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
    assert "web: logged in, expires" in output[-1]

    path = token_path(home, "web")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    [authorize] = oauth.events("authorize")
    assert authorize["code_challenge_method"] == "S256" and authorize["resource"] == oauth.url  # RFC 8707
    [exchange] = oauth.events("token")
    assert exchange["grant"] == "authorization_code" and exchange["verifier"] and exchange["resource"] == oauth.url
    [registered] = oauth.events("register")  # RFC 7591: the client registered itself for the loopback URI
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", registered["redirect_uris"][0])

    caplog.set_level(logging.DEBUG)
    with Runtime(home) as rt:
        assert call(rt.invocation(), "mcp__web__echo", {"message": "signed"}).content == "Echo: signed"
    listed = subprocess.run([str(TOOLDECK), "mcp", "list", "--home", str(home), "--json"], capture_output=True,
                            text=True, check=True).stdout
    assert json.loads(listed)[0]["auth"]["logged_in"] is True
    table = subprocess.run([str(TOOLDECK), "mcp", "list", "--home", str(home)], capture_output=True, text=True,
                           check=True).stdout

    state = oauth.state()
    secrets = [*state["access"], *state["refresh"]]
    assert secrets and all(s in path.read_text() for s in secrets[:1])
    everything = "".join(output) + listed + table + caplog.text
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file() and "mcp-auth" not in p.parts)
    for secret in secrets:
        assert secret not in everything
        assert secret.encode() not in stored  # records.sqlite (and its WAL), catalogs, logs


def test_no_token_gives_an_error_naming_tooldeck_mcp_login(oauth: AuthFixture, tmp_path: Path) -> None:
    home = _home(tmp_path, oauth.url)
    with Runtime(home) as rt:
        result = call(rt.invocation(), "mcp__web__echo", {"message": "x"})
    assert result.error_code in ("mcp.not_sent", "tool.unknown_tool")
    assert "`tooldeck mcp login web`" in result.content
    out = subprocess.run([str(TOOLDECK), "mcp", "refresh", "web", "--home", str(home)], capture_output=True,
                         text=True)
    assert out.returncode == 1 and "[mcp.auth_required]" in out.stdout
    assert "tooldeck mcp login web" in out.stdout
    assert not oauth.events("register")  # the runtime never registers a client nor starts a flow by itself


def test_an_expired_token_is_refreshed_with_the_resource_indicator(oauth: AuthFixture, tmp_path: Path) -> None:
    home = _home(tmp_path, oauth.url)
    _sign_in(home)
    first = _stored(home)["tokens"]
    oauth.admin("expire")  # the server no longer takes the access token ...
    _age_token(home)       # ... and the file says it expired: refreshed before the request is sent
    with Runtime(home) as rt:
        assert call(rt.invocation(), "mcp__web__echo", {"message": "fresh"}).content == "Echo: fresh"
    refreshes = [e for e in oauth.events("token") if e["grant"] == "refresh_token"]
    assert len(refreshes) == 1 and refreshes[0]["resource"] == oauth.url
    now = _stored(home)
    assert now["tokens"]["access_token"] != first["access_token"] and now["expires_at"] > 1.0
    assert stat.S_IMODE(token_path(home, "web").stat().st_mode) == 0o600


def test_a_rejected_token_is_refreshed_once_then_the_call_runs(oauth: AuthFixture, tmp_path: Path) -> None:
    home = _home(tmp_path, oauth.url)
    _sign_in(home)
    oauth.admin("expire")  # the file still says valid: the 401 makes tooldeck refresh
    with Runtime(home) as rt:
        assert call(rt.invocation(), "mcp__web__echo", {"message": "again"}).content == "Echo: again"
    assert [e["grant"] for e in oauth.events("token")] == ["authorization_code", "refresh_token"]


def test_a_revoked_sign_in_asks_to_log_in_again(oauth: AuthFixture, tmp_path: Path) -> None:
    home = _home(tmp_path, oauth.url)
    _sign_in(home)
    with Runtime(home) as rt:
        inv = rt.invocation()
        assert call(inv, "mcp__web__echo", {"message": "before"}).content == "Echo: before"
        dead = [_stored(home)["tokens"]["access_token"], _stored(home)["tokens"]["refresh_token"]]
        oauth.admin("revoke")  # access and refresh tokens: the refresh fails with invalid_grant
        _age_token(home)
        result = call(inv, "mcp__web__echo", {"message": "after"})
        assert result.error_code == "mcp.auth_required" and "The tool did not run." in result.content
        assert "tooldeck mcp login web" in result.content
    assert "tokens" not in _stored(home)  # the dead tokens are dropped; the client registration is kept
    assert "client_info" in _stored(home)
    out = subprocess.run([str(TOOLDECK), "mcp", "refresh", "web", "--home", str(home)], capture_output=True,
                         text=True)
    assert out.returncode == 1 and "answered HTTP 401" in out.stdout and "tooldeck mcp login web" in out.stdout
    # The failure (model text, the failure file, the records, the CLI) never carries the dead tokens.
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file() and "mcp-auth" not in p.parts)
    for secret in dead:
        assert secret not in result.content and secret not in out.stdout + out.stderr
        assert secret.encode() not in stored


def test_client_credentials_from_env_vars(tmp_path: Path) -> None:
    for fx in _serve("--client", "svc:hunter22"):
        home = _home(tmp_path, fx.url, oauth={"grant": "client_credentials", "client_id": "svc",
                                               "client_secret": "${WEB_SECRET}", "scopes": ["tools"]})
        os.environ["WEB_SECRET"] = "hunter22"
        try:
            with Runtime(home) as rt:
                assert call(rt.invocation(), "mcp__web__echo", {"message": "m2m"}).content == "Echo: m2m"
        finally:
            del os.environ["WEB_SECRET"]
        [grant] = fx.events("token")
        assert grant["grant"] == "client_credentials" and grant["resource"] == fx.url and grant["scope"] == "tools"
        assert not fx.events("register") and not fx.events("authorize")
        assert "hunter22" not in token_path(home, "web").read_text()  # the secret stays in the environment


def test_a_wrong_client_secret_is_a_clear_failure(tmp_path: Path) -> None:
    for fx in _serve("--client", "svc:hunter22"):
        home = _home(tmp_path, fx.url, oauth={"grant": "client_credentials", "client_id": "svc",
                                               "client_secret": "wrong"})
        out = subprocess.run([str(TOOLDECK), "mcp", "refresh", "web", "--home", str(home)], capture_output=True,
                             text=True)
        assert out.returncode == 1 and "[mcp.oauth_failed]" in out.stdout
        assert "could not get an OAuth token" in out.stdout and "`oauth`" in out.stdout


_REFRESH_ONCE = """
import sys
from tooldeck.sources.mcp import McpManager
manager = McpManager.from_home(sys.argv[1], start=False)
try:
    [report] = manager.refresh("web")
finally:
    manager.close()
print("ok" if report.ok else report.failure)
"""


def test_two_processes_refreshing_at_once_refresh_once_and_keep_the_file_whole(oauth: AuthFixture,
                                                                               tmp_path: Path) -> None:
    home = _home(tmp_path, oauth.url)
    _sign_in(home)
    oauth.admin("expire")
    _age_token(home)
    # The server rotates refresh tokens (each works once): without the shared lock one process would fail.
    procs = [subprocess.Popen([sys.executable, "-c", _REFRESH_ONCE, str(home)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [o[0].strip() for o in outs] == ["ok", "ok"], outs
    assert len([e for e in oauth.events("token") if e["grant"] == "refresh_token"]) == 1
    data = _stored(home)
    assert data["tokens"]["access_token"] in oauth.state()["access"]
    assert not list(token_path(home, "web").parent.glob("*.tmp"))


def test_logout_forgets_the_sign_in(oauth: AuthFixture, tmp_path: Path) -> None:
    home = _home(tmp_path, oauth.url)
    _sign_in(home)
    out = subprocess.run([str(TOOLDECK), "mcp", "logout", "web", "--home", str(home)], capture_output=True, text=True)
    assert out.returncode == 0 and "signed out" in out.stdout
    assert not token_path(home, "web").exists()
    listed = subprocess.run([str(TOOLDECK), "mcp", "list", "--home", str(home), "--json"], capture_output=True,
                            text=True, check=True).stdout
    assert json.loads(listed)[0]["auth"]["logged_in"] is False


def test_login_refuses_servers_without_oauth(tmp_path: Path) -> None:
    write_mcp_json(tmp_path, {"local": {"command": "true"},
                              "keyed": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer k"}},
                              "off": {"url": "http://127.0.0.1:9/mcp", "oauth": False}})
    for name, why in (("local", "stdio server"), ("keyed", "own `Authorization` header"), ("off", "false")):
        out = subprocess.run([str(TOOLDECK), "mcp", "login", name, "--home", str(tmp_path)], capture_output=True,
                             text=True)
        assert out.returncode == 2 and why in out.stderr, out.stderr
    out = subprocess.run([str(TOOLDECK), "mcp", "login", "nope", "--home", str(tmp_path)], capture_output=True,
                         text=True)
    assert out.returncode == 2 and "mcp.unknown_server" in out.stderr


def test_oauth_config_keys_are_checked(tmp_path: Path) -> None:
    write_mcp_json(tmp_path, {"web": {"url": "http://127.0.0.1:9/mcp", "oauth": {"client_idd": "x"}}})
    with pytest.raises(cfg.McpConfigError, match=r"oauth\.client_idd"):
        cfg.load(tmp_path)
    write_mcp_json(tmp_path, {"web": {"url": "http://127.0.0.1:9/mcp", "oauth": {"grant": "password"}}})
    with pytest.raises(cfg.McpConfigError, match="grant"):
        cfg.load(tmp_path)
    write_mcp_json(tmp_path, {"web": {"url": "http://127.0.0.1:9/mcp", "oauth": {
        "client_id": "${WEB_ID}", "client_secret": "${WEB_SECRET}", "scopes": ["a", "b"]}}})
    config = cfg.load(tmp_path)
    assert config is not None
    with pytest.raises(cfg.McpConfigError, match="WEB_ID"):  # a missing variable is named, its value never stored
        cfg.oauth_plan(config.servers["web"], tmp_path, environ={})
    plan = cfg.oauth_plan(config.servers["web"], tmp_path, environ={"WEB_ID": "id", "WEB_SECRET": "s3"})
    assert plan is not None and (plan.client_id, plan.client_secret, plan.scope) == ("id", "s3", "a b")
    assert "s3" not in repr(plan)


def test_login_of_a_client_credentials_server_just_gets_a_token(tmp_path: Path) -> None:
    for fx in _serve("--client", "svc:hunter22"):
        home = _home(tmp_path, fx.url, oauth={"grant": "client_credentials", "client_id": "svc",
                                               "client_secret": "hunter22"})
        out = subprocess.run([str(TOOLDECK), "mcp", "login", "web", "--home", str(home)], capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0 and "web: logged in, expires" in out.stdout, out.stderr
        assert "/authorize" not in out.stdout and [e["grant"] for e in fx.events("token")] == ["client_credentials"]
        assert stat.S_IMODE(token_path(home, "web").stat().st_mode) == 0o600
