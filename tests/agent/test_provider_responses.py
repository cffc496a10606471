"""The OpenAI Responses client against the loopback mock: what it sends, what it makes of streamed and
plain answers, and — through the agent loop — that reasoning items with their encrypted_content go
back before the calls they produced, turn by turn (the mock refuses a request that drops them)."""

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
from tooldeck.agent.providers.openai_responses import OpenAIResponsesClient
from tooldeck.agent.types import ModelConfig, ModelRequest, ModelTurn, StreamEvent, Usage
from tooldeck.core.results import AgentToolResult
from tooldeck.protocols import validate
from tooldeck.records.replay import replay

TOOLS = ({"type": "function", "function": {"name": "add", "description": "Add two integers.",
                                            "parameters": {"type": "object", "properties": {
                                                "a": {"type": "integer"}, "b": {"type": "integer"}}}}},)
ENCRYPTED = "gAAAAABpZ-opaque-reasoning-state=="


def reasoning(n: int = 1, text: str = "Adding.") -> dict[str, Any]:
    return {"type": "reasoning", "id": f"rs_{n}", "summary": [{"type": "summary_text", "text": text}],
            "encrypted_content": f"{ENCRYPTED}{n}"}


def message(text: str, n: int = 1) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def call(call_id: str, args: str, n: int, name: str = "add") -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{n}", "call_id": call_id, "name": name, "arguments": args,
            "status": "completed"}


def usage(inp: int = 50, out: int = 10, cached: int = 0) -> dict[str, Any]:
    return {"input_tokens": inp, "input_tokens_details": {"cached_tokens": cached}, "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": 4}, "total_tokens": inp + out}


def response(output: list[dict[str, Any]], use: dict[str, Any] | None = None, status: str = "completed",
             reason: str | None = None) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": status, "output": output, "usage": use or usage(),
            "incomplete_details": {"reason": reason} if reason else None, "error": None}


def split(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def stream(output: list[dict[str, Any]], use: dict[str, Any] | None = None, pieces: int = 1,
           interleave: bool = False, item_done: bool = True, status: str = "completed",
           reason: str | None = None) -> Reply:
    """The events the API streams for `output`: each item added, its text or arguments in `pieces`
    deltas (the calls' deltas interleaved when asked), each item done, then the final response."""
    events: list[tuple[str, dict[str, Any]]] = [("response.created", {"type": "response.created", "response": {
        "id": "resp_1", "status": "in_progress", "output": []}})]
    deltas: list[list[tuple[str, dict[str, Any]]]] = []
    for i, item in enumerate(output):
        opened = {**item, "arguments": ""} if item["type"] == "function_call" else (
            {**item, "content": []} if item["type"] == "message" else
            {k: v for k, v in item.items() if k != "encrypted_content"} | {"summary": []})
        events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": i,
                                                       "item": opened}))
        mine: list[tuple[str, dict[str, Any]]] = []
        if item["type"] == "function_call":
            for piece in split(item["arguments"], pieces):
                mine.append(("response.function_call_arguments.delta", {
                    "type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": i,
                    "delta": piece}))
            mine.append(("response.function_call_arguments.done", {
                "type": "response.function_call_arguments.done", "item_id": item["id"], "output_index": i,
                "arguments": item["arguments"]}))
        elif item["type"] == "message":
            for piece in split(item["content"][0]["text"], pieces):
                mine.append(("response.output_text.delta", {"type": "response.output_text.delta", "item_id": item["id"],
                                                            "output_index": i, "content_index": 0, "delta": piece}))
        else:
            mine.append(("response.reasoning_summary_text.delta", {
                "type": "response.reasoning_summary_text.delta", "item_id": item["id"], "output_index": i,
                "summary_index": 0, "delta": item["summary"][0]["text"]}))
        if item_done:
            mine.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": i,
                                                       "item": item}))
        deltas.append(mine)
    if interleave:
        while any(deltas):
            for d in deltas:
                if d:
                    events.append(d.pop(0))
    else:
        events.extend(e for d in deltas for e in d)
    final = "response.incomplete" if status == "incomplete" else "response.completed"
    events.append((final, {"type": final, "response": response(output, use, status, reason)}))
    return Reply.sse(events, done=False)


