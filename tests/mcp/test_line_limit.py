"""A stdio server that writes a line longer than `MAX_LINE_BYTES` without its end (a broken server dumping
binary, a hostile one) gets its connection closed: tooldeck neither holds the line in memory nor waits for
the call's timeout, says why, and starts the server again for the next call. Real server process."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tooldeck.runtime import Runtime
from tooldeck.sources.mcp import errors, stdio_pipes

from .conftest import PYTHON, call, write_mcp_json, write_toml

RAW_RESULTS = Path(__file__).parent / "fixtures" / "raw_results.py"
LIMIT = 1 << 20


@pytest.fixture
def rt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    monkeypatch.setattr(stdio_pipes, "MAX_LINE_BYTES", LIMIT)
    write_mcp_json(tmp_path, {"raw": {"command": PYTHON, "args": [str(RAW_RESULTS)], "protocol": "legacy"}})
    write_toml(tmp_path, "[mcp.servers.raw]\ncall_timeout_s = 60.0\n")
    runtime = Runtime(tmp_path, records=True)
    yield runtime
    runtime.close()


def _raw_servers() -> set[int]:
    """The raw_results.py servers this process started (from /proc)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if parent == os.getpid() and b"raw_results.py" in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.add(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return found


def test_a_line_over_the_limit_closes_the_connection_and_says_why(rt: Runtime) -> None:
    inv = rt.invocation()
    started = time.monotonic()
    result = call(inv, "mcp__raw__endless_line", {"bytes": 3 * LIMIT})
    assert time.monotonic() - started < 30  # not the call's 60 s timeout
    assert result.error_code == errors.CALL_OUTCOME_UNKNOWN, result.content
    assert result.content.startswith(
        "The call to `endless_line` on MCP server `raw` was sent, but the connection closed before the answer came "
        f"(wrote a line of more than {LIMIT} bytes on stdout without its end (a message that large, or output that "
        "is not MCP), so tooldeck closed the connection).")
    status = next(s for s in rt.mcp.status() if s.name == "raw")  # type: ignore[union-attr]
    assert status.failure is not None and status.failure.code == errors.MESSAGE_TOO_LARGE
    assert "it must log to stderr" in status.failure.advice
    # the work really stopped: the server that wrote the line (asleep, never reading stdin) is gone
    deadline = time.monotonic() + 20
    while _raw_servers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _raw_servers() == set()
    # the next call gets a new process
    assert call(inv, "mcp__raw__not_a_result").error_code == errors.UNSUPPORTED_RESPONSE


def test_a_line_under_the_limit_is_still_read(rt: Runtime) -> None:
    """The limit is on one line: a long line with its end passes (here: a result the client rejects as invalid,
    which means it was read and parsed)."""
    assert call(rt.invocation(), "mcp__raw__not_a_result").error_code == errors.UNSUPPORTED_RESPONSE
