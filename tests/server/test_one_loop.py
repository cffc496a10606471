"""`tooldeck serve` with MCP servers behind it runs on the runtime's MCP loop (server/one_loop.py), and speaks
stdio on asyncio pipes (server/stdio.py): real processes, the fixture server of tests/mcp as the upstream."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters

from .support import TOOLDECK, _env, served_process, stop

FIXTURE = Path(__file__).resolve().parents[1] / "mcp" / "fixtures" / "fixture_server.py"
DEADLINE_S = 30.0


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"fx": {"command": sys.executable,
                                                                     "args": [str(FIXTURE)]}}}))
    return home


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return out


def _threads(pid: int) -> list[str]:
    names = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            names.append(Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip())
        except OSError:
            continue
    return names


def _waits(pid: int) -> list[str]:
    """Where each thread of `pid` sleeps in the kernel (`wchan`)."""
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out.append(Path(f"/proc/{pid}/task/{tid}/wchan").read_text().strip())
        except OSError:
            continue
    return out


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def _poll(what: str, check: object) -> None:
    end = time.monotonic() + DEADLINE_S
    while not check():  # type: ignore[operator]
        assert time.monotonic() < end, f"{what} did not happen within {DEADLINE_S} s"
        time.sleep(0.05)


async def test_proxied_calls_over_stdio_run_on_one_loop_with_no_reader_thread(tmp_path: Path) -> None:
    home = _home(tmp_path)
    before = set(_children(os.getpid()))
    params = StdioServerParameters(command=TOOLDECK, args=["serve", "--stdio", "--home", str(home), "--loading",
                                                           "eager"], env=_env(None))
    async with Client(params, cache=None) as client:
        [serve_pid] = [p for p in _children(os.getpid()) if p not in before]
        assert not (await client.call_tool("mcp__fx__echo", {"message": "warm"})).is_error
        threads = len(_threads(serve_pid))
        for i in range(30):
            result = await client.call_tool("mcp__fx__echo", {"message": f"m{i}"})
            assert result.content[0].text == f"Echo: m{i}"  # type: ignore[union-attr]
        assert len(_threads(serve_pid)) == threads  # no thread started per call
        # Idle between calls: one event loop (the MCP loop serves the client too), and no thread blocked reading
        # stdin (the SDK's stdio transport reads each line in a worker thread).
        # (Polled: a thread may still be finishing the last reply when first looked at.)
        seen: list[list[str]] = []

        def settled() -> bool:
            seen.append(waits := _waits(serve_pid))
            return waits.count("do_epoll_wait") == 1 and not [w for w in waits if "pipe_read" in w]

        end = time.monotonic() + 5.0
        while not settled():
            assert time.monotonic() < end, f"the serve process's threads never settled so: {seen[-3:]}"
            time.sleep(0.05)
    # no thread per line read or reply written (the SDK's stdio transport runs both in worker threads)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_http_serve_and_its_upstream_server(tmp_path: Path, signum: int) -> None:
    home = _home(tmp_path)
    log = tmp_path / "serve.log"
    argv = [TOOLDECK, "serve", "--home", str(home), "--http", "127.0.0.1:0", "--connect", "start"]
    with served_process(argv, log=log) as served:
        _poll("the upstream server's start", lambda: _children(served.proc.pid))
        [upstream] = _children(served.proc.pid)
        served.proc.send_signal(signum)
        assert served.proc.wait(DEADLINE_S) == 0
        _poll("the upstream server's end", lambda: _gone(upstream))
        stop(served.proc)
    assert "Traceback" not in log.read_text()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_stdio_serve_and_its_upstream_server(tmp_path: Path, signum: int) -> None:
    home = _home(tmp_path)
    proc = subprocess.Popen([TOOLDECK, "serve", "--stdio", "--home", str(home), "--connect", "start"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(None))
    try:
        _poll("the upstream server's start", lambda: _children(proc.pid))
        [upstream] = _children(proc.pid)
        time.sleep(0.3)  # serving: past the start-up
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=DEADLINE_S)
        assert proc.returncode == 0, err
        assert b"Traceback" not in err
        _poll("the upstream server's end", lambda: _gone(upstream))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


_REQUESTS = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]


@pytest.mark.parametrize("with_mcp", [False, True])
def test_stdin_from_a_regular_file_is_served_too(tmp_path: Path, with_mcp: bool) -> None:
    """asyncio cannot watch a regular file: the SDK's threaded transport serves it. (Only the handshake is
    asserted: at the end of the file the SDK cancels the requests still running, as with any client that leaves.)"""
    home = _home(tmp_path) if with_mcp else tmp_path / "home"
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps(_REQUESTS[0]) + "\n")
    with requests.open("rb") as stdin:
        done = subprocess.run([TOOLDECK, "serve", "--stdio", "--home", str(home)], stdin=stdin,
                              capture_output=True, timeout=120, env=_env(None))
    assert done.returncode == 0, done.stderr
    [reply] = [json.loads(line) for line in done.stdout.splitlines()]
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "tooldeck"


@pytest.mark.parametrize("with_mcp", [False, True])
def test_stdin_from_dev_null_ends_the_server_instead_of_hanging_it(tmp_path: Path, with_mcp: bool) -> None:
    """`/dev/null` is a character device epoll refuses (EPERM): asyncio's pipe transport would log the error
    in a callback and wait on stdin forever (the README's `tooldeck serve --stdio` line with no client hung)."""
    home = _home(tmp_path) if with_mcp else tmp_path / "home"
    done = subprocess.run([TOOLDECK, "serve", "--stdio", "--home", str(home)], stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=120, env=_env(None))
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr


def test_output_of_a_tools_child_process_does_not_reach_the_wire() -> None:
    script = ("import os, subprocess, sys\n"
              "subprocess.run(['echo', 'stray output of a child'])\n"
              "os.write(1, b'stray output of the server\\n')\n")
    stdin = "".join(json.dumps(r) + "\n" for r in _REQUESTS)
    # `python -c` stands in for the server: it imports the transport, serves one exchange, and writes stray
    # output on fd 1 while serving (what a tool's child process inherits), which must land on stderr.
    code = ("import anyio, os, subprocess\n"
            "from tooldeck.server.stdio import stdio_streams\n"
            "import mcp_types as types\n"
            "from mcp.shared.message import SessionMessage\n"
            "async def main():\n"
            "    async with stdio_streams() as (read, write):\n"
            f"        exec({script!r})\n"
            "        async for item in read:\n"
            "            msg = item.message\n"
            "            if getattr(msg, 'id', None) is not None:\n"
            "                await write.send(SessionMessage(types.JSONRPCResponse(jsonrpc='2.0', id=msg.id, "
            "result={'echo': msg.method})))\n"
            "anyio.run(main)\n")
    done = subprocess.run([sys.executable, "-c", code], input=stdin.encode(), capture_output=True, timeout=60,
                          env=_env(None))
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"jsonrpc": "2.0", "id": 1, "result": {"echo": "initialize"}},
        {"jsonrpc": "2.0", "id": 2, "result": {"echo": "tools/list"}}]
    assert b"stray output of a child" in done.stderr and b"stray output of the server" in done.stderr


