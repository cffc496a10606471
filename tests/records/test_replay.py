"""Replay rules on concrete histories, through a real Runtime and store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import MakeRuntime
from tooldeck.core.descriptors import ToolAnnotations
from tooldeck.protocols import validate
from tooldeck.records.replay import replay, replay_all
from tooldeck.runtime import Runtime

from .support import ADAPTERS, ALL_FORMATS, PlannedCall, PlannedRound, count_results, start_invocation, write_round


@pytest.fixture
def rt(make_runtime: MakeRuntime) -> Any:
    runtime = make_runtime(records=True)

    @runtime.tool("test", "echo", annotations=ToolAnnotations(concurrency_safe=True))
    async def echo(text: str = "") -> str:
        """Echo the text."""
        return text or "(nothing)"

    return runtime


def test_invalid_arguments_are_stored_verbatim_and_replay_as_empty_objects(rt: Runtime) -> None:
    raws = ["[1,2]", '{"text":', "x" * 500, '"just a string"', "42", '{"text": "fine"}']
    inv = rt.invocation("openai")
    inv.run([{"id": f"call_{i}", "name": "echo", "arguments": raw} for i, raw in enumerate(raws)])
    history = rt.recorder.history(inv.id)
    assert [c.raw_arguments for c in history.calls] == raws
    out = replay_all(rt.recorder, inv.id)
    chat = out["openai"][0]["tool_calls"]
    assert [orjson.loads(tc["function"]["arguments"]) for tc in chat] == [{}] * 5 + [{"text": "fine"}]
    tool_msgs = [m["content"] for m in out["openai"][1:]]
    for text, raw in zip(tool_msgs[:5], raws[:5], strict=True):
        assert text.startswith("## Tool error") and "Arguments must be a JSON object" in text
        assert raw[:200] in text
    assert tool_msgs[5] == "fine"
    assert [b["input"] for b in out["anthropic"][0]["content"]] == [{}] * 5 + [{"text": "fine"}]
    assert [p["functionCall"]["args"] for p in out["gemini"][0]["parts"]] == [{}] * 5 + [{"text": "fine"}]


def test_anthropic_uses_is_error_and_others_mark_the_text(rt: Runtime) -> None:
    inv = rt.invocation("anthropic")
    inv.run([{"id": "toolu_1", "name": "echo", "arguments": {"text": "hi"}},
             {"id": "toolu_2", "name": "nope", "arguments": {}}])
    out = replay_all(rt.recorder, inv.id)
    results = out["anthropic"][1]["content"]
    assert results[0] == {"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi"}
    assert results[1]["is_error"] is True and not results[1]["content"].startswith("## Tool error")
    assert out["openai_responses"][-1]["output"].startswith("## Tool error\n\n`nope` is not an available tool")
    assert out["gemini"][1]["parts"][1]["functionResponse"]["response"]["error"].startswith("## Tool error")
    assert out["gemini"][1]["parts"][0]["functionResponse"]["response"] == {"output": "hi"}


def test_mistral_ids_are_rewritten_consistently_and_deterministically(rt: Runtime) -> None:
    inv = rt.invocation("mistral")
    inv.run([{"id": "call_abc", "name": "echo", "arguments": "{}"}, {"id": "abcDEF123", "name": "echo"}])
    inv.run([{"id": "call_abc", "name": "echo", "arguments": "{}"}])
    first = replay(rt.recorder, inv.id, "mistral")
    assert first == replay(rt.recorder, inv.id, "mistral")
    calls, results = count_results(first, "mistral")
    assert calls == results
    flat = [i for turn in calls for i in turn]
    assert all(len(i) == 9 and i.isalnum() for i in flat)
    assert flat[1] == "abcDEF123"
    assert len(set(flat)) == 3, "the reused id of round 2 gets its own id"
    assert validate(first, "mistral") == []


def test_names_come_from_the_snapshot_and_are_made_valid_per_provider(tmp_path: Path) -> None:
    store = ADAPTERS["sqlite"](tmp_path)
    from .support import snapshot

    snap = snapshot("openai", ["dice_roll", "9-lives", "search"])
    inv = start_invocation(store, snap)
    write_round(store, inv, 1, PlannedRound([PlannedCall("c1", "9-lives", "{}"), PlannedCall("c2", "x.y", "{}"),
                                             PlannedCall("c3", "search", "{}")]))
    out = {fmt: replay(store, inv, fmt) for fmt in ALL_FORMATS}
    assert [tc["function"]["name"] for tc in out["openai"][0]["tool_calls"]] == ["9-lives", "x_y", "search"]
    gemini_names = [p["functionCall"]["name"] for p in out["gemini"][0]["parts"]]
    assert gemini_names[0] == "_9-lives" and gemini_names[2] == "search"
    assert [p["functionResponse"]["name"] for p in out["gemini"][1]["parts"]] == gemini_names
    for fmt, messages in out.items():
        assert validate(messages, fmt) == [], fmt
    store.close()


def test_results_follow_call_order_whatever_the_completion_order(tmp_path: Path) -> None:
    store = ADAPTERS["sqlite"](tmp_path)
    inv = start_invocation(store)
    calls = [PlannedCall(f"c{i}", "search", "{}", "ok", f"result {i}") for i in range(6)]
    write_round(store, inv, 1, PlannedRound(calls, finish_order=[5, 3, 1, 0, 4, 2]))
    messages = replay(store, inv, "openai")
    assert [m["content"] for m in messages[1:]] == [f"result {i}" for i in range(6)]
    assert [m["tool_call_id"] for m in messages[1:]] == [f"c{i}" for i in range(6)]
    store.close()


def test_interrupted_calls_replay_with_a_check_state_result(tmp_path: Path) -> None:
    store = ADAPTERS["sqlite"](tmp_path)
    inv = start_invocation(store)
    write_round(store, inv, 1, PlannedRound([PlannedCall("a", "write_file", '{"x":1}')], interrupt="after_started"))
    write_round(store, inv, 2, PlannedRound([PlannedCall("b", "write_file", '{"x":1}'),
                                             PlannedCall("c", "write_file", "[1]")], interrupt="after_requested"))
    out = replay(store, inv, "anthropic")
    first = out[1]["content"][0]
    assert first["is_error"] is True
    assert "may or may not have run" in first["content"] and "Check the current state" in first["content"]
    second = out[3]["content"]
    assert "nothing was executed" in second[0]["content"]
    assert "Arguments must be a JSON object" in second[1]["content"]
    assert validate(out, "anthropic") == []
    store.close()
