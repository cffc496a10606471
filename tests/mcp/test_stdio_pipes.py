"""The stdio transport to an MCP server (`stdio_pipes.py`): lines to messages in any chunking, the raw relay's
replies taken before parsing, a failed write ending the read stream, the drain and the kill on close."""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from tooldeck.sources.mcp.evidence import Evidence
from tooldeck.sources.mcp.raw_relay import RawChannel
from tooldeck.sources.mcp.stdio_pipes import PipeReader, PipeWriter, stdio_pipes


class Chunks:
    """A byte stream that hands out the given chunks, then its end (the shape of anyio's process stdout)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = list(chunks)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await asyncio.sleep(0)
        if not self._chunks:
            raise anyio.EndOfStream
        return self._chunks.pop(0)

    async def aclose(self) -> None:
        self._chunks.clear()


class Sink:
    """Stdin: keeps every frame written."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    async def send(self, data: bytes) -> None:
        self.frames.append(data)


_OTHER = [
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}',
    b'{"jsonrpc":"2.0","id":7,"result":{}}',
    b'{"jsonrpc":"2.0","id":"tooldeck-relay-999","result":{}}',  # an id no call is waiting for
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tooldeck-relay-5","progress":1}}',
    b"not json at all",
    b'{"jsonrpc":"2.0","id":"tooldeck-relay-1","result":[1]}',  # malformed: left to the SDK's parse (an error)
    b"",
]


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


@settings(derandomize=True, max_examples=60, deadline=None)
@given(picks=st.lists(st.integers(0, len(_OTHER) - 1), max_size=8), errors=st.lists(st.booleans(), min_size=3,
       max_size=3), cuts=st.lists(st.integers(0, 4000), max_size=12), order=st.randoms(use_true_random=False))
def test_lines_in_any_chunking_reach_the_session_or_the_relay(picks: list[int], errors: list[bool],
                                                               cuts: list[int], order: Any) -> None:
    async def scenario() -> None:
        evidence = Evidence()
        sink = Sink()
        reader = PipeReader(Chunks([]), evidence)
        channel = RawChannel(reader, PipeWriter(sink, reader))
        calls = [asyncio.create_task(channel.call(lambda data, opts: None, "echo", {"i": i}, 30.0))
                 for i in range(len(errors))]
        while len(sink.frames) < len(calls):
            await asyncio.sleep(0)
        requests = [orjson.loads(frame) for frame in sink.frames]
        assert all(frame.endswith(b"\n") and frame.count(b"\n") == 1 for frame in sink.frames)
        assert [r["params"]["arguments"]["i"] for r in requests] == list(range(len(calls)))
        replies = []
        for request, error in zip(requests, errors, strict=True):
            body: dict[str, Any] = ({"error": {"code": -32000, "message": f"no {request['id']}"}} if error
                                    else {"result": {"content": [], "n": request["id"]}})
            replies.append(orjson.dumps({"jsonrpc": "2.0", "id": request["id"], **body}))
        others = [_OTHER[i] for i in picks]
        lines = others + replies
        order.shuffle(lines)
        reader._stdout = Chunks(_split(b"".join(line + b"\n" for line in lines), cuts))
        seen = [item async for item in channel]
        expected = _check_session(seen, lines, others, evidence)
        assert not evidence.noise or b"not json at all" in expected or _OTHER[5] in expected
        await _check_calls(calls, errors, [request["id"] for request in requests])

    asyncio.run(scenario())


def _check_session(seen: list[Any], lines: list[bytes], others: list[bytes], evidence: Evidence) -> list[bytes]:
    """The session read the lines the relay left, in order, each as the SDK parses it, and what does not parse
    is noted as noise. Returns those lines."""
    expected = [line for line in lines if line in others]
    assert len(seen) == len(expected)
    for item, line in zip(seen, expected, strict=True):
        try:
            message = types.jsonrpc_message_adapter.validate_json(line.decode(), by_name=False)
        except ValueError:
            assert isinstance(item, Exception)
            continue
        assert isinstance(item, SessionMessage) and item.message == message
    noted = Evidence()
    for item, line in zip(seen, expected, strict=True):
        if isinstance(item, Exception):
            noted.add_noise(line.decode())
    assert evidence.noise == noted.noise
    return expected


async def _check_calls(calls: list[asyncio.Task[Any]], errors: list[bool], ids: list[Any]) -> None:
    """Each relayed call got its own answer: its error, or its result."""
    for task, error, request_id in zip(calls, errors, ids, strict=True):
        if error:
            with pytest.raises(MCPError, match=f"no {request_id}"):
                await task
        else:
            assert await task == {"content": [], "n": request_id}


