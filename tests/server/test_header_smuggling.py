"""Requests whose headers or target could be read two ways, sent byte for byte to a real `tooldeck serve`:
each is refused with a 4xx and a stable code before the MCP app sees it, and the unambiguous forms pass."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest

from tests.server.support import RawResponse, Served, exchange, http_request, http_server

TOKEN = "s3cret-token"
INIT = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "test", "version": "1"}}})
JSON = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")]
HOST = ("Host", "127.0.0.1")
AUTH = ("Authorization", f"Bearer {TOKEN}")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with http_server(tmp_path_factory.mktemp("home"), "--allow-origin", "https://app.example",
                     env={"TOOLDECK_TOKEN": TOKEN}) as s:
        yield s


def send(served: Served, headers: list[tuple[str, str]], target: str = "/mcp", body: bytes = INIT) -> RawResponse:
    response = exchange(served.port, http_request("POST", target, [*headers, *JSON], body))
    assert response is not None, "the server closed the connection without an answer"
    return response


def error_code(response: RawResponse) -> str:
    return response.json()["error"]["code"]  # type: ignore[index]


REFUSED = [
    # the reproducer: a browser-looking evil Origin, then a loopback one that used to win
    ("two origins", [HOST, AUTH, ("Origin", "https://evil.example"), ("Origin", "http://localhost")],
     400, "serve.header_duplicated"),
    ("two origins, loopback first", [HOST, AUTH, ("Origin", "http://localhost"), ("Origin", "https://evil.example")],
     400, "serve.header_duplicated"),
    ("two hosts", [("Host", "evil.example"), ("Host", "127.0.0.1"), AUTH], 400, "serve.header_duplicated"),
    ("two hosts, other case", [("host", "evil.example"), ("HOST", "127.0.0.1"), AUTH], 400, "serve.header_duplicated"),
    ("two tokens, the right one last", [HOST, ("Authorization", "Bearer wrong"), AUTH], 400, "serve.header_duplicated"),
    ("two session ids", [HOST, AUTH, ("Mcp-Session-Id", "a"), ("mcp-session-id", "b")], 400,
     "serve.header_duplicated"),
    ("two protocol versions", [HOST, AUTH, ("MCP-Protocol-Version", "2025-11-25"),
                               ("MCP-Protocol-Version", "2026-07-28")], 400, "serve.header_duplicated"),
    ("comma-joined origins", [HOST, AUTH, ("Origin", "https://evil.example, http://localhost")], 400,
     "serve.header_invalid"),
    ("comma-joined origins, loopback first", [HOST, AUTH, ("Origin", "http://localhost, https://evil.example")],
     400, "serve.header_invalid"),
    ("space-separated origins", [HOST, AUTH, ("Origin", "http://localhost https://evil.example")], 400,
     "serve.header_invalid"),
    ("origin with user info", [HOST, AUTH, ("Origin", "http://evil.example@localhost")], 400, "serve.header_invalid"),
    ("origin with a path", [HOST, AUTH, ("Origin", "http://localhost/evil")], 400, "serve.header_invalid"),
    ("opaque origin", [HOST, AUTH, ("Origin", "null")], 403, "serve.origin_not_allowed"),
    ("host with user info", [("Host", "evil.example@localhost"), AUTH], 400, "serve.header_invalid"),
    ("hosts as a list", [("Host", "localhost, evil.example"), AUTH], 400, "serve.header_invalid"),
    ("length and chunked", [HOST, AUTH, ("Content-Length", str(len(INIT))), ("Transfer-Encoding", "chunked")], 400,
     "serve.header_invalid"),
]


@pytest.mark.parametrize(("headers", "status", "code"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_ambiguous_headers_are_refused(served: Served, headers: list[tuple[str, str]], status: int,
                                       code: str) -> None:
    body = b"0\r\n\r\n" if ("Transfer-Encoding", "chunked") in headers else INIT
    response = send(served, headers, body=body)
    assert response.status == status, response.body
    assert error_code(response) == code
    assert "mcp-session-id" not in response.headers  # the MCP app never saw it


def test_an_obsolete_folded_origin_is_one_invalid_value(served: Served) -> None:
    raw = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + TOKEN.encode()
           + b"\r\nOrigin: https://evil.example\r\n http://localhost\r\nContent-Type: application/json\r\n"
           b"Accept: application/json, text/event-stream\r\nContent-Length: " + str(len(INIT)).encode()
           + b"\r\n\r\n" + INIT)
    response = exchange(served.port, raw)
    assert response is not None and response.status == 400 and error_code(response) == "serve.header_invalid"


@pytest.mark.parametrize("target", ["http://evil.example/mcp", "http://127.0.0.1/mcp", "https://localhost:1/mcp",
                                    "http://u@127.0.0.1:{port}/mcp", "*", "127.0.0.1:443", "mcp"])
def test_a_target_that_names_another_authority_is_refused(served: Served, target: str) -> None:
    host = f"127.0.0.1:{served.port}"
    response = send(served, [("Host", host), AUTH], target=target.format(port=served.port))
    assert response.status == 400 and error_code(response) == "serve.request_target_invalid"


def test_an_absolute_target_naming_this_server_is_served(served: Served) -> None:
    host = f"127.0.0.1:{served.port}"
    response = send(served, [("Host", host), AUTH], target=f"http://{host}/mcp")
    assert response.status == 200 and "mcp-session-id" in response.headers


@pytest.mark.parametrize("origin", ["http://localhost:5173", "https://[::1]:1", "https://app.example",
                                    "HTTP://LOCALHOST", "http://127.0.0.1/"])
def test_one_allowed_origin_passes(served: Served, origin: str) -> None:
    assert send(served, [HOST, AUTH, ("Origin", origin)]).status == 200


def test_duplicates_are_refused_before_the_token_is_looked_at(served: Served) -> None:
    response = send(served, [HOST, ("Origin", "http://localhost"), ("Origin", "http://localhost")])
    assert response.status == 400 and error_code(response) == "serve.header_duplicated"
    assert "www-authenticate" not in response.headers


@pytest.mark.parametrize(("line", "code"), [
    (b"Origin : https://evil.example", "serve.http_invalid"),  # a space before the colon: another header name?
    (b"Origin: http://localhost\x00evil", "serve.http_invalid"),
    (b"Transfer-Encoding: chunked, identity", "serve.http_invalid"),
    (b"Content-Length: 5, 6", "serve.http_invalid"),
])
def test_header_lines_that_are_not_http_are_refused_in_json(served: Served, line: bytes, code: str) -> None:
    raw = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + line + b"\r\nContent-Type: application/json\r\n"
           b"Content-Length: 2\r\n\r\n{}")
    response = exchange(served.port, raw)
    assert response is not None and response.status == 400 and response.closed
    assert error_code(response) == code
