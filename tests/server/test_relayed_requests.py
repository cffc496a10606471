"""What an upstream MCP server sends its client during a call reaches the client of the `tooldeck serve` session
whose call triggered it, and the answer goes back: sampling, elicitation (form and URL), roots, progress (tokens
mapped per hop), log messages (with `logging/setLevel`); a client cancel stops the upstream call. Real processes:
official SDK client → `tooldeck serve` (stdio and streamable HTTP) → the SDK fixture server (`--relay`)."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.server.support import http_server, stdio_params
from tooldeck.records.store import SqliteRecorder
from tooldeck.sources.mcp.callbacks import MAX_REQUESTS_WAITING, TOO_MANY_REQUESTS

FIXTURE = Path(__file__).resolve().parents[1] / "mcp" / "fixtures" / "fixture_server.py"
DEADLINE_S = 30


def _home(tmp_path: Path, protocol: str = "legacy") -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"fx": {
        "command": sys.executable, "args": [str(FIXTURE), "--relay"], "protocol": protocol}}}))
    return home


@contextmanager
def _target(home: Path, transport: str) -> Iterator[Any]:
    if transport == "stdio":
        yield stdio_client(stdio_params(home))
    else:
        with http_server(home) as served:
            yield served.url


class Downstream:
    """The callbacks of the client in front of `tooldeck serve`, and what they saw."""

    def __init__(self) -> None:
        self.sampled: list[types.CreateMessageRequestParams] = []
        self.elicited: list[types.ElicitRequestParams] = []
        self.roots_asked = 0
        self.logs: list[types.LoggingMessageNotificationParams] = []

    async def sampling(self, _ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.sampled.append(params)
        prompt = params.messages[0].content.text  # type: ignore[union-attr]
        return types.CreateMessageResult(role="assistant", model="downstream-model",
                                         content=types.TextContent(type="text", text=f"echo {prompt}"))

    async def elicitation(self, _ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.elicited.append(params)
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def roots(self, _ctx: Any) -> types.ListRootsResult:
        self.roots_asked += 1
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/project", name="project")])

    async def logging(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)


@asynccontextmanager
async def _client(home: Path, transport: str, seen: Downstream | None, **kwargs: Any) -> AsyncIterator[Client]:
    callbacks: dict[str, Any] = {}
    if seen is not None:
        callbacks = {"sampling_callback": seen.sampling, "elicitation_callback": seen.elicitation,
                     "list_roots_callback": seen.roots, "logging_callback": seen.logging}
    with _target(home, transport) as target:
        async with Client(target, mode="legacy", read_timeout_seconds=DEADLINE_S, **callbacks, **kwargs) as client:
            with anyio.fail_after(DEADLINE_S):
                while not any(t.name == "mcp__fx__ask_model" for t in (await client.list_tools()).tools):
                    await anyio.sleep(0.2)
            yield client


def _text(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_server_requests_round_trip_through_two_hops(tmp_path: Path, transport: str) -> None:
    seen = Downstream()
    async with _client(_home(tmp_path), transport, seen) as client:
        sampled = await client.call_tool("mcp__fx__ask_model", {"prompt": "what is 2+2"})
        form = await client.call_tool("mcp__fx__ask_user", {"question": "Your name?"})
        url = await client.call_tool("mcp__fx__ask_url", {"url": "https://example.test/login"})
        roots = await client.call_tool("mcp__fx__roots", {})

    # the upstream tool got the downstream client's answers
    assert _text(sampled) == "model downstream-model said: echo what is 2+2"
    assert _text(form) == "accept: {'name': 'Ada'}"
    assert _text(url) == "url decline"
    assert _text(roots) == "roots: project=file:///work/project"
    # and the downstream client got the upstream server's requests as sent
    assert [m.content.text for m in seen.sampled[0].messages] == ["what is 2+2"]  # type: ignore[union-attr]
    assert seen.sampled[0].max_tokens == 50
    form_params, url_params = seen.elicited
    assert isinstance(form_params, types.ElicitRequestFormParams) and form_params.message == "Your name?"
    assert form_params.requested_schema["required"] == ["name"]
    assert isinstance(url_params, types.ElicitRequestURLParams)
    assert url_params.url == "https://example.test/login" and url_params.elicitation_id == "el-1"
    assert seen.roots_asked == 1


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_client_without_the_capability_gets_the_upstream_a_clear_error(tmp_path: Path,
                                                                              transport: str) -> None:
    async with _client(_home(tmp_path), transport, None) as client:
        with anyio.fail_after(DEADLINE_S):  # nothing hangs
            sampled = await client.call_tool("mcp__fx__ask_model", {"prompt": "hi"})
            form = await client.call_tool("mcp__fx__ask_user", {"question": "Your name?"})
            roots = await client.call_tool("mcp__fx__roots", {})
    assert _text(sampled).startswith(f"refused: {types.INVALID_REQUEST} tooldeck serve cannot relay "
                                      "sampling/createMessage to its client")
    assert "did not declare it (capability `sampling` missing)" in _text(sampled)
    assert "capability `elicitation` missing" in _text(form)
    assert "capability `roots` missing" in _text(roots)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_progress_of_two_concurrent_calls_keeps_each_clients_token(tmp_path: Path, transport: str) -> None:
    gate = tmp_path / "gate"
    got: dict[str, list[tuple[float, float | None, str | None]]] = {"a": [], "b": []}
    async with _client(_home(tmp_path), transport, Downstream()) as client:
        results: dict[str, types.CallToolResult] = {}

        async def run(label: str) -> None:
            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                got[label].append((progress, total, message))

            results[label] = await client.call_tool("mcp__fx__steps", {"label": label, "count": 5,
                                                                       "gate": str(gate)},
                                                    progress_callback=on_progress)

        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "a")
            tg.start_soon(run, "b")
            with anyio.fail_after(DEADLINE_S):  # both calls are in flight upstream, held by the gate
                while not (Path(f"{gate}.a").exists() and Path(f"{gate}.b").exists()):
                    await anyio.sleep(0.05)
            gate.write_text("go")
        with anyio.fail_after(DEADLINE_S):  # notifications may trail their result
            while len(got["a"]) < 5 or len(got["b"]) < 5:
                await anyio.sleep(0.05)

    assert _text(results["a"]) == "a done" and _text(results["b"]) == "b done"
    for label in ("a", "b"):
        assert [m for _, _, m in got[label]] == [f"{label} {i}" for i in range(1, 6)]
        assert [p for p, _, _ in got[label]] == [1.0, 2.0, 3.0, 4.0, 5.0]
        assert {t for _, t, _ in got[label]} == {5.0}


async def test_progress_is_not_sent_to_a_call_without_a_token(tmp_path: Path) -> None:
    raw: list[Any] = []

    async def handler(message: Any) -> None:
        raw.append(message)

    async with _client(_home(tmp_path), "stdio", Downstream(), message_handler=handler) as client:
        result = await client.call_tool("mcp__fx__steps", {"label": "x", "count": 3})
        marker = await client.call_tool("mcp__fx__chatty", {})  # its log messages arrive after any progress
        with anyio.fail_after(DEADLINE_S):
            while not any(isinstance(m, types.LoggingMessageNotification) for m in raw):
                await anyio.sleep(0.05)
    assert _text(result) == "x done" and _text(marker) == "logged"
    assert not any(isinstance(m, types.ProgressNotification) for m in raw)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_calls_log_messages_and_progress_reach_the_client_in_the_servers_order(tmp_path: Path,
                                                                                      transport: str) -> None:
    got: list[str] = []

    class Seen(Downstream):
        async def logging(self, params: types.LoggingMessageNotificationParams) -> None:
            got.append(str(params.data))

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        got.append(str(message))

    async with _client(_home(tmp_path), transport, Seen()) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.set_logging_level("info")
        result = await client.call_tool("mcp__fx__narrated", {"count": 25}, progress_callback=on_progress)
        assert _text(result) == "narrated"
        with anyio.fail_after(DEADLINE_S):
            while len(got) < 50:
                await anyio.sleep(0.02)
    assert got == [text for i in range(1, 26) for text in (f"line {i}", f"step {i}")]


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_call_gets_at_most_eight_requests_to_the_client_at_once(tmp_path: Path, transport: str) -> None:
    refusals = tmp_path / "refusals"
    refusals.touch()
    waiting: list[int] = [0, 0]  # now, peak
    released = anyio.Event()

    class Holding(Downstream):
        async def sampling(self, ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
            waiting[0] += 1
            waiting[1] = max(waiting)
            try:  # the answers wait until all the accepted requests are here and the rest were refused
                with anyio.move_on_after(DEADLINE_S):
                    while not released.is_set():
                        if (waiting[0] >= MAX_REQUESTS_WAITING
                                and len(refusals.read_text().splitlines()) >= 20 - MAX_REQUESTS_WAITING):
                            released.set()
                        await anyio.sleep(0.01)
            finally:
                waiting[0] -= 1
            return await super().sampling(ctx, params)

    async with _client(_home(tmp_path), transport, Holding()) as client:
        result = await client.call_tool("mcp__fx__ask_model_many", {"count": 20, "refusals": str(refusals)})
    words = _text(result).split()  # "echo q3" for an answer, the refusal's code for a refusal
    assert waiting[1] == MAX_REQUESTS_WAITING
    assert words.count(TOO_MANY_REQUESTS) == 20 - MAX_REQUESTS_WAITING
    assert words.count("echo") == MAX_REQUESTS_WAITING


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_log_messages_reach_the_client_at_the_level_it_set(tmp_path: Path, transport: str) -> None:
    seen = Downstream()
    async with _client(_home(tmp_path), transport, seen) as client:
        await client.call_tool("mcp__fx__chatty", {})
        with anyio.fail_after(DEADLINE_S):
            while len(seen.logs) < 3:
                await anyio.sleep(0.05)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.set_logging_level("info")  # was -32601 before
        assert _text(await client.call_tool("mcp__fx__log_level", {})) == "level info"  # forwarded upstream
        seen.logs.clear()
        await client.call_tool("mcp__fx__chatty", {})
        with anyio.fail_after(DEADLINE_S):
            while len(seen.logs) < 2:
                await anyio.sleep(0.05)
        await anyio.sleep(0.3)  # a debug line would have come by now, in order
    assert [(m.level, m.data, m.logger) for m in seen.logs] == [("info", "info line", "fixture"),
                                                              ("error", "error line", "fixture")]


async def _two_sampling_calls(first: Client, second: Client, gate: Path,
                              tool: str = "mcp__fx__ask_model") -> tuple[str, str]:
    """`ask_model` from two clients at once, both in flight upstream before either asks."""
    results: dict[str, str] = {}

    async def run(client: Client, prompt: str) -> None:
        results[prompt] = _text(await client.call_tool(tool, {"prompt": prompt, "gate": str(gate)}))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, first, "one")
        tg.start_soon(run, second, "two")
        with anyio.fail_after(DEADLINE_S):
            while not (Path(f"{gate}.one").exists() and Path(f"{gate}.two").exists()):
                await anyio.sleep(0.05)
        gate.write_text("go")
    return results["one"], results["two"]


class Named(Downstream):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    async def sampling(self, ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        answer = await super().sampling(ctx, params)
        answer.model = self.name
        return answer


@asynccontextmanager
async def _upstream_http(tmp_path: Path) -> AsyncIterator[Path]:
    from tests.mcp.conftest import PYTHON, free_port, start_http, stop

    port = free_port()
    proc = start_http([PYTHON, str(FIXTURE), "--http", str(port), "--relay"], port)
    try:
        home = tmp_path / "home"
        home.mkdir()
        (home / "mcp.json").write_text(json.dumps({"mcpServers": {"fx": {
            "url": f"http://127.0.0.1:{port}/mcp", "protocol": "legacy"}}}))
        yield home
    finally:
        stop(proc)


async def test_concurrent_requests_over_an_http_upstream_reach_the_client_whose_call_made_them(
        tmp_path: Path) -> None:
    alice, bob = Named("alice-model"), Named("bob-model")
    async with _upstream_http(tmp_path) as home:
        with http_server(home) as served:
            async with (Client(served.url, mode="legacy", read_timeout_seconds=DEADLINE_S,
                               sampling_callback=alice.sampling) as first,
                        Client(served.url, mode="legacy", read_timeout_seconds=DEADLINE_S,
                               sampling_callback=bob.sampling) as second):
                with anyio.fail_after(DEADLINE_S):
                    while not any(t.name == "mcp__fx__ask_model" for t in (await first.list_tools()).tools):
                        await anyio.sleep(0.2)
                one, two = await _two_sampling_calls(first, second, tmp_path / "gate")
    assert one == "model alice-model said: echo one"
    assert two == "model bob-model said: echo two"
    assert [p.messages[0].content.text for p in alice.sampled] == ["one"]  # type: ignore[union-attr]
    assert [p.messages[0].content.text for p in bob.sampled] == ["two"]  # type: ignore[union-attr]


async def test_concurrent_requests_over_stdio_are_refused_not_misrouted(tmp_path: Path) -> None:
    """Over stdio with the handshake protocol nothing links a server request to its call: with two calls in
    flight the request is refused (clearly), never sent to the other call's client."""
    alice, bob = Named("alice-model"), Named("bob-model")
    home = _home(tmp_path)
    with http_server(home) as served:
        async with (Client(served.url, mode="legacy", read_timeout_seconds=DEADLINE_S,
                           sampling_callback=alice.sampling) as first,
                    Client(served.url, mode="legacy", read_timeout_seconds=DEADLINE_S,
                           sampling_callback=bob.sampling) as second):
            with anyio.fail_after(DEADLINE_S):
                while not any(t.name == "mcp__fx__ask_model" for t in (await first.list_tools()).tools):
                    await anyio.sleep(0.2)
            one, two = await _two_sampling_calls(first, second, tmp_path / "gate")
            alone = _text(await second.call_tool("mcp__fx__ask_model", {"prompt": "three"}))
    refused = (f"refused: {types.INVALID_REQUEST} tooldeck cannot answer sampling/createMessage from MCP server "
               "`fx`: several calls to this server are in flight")
    # The first request to arrive finds both calls in flight: refused. The other is refused too, or - when the
    # first call had already ended by then - answered by its own client; never by the other one.
    assert one.startswith(refused) or two.startswith(refused)
    assert one.startswith(refused) or one == "model alice-model said: echo one"
    assert two.startswith(refused) or two == "model bob-model said: echo two"
    assert [p.messages[0].content.text for p in alice.sampled] in ([], ["one"])  # type: ignore[union-attr]
    assert [p.messages[0].content.text for p in bob.sampled][-1] == "three"  # type: ignore[union-attr]
    assert "two" not in [p.messages[0].content.text for p in alice.sampled]  # type: ignore[union-attr]
    assert "one" not in [p.messages[0].content.text for p in bob.sampled]  # type: ignore[union-attr]
    assert alone == "model bob-model said: echo three"


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_client_cancel_stops_the_upstream_call_and_is_recorded(tmp_path: Path, transport: str) -> None:
    home = _home(tmp_path)
    marker = tmp_path / "hang-marker"
    async with _client(home, transport, Downstream()) as client:
        async with anyio.create_task_group() as tg:
            async def hang() -> None:
                await client.call_tool("mcp__fx__hang", {"marker": str(marker)})

            tg.start_soon(hang)
            with anyio.fail_after(DEADLINE_S):
                while not Path(f"{marker}.started").exists():
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()  # the SDK client sends notifications/cancelled for the call
        with anyio.fail_after(DEADLINE_S):  # the cancel reached the tool inside the upstream server
            while not marker.exists():
                await anyio.sleep(0.05)
        assert marker.read_text() == "cancelled"
        # the session goes on
        assert _text(await client.call_tool("mcp__fx__steps", {"label": "after", "count": 1})) == "after done"

    store = SqliteRecorder(home / "records.sqlite")
    try:
        with anyio.fail_after(DEADLINE_S):
            while True:
                calls = [c for s in store.list_invocations(50) for c in store.history(s.invocation_id).calls
                         if c.tool_id.endswith(":hang")]
                if calls and calls[0].status != "started":
                    break
                await anyio.sleep(0.1)
    finally:
        store.close()
    [hung] = calls
    assert hung.status == "outcome_unknown"
    assert hung.result is not None and hung.result.error_code == "tool.cancelled"
    assert "was cancelled by the client" in hung.result.content