class Piped:
    """A process's stdout as anyio wraps it: an asyncio `StreamReader` the pipe's protocol feeds (`feed`)."""

    def __init__(self) -> None:
        self._stream = asyncio.StreamReader()

    def feed(self, data: bytes) -> None:
        self._stream.feed_data(data)

    async def aclose(self) -> None:
        pass


async def _reply_to(sink: Sink, index: int, body: dict[str, Any]) -> bytes:
    while len(sink.frames) <= index:
        await asyncio.sleep(0)
    request = orjson.loads(sink.frames[index])
    return orjson.dumps({"jsonrpc": "2.0", "id": request["id"], **body}) + b"\n"


@settings(derandomize=True, max_examples=60, deadline=None)
@given(picks=st.lists(st.integers(0, len(_OTHER) - 1), max_size=8), errors=st.lists(st.booleans(), min_size=3,
       max_size=3), cuts=st.lists(st.integers(0, 4000), max_size=12), order=st.randoms(use_true_random=False),
       pauses=st.lists(st.booleans(), max_size=12))
def test_lines_fed_by_the_pipe_reach_the_session_or_the_relay(picks: list[int], errors: list[bool], cuts: list[int],
                                                              order: Any, pauses: list[bool]) -> None:
    """As the test above, through the pipe's own stream (the relay takes what it can as chunks arrive): chunks
    come while the session waits, or several before it reads again, in any cut."""
    async def scenario() -> None:
        evidence = Evidence()
        sink = Sink()
        stdout = Piped()
        reader = PipeReader(stdout, evidence)
        channel = RawChannel(reader, PipeWriter(sink, reader))
        calls = [asyncio.create_task(channel.call(lambda data, opts: None, "echo", {"i": i}, 30.0))
                 for i in range(len(errors))]
        replies = []
        for index, error in enumerate(errors):
            body: dict[str, Any] = ({"error": {"code": -32000, "message": f"no {index}"}} if error
                                    else {"result": {"content": [], "n": index}})
            replies.append((await _reply_to(sink, index, body)).rstrip(b"\n"))
        others = [_OTHER[i] for i in picks]
        lines = others + replies
        order.shuffle(lines)
        seen: list[Any] = []

        async def session() -> None:
            async for item in channel:
                seen.append(item)

        reading = asyncio.create_task(session())
        for i, chunk in enumerate(_split(b"".join(line + b"\n" for line in lines), cuts)):
            stdout.feed(chunk)
            if i < len(pauses) and pauses[i]:
                await asyncio.sleep(0)  # the session reads before the next chunk
        stdout._stream.feed_eof()
        await reading
        _check_session(seen, lines, others, evidence)
        await _check_calls(calls, errors, list(range(len(errors))))

    asyncio.run(scenario())


async def _one_relayed_call() -> tuple[Piped, RawChannel, asyncio.Task[Any], bytes]:
    """A raw channel on a pipe's stream, one relayed call on it, and the line that answers it."""
    sink = Sink()
    stdout = Piped()
    reader = PipeReader(stdout, Evidence())
    channel = RawChannel(reader, PipeWriter(sink, reader))
    call = asyncio.create_task(channel.call(lambda data, opts: None, "echo", {}, 30.0))
    return stdout, channel, call, await _reply_to(sink, 0, {"result": {"content": [], "n": 1}})


async def test_a_reply_that_comes_while_the_session_waits_is_taken_as_it_arrives() -> None:
    """The relayed call's answer never passes through the session's stream when the session waits for more."""
    stdout, channel, call, reply = await _one_relayed_call()
    session = asyncio.create_task(anext(channel))
    await asyncio.sleep(0)  # the session waits in receive
    stdout.feed(reply)
    assert len(stdout._stream._buffer) == 0  # taken as it came: nothing queued for the session
    assert await call == {"content": [], "n": 1}
    assert not session.done()
    session.cancel()