# -- the line reader ------------------------------------------------------------------------------------

_line = st.one_of(st.builds(lambda i: json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}).encode(),
                            st.integers(0, 99)),
                  st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")))  # any bytes, invalid UTF-8 too


class _Lane:
    """Takes the lines that hold `take` (as the stdio lane takes `tools/call`), in the order they arrive."""

    def __init__(self) -> None:
        self.taken: list[bytes] = []

    def take(self, line: bytes) -> bool:
        if b"take" in line:
            self.taken.append(line)
            return True
        return False


@settings(derandomize=True, max_examples=150, deadline=None)
@given(st.lists(_line | st.just(b"take me"), max_size=8), st.booleans(),
       st.lists(st.integers(1, 40), min_size=1, max_size=10), st.booleans())
def test_the_reader_gives_one_item_per_line_however_the_bytes_arrive(lines: list[bytes], last_newline: bool,
                                                                    cuts: list[int], with_lane: bool) -> None:
    """stdin's protocol and the SDK's read stream: every line reaches either the lane or the reader, once, in order,
    however the bytes are cut; a last line without its newline is the reader's."""
    from mcp.shared.message import SessionMessage

    from tooldeck.server.stdio import Inbound, StdinMessages

    data = b"\n".join(lines) + (b"\n" if last_newline and lines else b"")
    lane = _Lane()

    async def read_all() -> list[object]:
        inbound = Inbound()
        if with_lane:
            inbound.lane = lane  # type: ignore[assignment]
        pos, i = 0, 0
        while pos < len(data):  # fed in chunks that cut lines anywhere
            step = cuts[i % len(cuts)]
            inbound.data_received(data[pos:pos + step])
            pos, i = pos + step, i + 1
        inbound.eof_received()
        return [item async for item in StdinMessages(inbound)]

    items = asyncio.run(read_all())
    expected = lines if (last_newline or not lines or lines[-1]) else lines[:-1]
    complete = expected if last_newline or not expected else expected[:-1]
    if with_lane:  # the lane is offered the complete lines only
        assert lane.taken == [line for line in complete if b"take" in line]
        expected = [line for at, line in enumerate(expected) if at >= len(complete) or b"take" not in line]
    assert len(items) == len(expected)
    for line, item in zip(expected, items, strict=True):
        if line.startswith(b'{"jsonrpc"'):
            assert isinstance(item, SessionMessage) and item.message.id == json.loads(line)["id"]  # type: ignore[union-attr]
        else:
            assert isinstance(item, Exception)  # handed on, as the SDK's reader does; nothing is raised


class _Transport:
    def __init__(self) -> None:
        self.paused = False

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


def test_stdin_stops_being_read_while_the_sdk_reader_lags_and_resumes_when_it_catches_up() -> None:
    """The 1 MiB bound on stdin's bytes waiting for the SDK's reader: past it the pipe is no longer read (the client's
    writes then block on the full pipe), and reading resumes once the reader has taken half of it."""
    from tooldeck.server.stdio import _QUEUED_MAX, Inbound, StdinMessages

    async def run() -> tuple[bool, bool, int, int, int]:
        inbound, transport = Inbound(), _Transport()
        inbound.connection_made(transport)  # type: ignore[arg-type]
        line = json.dumps({"jsonrpc": "2.0", "method": "ping", "id": 1}).encode() + b"\n"
        count = _QUEUED_MAX // len(line) + 2
        for _ in range(count):
            inbound.data_received(line)
        paused = transport.paused
        reader = StdinMessages(inbound)
        items = 0
        while transport.paused:
            await reader.receive()
            items += 1
        return paused, transport.paused, items, count, len(line)

    paused, still, items, count, size = asyncio.run(run())
    assert paused and not still
    left = (count - items) * size  # what was still waiting when reading resumed: half the bound, not nothing
    assert left <= _QUEUED_MAX // 2 < left + size