async def test_input_required_rounds_of_a_2026_upstream_reach_the_client_of_each_call(tmp_path: Path) -> None:
    """A 2026-07-28 server asks through `InputRequiredResult`; the SDK answers it inside the call, so even over
    stdio two concurrent calls each reach their own client."""
    alice, bob = Named("alice-model"), Named("bob-model")
    home = _home(tmp_path, protocol="auto")
    with http_server(home) as served:
        async with (Client(served.url, mode="legacy", read_timeout_seconds=DEADLINE_S,
                           sampling_callback=alice.sampling) as first,
                    Client(served.url, mode="legacy", read_timeout_seconds=DEADLINE_S,
                           sampling_callback=bob.sampling) as second):
            with anyio.fail_after(DEADLINE_S):
                while not any(t.name == "mcp__fx__ask_model_later" for t in (await first.list_tools()).tools):
                    await anyio.sleep(0.2)
            one, two = await _two_sampling_calls(first, second, tmp_path / "gate", "mcp__fx__ask_model_later")
    assert one == "model alice-model said: echo one"
    assert two == "model bob-model said: echo two"
    assert [p.messages[0].content.text for p in alice.sampled] == ["one"]  # type: ignore[union-attr]
    assert [p.messages[0].content.text for p in bob.sampled] == ["two"]  # type: ignore[union-attr]
