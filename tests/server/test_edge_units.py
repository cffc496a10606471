"""Pure pieces of the serve edges: header and target rules, the connection cap under the open-file limit,
the session cap's bookkeeping, the `[serve]` settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.core.errors import TooldeckError
from tooldeck.server.config import ServeConfig, load_serve_config
from tooldeck.server.connections import FD_RESERVE, connection_cap
from tooldeck.server.gateway import opens_session
from tooldeck.server.security import HttpGuard, host_name, origin_form, origin_host, single_headers
from tooldeck.server.session_cap import SessionCap


@pytest.mark.parametrize(("value", "parsed"), [
    ("http://localhost:5173", ("http", "localhost")), ("https://[::1]:1", ("https", "::1")),
    ("HTTPS://App.Example/", ("https", "app.example")), ("chrome-extension://abc", ("chrome-extension", "abc")),
    ("null", None), ("http://a, http://b", None), ("http://a http://b", None), ("http://u@localhost", None),
    ("http://localhost/x", None), ("http://", None), ("localhost", None), ("", None), ("http://localhost:99999x", None),
])
def test_origin_host(value: str, parsed: tuple[str, str] | None) -> None:
    assert origin_host(value) == parsed


@pytest.mark.parametrize("value", ["evil@localhost", "localhost, evil", "local host", "localhost/x", "[::1",
                                   "localhost:", "localhost:80:80"])
def test_host_name_refuses_what_is_not_name_and_port(value: str) -> None:
    assert host_name(value) is None


def test_single_headers_finds_the_first_duplicate_case_folded_by_the_server() -> None:
    found, dup = single_headers([(b"host", b"a"), (b"accept", b"x"), (b"accept", b"y"), (b"origin", b"o"),
                                 (b"origin", b"p")])
    assert dup == "origin" and found["host"] == "a" and "accept" not in found


def test_origin_form() -> None:
    refused, path = origin_form(b"http://127.0.0.1:9/mcp", "127.0.0.1:9")
    assert refused is None and path == "/mcp"
    assert origin_form(b"http://127.0.0.1:9", "127.0.0.1:9") == (None, "/")
    for target, host in [(b"http://evil/mcp", "127.0.0.1:9"), (b"*", "h"), (b"ftp://h/mcp", "h"),
                         (b"http://h/mcp", None), (b"http://[::1/x", "h")]:
        refused, path = origin_form(target, host)
        assert refused is not None and refused.code == "serve.request_target_invalid" and path is None


def test_request_refusal_order() -> None:
    g = HttpGuard.build("127.0.0.1", token="t")
    refused, _, _ = g.request_refusal([(b"host", b"evil"), (b"host", b"localhost")], b"/mcp")
    assert refused is not None and refused.code == "serve.header_duplicated"
    refused, _, _ = g.request_refusal([(b"host", b"localhost")], b"/mcp")
    assert refused is not None and refused.code == "serve.unauthorized"
    refused, headers, path = g.request_refusal([(b"host", b"localhost:1"), (b"authorization", b"Bearer t")],
                                               b"http://localhost:1/mcp")
    assert refused is None and path == "/mcp" and headers["host"] == "localhost:1"
    assert g.refusal({"authorization": "Bearer t"}).code == "serve.header_invalid"  # type: ignore[union-attr]
    wide = HttpGuard.build("0.0.0.0", hosts=["*"], origins=["*"])
    assert wide.refusal({"host": "a@b", "origin": "x, y"}) is None  # `*` means any


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.text(max_size=60), st.text(max_size=60))
def test_guard_rules_never_raise_and_loopback_needs_one_clean_value(host: str, origin: str) -> None:
    g = HttpGuard.build("127.0.0.1")
    refused = g.refusal({"host": host, "origin": origin})
    if refused is None:
        name = host_name(host)
        parsed = origin_host(origin)
        assert name is not None and parsed is not None and parsed[0] in ("http", "https")
        assert "," not in host + origin and "@" not in host + origin


@pytest.mark.parametrize(("configured", "soft", "open_now", "expected"), [
    (512, 1024, 20, 512),                          # fits
    (512, 512, 20, 512 - 20 - FD_RESERVE - 256),   # lowered to fit the limit
    (512, 200, 20, 16),                            # never below 16 for the fd limit's sake
    (4, 200, 20, 4),                               # but a smaller configured cap stays
])
def test_connection_cap(configured: int, soft: int, open_now: int, expected: int) -> None:
    assert connection_cap(configured, soft, open_now) == expected


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_session_cap_evicts_the_least_recently_used_idle_session() -> None:
    clock = Clock()
    cap = SessionCap(2, idle_timeout_s=100, clock=clock)
    for sid in ("a", "b"):
        assert cap.admit() == []
        cap.opened(sid)
        cap.end(sid)
        clock.now += 1
    assert cap.begin("a")  # a is now the most recently used
    cap.end("a")
    assert cap.admit() == ["b"]
    cap.opened("c")  # its opening request is in flight until `end`
    cap.end("c")
    assert "b" not in cap and len(cap) == 2
    assert cap.begin("c") and cap.begin("a")  # both busy
    cap.end("c")  # c idle again
    assert cap.admit() == ["c"]
    cap.not_opened()  # the opening request failed: nothing was added
    assert len(cap) == 1


def test_session_cap_refuses_when_every_session_is_busy_and_counts_openings() -> None:
    cap = SessionCap(2, idle_timeout_s=None)
    assert cap.admit() == [] and cap.admit() == []  # two openings in flight take both places
    assert cap.admit() is None
    cap.opened("a")
    cap.opened("b")  # both still in flight
    assert cap.admit() is None
    cap.end("b")
    assert cap.admit() == ["b"]


def test_session_cap_forgets_sessions_past_the_idle_timeout() -> None:
    clock = Clock()
    cap = SessionCap(5, idle_timeout_s=10, clock=clock)
    cap.admit()
    cap.opened("old")
    cap.end("old")
    clock.now = 11
    cap.admit()
    assert "old" not in cap


@pytest.mark.parametrize(("headers", "body", "opens"), [
    ({}, b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}', True),
    ({"mcp-protocol-version": "2025-06-18"}, b'{"jsonrpc":"2.0","id":1,"method":"initialize"}', True),
    ({"mcp-protocol-version": "2026-07-28"}, b'{"jsonrpc":"2.0","id":1,"method":"initialize"}', False),
    ({}, b'[{"jsonrpc":"2.0","id":1,"method":"initialize"}]', True),
    ({}, b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"initialize"}}', False),
    ({}, b'{"method":"initialize"', False),
    ({}, b"\xff\"initialize\"", False),
])
def test_opens_session(headers: dict[str, str], body: bytes, opens: bool) -> None:
    assert opens_session(headers, body) is opens


def test_serve_config_defaults_and_file(tmp_path: Path) -> None:
    assert load_serve_config(tmp_path) == ServeConfig()
    (tmp_path / "tooldeck.toml").write_text('[serve]\nheader_timeout = 2\nmax_sessions = 3\ntoken = "${T_FOR_TEST}"\n')
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("T_FOR_TEST", "tok")
        config = load_serve_config(tmp_path)
    assert config.header_timeout == 2.0 and config.max_sessions == 3 and config.token == "tok"
    assert config.body_timeout == 30.0


def test_a_stdio_server_reads_the_bounds_but_not_the_token(tmp_path: Path) -> None:
    """`--stdio` takes no token: one written as an unset `${VAR}` is no error there (it is over HTTP)."""
    (tmp_path / "tooldeck.toml").write_text('[serve]\nmax_line_bytes = 4096\ntoken = "${T_UNSET_FOR_TEST}"\n')
    config = load_serve_config(tmp_path, with_token=False)
    assert config.max_line_bytes == 4096 and config.token is None
    with pytest.raises(TooldeckError, match="T_UNSET_FOR_TEST"):
        load_serve_config(tmp_path)


@pytest.mark.parametrize(("table", "names"), [
    ("max_session = 3", "`serve.max_session`: unknown key"),
    ("max_sessions = 0", "`serve.max_sessions`"),
    ("header_timeout = -1", "`serve.header_timeout`"),
    ('max_connections = "many"', "`serve.max_connections`"),
    ("max_body_bytes = true", "`serve.max_body_bytes`"),
    ("max_line_bytes = 100", "`serve.max_line_bytes`"),
    ("token = 5", "serve.token"),
])
def test_bad_serve_settings_name_the_key(tmp_path: Path, table: str, names: str) -> None:
    (tmp_path / "tooldeck.toml").write_text(f"[serve]\n{table}\n")
    with pytest.raises(TooldeckError) as err:
        load_serve_config(tmp_path)
    assert err.value.code == "serve.config_invalid" and names in err.value.message


async def _through_gateway(app: object) -> list[dict[str, object]]:
    """One POST /mcp through the gateway in front of `app` (an ASGI callable); the messages it sent."""
    from tooldeck.server.gateway import HttpGateway

    sent: list[dict[str, object]] = []
    scope = {"type": "http", "method": "POST", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"",
             "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")]}
    body = iter([{"type": "http.request", "body": b"{}", "more_body": False}])

    async def receive() -> dict[str, object]:
        return next(body, {"type": "http.disconnect"})

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    await HttpGateway(app, HttpGuard.build("127.0.0.1"), 1024)(scope, receive, send)  # type: ignore[arg-type]
    return sent


def _status_and_code(sent: list[dict[str, object]]) -> tuple[object, str]:
    import orjson

    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")  # type: ignore[misc]
    return sent[0]["status"], orjson.loads(body)["error"]["code"]


async def test_gateway_answers_in_json_whatever_the_app_does() -> None:
    async def raises(scope: object, receive: object, send: object) -> None:
        raise RuntimeError("bug")

    async def bodiless(scope: object, receive: object, send: object) -> None:
        await send({"type": "http.response.start", "status": 405, "headers": [(b"allow", b"POST")]})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": b""})  # type: ignore[operator]

    async def start_then_raise(scope: object, receive: object, send: object) -> None:
        await send({"type": "http.response.start", "status": 406, "headers": []})  # type: ignore[operator]
        raise RuntimeError("bug")

    async def start_then_return(scope: object, receive: object, send: object) -> None:
        await send({"type": "http.response.start", "status": 400, "headers": []})  # type: ignore[operator]

    async def with_body(scope: object, receive: object, send: object) -> None:
        await send({"type": "http.response.start", "status": 404, "headers": []})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": b"Not Found"})  # type: ignore[operator]

    assert _status_and_code(await _through_gateway(raises)) == (500, "serve.internal_error")
    sent = await _through_gateway(bodiless)
    assert _status_and_code(sent) == (405, "serve.method_not_allowed") and (b"allow", b"POST") in sent[0]["headers"]  # type: ignore[operator]
    assert _status_and_code(await _through_gateway(start_then_raise)) == (500, "serve.internal_error")
    assert _status_and_code(await _through_gateway(start_then_return)) == (400, "serve.bad_request")
    kept = await _through_gateway(with_body)  # a body of its own is passed through unchanged
    assert kept[0]["status"] == 404 and kept[1]["body"] == b"Not Found"
