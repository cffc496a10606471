"""`tooldeck serve --stdio` bounds a client's line (`[serve] max_line_bytes`): a longer message is answered with
an error under its own id and never held; the connection goes on. Before, stdin's buffer took any line whole."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.server.test_stdio_lane import _home, _legacy, served
from tooldeck.server.stdio_lane import MESSAGE_TOO_LARGE

LIMIT = 64 * 1024


def _limited(tmp_path: Path) -> Path:
    home = _home(tmp_path)
    (home / "tooldeck.toml").write_text(f"[serve]\nmax_line_bytes = {LIMIT}\n")
    return home


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_line_over_the_limit_is_answered_under_its_id_and_the_next_call_works(tmp_path: Path) -> None:
    with served(_limited(tmp_path)) as wire:
        _legacy(wire)
        assert wire.call(1, "mcp__fx__echo", {"message": "x" * (LIMIT // 2)})["result"]["isError"] is False
        refused = wire.call(2, "mcp__fx__echo", {"message": "x" * (LIMIT * 3)})
        assert refused["error"]["code"] == -32600
        assert refused["error"]["data"] == {"code": MESSAGE_TOO_LARGE, "max_line_bytes": LIMIT}
        assert "[serve] max_line_bytes" in refused["error"]["message"]
        assert wire.call(3, "mcp__fx__echo", {"message": "after"})["result"]["content"] == [
            {"type": "text", "text": "Echo: after"}]


def test_an_id_after_the_cut_is_answered_under_a_null_id(tmp_path: Path) -> None:
    with served(_limited(tmp_path)) as wire:
        _legacy(wire)
        assert wire.proc.stdin is not None
        big = {"jsonrpc": "2.0", "method": "tools/call",
               "params": {"name": "mcp__fx__echo", "arguments": {"message": "y" * (LIMIT * 2)}}, "id": 9}
        wire.proc.stdin.write(json.dumps(big).encode() + b"\n")
        wire.proc.stdin.flush()
        refused = wire.answer(None)
        assert refused["error"]["data"]["code"] == MESSAGE_TOO_LARGE
        assert wire.call(10, "mcp__fx__echo", {"message": "still here"})["result"]["isError"] is False


def test_a_line_that_never_ends_is_not_held(tmp_path: Path) -> None:
    """256 MiB without a newline, written in pieces: serve's memory stays far below it (the bytes past the limit
    are dropped as they arrive), the request is refused once, and the connection still serves."""
    with served(_limited(tmp_path)) as wire:
        _legacy(wire)
        wire.call(1, "mcp__fx__echo", {"message": "warm"})
        before = _rss_kib(wire.proc.pid)
        assert wire.proc.stdin is not None
        wire.proc.stdin.write(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x", '
                              b'"arguments": {"message": "')
        chunk = b"z" * (1 << 20)
        for _ in range(256):
            wire.proc.stdin.write(chunk)
        wire.proc.stdin.flush()
        grown_kib = _rss_kib(wire.proc.pid) - before
        wire.proc.stdin.write(b'"}}}\n')
        wire.proc.stdin.flush()
        refused = wire.answer(2)
        assert refused["error"]["data"]["code"] == MESSAGE_TOO_LARGE
        assert grown_kib < 64 * 1024, f"serve grew by {grown_kib} KiB while a 256 MiB line went by"
        assert [m for m in wire.seen if m.get("id") == 2] == [refused]  # refused once, not per chunk
        time.sleep(0.1)
        assert wire.call(3, "mcp__fx__echo", {"message": "after"})["result"]["isError"] is False