def config(mock: MockProvider, **kw: Any) -> ModelConfig:
    return ModelConfig("resp", "openai_responses", "gpt-mock", base_url=mock.url + "/v1", api_key="sk-test",
                       retry_base_delay=0.01, **kw)


async def complete(mock: MockProvider, request: ModelRequest, **kw: Any) -> tuple[ModelTurn, list[StreamEvent]]:
    return await complete_once(config(mock, **kw), OpenAIResponsesClient, request)


# -- the client ----------------------------------------------------------------------------------------------
async def test_request_shape_flat_tools_and_stateless_reasoning(mock_provider: MockProvider) -> None:
    mock_provider.script(stream([message("Hi.")]))
    await complete(mock_provider, ModelRequest([{"role": "user", "content": "hi"}], TOOLS, instructions="Be brief.",
                                               tool_choice={"name": "add"}, max_output_tokens=64))
    (req,) = mock_provider.requests
    assert req.path == "/v1/responses" and req.headers["authorization"] == "Bearer sk-test"
    assert req.json == {"model": "gpt-mock", "input": [{"role": "user", "content": "hi"}],
                        "instructions": "Be brief.",
                        "tools": [{"type": "function", "name": "add", "description": "Add two integers.",
                                   "parameters": TOOLS[0]["function"]["parameters"]}],
                        "tool_choice": {"type": "function", "name": "add"}, "max_output_tokens": 64,
                        "store": False, "include": ["reasoning.encrypted_content"], "stream": True}


async def test_parallel_calls_split_over_many_interleaved_chunks(mock_provider: MockProvider) -> None:
    out = [reasoning(), call("call_a", '{"a": 123456, "b": 654321}', 1), call("call_b", '{"a": 1, "b": 2}', 2)]
    mock_provider.script(stream(out, usage(900, 40, cached=768), pieces=9, interleave=True, item_done=False))
    turn, events = await complete(mock_provider, ModelRequest([], TOOLS))
    assert turn.calls == [
        {"id": "call_a", "name": "add", "arguments": '{"a": 123456, "b": 654321}', "provider_data": {"id": "fc_1"}},
        {"id": "call_b", "name": "add", "arguments": '{"a": 1, "b": 2}', "provider_data": {"id": "fc_2"}}]
    assert turn.stop_reason == "tool_calls" and turn.usage == Usage(900, 40, 768)
    # without output_item.done the reasoning item is as it was added: no encrypted_content to send back
    assert [i["type"] for i in turn.provider_items] == ["reasoning"]
    started = [(e.index, e.call_id, e.name) for e in events if e.kind == "tool_call_started"]
    assert started == [(0, "call_a", "add"), (1, "call_b", "add")]
    deltas = [e for e in events if e.kind == "tool_call_arguments"]
    assert len(deltas) > 9 and "".join(e.text for e in deltas if e.index == 1) == '{"a": 1, "b": 2}'
    assert [e.text for e in events if e.kind == "reasoning"] == ["Adding."]


async def test_finished_items_replace_the_assembled_ones(mock_provider: MockProvider) -> None:
    out = [reasoning(), message("Let me add.", 2), call("call_a", '{"a": 1, "b": 2}', 3)]
    mock_provider.script(stream(out, pieces=4))
    turn, events = await complete(mock_provider, ModelRequest([], TOOLS))
    assert turn.provider_items == [reasoning(), message("Let me add.", 2)]
    assert turn.text == "Let me add." and "".join(e.text for e in events if e.kind == "text") == "Let me add."


async def test_non_streaming(mock_provider: MockProvider) -> None:
    out = [reasoning(), call("call_a", "{}", 1)]
    mock_provider.script(Reply.json(response(out, usage(30, 5, cached=16))))
    turn, events = await complete(mock_provider, ModelRequest([], TOOLS, stream=False))
    assert "stream" not in mock_provider.requests[0].json and events == []
    assert turn.calls == [{"id": "call_a", "name": "add", "arguments": "{}", "provider_data": {"id": "fc_1"}}]
    assert turn.provider_items == [reasoning()] and turn.usage == Usage(30, 5, 16)