async def test_a_reply_does_not_overtake_what_the_session_is_still_handling() -> None:
    """A log line of the call, then its answer in a later chunk while the session still handles the log line
    (it relays it to its own client): the answer waits for the session to read again, as the lines came."""
    stdout, channel, call, reply = await _one_relayed_call()
    handled = asyncio.Event()
    order: list[str] = []

    async def session() -> None:
        async for item in channel:
            assert isinstance(item, SessionMessage)
            await handled.wait()  # the session's handling of the log line takes a while
            order.append("log relayed")

    reading = asyncio.create_task(session())
    stdout.feed(_OTHER[0] + b"\n")
    for _ in range(5):
        await asyncio.sleep(0)
    stdout.feed(reply)
    for _ in range(5):
        await asyncio.sleep(0)
    assert not call.done()  # the session has not read past the log line yet
    call.add_done_callback(lambda _: order.append("answer"))
    handled.set()
    assert await call == {"content": [], "n": 1}
    await asyncio.sleep(0)
    assert order == ["log relayed", "answer"]
    reading.cancel()


def _server(tmp_path: Path, body: str) -> StdioServerParameters:
    script = tmp_path / "server.py"
    script.write_text(textwrap.dedent(body))
    return StdioServerParameters(command=sys.executable, args=[str(script)])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_failed_write_ends_the_read_stream(tmp_path: Path) -> None:
    """The server closes its stdin but keeps stdout open: a send fails, and the session's read loop ends
    (then `CONNECTION_CLOSED`) instead of waiting for a reply that cannot come."""
    params = _server(tmp_path, """
        import os, sys, time
        os.close(0)
        print("ready", flush=True)
        time.sleep(60)
    """)
    with (tmp_path / "err.log").open("w") as errlog:
        async with stdio_pipes(params, errlog, Evidence()) as (reader, writer):
            channel = RawChannel(reader, writer)
            first = await channel.receive()
            assert isinstance(first, Exception)  # "ready" is not JSON-RPC
            call = asyncio.create_task(channel.call(lambda data, opts: None, "echo", {}, 60.0))
            async with asyncio.timeout(30):
                with pytest.raises(StopAsyncIteration):
                    await anext(channel)
                with pytest.raises(MCPError) as caught:
                    await call
            assert caught.value.code == types.CONNECTION_CLOSED


async def test_a_failed_write_still_reads_what_the_server_wrote_before(tmp_path: Path) -> None:
    """A server that closed its stdin, printed a usage line and exits: the line is in the pipe (and the event loop
    has read it) when a write fails. The line still reaches the session and the evidence (it names the failure:
    `mcp.not_mcp`), then the stream ends; before, ending the stream at once dropped what the pipe held."""
    marker = tmp_path / "printed"
    params = _server(tmp_path, f"""
        import os, sys, time
        os.close(0)
        print("usage: server [--port N]", flush=True)
        open({str(marker)!r}, "w").close()
        time.sleep(60)
    """)
    evidence = Evidence()
    with (tmp_path / "err.log").open("w") as errlog:
        async with stdio_pipes(params, errlog, evidence) as (reader, writer):
            async with asyncio.timeout(30):
                while not marker.exists():
                    await asyncio.sleep(0.02)
                await asyncio.sleep(0.1)  # the loop reads the line into the stream's buffer meanwhile
                await writer.send_raw({"jsonrpc": "2.0", "id": 1, "method": "ping"})  # the server's stdin is closed
                first = await reader.receive()
                assert isinstance(first, Exception)  # the usage line, not JSON-RPC
                with pytest.raises(anyio.EndOfStream):  # the server still runs: the stream ends a second later
                    await reader.receive()
    assert evidence.noise == ["usage: server [--port N]"]


async def test_close_drains_stdout_so_the_server_can_exit(tmp_path: Path) -> None:
    """A server blocked writing more than a pipe holds, nobody reading: on close its stdout is drained, so it
    reaches its stdin's end and exits by itself (it is not killed: the marker it writes on the way out exists)."""
    marker = tmp_path / "exited"
    params = _server(tmp_path, f"""
        import sys
        sys.stdout.write("x" * (1 << 20) + "\\n")
        sys.stdout.flush()
        sys.stdin.read()
        open({str(marker)!r}, "w").write("clean")
    """)
    with (tmp_path / "err.log").open("w") as errlog:
        async with stdio_pipes(params, errlog, Evidence()):
            await asyncio.sleep(0.2)
    assert marker.read_text() == "clean"


async def test_close_kills_a_server_that_ignores_stdin(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    params = _server(tmp_path, f"""
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        time.sleep(120)
    """)
    with (tmp_path / "err.log").open("w") as errlog:
        async with stdio_pipes(params, errlog, Evidence()):
            async with asyncio.timeout(30):
                while not pid_file.exists() or not pid_file.read_text():
                    await asyncio.sleep(0.02)
    pid = int(pid_file.read_text())
    async with asyncio.timeout(30):
        while _alive(pid):
            await asyncio.sleep(0.05)
