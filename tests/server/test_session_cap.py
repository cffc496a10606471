"""`[serve] max_sessions` against a real server: the cap holds, the least recently used idle session makes
room, sessions in use are never taken, and a newcomer is refused only when every session is busy."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import orjson
import pytest

from tests.server.support import Served, http_server, serving_in_thread, write_serve_config
from tooldeck.runtime import Runtime
from tooldeck.server.config import ServeConfig
from tooldeck.server.mcp_server import ServeOptions, TooldeckMCPServer

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
_ids = itertools.count(10)


def open_session(url: str) -> str:
    r = httpx.post(url, json=INIT, headers=ACCEPT, timeout=30)
    assert r.status_code == 200, r.text
    sid = r.headers["mcp-session-id"]
    done = httpx.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                      headers=session_headers(sid), timeout=30)
    assert done.status_code == 202, done.text
    return sid


def session_headers(sid: str) -> dict[str, str]:
    return {**ACCEPT, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}


def roll(url: str, sid: str) -> httpx.Response:
    return httpx.post(url, json={"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call",
                                 "params": {"name": "dice_roll", "arguments": {"formula": "1d1"}}},
                      headers=session_headers(sid), timeout=30)


def rolled(url: str, sid: str) -> bool:
    r = roll(url, sid)
    if r.status_code == 404:
        return False
    assert r.status_code == 200, r.text
    events = [orjson.loads(line[5:]) for line in r.text.splitlines() if line.startswith("data:") and line[5:].strip()]
    [result] = [e["result"] for e in events if "result" in e]
    assert result["content"][0]["text"] == "Rolled 1d1: 1."
    return True


@contextmanager
def standalone_stream(url: str, sid: str) -> Iterator[None]:
    """Hold the session's GET stream open (the session is busy while it is)."""
    with httpx.Client(timeout=httpx.Timeout(30, read=None)) as client, \
            client.stream("GET", url, headers={"Accept": "text/event-stream", "mcp-session-id": sid,
                                               "mcp-protocol-version": "2025-11-25"}) as r:
        assert r.status_code == 200
        time.sleep(0.2)
        yield


@pytest.fixture
def capped(tmp_path: Path) -> Iterator[Served]:
    home = tmp_path / "home"
    write_serve_config(home, max_sessions=3)
    with http_server(home, log=tmp_path / "serve.log") as served:
        yield served


def test_the_least_recently_used_idle_session_makes_room(capped: Served) -> None:
    url = capped.url
    first, second, third = (open_session(url) for _ in range(3))
    assert rolled(url, second) and rolled(url, third) and rolled(url, first)  # `second` is now the LRU
    fourth = open_session(url)
    assert not rolled(url, second)  # evicted: 404, as for an expired session
    assert all(rolled(url, sid) for sid in (first, third, fourth))
    for _ in range(5):  # the cap holds however many come
        open_session(url)
    assert sum(rolled(url, sid) for sid in (first, third, fourth)) == 0
    assert "closed idle MCP session" not in capped.stderr()  # info level: not on the default log


def test_busy_sessions_are_kept_and_a_newcomer_is_refused(capped: Served) -> None:
    url = capped.url
    sids = [open_session(url) for _ in range(3)]
    with ExitStack() as streams:
        for sid in sids:
            streams.enter_context(standalone_stream(url, sid))
        refused = httpx.post(url, json=INIT, headers=ACCEPT, timeout=30)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
        error = refused.json()["error"]
        assert error["code"] == "serve.session_limit" and "max_sessions" in error["message"]
        assert all(rolled(url, sid) for sid in sids)  # every session in use keeps answering
    # the streams are closed: those sessions are idle again, and a newcomer gets a place
    assert wait_for(lambda: httpx.post(url, json=INIT, headers=ACCEPT, timeout=30).status_code == 200)
    assert sum(rolled(url, sid) for sid in sids) == 2


def wait_for(predicate: object, deadline_s: float = 10) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


def test_an_evicted_session_leaves_the_registry_too(tmp_path: Path) -> None:
    """In process (to look inside): tooldeck's own per-session state goes with the SDK session."""
    mcp = TooldeckMCPServer(Runtime(tmp_path, profile={"loading": "eager"}),
                            ServeOptions(watch_interval_s=None, limits=ServeConfig(max_sessions=2)))
    with serving_in_thread(mcp) as (_thread, url):
        assert wait_for(lambda: mcp.http_server is not None and mcp.http_server.started)
        sids = [open_session(url) for _ in range(2)]
        assert all(rolled(url, sid) for sid in sids)
        assert set(mcp.registry.sessions) == set(sids)
        newest = open_session(url)
        assert rolled(url, newest)
        assert set(mcp.registry.sessions) == {sids[1], newest}