@pytest.mark.parametrize(("reason", "stop"), [("max_output_tokens", "length"), ("content_filter", "content_filter"),
                                              ("something_new", "other")])
async def test_incomplete_answers_say_why(mock_provider: MockProvider, reason: str, stop: str) -> None:
    mock_provider.script(stream([message("Cut")], status="incomplete", reason=reason))
    turn, _ = await complete(mock_provider, ModelRequest([], TOOLS))
    assert turn.stop_reason == stop and turn.text == "Cut"


async def test_a_failed_stream_and_a_cut_stream_are_model_errors(mock_provider: MockProvider) -> None:
    mock_provider.script(
        Reply.sse([("error", {"type": "error", "code": "server_error", "message": "boom"})], done=False),
        Reply.sse([("response.created", {"type": "response.created", "response": {}})], done=False),
        Reply.sse([("response.failed", {"type": "response.failed", "response": {
            "status": "failed", "error": {"code": "rate_limit_exceeded", "message": "too fast"}}})], done=False))
    for code, words in (("model.http_error", "boom"), ("model.bad_response", "without response.completed"),
                        ("model.http_error", "too fast")):
        with pytest.raises(ModelError) as err:
            await complete(mock_provider, ModelRequest([], TOOLS))
        assert err.value.code == code and words in err.value.message


# -- through the loop ----------------------------------------------------------------------------------------
def _drops_reasoning(req: Request) -> bool:
    """The real API's rule: the reasoning item (with its encrypted_content) comes back right before the
    function_call it produced, once there is a function_call_output in the input."""
    items = req.json.get("input", [])
    if not any(i.get("type") == "function_call_output" for i in items):
        return False
    calls = [k for k, i in enumerate(items) if i.get("type") == "function_call"]
    first = calls[0] if calls else 0
    before = items[first - 1] if first > 0 else {}
    return before.get("type") != "reasoning" or before.get("encrypted_content") != f"{ENCRYPTED}1"


@pytest.fixture
def rt(make_runtime: MakeRuntime) -> tooldeck.Runtime:
    runtime = make_runtime()

    @runtime.tool(extension_id="math", name="add")
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return runtime


async def test_reasoning_items_travel_back_turn_by_turn(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    turn1 = [reasoning(1), call("call_a", '{"a": 2, "b": 3}', 1), call("call_b", '{"a": 4, "b": 5}', 2)]
    turn2 = [reasoning(2, "Now the sum."), call("call_c", '{"a": 5, "b": 9}', 3)]
    mock_provider.reject_if(_drops_reasoning, 400, {"error": {"message": "Item 'fc_1' of type 'function_call' was "
                                                              "provided without its required 'reasoning' item"}})
    mock_provider.script(stream(turn1, usage(100, 20), pieces=5), stream(turn2, usage(160, 12, cached=96), pieces=3),
                         stream([message("14")], usage(200, 3, cached=128)))
    result = await rt.agent(config(mock_provider), instructions="Add.").run("2+3 and 4+5, then add them.")
    assert result.status == "completed" and result.text == "14", result.error
    assert result.usage == Usage(460, 35, 224)
    first, second, third = mock_provider.requests
    assert not any(r.rejected for r in mock_provider.requests)
    assert first.json["input"] == [{"role": "user", "content": "2+3 and 4+5, then add them."}]
    # what went back: the reasoning item with its encrypted_content, before its calls; no ids (store: false)
    sent_back = second.json["input"][1:]
    assert sent_back == [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Adding."}],
         "encrypted_content": f"{ENCRYPTED}1"},
        {"type": "function_call", "call_id": "call_a", "name": "add", "arguments": '{"a":2,"b":3}'},
        {"type": "function_call", "call_id": "call_b", "name": "add", "arguments": '{"a":4,"b":5}'},
        {"type": "function_call_output", "call_id": "call_a", "output": "5"},
        {"type": "function_call_output", "call_id": "call_b", "output": "9"}]
    assert third.json["input"][:len(second.json["input"])] == second.json["input"]  # the history only grows
    assert third.json["input"][len(second.json["input"]):][0]["encrypted_content"] == f"{ENCRYPTED}2"
    assert first.json["tools"] == second.json["tools"] == third.json["tools"]
    assert validate(third.json["input"][1:], "openai_responses") == []
    # the records keep the items verbatim (with their ids) and replay them in the same order
    replayed = replay(rt.recorder, result.invocation_ids[0], "openai_responses")
    assert replayed[0] == reasoning(1) and [i.get("id") for i in replayed[1:3]] == ["fc_1", "fc_2"]
    assert [{k: v for k, v in i.items() if k != "id"} for i in replayed] == sent_back
    assert validate(replayed, "openai_responses") == []


