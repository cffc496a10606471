"""The Anthropic Messages client against the loopback mock: what it sends, what it makes of streamed and
plain answers (content blocks by index, input_json_delta, thinking with signature_delta, cache usage),
and — through the agent loop — that thinking blocks go back first with their signatures, turn by turn
(the mock refuses a request that drops or alters them)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tooldeck
from tests.agent.client_support import CutStream, complete_once
from tests.agent.mock_provider import MockProvider, Reply, Request
from tests.conftest import MakeRuntime
from tooldeck.agent.errors import ModelError
from tooldeck.agent.providers import make_client
from tooldeck.agent.providers.anthropic import AnthropicClient
from tooldeck.agent.types import ModelConfig, ModelRequest, ModelTurn, StreamEvent, Usage
from tooldeck.core.jsonvalue import json_text
from tooldeck.core.results import AgentToolResult
from tooldeck.protocols import validate
from tooldeck.records.replay import replay

TOOLS = ({"name": "add", "description": "Add two integers.", "input_schema": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}},)
SIGNATURE = "EqQBCkgIARABGAIiQL2v+signature+of+the+thinking=="


def thinking(text: str = "I should add.", signature: str = SIGNATURE) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": signature}


def redacted(data: str = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT") -> dict[str, Any]:
    return {"type": "redacted_thinking", "data": data}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def tool_use(call_id: str, args: Any, name: str = "add") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def usage(inp: int = 10, out: int = 5, read: int = 0, written: int = 0) -> dict[str, Any]:
    return {"input_tokens": inp, "cache_creation_input_tokens": written, "cache_read_input_tokens": read,
            "output_tokens": out}


def message(content: list[dict[str, Any]], stop: str = "tool_use", use: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-mock", "content": content,
            "stop_reason": stop, "stop_sequence": None, "usage": use or usage()}


def split(s: str, pieces: int) -> list[str]:
    size = max(1, -(-len(s) // max(1, pieces)))
    return [s[i:i + size] for i in range(0, len(s), size)] or [""]


def stream(content: list[dict[str, Any]], stop: str = "tool_use", use: dict[str, Any] | None = None,
           pieces: int = 1, interleave: bool = False) -> Reply:
    """The events the API streams for a message: `tool_use` inputs given as JSON text arrive in
    `pieces` input_json_delta events; thinking in thinking_delta + one signature_delta."""
    use = use or usage()
    start_usage = {**use, "output_tokens": 1}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": {
        **message([], stop, start_usage), "stop_reason": None}})]
    per_block: list[list[tuple[str, dict[str, Any]]]] = []
    for i, block in enumerate(content):
        mine: list[tuple[str, dict[str, Any]]] = []
        kind = block["type"]
        if kind == "tool_use":
            opened = {**block, "input": {}}
        elif kind == "thinking":
            opened = {"type": "thinking", "thinking": ""}
        elif kind == "text":
            opened = {"type": "text", "text": ""}
        else:
            opened = block
        events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": opened}))
        if kind == "tool_use":
            raw = block["input"] if isinstance(block["input"], str) else json_text(block["input"])
            for piece in split(raw, pieces) if raw else [""]:
                mine.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                    "type": "input_json_delta", "partial_json": piece}}))
        elif kind == "thinking":
            for piece in split(block["thinking"], pieces):
                mine.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                    "type": "thinking_delta", "thinking": piece}}))
            mine.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                "type": "signature_delta", "signature": block["signature"]}}))
        elif kind == "text":
            for piece in split(block["text"], pieces):
                mine.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                    "type": "text_delta", "text": piece}}))
        mine.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        per_block.append(mine)
    if interleave:
        while any(per_block):
            for d in per_block:
                if d:
                    events.append(d.pop(0))
    else:
        events.extend(e for d in per_block for e in d)
    events.append(("ping", {"type": "ping"}))
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": use["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return Reply.sse(events, done=False)


def config(mock: MockProvider, **kw: Any) -> ModelConfig:
    return ModelConfig("claude", "anthropic", "claude-mock", base_url=mock.url, api_key="sk-ant-test",
                       retry_base_delay=0.01, **kw)


async def complete(mock: MockProvider, request: ModelRequest, **kw: Any) -> tuple[ModelTurn, list[StreamEvent]]:
    return await complete_once(config(mock, **kw), AnthropicClient, request)


# -- the client ----------------------------------------------------------------------------------------------
async def test_request_shape(mock_provider: MockProvider) -> None:
    mock_provider.script(stream([text("Hi.")], "end_turn"), stream([text("Hi.")], "end_turn"))
    await complete(mock_provider, ModelRequest([{"role": "user", "content": "hi"}], TOOLS, instructions="Be brief.",
                                               tool_choice="required"))
    await complete(mock_provider, ModelRequest([], TOOLS, tool_choice={"name": "add"}, max_output_tokens=77),
                   max_output_tokens=5)
    first, second = mock_provider.requests
    assert first.path == "/v1/messages"
    assert first.headers["x-api-key"] == "sk-ant-test" and first.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in first.headers
    assert first.json == {"model": "claude-mock", "max_tokens": 8192, "messages": [{"role": "user", "content": "hi"}],
                          "system": "Be brief.", "tools": list(TOOLS), "tool_choice": {"type": "any"},
                          "stream": True}
    assert second.json["tool_choice"] == {"type": "tool", "name": "add"} and second.json["max_tokens"] == 77


async def test_thinking_text_and_parallel_calls_split_over_many_chunks(mock_provider: MockProvider) -> None:
    content = [thinking("Two additions; " * 5), text("Adding both."), tool_use("toolu_a", '{"a": 123456, "b": 654321}'),
               tool_use("toolu_b", '{"a": 1, "b": 2}')]
    mock_provider.script(stream(content, use=usage(12, 90, read=2000, written=300), pieces=8, interleave=True))
    turn, events = await complete(mock_provider, ModelRequest([], TOOLS))
    assert turn.calls == [{"id": "toolu_a", "name": "add", "arguments": '{"a": 123456, "b": 654321}'},
                          {"id": "toolu_b", "name": "add", "arguments": '{"a": 1, "b": 2}'}]
    assert turn.provider_items == [thinking("Two additions; " * 5), text("Adding both.")]
    assert turn.text == "Adding both." and turn.stop_reason == "tool_calls"
    assert turn.usage == Usage(2312, 90, 2000, 300)  # every input token, the cache reads, the cache writes
    started = [(e.index, e.call_id, e.name) for e in events if e.kind == "tool_call_started"]
    assert started == [(0, "toolu_a", "add"), (1, "toolu_b", "add")]
    assert "".join(e.text for e in events if e.kind == "tool_call_arguments" and e.index == 0) == \
        '{"a": 123456, "b": 654321}'
    assert "".join(e.text for e in events if e.kind == "reasoning") == "Two additions; " * 5
    assert "".join(e.text for e in events if e.kind == "text") == "Adding both."


async def test_a_call_without_arguments_and_a_redacted_block(mock_provider: MockProvider) -> None:
    mock_provider.script(stream([redacted(), tool_use("toolu_a", "")], pieces=3))  # one empty input_json_delta
    turn, _ = await complete(mock_provider, ModelRequest([], TOOLS))
    assert turn.calls == [{"id": "toolu_a", "name": "add", "arguments": ""}]  # as streamed: nothing, i.e. {}
    assert turn.provider_items == [redacted()]


async def test_non_streaming(mock_provider: MockProvider) -> None:
    content = [thinking(), tool_use("toolu_a", {"a": 1, "b": 2})]
    mock_provider.script(Reply.json(message(content, use=usage(3, 7, read=40))))
    turn, events = await complete(mock_provider, ModelRequest([], TOOLS, stream=False))
    assert "stream" not in mock_provider.requests[0].json and events == []
    assert turn.calls == [{"id": "toolu_a", "name": "add", "arguments": {"a": 1, "b": 2}}]
    assert turn.provider_items == [thinking()] and turn.usage == Usage(43, 7, 40, 0)


@pytest.mark.parametrize(("reason", "stop"), [("end_turn", "end_turn"), ("max_tokens", "length"),
                                              ("refusal", "content_filter"), ("pause_turn", "other")])
async def test_stop_reasons_are_normalised(mock_provider: MockProvider, reason: str, stop: str) -> None:
    mock_provider.script(stream([text("x")], reason))
    turn, _ = await complete(mock_provider, ModelRequest([], TOOLS))
    assert turn.stop_reason == stop


async def test_an_error_event_and_a_cut_stream_are_model_errors(mock_provider: MockProvider) -> None:
    mock_provider.script(
        Reply.sse([("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})],
                  done=False),
        Reply.sse([("message_start", {"type": "message_start", "message": message([], "tool_use")})], done=False))
    for code, words in (("model.http_error", "Overloaded"), ("model.bad_response", "without message_stop")):
        with pytest.raises(ModelError) as err:
            await complete(mock_provider, ModelRequest([], TOOLS))
        assert err.value.code == code and words in err.value.message


# -- through the loop ----------------------------------------------------------------------------------------
def _drops_thinking(req: Request) -> bool:
    """The real API's rule with thinking on: the assistant turn with tool_use blocks comes back starting
    with its thinking block, signature unchanged."""
    for m in req.json.get("messages", []):
        if m["role"] == "assistant" and any(b.get("type") == "tool_use" for b in m["content"]):
            first = m["content"][0]
            if first.get("type") != "thinking" or first.get("signature") != SIGNATURE:
                return True
    return False


@pytest.fixture
def rt(make_runtime: MakeRuntime) -> tooldeck.Runtime:
    runtime = make_runtime()

    @runtime.tool(extension_id="math", name="add")
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return runtime


async def test_thinking_blocks_travel_back_first_turn_by_turn(rt: tooldeck.Runtime,
                                                             mock_provider: MockProvider) -> None:
    mock_provider.reject_if(_drops_thinking, 400, {"type": "error", "error": {
        "type": "invalid_request_error", "message": "messages.1.content.0.type: Expected `thinking` or "
        "`redacted_thinking`, but found `tool_use`."}})
    turn1 = [thinking(), redacted(), text("Adding."), tool_use("toolu_a", '{"a": 2, "b": 3}'),
             tool_use("toolu_b", '{"a": 4, "b": 5}')]
    turn2 = [thinking("Now 5+9.", SIGNATURE), tool_use("toolu_c", {"a": 5, "b": 9})]
    mock_provider.script(stream(turn1, use=usage(100, 40), pieces=6),
                         stream(turn2, use=usage(20, 10, read=150)),
                         stream([text("14")], "end_turn", usage(25, 2, read=190)))
    result = await rt.agent(config(mock_provider), instructions="Add.").run("2+3 and 4+5, then add them.")
    assert result.status == "completed" and result.text == "14", result.error
    assert result.usage == Usage(485, 52, 340, 0)
    first, second, third = mock_provider.requests
    assert not any(r.rejected for r in mock_provider.requests)
    assert first.json["messages"] == [{"role": "user", "content": "2+3 and 4+5, then add them."}]
    assert second.json["messages"][1:] == [
        {"role": "assistant", "content": [
            thinking(), redacted(), text("Adding."), tool_use("toolu_a", {"a": 2, "b": 3}),
            tool_use("toolu_b", {"a": 4, "b": 5})]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "5"},
                                     {"type": "tool_result", "tool_use_id": "toolu_b", "content": "9"}]}]
    assert third.json["messages"][:3] == second.json["messages"]
    assert third.json["messages"][3]["content"][0] == thinking("Now 5+9.", SIGNATURE)
    assert first.json["tools"] == second.json["tools"] == third.json["tools"]
    assert validate(third.json["messages"][1:], "anthropic") == []
    # the records replay exactly what was sent
    assert replay(rt.recorder, result.invocation_ids[0], "anthropic") == second.json["messages"][1:]
    assert replay(rt.recorder, result.invocation_ids[1], "anthropic") == third.json["messages"][3:5]


async def test_builders_text_without_items_and_notes_after_results(mock_provider: MockProvider) -> None:
    client = make_client(config(mock_provider))
    try:
        turn = ModelTurn("Let me see.", [{"id": "toolu_1", "name": "add", "arguments": "[1]"}])
        assert client.assistant_message(turn) == [{"role": "assistant", "content": [
            text("Let me see."), tool_use("toolu_1", {})]}]  # arguments that are not an object go back as {}
        results = [AgentToolResult("toolu_1", None, "bad arguments", None, True, "tool.invalid_arguments")]
        assert client.tool_results(turn, results, ["[background report 1] done"]) == [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "bad arguments", "is_error": True},
            text("[background report 1] done")]}]
        assert client.assistant_message(ModelTurn()) == []
    finally:
        await client.aclose()


# -- property: streamed = plain, whatever the chunking -------------------------------------------------------
_ARGS = st.dictionaries(st.sampled_from(["a", "b", "note"]), st.one_of(st.integers(-10**20, 10**20),
                                                                       st.text(max_size=8)), max_size=3)
_BLOCKS = st.tuples(
    st.lists(st.one_of(st.builds(thinking, st.text(min_size=1, max_size=30), st.text("xyz+/=", min_size=1)),
                       st.builds(redacted, st.text("abc", min_size=1))), max_size=2),
    st.lists(st.builds(text, st.text(min_size=1, max_size=30)), max_size=2),
    st.lists(_ARGS, max_size=3))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(_BLOCKS, st.integers(1, 9), st.booleans(), st.lists(st.integers(0, 10**6), max_size=20),
       st.sampled_from(["tool_use", "end_turn", "max_tokens"]))
def test_a_streamed_message_decodes_as_the_plain_one(blocks: Any, pieces: int, interleave: bool, cuts: list[int],
                                                     stop: str) -> None:
    from tooldeck.core.arguments import ToolArguments

    thoughts, texts, args = blocks
    content = [*thoughts, *texts, *(tool_use(f"toolu_{i}", a) for i, a in enumerate(args))]
    use = usage(7, 3, read=5, written=2)
    cfg = ModelConfig("claude", "anthropic", "claude-mock", api_key="k")

    async def both() -> tuple[ModelTurn, ModelTurn]:
        streamed = AnthropicClient(cfg, transport=CutStream(stream(content, stop, use, pieces, interleave), cuts))
        plain = AnthropicClient(cfg, transport=CutStream(stream([], stop, use), []))
        return await streamed.complete(ModelRequest([], TOOLS)), plain.decode(message(content, stop, use))

    got, want = asyncio.run(both())
    assert (got.text, got.provider_items, got.usage, got.stop_reason) == (
        want.text, want.provider_items, want.usage, want.stop_reason)
    assert [(c["id"], c["name"]) for c in got.calls] == [(c["id"], c["name"]) for c in want.calls]
    assert [ToolArguments.decode(c["arguments"]).value for c in got.calls] == [c["arguments"] for c in want.calls]


async def test_a_thinking_block_that_lost_its_signature_is_a_bad_response(mock_provider: MockProvider) -> None:
    """Sending it back would fail the next request with a 400; the client says why now (a run ends `failed`,
    `model.bad_response`, instead of a host fault or a confusing 400)."""
    mock_provider.script(Reply.json(message([{"type": "thinking", "thinking": "x"}, tool_use("toolu_a", {})])))
    with pytest.raises(ModelError) as err:
        await complete(mock_provider, ModelRequest([], TOOLS, stream=False))
    assert err.value.code == "model.bad_response" and "signature" in err.value.message
