"""Calls without a usable id or name (issue 11, item 1): a call with an id but no usable name gets a
`tool.unknown_tool` result; a call without an id cannot be paired with a result, so its turn raises
`model.invalid_tool_call` — after every call of the turn is recorded and closed, nothing having run."""

from __future__ import annotations

from typing import Any

import pytest

import tooldeck
from tests.conftest import MakeRuntime
from tests.core.helpers import builtin
from tooldeck.protocols import validate
from tooldeck.records.replay import replay_all

ran: list[str] = []


def note(args: dict[str, Any], ctx: Any) -> str:
    ran.append(ctx.call_id)
    return f"ran {ctx.call_id}"


@pytest.fixture
def rt(make_runtime: MakeRuntime) -> Any:
    ran.clear()
    return make_runtime(builtins=[builtin("note", note)], allow=["builtin:*"])


def replays_valid(rt: Any, inv: Any) -> None:
    for fmt, messages in replay_all(rt.recorder, inv.id).items():
        assert validate(messages, fmt) == [], fmt


@pytest.mark.parametrize(("call", "recorded_name"), [
    ({"id": "c1"}, ""), ({"id": "c1", "name": ""}, ""), ({"id": "c1", "name": None}, ""),
    ({"id": "c1", "name": 42}, "42"), ({"id": "c1", "name": {"x": [1]}}, '{"x":[1]}'),
    ({"id": "c1", "function": {"arguments": "{}"}}, ""), ({"id": "c1", "name": "   "}, "   "),
])
def test_a_call_with_an_id_and_no_usable_name_is_an_unknown_tool(rt: Any, call: dict[str, Any],
                                                                  recorded_name: str) -> None:
    inv = rt.invocation()
    [result] = inv.run([call, {"id": "c2", "name": "note"}])[:1]
    assert (result.call_id, result.error_code) == ("c1", "tool.unknown_tool")
    assert result.content.startswith("The call has no tool name" if not recorded_name.strip() else
                                     f"`{recorded_name}` is not an available tool")
    assert ran == ["c2"] and inv.gate.budget.total == 2  # the other call ran; the nameless one was charged
    first, _ = rt.recorder.history(inv.id).calls
    assert (first.call_name, first.status, first.result.error_code) == (recorded_name, "failed", "tool.unknown_tool")
    replays_valid(rt, inv)


def test_odd_names_are_shown_safely_and_replay_valid(rt: Any) -> None:
    inv = rt.invocation()
    odd, huge = "bad\udc80name\x00", "n" * 100_000
    results = inv.run([{"id": "c1", "name": odd}, {"id": "c2", "name": huge}])
    assert [r.error_code for r in results] == ["tool.unknown_tool"] * 2
    assert "`bad\\udc80name\x00` is not an available tool" in results[0].content
    assert len(results[1].content) < 1_000
    assert [c.call_name for c in rt.recorder.history(inv.id).calls] == [odd, huge]
    replays_valid(rt, inv)


@pytest.mark.parametrize(("bad", "kept"), [
    ({"name": "note"}, ("", None)), ({"id": "", "name": "note"}, ("", None)),
    ({"id": None, "name": "note"}, ("", None)),
    ({"id": 7, "name": "note", "arguments": "[1"}, ("7", "[1")),
    # not even an object: kept whole as its raw arguments
    ("note", ("", "note")), (None, ("", "null")), (["c9", "note"], ("", '["c9","note"]')),
])
def test_a_call_without_an_id_refuses_the_turn_after_recording_it(rt: Any, bad: Any, kept: tuple[str, Any]) -> None:
    inv = rt.invocation()
    turn = [{"id": "c1", "name": "note", "arguments": '{"a": 1}'}, bad,
            {"id": "c3", "name": "note", "arguments": {"b": [2]}}]
    with pytest.raises(tooldeck.TooldeckError) as err:
        inv.run(turn)
    assert err.value.code == "model.invalid_tool_call" and "id" in err.value.message
    assert ran == [] and inv.gate.budget.total == 0
    calls = rt.recorder.history(inv.id).calls
    assert [(c.index, c.status, c.result.error_code) for c in calls] == [
        (0, "failed", "model.invalid_tool_call"), (1, "failed", "model.invalid_tool_call"),
        (2, "failed", "model.invalid_tool_call")]
    assert (calls[0].call_id, calls[0].raw_arguments) == ("c1", '{"a": 1}')
    assert (calls[2].call_id, calls[2].raw_arguments) == ("c3", '{"b":[2]}')
    assert "no id" in calls[1].result.content and "call 2 of this turn had no id" in calls[0].result.content
    assert (calls[1].call_id, calls[1].raw_arguments) == kept
    replays_valid(rt, inv)
    # The invocation goes on: the next turn runs.
    assert [r.content for r in inv.run([{"id": "c4", "name": "note"}])] == ["ran c4"]


def test_without_records_a_call_without_an_id_still_raises_and_nothing_runs(make_runtime: MakeRuntime) -> None:
    ran.clear()
    rt = make_runtime(builtins=[builtin("note", note)], allow=["builtin:*"], records=False)
    for turn in ([{"name": "note"}], [{"id": "c1", "name": "note"}, {"id": ""}]):
        with pytest.raises(tooldeck.TooldeckError) as err:
            rt.invocation().run(turn)
        assert err.value.code == "model.invalid_tool_call"
    assert ran == []
