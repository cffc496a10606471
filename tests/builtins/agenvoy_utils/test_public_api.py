"""`public_api_list` through a real Runtime against a loopback catalogue: the query it sends for each mode,
the answer as it came, failures with their codes, the guard, and the 30 s limit stopping the request."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.conftest import MakeRuntime
from tests.net.support import Answer, LoopbackServer, loopback_server
from tooldeck.builtins import public_api

CATEGORIES = {"categories": ["Animals", "Weather"]}
ANIMALS = {"count": 1, "entries": [{"API": "Cat Facts", "Description": "Daily cat facts", "Auth": "", "HTTPS": True,
                                    "Cors": "no", "Link": "https://catfact.ninja", "Category": "Animals"}]}


@pytest.fixture
def server() -> Any:
    with loopback_server() as s:
        yield s


def _call(make_runtime: MakeRuntime, server: LoopbackServer, args: dict[str, Any], **keys: Any) -> Any:
    keys.setdefault("net_allow", ["127.0.0.1"])
    rt = make_runtime(loading="eager", allow=["builtin:public_api_list"],
                      public_api_list_url=f"{server.url}/list/", **keys)
    [result] = rt.invocation().run([{"id": "p", "name": "public_api_list", "arguments": args}])
    return result


def test_categories_a_category_and_everything(make_runtime: MakeRuntime, server: LoopbackServer) -> None:
    server.answers["/list/"] = Answer(200, json.dumps(CATEGORIES).encode(), {"content-type": "application/json"})
    result = _call(make_runtime, server, {"type": "category"}, home="a")
    assert not result.is_error and json.loads(result.content) == CATEGORIES
    server.answers["/list/"] = Answer(200, json.dumps(ANIMALS).encode(), {"content-type": "application/json"})
    result = _call(make_runtime, server, {"category": "Animals & Pets"}, home="b")
    assert json.loads(result.content) == ANIMALS
    result = _call(make_runtime, server, {}, home="c")
    assert not result.is_error
    assert [r.path for r in server.requests] == ["/list/?type=category", "/list/?category=Animals+%26+Pets", "/list/"]
    assert all(r.method == "GET" and r.headers["accept"] == "application/json" for r in server.requests)


def test_failures_have_codes(make_runtime: MakeRuntime, server: LoopbackServer) -> None:
    server.answers["/list/"] = Answer(404, b'{"error": "unknown category"}')
    result = _call(make_runtime, server, {"category": "Nope"}, home="a")
    assert result.is_error and result.error_code == "public_api.failed"
    assert "http 404" in result.content and "type=category" in result.content
    server.answers["/list/"] = Answer(200, b"<html>maintenance</html>", {"content-type": "text/html"})
    result = _call(make_runtime, server, {}, home="b")
    assert result.is_error and result.error_code == "public_api.failed" and "JSON" in result.content


def test_the_guard_applies(make_runtime: MakeRuntime, server: LoopbackServer) -> None:
    result = _call(make_runtime, server, {}, net_allow=[])
    assert result.is_error and result.error_code == "net.refused" and server.requests == []


def test_the_time_limit_stops_the_request(make_runtime: MakeRuntime, server: LoopbackServer,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(public_api, "TIMEOUT_S", 0.5)
    server.answers["/list/"] = Answer(200, b"{}", delay_s=3)
    result = _call(make_runtime, server, {})
    assert result.is_error and result.error_code == "http.timeout"
    deadline = time.monotonic() + 20
    while server.closed < server.connections and time.monotonic() < deadline:  # the client hung up
        time.sleep(0.05)
    assert server.closed == server.connections == 1


def test_an_unreachable_catalogue_is_request_failed(make_runtime: MakeRuntime) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on once this socket is closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rt = make_runtime(loading="eager", allow=["builtin:public_api_list"], net_allow=["127.0.0.1"],
                      public_api_list_url=f"http://127.0.0.1:{port}/")
    [result] = rt.invocation().run([{"id": "p", "name": "public_api_list", "arguments": {}}])
    assert result.error_code == "http.request_failed" and "could not be reached" in result.content
