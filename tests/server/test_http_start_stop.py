"""The start and stop of `tooldeck serve --http`: the "serving" line comes once uvicorn has started, so a SIGTERM
right after it gets the graceful shutdown (before, on a busy machine, it could cancel uvicorn's startup half-way
and end the serve with a logged traceback); a stop asked before the server exists still stops it, with no
"serving" line."""

from __future__ import annotations

from pathlib import Path

from tests.server.support import serving_in_thread
from tooldeck.runtime import Runtime
from tooldeck.server.mcp_server import ServeOptions, TooldeckMCPServer


def _server(tmp_path: Path) -> TooldeckMCPServer:
    return TooldeckMCPServer(Runtime(tmp_path, profile={"loading": "eager"}), ServeOptions(watch_interval_s=None))


def test_ready_is_announced_once_uvicorn_has_started(tmp_path: Path) -> None:
    mcp = _server(tmp_path)
    seen: list[bool] = []

    def ready() -> None:
        # uvicorn's signal handlers go in before its startup and its `started` is set at the end of it.
        seen.append(mcp.http_server is not None and mcp.http_server.started)
        mcp.http_server.should_exit = True

    with serving_in_thread(mcp, ready) as (thread, _url):
        thread.join(30)
        assert not thread.is_alive(), "the server did not stop after its ready callback asked it to"
        assert seen == [True]


def test_a_stop_asked_before_the_server_exists_still_stops_it(tmp_path: Path) -> None:
    mcp = _server(tmp_path)
    mcp._stop_http()  # Ctrl-C while the home was still opening: no uvicorn server yet
    assert mcp.http_server is None
    announced: list[bool] = []
    with serving_in_thread(mcp, lambda: announced.append(True)) as (thread, _url):
        thread.join(30)
        assert not thread.is_alive(), "a stop asked before serve_http began was lost: the server runs on"
        assert announced == []  # a server on its way out does not say it serves
