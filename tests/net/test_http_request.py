"""`http_request` through a real Runtime (records on) against a loopback server: answers, refusals that
never reach the server, confirmation for methods other than GET, bodies, caps and the timeout."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import MakeRuntime
from tests.net.support import Answer, LoopbackServer, loopback_server
from tooldeck.builtins.net import MAX_BODY_BYTES, clamp_timeout


@pytest.fixture
def server() -> Any:
    with loopback_server() as s:
        yield s


def _call(rt: Any, args: dict[str, Any], confirm: Any = None) -> Any:
    inv = rt.invocation(confirm=confirm)
    [result] = inv.run([{"id": "h1", "name": "http_request", "arguments": args}])
    return result


def _runtime(make_runtime: MakeRuntime, **keys: Any) -> Any:
    keys.setdefault("net_allow", ["127.0.0.1"])
    keys.setdefault("allow", ["builtin:http_request"])
    return make_runtime(loading="eager", **keys)


def test_get_answers_status_headers_and_body_and_non_2xx_is_not_an_error(make_runtime: MakeRuntime,
                                                                         server: LoopbackServer) -> None:
    server.answers["/ok"] = Answer(200, b'{"a": 1}', {"content-type": "application/json", "x-one": "1"})
    server.answers["/gone"] = Answer(410, b"gone", {"content-type": "text/plain"})
    rt = _runtime(make_runtime)
    ok = _call(rt, {"url": f"{server.url}/ok", "headers": {"x-test": "yes"}})
    assert not ok.is_error
    answer = json.loads(ok.content)
    assert answer["status_code"] == 200 and answer["body"] == '{"a": 1}' and answer["headers"]["x-one"] == "1"
    assert server.requests[0].headers["x-test"] == "yes"
    gone = _call(rt, {"url": f"{server.url}/gone"})
    assert not gone.is_error and json.loads(gone.content)["status_code"] == 410


def test_loopback_is_refused_without_net_allow_and_nothing_is_sent(make_runtime: MakeRuntime,
                                                                    server: LoopbackServer) -> None:
    rt = _runtime(make_runtime, net_allow=[])
    refused = _call(rt, {"url": f"{server.url}/ok"})
    assert refused.is_error and refused.error_code == "net.refused" and "net_allow" in refused.content
    scheme = _call(rt, {"url": "file:///etc/passwd"})
    assert scheme.is_error and scheme.error_code == "net.refused"
    assert server.connections == 0


def test_methods_other_than_get_ask_unless_the_profile_decides(make_runtime: MakeRuntime,
                                                               server: LoopbackServer) -> None:
    server.answers["/items"] = Answer(201, b"made")
    asked: list[Any] = []
    rt = _runtime(make_runtime)
    denied = _call(rt, {"url": f"{server.url}/items", "method": "POST", "body": {"n": 1}})
    assert denied.is_error and denied.error_code == "tool.permission_denied" and server.requests == []
    made = _call(rt, {"url": f"{server.url}/items", "method": "POST", "body": {"n": 2}},
                 confirm=lambda request: asked.append(request) or True)
    assert not made.is_error and len(asked) == 1
    assert json.loads(server.requests[-1].body) == {"n": 2}
    assert server.requests[-1].headers["content-type"] == "application/json"
    assert not _call(rt, {"url": f"{server.url}/items"}, confirm=lambda r: asked.append(r) or True).is_error
    assert len(asked) == 1  # a GET is not asked about
    trusted = _runtime(make_runtime, home="trusted", permissions={"builtin:http_request": "allow"})
    assert not _call(trusted, {"url": f"{server.url}/items", "method": "DELETE"}).is_error
    assert server.requests[-1].method == "DELETE"


def test_form_and_multipart_bodies(make_runtime: MakeRuntime, server: LoopbackServer, tmp_path: Path) -> None:
    server.answers["/form"] = Answer()
    rt = _runtime(make_runtime, permissions={"builtin:http_request": "allow"},
                  allow=["builtin:http_request", "builtin:workspace.write_file"])
    assert not _call(rt, {"url": f"{server.url}/form", "method": "POST", "content_type": "form",
                          "body": {"q": "a b", "n": 2, "yes": True}}).is_error
    seen = server.requests[-1]
    assert seen.headers["content-type"] == "application/x-www-form-urlencoded"
    assert seen.body == b"q=a+b&n=2&yes=true"
    nested = _call(rt, {"url": f"{server.url}/form", "method": "POST", "content_type": "form", "body": {"a": {}}})
    assert nested.is_error and nested.error_code == "http.invalid_body"
    inv = rt.invocation()
    [wrote] = inv.run([{"id": "w", "name": "workspace_write_file",
                        "arguments": {"path": "output/up.txt", "content": "file bytes"}}])
    assert not wrote.is_error, wrote.content
    result = inv.run([{"id": "m", "name": "http_request", "arguments": {
        "url": f"{server.url}/form", "method": "POST", "content_type": "multipart",
        "body": {"fields": {"k": "v"}, "files": [{"name": "doc", "path": "output/up.txt",
                                                   "content_type": "text/plain"}]}}}])[0]
    assert not result.is_error, result.content
    body = server.requests[-1].body
    assert b'name="doc"; filename="up.txt"' in body and b"file bytes" in body and b'name="k"' in body
    missing = inv.run([{"id": "m2", "name": "http_request", "arguments": {
        "url": f"{server.url}/form", "method": "POST", "content_type": "multipart",
        "body": {"files": [{"name": "doc", "path": "output/none.txt"}]}}}])[0]
    assert missing.is_error and missing.error_code == "http.invalid_body"


def test_the_body_is_cut_at_2_mib(make_runtime: MakeRuntime, server: LoopbackServer) -> None:
    server.answers["/big"] = Answer(200, b"x" * (MAX_BODY_BYTES + 500_000), {"content-type": "text/plain"})
    rt = _runtime(make_runtime, result_inline_limit=5_000_000)  # inline, to read the whole answer here
    result = _call(rt, {"url": f"{server.url}/big"})
    answer = result.structured
    assert answer["body"].endswith("[body truncated at 2 MiB]")
    assert answer["body"].count("x") == MAX_BODY_BYTES


def test_timeout_is_clamped_and_a_slow_server_is_abandoned(make_runtime: MakeRuntime, server: LoopbackServer) -> None:
    assert (clamp_timeout(-10), clamp_timeout(0), clamp_timeout(999), clamp_timeout(5)) == (60, 60, 300, 5)
    server.answers["/slow"] = Answer(200, b"late", delay_s=3)
    rt = _runtime(make_runtime)
    result = _call(rt, {"url": f"{server.url}/slow", "timeout": 0.3})
    assert result.is_error and result.error_code == "http.timeout"
    deadline = time.monotonic() + 10  # the client hung up: the server sees its connection end
    while server.closed < server.connections and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.closed == server.connections == 1


_header_text = st.text(alphabet=st.characters(codec="ascii", exclude_categories=("Cc",)), max_size=12)


@settings(derandomize=True, max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.fixed_dictionaries({}, optional={
    "method": st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "TRACE", "get"]),
    "headers": st.dictionaries(_header_text, _header_text, max_size=3),
    "body": st.one_of(st.none(), st.integers(), st.text(max_size=10), st.dictionaries(st.text(max_size=5),
                      st.one_of(st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2)), max_size=3)),
    "content_type": st.sampled_from(["json", "form", "multipart", "xml"]),
    "timeout": st.one_of(st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False)),
}))
def test_any_arguments_give_an_answer_or_a_coded_error(make_runtime: MakeRuntime, server: LoopbackServer,
                                                      args: dict[str, Any]) -> None:
    server.answers["/any"] = Answer()
    rt = _runtime(make_runtime, home="fuzz", permissions={"builtin:http_request": "allow"})
    result = _call(rt, {"url": f"{server.url}/any", **args})
    if result.is_error:
        assert result.error_code and "." in result.error_code, result.content
    else:
        assert json.loads(result.content)["status_code"] == 200


def test_a_run_keeps_its_connection_and_closing_the_runtime_closes_it(make_runtime: MakeRuntime,
                                                                      server: LoopbackServer) -> None:
    server.answers["/ok"] = Answer()
    rt = _runtime(make_runtime)
    for i in range(3):
        [result] = rt.invocation(run_id="one").run([{"id": f"h{i}", "name": "http_request",
                                                     "arguments": {"url": f"{server.url}/ok"}}])
        assert not result.is_error
    assert server.connections == 1 and len(server.requests) == 3 and server.closed == 0
    rt.close()
    deadline = time.monotonic() + 10
    while server.closed < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.closed == 1
