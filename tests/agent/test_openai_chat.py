"""The OpenAI Chat Completions client against the mock: what it sends, and what it makes of the answers."""

from __future__ import annotations

from typing import Any

import pytest

from tests.agent import chat_replies as chat
from tests.agent.mock_provider import MockProvider, Reply
from tooldeck.agent.errors import ModelError
from tooldeck.agent.providers import make_client
from tooldeck.agent.providers.openai_chat import OpenAIChatClient
from tooldeck.agent.types import ModelConfig, ModelRequest, ModelTurn, StreamEvent, Usage
from tooldeck.core.results import AgentToolResult

TOOLS = ({"type": "function", "function": {"name": "dice_roll", "description": "Roll dice.",
                                            "parameters": {"type": "object", "properties": {"formula": {
                                                "type": "string"}}}}},)


def client(mock: MockProvider, **kw: Any) -> OpenAIChatClient:
    cfg = ModelConfig("m", "openai", "gpt-mock", base_url=mock.url + "/v1", api_key="sk-test", retry_base_delay=0.01,
                      **kw)
    made = make_client(cfg)
    assert isinstance(made, OpenAIChatClient)
    return made


async def complete(mock: MockProvider, request: ModelRequest, **kw: Any) -> tuple[ModelTurn, list[StreamEvent]]:
    c = client(mock, **kw)
    events: list[StreamEvent] = []
    try:
        return await c.complete(request, events.append), events
    finally:
        await c.aclose()


async def test_stream_request_shape(mock_provider: MockProvider) -> None:
    mock_provider.script(chat.stream("Hello there", pieces=4, use=chat.usage(100, 7, cached=64)))
    turn, events = await complete(mock_provider, ModelRequest([{"role": "user", "content": "hi"}], TOOLS,
                                                              instructions="Be brief.", max_output_tokens=50))
    (req,) = mock_provider.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.json == {"model": "gpt-mock", "messages": [{"role": "system", "content": "Be brief."},
                                                         {"role": "user", "content": "hi"}],
                        "tools": list(TOOLS), "max_completion_tokens": 50, "stream": True,
                        "stream_options": {"include_usage": True}}
    assert turn.text == "Hello there" and turn.calls == [] and turn.stop_reason == "end_turn"
    assert turn.provider_items == [{"type": "text", "text": "Hello there"}]
    assert turn.usage == Usage(100, 7, 64)
    assert "".join(e.text for e in events if e.kind == "text") == "Hello there"
    assert len([e for e in events if e.kind == "text"]) == 4


async def test_parallel_calls_split_over_many_chunks(mock_provider: MockProvider) -> None:
    calls = [("call_a", "dice_roll", '{"formula": "2d6+3"}'), ("call_b", "dice_roll", '{"formula": "1d20"}')]
    mock_provider.script(chat.stream(calls=calls, pieces=7))
    turn, events = await complete(mock_provider, ModelRequest([{"role": "user", "content": "roll"}], TOOLS))
    assert turn.calls == [{"id": "call_a", "name": "dice_roll", "arguments": '{"formula": "2d6+3"}'},
                          {"id": "call_b", "name": "dice_roll", "arguments": '{"formula": "1d20"}'}]
    assert turn.stop_reason == "tool_calls"
    started = [(e.index, e.call_id, e.name) for e in events if e.kind == "tool_call_started"]
    assert started == [(0, "call_a", "dice_roll"), (1, "call_b", "dice_roll")]
    deltas = [e for e in events if e.kind == "tool_call_arguments"]
    assert len(deltas) == 14 and "".join(e.text for e in deltas if e.index == 1) == '{"formula": "1d20"}'


async def test_interleaved_deltas_are_assembled_by_index(mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.sse([
        chat.chunk({"tool_calls": [{"index": 0, "id": "c0", "type": "function", "function": {"name": "a",
                                                                                          "arguments": ""}}]}),
        chat.chunk({"tool_calls": [{"index": 1, "id": "c1", "type": "function", "function": {"name": "b",
                                                                                          "arguments": '{"y"'}}]}),
        chat.chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"x": '}}]}),
        chat.chunk({"tool_calls": [{"index": 1, "function": {"arguments": ": 2}"}}]}),
        chat.chunk({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}),
        chat.chunk({}, "tool_calls")]))
    turn, _ = await complete(mock_provider, ModelRequest([], TOOLS))
    assert [(c["id"], c["name"], c["arguments"]) for c in turn.calls] == [("c0", "a", '{"x": 1}'),
                                                                          ("c1", "b", '{"y": 2}')]
    assert turn.usage == Usage()  # a server that sends no usage chunk


