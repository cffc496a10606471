"""The agent loop over OpenAI Chat Completions against the mock provider: what the mock received, turn
by turn, and what the run ended with (status, usage, records)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import tooldeck
from tests.agent import chat_replies as chat
from tests.agent.mock_provider import MockProvider, Reply, Request
from tests.conftest import MakeRuntime
from tooldeck.agent.events import AgentEvent
from tooldeck.agent.loop import Agent
from tooldeck.agent.types import ModelConfig, ModelRequest, ModelTurn, Usage
from tooldeck.protocols import validate
from tooldeck.records.replay import replay
from tooldeck.records.store import SqliteRecorder

KEY = "sk-secret-never-recorded"


def model(mock: MockProvider, **kw: Any) -> ModelConfig:
    return ModelConfig("mock", "openai", "gpt-mock", base_url=mock.url + "/v1", api_key=KEY, retry_base_delay=0.01,
                       **kw)


def add_tools(rt: tooldeck.Runtime, seen: list[dict[str, Any]] | None = None) -> None:
    @rt.tool(extension_id="math", name="add")
    def add(a: int, b: int) -> int:
        """Add two integers."""
        if seen is not None:
            seen.append({"a": a, "b": b})
        return a + b


def tools_text(request: Request) -> str:
    """The `"tools": [...]` part of a request body exactly as sent."""
    text = request.text
    start = text.index('"tools":')
    _, end = json.JSONDecoder().raw_decode(text, start + len('"tools":'))
    return text[start:end]


def tool_messages(request: Request) -> list[dict[str, Any]]:
    return [m for m in request.json["messages"] if m["role"] == "tool"]


def agent_events(rt: tooldeck.Runtime, run_id: str) -> list[dict[str, Any]]:
    return rt.recorder.run_events(run_id, "agent")


@pytest.fixture
def rt(make_runtime: MakeRuntime) -> tooldeck.Runtime:
    runtime = make_runtime()
    add_tools(runtime)
    return runtime


async def test_parallel_calls_then_an_answer(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    mock_provider.script(
        chat.stream(calls=[("c1", "add", '{"a": 1, "b": 2}'), ("c2", "add", '{"a": 40, "b": 2}')],
                    use=chat.usage(100, 20, cached=0)),
        chat.stream("1+2 is 3 and 40+2 is 42.", use=chat.usage(150, 12, cached=96)))
    events: list[AgentEvent] = []
    result = await rt.agent(model(mock_provider), instructions="You add numbers.", on_event=events.append).run(
        "Add 1+2 and 40+2.")
    assert result.status == "completed" and result.completed_by == "answer"
    assert result.text == "1+2 is 3 and 40+2 is 42."
    assert result.usage == Usage(250, 32, 96)
    assert result.turns == 2 and len(result.invocation_ids) == 2
    first, second = mock_provider.requests
    assert first.json["messages"] == [{"role": "system", "content": "You add numbers."},
                                      {"role": "user", "content": "Add 1+2 and 40+2."}]
    assert second.json["messages"][2] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
        {"id": "c2", "type": "function", "function": {"name": "add", "arguments": '{"a": 40, "b": 2}'}}]}
    assert tool_messages(second) == [{"role": "tool", "tool_call_id": "c1", "content": "3"},
                                     {"role": "tool", "tool_call_id": "c2", "content": "42"}]
    assert second.json["messages"][:2] == first.json["messages"]
    assert tools_text(first) == tools_text(second)  # byte-identical: the snapshot is reused
    assert validate(second.json["messages"][1:], "openai") == []
    kinds = [e.kind for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert [e.data["call_id"] for e in events if e.kind == "tool_result"] == ["c1", "c2"]
    assert "".join(e.data["text"] for e in events if e.kind == "text") == result.text


async def test_the_run_is_recorded_and_replays(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    mock_provider.script(chat.stream("Adding.", calls=[("c1", "add", '{"a": 2, "b": 3}')]), chat.stream("5"))
    result = await rt.agent(model(mock_provider)).run("2+3?")
    recorded = agent_events(rt, result.run_id)
    assert [e["type"] for e in recorded] == ["run_started", "model_turn", "model_turn", "run_finished"]
    assert recorded[0]["task"] == "2+3?" and recorded[0]["model"]["model"] == "gpt-mock"
    assert recorded[1]["calls"] == [{"id": "c1", "name": "add"}] and recorded[2]["text"] == "5"
    assert recorded[-1]["status"] == "completed" and recorded[-1]["usage"]["input_tokens"] == 20
    store = rt.recorder
    assert isinstance(store, SqliteRecorder)
    listed = {s.invocation_id for s in store.list_invocations(10, result.run_id)}
    assert listed == set(result.invocation_ids)
    history = replay(store, result.invocation_ids[0], "openai")
    assert validate(history, "openai") == []
    assert history == [  # the assistant text came back as the turn's provider item
        {"role": "assistant", "content": [{"type": "text", "text": "Adding."}], "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a":2,"b":3}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "5"}]
    raw = Path(rt.home, "records.sqlite").read_bytes()
    assert KEY.encode() not in raw


async def test_a_call_split_over_many_chunks(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    mock_provider.script(chat.stream(calls=[("c1", "add", '{"a": 123456, "b": 654321}')], pieces=25),
                         chat.stream("777777"))
    result = await rt.agent(model(mock_provider)).run("add")
    assert result.ok
    assert tool_messages(mock_provider.requests[1]) == [{"role": "tool", "tool_call_id": "c1", "content": "777777"}]


async def test_empty_and_truncated_arguments(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    mock_provider.script(
        chat.stream(calls=[("c1", "dice_roll", ""), ("c2", "add", '{"a": 1, "b"')], finish="length", pieces=3),
        chat.stream("sorry"))
    result = await rt.agent(model(mock_provider)).run("go")
    assert result.ok
    second = mock_provider.requests[1]
    sent = second.json["messages"][1]["tool_calls"]
    assert [c["function"]["arguments"] for c in sent] == ["{}", "{}"]  # "" and the cut text as {}
    c1, c2 = tool_messages(second)
    assert "## Tool error" in c1["content"] and "formula" in c1["content"]  # {} lacks the required formula
    assert c2["content"].startswith("## Tool error") and "JSON" in c2["content"]
    assert validate(second.json["messages"], "openai") == []


async def test_429_with_retry_after_then_success(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.error(429, headers={"retry-after": "1"}), chat.stream("done"))
    result = await rt.agent(model(mock_provider)).run("hi")
    assert result.ok and result.text == "done" and result.turns == 1
    first, second = mock_provider.requests
    assert second.at - first.at >= 0.9
    assert first.json == second.json


async def test_500_then_success(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.error(500), chat.stream(calls=[("c1", "add", '{"a": 1, "b": 1}')]),
                         Reply.error(502), chat.stream("2"))
    result = await rt.agent(model(mock_provider)).run("1+1")
    assert result.ok and result.text == "2" and result.turns == 2
    assert len(mock_provider.requests) == 4
    assert mock_provider.requests[0].json == mock_provider.requests[1].json
    assert mock_provider.requests[2].json == mock_provider.requests[3].json


async def test_a_failed_model_request_ends_the_run_failed(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.error(400, {"error": {"message": "model not found"}}))
    result = await rt.agent(model(mock_provider)).run("hi")
    assert result.status == "failed" and result.error_code == "model.http_error"
    assert "model not found" in (result.error.message if result.error else "")
    assert agent_events(rt, result.run_id)[-1]["error_code"] == "model.http_error"


async def test_a_model_that_never_stops_hits_the_turn_budget(rt: tooldeck.Runtime,
                                                             mock_provider: MockProvider) -> None:
    counter = iter(range(100))
    mock_provider.always(lambda req: chat.stream(calls=[(f"c{next(counter)}", "add", '{"a": 1, "b": 1}')]))
    result = await rt.agent(model(mock_provider), max_turns=3).run("loop forever")
    assert result.status == "max_turns" and result.turns == 3
    assert len(mock_provider.requests) == 3
    last = mock_provider.requests[-1].json["messages"]
    assert [m["tool_call_id"] for m in last if m["role"] == "tool"] == ["c0", "c1"]
    assert rt.recorder.list_invocations(10, result.run_id)[0].calls == 1  # the last turn's call ran too
    assert agent_events(rt, result.run_id)[-1]["status"] == "max_turns"


async def test_the_token_budget(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    mock_provider.always(lambda req: chat.stream(calls=[(f"c{req.number}", "add", '{"a": 1, "b": 1}')],
                                                 use=chat.usage(10, 5)))
    result = await rt.agent(model(mock_provider, max_tokens_per_run=40)).run("go")
    assert result.status == "max_tokens" and result.turns == 3 and result.usage.total_tokens == 45
    assert len(mock_provider.requests) == 3


async def test_a_completion_tool_ends_the_run(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    commits: list[Any] = []
    mock_provider.script(
        chat.stream(calls=[("w1", "workspace_write_file", '{"path": "output/reply.md", "content": "Hello."}'),
                           ("w2", "workspace_commit", '{"path": "output/reply.md"}')]),
        chat.stream("Committed.", calls=[("f1", "workspace_finish", '{"reason": "done"}')]))

    async def on_commit(commit: Any) -> None:
        commits.append(commit)

    result = await rt.agent(model(mock_provider), on_commit=on_commit).run("write hello")
    assert result.status == "completed" and result.completed_by == "workspace_finish"
    assert [(c.path, c.mode, c.text) for c in commits] == [("output/reply.md", "replace", "Hello.")]
    assert result.reply == "Hello." and result.output == "Hello."
    assert len(mock_provider.requests) == 2  # nothing is sent after the finish


async def test_a_refused_finish_does_not_end_the_run(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    mock_provider.script(
        chat.stream(calls=[("f1", "workspace_finish", "{}"), ("x", "add", '{"a": 1, "b": 2}')]),
        chat.stream("ok"))
    result = await rt.agent(model(mock_provider)).run("go")
    assert result.completed_by == "answer" and len(mock_provider.requests) == 2
    finish_result = tool_messages(mock_provider.requests[1])[0]["content"]
    assert "must be the last call" in finish_result


async def test_cancelling_closes_the_model_request(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.sse([chat.chunk({"content": "thinking"})], hang=True))
    events: list[AgentEvent] = []
    agent = rt.agent(model(mock_provider), on_event=events.append)
    task = asyncio.ensure_future(agent.run("take your time"))
    await mock_provider.await_for(lambda: any(e.kind == "text" for e in events))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await mock_provider.await_for(lambda: mock_provider.disconnects == [1])  # the server saw the request end
    assert agent.result is not None and agent.result.status == "cancelled"
    assert agent_events(rt, agent.result.run_id)[-1]["status"] == "cancelled"
    assert events[-1].kind == "run_finished" and events[-1].data["status"] == "cancelled"


async def test_a_catalog_change_gives_the_next_turn_new_tools(rt: tooldeck.Runtime,
                                                            mock_provider: MockProvider) -> None:
    @rt.tool(extension_id="grow", name="grow")
    def grow() -> str:
        """Register one more tool."""
        rt.tool(extension_id="grow", name="shrink")(lambda: "small")
        return "grown"

    mock_provider.script(chat.stream(calls=[("g", "grow", "{}")]), chat.stream(calls=[("s", "shrink", "{}")]),
                         chat.stream("ok"))
    result = await rt.agent(model(mock_provider)).run("grow")
    assert result.ok
    names = [[t["function"]["name"] for t in r.json["tools"]] for r in mock_provider.requests]
    assert "shrink" not in names[0] and "shrink" in names[1]
    assert tools_text(mock_provider.requests[1]) == tools_text(mock_provider.requests[2])
    assert [m["content"] for m in tool_messages(mock_provider.requests[2])] == ["grown", "small"]


async def test_background_reports_reach_the_next_turn(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    # The task outlives the second turn, so the loop has to wait for its report (a bare `echo` could finish, on a
    # busy machine, before the first turn's results are put together, and its report ride with them instead).
    mock_provider.script(
        chat.stream(calls=[("b1", "background_command", '{"command": "sleep 2; echo built-ok"}')]),
        chat.stream("I will wait for the build."),
        chat.stream("The build printed built-ok."))
    result = await rt.agent(model(mock_provider), background_wait=30).run("build in the background")
    assert result.ok and result.turns == 3
    third = mock_provider.requests[2].json["messages"]
    assert third[-1]["role"] == "user" and third[-1]["content"].startswith("[background report ")
    assert "built-ok" in third[-1]["content"]
    assert third[-2] == {"role": "assistant", "content": "I will wait for the build."}
    recorded = [e["type"] for e in agent_events(rt, result.run_id)]
    assert "background_reports" in recorded


async def test_agent_closes_its_client_unless_entered(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    mock_provider.script(chat.stream("a"), chat.stream("b"))
    async with rt.agent(model(mock_provider)) as agent:
        assert isinstance(agent, Agent)
        first = await agent.run("one")
        client = agent.client
        second = await agent.run("two")
        assert agent.client is client
    assert first.run_id != second.run_id and first.text == "a" and second.text == "b"
    assert mock_provider.requests[1].json["messages"] == [{"role": "user", "content": "two"}]


async def test_cancelling_during_a_tool_stops_the_tool(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    state: dict[str, Any] = {"started": False, "ticks": 0, "cancelled": False}

    @rt.tool(extension_id="slow", name="slow")
    async def slow() -> str:
        """Work for a long time."""
        state["started"] = True
        try:
            while True:
                state["ticks"] += 1
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            state["cancelled"] = True
            raise

    mock_provider.script(chat.stream(calls=[("s1", "slow", "{}")]))
    agent = rt.agent(model(mock_provider))
    task = asyncio.ensure_future(agent.run("work"))
    await mock_provider.await_for(lambda: state["started"])
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert state["cancelled"]
    ticks = state["ticks"]
    await asyncio.sleep(0.1)
    assert state["ticks"] == ticks  # the tool really stopped
    assert agent.result is not None and agent.result.status == "cancelled"
    history = rt.recorder.history(agent.result.invocation_ids[0])
    assert [(c.call_id, c.status) for c in history.calls] == [("s1", "outcome_unknown")]
    assert len(mock_provider.requests) == 1  # no model turn after the cancel


class ScriptedClient:
    """A `ModelClient` without HTTP that answers from a list of turns (the loop's own logic, any format)."""

    format = "openai_responses"

    def __init__(self, turns: list[ModelTurn]) -> None:
        self.config = ModelConfig("scripted", "openai_responses", "scripted")
        self.turns = turns
        self.requests: list[ModelRequest] = []
        self.closed = False

    async def complete(self, request: ModelRequest, on_event: Any = None) -> ModelTurn:
        self.requests.append(ModelRequest(list(request.messages), request.tools, request.instructions))
        return self.turns.pop(0)

    def user_message(self, text: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": text}]

    def assistant_message(self, turn: ModelTurn) -> list[dict[str, Any]]:
        return [*turn.provider_items, *({"type": "function_call", "call_id": c["id"], "name": c["name"],
                                         "arguments": c["arguments"], **c.get("provider_data", {})}
                                        for c in turn.calls)]

    def tool_results(self, turn: ModelTurn, results: Any, notes: Any = ()) -> list[dict[str, Any]]:
        return [{"type": "function_call_output", "call_id": r.call_id, "output": r.model_text()} for r in results]

    async def aclose(self) -> None:
        self.closed = True


async def test_provider_items_and_data_are_recorded_and_replayed(rt: tooldeck.Runtime) -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-opaque"}
    client = ScriptedClient([
        ModelTurn("", [{"id": "call_1", "name": "add", "arguments": '{"a": 1, "b": 2}',
                        "provider_data": {"id": "fc_1"}}], [reasoning], stop_reason="tool_calls"),
        ModelTurn("3", [], [], stop_reason="end_turn")])
    result = await rt.agent(client).run("1+2")
    assert result.ok and result.text == "3"
    assert not client.closed  # the host's own client stays open: the host closes it
    assert client.requests[1].messages[1:3] == [reasoning, {"type": "function_call", "call_id": "call_1",
                                                            "name": "add", "arguments": '{"a": 1, "b": 2}',
                                                            "id": "fc_1"}]
    history = replay(rt.recorder, result.invocation_ids[0], "openai_responses")
    assert history[:2] == [reasoning, {"type": "function_call", "call_id": "call_1", "name": "add",
                                       "arguments": '{"a":1,"b":2}', "id": "fc_1"}]
    assert validate(history, "openai_responses") == []
