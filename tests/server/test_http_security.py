"""Host/Origin checks (DNS-rebinding protection) and the bearer token, against a real `tooldeck serve`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.server.support import Served, http_server

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
TOKEN = "s3cret-token"


def post(url: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(url, json=INIT, headers={**ACCEPT, **(headers or {})}, timeout=15)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with http_server(tmp_path_factory.mktemp("home"), "--allow-origin", "https://app.example",
                     "--allow-host", "mcp.internal") as s:
        yield s


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with http_server(tmp_path_factory.mktemp("home"), env={"TOOLDECK_TOKEN": TOKEN}) as s:
        yield s


def test_loopback_request_is_served(served: Served) -> None:
    r = post(served.url)
    assert r.status_code == 200, r.text
    assert "mcp-session-id" in r.headers


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8808", "192.168.1.20:8808", "127.0.0.1.nip.io"])
def test_foreign_host_is_refused(served: Served, host: str) -> None:
    r = post(served.url, {"Host": host})
    assert r.status_code == 421
    assert r.json()["error"]["code"] == "serve.host_not_allowed"
    assert "--allow-host" in r.json()["error"]["message"]


@pytest.mark.parametrize("host", ["localhost", "localhost:9", "127.0.0.1", "[::1]:8808", "mcp.internal:8808"])
def test_loopback_host_names_are_accepted(served: Served, host: str) -> None:
    assert post(served.url, {"Host": host}).status_code == 200


@pytest.mark.parametrize("origin", ["http://evil.example", "https://evil.example:443", "null",
                                    "http://127.0.0.1.evil.example"])
def test_foreign_origin_is_refused(served: Served, origin: str) -> None:
    r = post(served.url, {"Origin": origin})
    assert r.status_code == 403
    assert r.json()["error"]["code"] == "serve.origin_not_allowed"


@pytest.mark.parametrize("origin", ["http://localhost:5173", "http://127.0.0.1", "https://app.example"])
def test_loopback_and_allowed_origins_are_accepted(served: Served, origin: str) -> None:
    assert post(served.url, {"Origin": origin}).status_code == 200


def test_get_stream_is_guarded_too(served: Served) -> None:
    r = httpx.get(served.url, headers={"Host": "evil.example", "Accept": "text/event-stream"}, timeout=15)
    assert r.status_code == 421


def test_token_is_required_when_set(guarded: Served) -> None:
    missing = post(guarded.url)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert missing.json()["error"]["code"] == "serve.unauthorized"
    assert post(guarded.url, {"Authorization": "Bearer wrong"}).status_code == 401
    assert post(guarded.url, {"Authorization": TOKEN}).status_code == 401  # scheme is required
    assert post(guarded.url, {"Authorization": f"Bearer {TOKEN}"}).status_code == 200


async def test_mcp_client_with_token_can_call(guarded: Served) -> None:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    async with http, Client(streamable_http_client(guarded.url, http_client=http), mode="legacy") as client:
        res = await client.call_tool("dice_roll", {"formula": "d6"})
        assert res.is_error is False and res.content[0].text.startswith("Rolled 1d6: ")


def test_token_option_on_command_line(tmp_path: Path) -> None:
    with http_server(tmp_path / "home", "--token", "cli-token") as s:
        assert post(s.url).status_code == 401
        assert post(s.url, {"Authorization": "Bearer cli-token"}).status_code == 200


def test_token_from_the_home_config_with_variable_expansion(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "tooldeck.toml").write_text('[serve]\ntoken = "${SERVE_SECRET_FOR_TEST}"\n')
    with http_server(home, env={"SERVE_SECRET_FOR_TEST": "from-config"}) as s:
        assert post(s.url).status_code == 401
        assert post(s.url, {"Authorization": "Bearer wrong"}).status_code == 401
        assert post(s.url, {"Authorization": "Bearer from-config"}).status_code == 200


def test_a_bad_serve_table_is_a_usage_error(tmp_path: Path) -> None:
    import subprocess

    from tests.server.support import TOOLDECK

    home = tmp_path / "home"
    home.mkdir()
    (home / "tooldeck.toml").write_text("[serve]\ntoken = 5\n")
    proc = subprocess.run([TOOLDECK, "serve", "--home", str(home)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "serve.config_invalid" in proc.stderr