async def test_with_store_true_items_keep_their_ids(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    mock_provider.script(stream([reasoning(1), call("call_a", "{}", 1)]), stream([message("done")]))
    result = await rt.agent(config(mock_provider, options={"store": True})).run("go")
    assert result.ok
    second = mock_provider.requests[1].json
    assert second["store"] is True
    assert [(i.get("type"), i.get("id")) for i in second["input"][1:3]] == [("reasoning", "rs_1"),
                                                                            ("function_call", "fc_1")]


async def test_assistant_text_without_a_message_item_goes_back_as_a_message(mock_provider: MockProvider) -> None:
    client = make_client(config(mock_provider))
    try:
        turn = ModelTurn("Let me see.", [{"id": "c1", "name": "add", "arguments": "{}"}])
        assert client.assistant_message(turn) == [
            {"role": "assistant", "content": "Let me see."},
            {"type": "function_call", "call_id": "c1", "name": "add", "arguments": "{}"}]
        results = [AgentToolResult("c1", "extension/math:add", "boom", None, True, "tool.failed")]
        assert client.tool_results(turn, results, ["[background report 1] done"]) == [
            {"type": "function_call_output", "call_id": "c1", "output": "## Tool error\n\nboom"},
            {"role": "user", "content": "[background report 1] done"}]
    finally:
        await client.aclose()


# -- property: streamed = plain, whatever the chunking -------------------------------------------------------
_ARGS = st.one_of(st.sampled_from(["{}", '{"a": 1, "b": 2}', '{"a": ', "", "[1]", '{"note": "é\\n\\u2028"}']),
                  st.text(max_size=20))
_OUTPUT = st.tuples(st.lists(st.integers(1, 9), max_size=2), st.lists(st.text(min_size=1, max_size=20), max_size=2),
                    st.lists(_ARGS, max_size=3))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(_OUTPUT, st.integers(1, 9), st.booleans(), st.booleans(), st.lists(st.integers(0, 10**6), max_size=20))
def test_a_streamed_response_decodes_as_the_plain_one(parts: Any, pieces: int, interleave: bool, item_done: bool,
                                                      cuts: list[int]) -> None:
    thoughts, texts, args = parts
    output = [*(reasoning(n) for n in thoughts), *(message(t, n) for n, t in enumerate(texts)),
              *(call(f"call_{i}", a, i) for i, a in enumerate(args))]
    cfg = ModelConfig("resp", "openai_responses", "gpt-mock", api_key="k")

    async def streamed() -> ModelTurn:
        client = OpenAIResponsesClient(cfg, transport=CutStream(stream(output, usage(9, 4, 2), pieces, interleave,
                                                                      item_done), cuts))
        return await client.complete(ModelRequest([], TOOLS))

    got = asyncio.run(streamed())
    want = OpenAIResponsesClient(cfg).decode(response(output, usage(9, 4, 2)))
    assert (got.calls, got.text, got.usage, got.stop_reason) == (want.calls, want.text, want.usage, want.stop_reason)
    if item_done:
        assert got.provider_items == want.provider_items
    else:  # as added: a reasoning item has its encrypted_content only once it is done
        assert [i["type"] for i in got.provider_items] == [i["type"] for i in want.provider_items]