async def test_deltas_without_index_from_a_compatible_server(mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.sse([
        chat.chunk({"tool_calls": [{"id": "c0", "function": {"name": "a", "arguments": '{"x"'}}]}),
        chat.chunk({"tool_calls": [{"function": {"arguments": ": 1}"}}]}),
        chat.chunk({"tool_calls": [{"id": "c1", "function": {"name": "b", "arguments": "{}"}}]}),
        chat.chunk({}, "tool_calls")]))
    turn, _ = await complete(mock_provider, ModelRequest([], TOOLS))
    assert [(c["id"], c["arguments"]) for c in turn.calls] == [("c0", '{"x": 1}'), ("c1", "{}")]


async def test_empty_and_truncated_arguments_come_back_raw(mock_provider: MockProvider) -> None:
    calls = [("c0", "dice_roll", ""), ("c1", "dice_roll", '{"formula": "2d')]
    mock_provider.script(chat.stream(calls=calls, finish="length", pieces=3))
    turn, _ = await complete(mock_provider, ModelRequest([], TOOLS))
    assert [c.get("arguments") for c in turn.calls] == ["", '{"formula": "2d']
    assert turn.stop_reason == "length"


async def test_non_streaming(mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.json(chat.completion("ok", [("c0", "dice_roll", '{"formula":"d6"}')],
                                                    use=chat.usage(20, 3, 16))))
    turn, events = await complete(mock_provider, ModelRequest([], TOOLS, tool_choice={"name": "dice_roll"},
                                                              stream=False))
    body = mock_provider.requests[0].json
    assert "stream" not in body and "stream_options" not in body
    assert body["tool_choice"] == {"type": "function", "function": {"name": "dice_roll"}}
    assert turn.text == "ok" and turn.calls[0]["arguments"] == '{"formula":"d6"}'
    assert turn.provider_items == [{"type": "text", "text": "ok"}]  # recorded with the turn, for replay
    assert turn.usage == Usage(20, 3, 16) and events == []


async def test_no_tools_sends_neither_tools_nor_choice(mock_provider: MockProvider) -> None:
    mock_provider.script(chat.stream("x"))
    await complete(mock_provider, ModelRequest([], (), tool_choice="required"))
    assert "tools" not in mock_provider.requests[0].json and "tool_choice" not in mock_provider.requests[0].json


async def test_a_stream_cut_before_its_finish_is_bad_response(mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.sse([chat.chunk({"content": "half"})], done=False))
    with pytest.raises(ModelError) as info:
        await complete(mock_provider, ModelRequest([], TOOLS))
    assert info.value.code == "model.bad_response"


async def test_an_error_inside_the_stream(mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.sse([{"error": {"message": "context too long", "type": "invalid_request_error"}}]))
    with pytest.raises(ModelError) as info:
        await complete(mock_provider, ModelRequest([], TOOLS))
    assert info.value.code == "model.http_error" and "context too long" in info.value.message


async def test_a_call_without_id_is_invalid_tool_call(mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.json(chat.completion(None, [("", "dice_roll", "{}")])))
    with pytest.raises(ModelError) as info:
        await complete(mock_provider, ModelRequest([], TOOLS, stream=False))
    assert info.value.code == "model.invalid_tool_call"


def test_conversation_builders() -> None:
    c = OpenAIChatClient(ModelConfig("m", "openai", "x", api_key="k"))
    turn = ModelTurn("Let me roll.", [{"id": "c0", "name": "dice_roll", "arguments": '{"formula": "d6"}'},
                                      {"id": "c1", "name": "dice_roll", "arguments": '{"formula": '}])
    assert c.user_message("hi") == [{"role": "user", "content": "hi"}]
    assert c.assistant_message(turn) == [{"role": "assistant", "content": "Let me roll.", "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": "dice_roll", "arguments": '{"formula": "d6"}'}},
        {"id": "c1", "type": "function", "function": {"name": "dice_roll", "arguments": "{}"}}]}]
    results = [AgentToolResult("c0", "builtin:dice.roll", "4"),
               AgentToolResult("c1", "builtin:dice.roll", "bad arguments", is_error=True,
                               error_code="tool.invalid_arguments")]
    assert c.tool_results(turn, results, ["[background] done"]) == [
        {"role": "tool", "tool_call_id": "c0", "content": "4"},
        {"role": "tool", "tool_call_id": "c1", "content": "## Tool error\n\nbad arguments"},
        {"role": "user", "content": "[background] done"}]
    with pytest.raises(ValueError):
        c.tool_results(turn, results[:1])
    from tooldeck.protocols import validate

    history = [*c.user_message("hi"), *c.assistant_message(turn), *c.tool_results(turn, results)]
    assert validate(history, "openai") == []
