"""The default conversation source over the agent loop's own messages (the records store), against the
loopback mock provider: a run resumed with the same run id searches and reads its earlier session, its
input is frozen at the session's start, and `chat_history` lists, reads and searches the runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import tooldeck
from tests.agent import chat_replies as chat
from tests.agent.mock_provider import MockProvider, Reply
from tests.conftest import MakeRuntime
from tests.conversation.conftest import ALLOW, caller, import_chat
from tooldeck.agent.types import ModelConfig


@pytest.fixture
def mock() -> Iterator[MockProvider]:
    with MockProvider() as m:
        yield m
    assert not m.unexpected


def model(mock: MockProvider) -> ModelConfig:
    return ModelConfig("mock", "openai", "gpt-mock", base_url=mock.url + "/v1", api_key="k", retry_base_delay=0.01)


def reply(*args: Any, **kw: Any) -> Reply:
    return chat.stream(*args, **kw)


def acaller(rt: tooldeck.Runtime, run_id: str) -> Any:
    async def call(name: str, **args: Any) -> Any:
        [result] = await rt.invocation(run_id=run_id).arun([{"id": "c", "name": name, "arguments": args}])
        return result

    return call


def tool_results(request: Any) -> list[str]:
    return [m["content"] for m in request.json["messages"] if m["role"] == "tool"]


@pytest.fixture
def rt(make_runtime: MakeRuntime) -> tooldeck.Runtime:
    return make_runtime(allow=[*ALLOW, "builtin:dice.roll"])


async def test_a_resumed_run_searches_its_earlier_session(rt: tooldeck.Runtime, mock: MockProvider) -> None:
    mock.script(
        reply(calls=[("d1", "dice_roll", '{"formula": "1d1"}')]),
        reply("Noted: the password is swordfish."),
        reply(calls=[("s1", "chat_search", '{"query": "password"}'),
                               ("r1", "chat_read_messages", '{"messages": [{"index": 3}]}')]),
        reply("It was swordfish."))
    agent = rt.agent(model(mock))
    first = await agent.run("Remember: the password is swordfish.", run_id="conv")
    assert first.ok
    second = await agent.run("What was the password?", run_id="conv")
    assert second.ok and second.text == "It was swordfish."
    search, read = tool_results(mock.requests[3])
    # the input: task 1, the dice call, its result, the answer, task 2 — not this session's own turns
    assert "5 input" not in search
    assert search.startswith("3 of 3 matching message(s) in 0-4")
    assert "#3 [assistant] score 1: Noted: the password is swordfish." in search
    assert "#0 [user] score 1: Remember: the password is swordfish." in search
    assert "#4 [user] score 1: What was the password?" in search
    assert read == "[#3 assistant · L1-L1 of 1] chat:current#3\nNoted: the password is swordfish."
    [frozen] = rt.recorder.run_events("conv", "conversation")
    assert frozen == {"type": "input_frozen", "chat": "conv", "session": 2, "count": 5}
    # the run's chat as the source rebuilt it: the call line and the tool result are messages too
    call = acaller(rt, "conv")
    r = await call("chat_read_messages", messages=[{"index": 1}, {"index": 2}])
    assert [m["text"] for m in r.structured["messages"]] == ['→ dice_roll {"formula":"1d1"}', "Rolled 1d1: 1."]
    assert [(m["role"], m["name"]) for m in r.structured["messages"]] == [("assistant", None), ("tool", "dice_roll")]
    assert (await call("chat_read_messages", messages=[{"index": 5}])).error_code == "chat.message_not_found"


async def test_chat_history_over_runs_and_imported_chats(rt: tooldeck.Runtime, mock: MockProvider) -> None:
    mock.script(reply("The capital of France is Paris."), reply("Blue whales are large."))
    agent = rt.agent(model(mock))
    assert (await agent.run("Capital of France?", run_id="geo")).ok
    assert (await agent.run("Largest animal?", run_id="bio")).ok
    import_chat(rt.home, "tavern", ["hello there", "general kenobi, Paris is lovely"])
    call = acaller(rt, "bio")
    listed = json.loads((await call("chat_history")).content)
    assert [(c["task_id"], c["kind"], c["messages"]) for c in listed] == [
        ("tavern", "imported", 2), ("bio", "run", 2), ("geo", "run", 2)]
    assert listed[1]["title"] == "Largest animal?"
    assert len(json.loads((await call("chat_history", mode="list", limit=1)).content)) == 1
    read = json.loads((await call("chat_history", task_id="current")).content)
    assert [(m["role"], m["text"]) for m in read["messages"]] == [("user", "Largest animal?"),
                                                                  ("assistant", "Blue whales are large.")]
    hits = json.loads((await call("chat_history", keyword="paris")).content)
    assert [(h["task_id"], h["index"]) for h in hits] == [("tavern", 1), ("geo", 1)]
    both = json.loads((await call("chat_history", keyword="paris france", match="keyword")).content)
    assert [(h["task_id"], h["index"]) for h in both] == [("geo", 1)]
    semantic = json.loads((await call("chat_history", keyword="paris france", match="semantic")).content)
    assert [(h["task_id"], h["index"], h["score"]) for h in semantic] == [("tavern", 1, 1), ("geo", 1, 2),
                                                                          ("geo", 0, 1)]
    assert json.loads((await call("chat_history", keyword="paris", time_range="1h")).content)


@pytest.mark.parametrize(("args", "code", "text"), [
    ({"mode": "delete"}, "chat.unknown_mode", 'unknown mode "delete"; available: list, read, search'),
    ({"mode": "read"}, "chat.field_required", "task_id is required when mode=read"),
    ({"mode": "search"}, "chat.field_required", "keyword is required when mode=search"),
    ({"task_id": "nope"}, "chat.not_found", 'no conversation "nope"'),
    ({"time_range": "2w"}, "chat.invalid_time_range", 'unknown time_range "2w"'),
    ({"keyword": "-x"}, "chat.invalid_query", "no word to look for"),
])
def test_chat_history_errors(rt: tooldeck.Runtime, args: dict[str, Any], code: str, text: str) -> None:
    r = caller(rt)("chat_history", **args)
    assert r.is_error and r.error_code == code and text in r.content, r.content
