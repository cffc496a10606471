"""The validators catch the histories providers reject with a 400 (peers.md §3.2)."""

from __future__ import annotations

import pytest

from tooldeck.protocols import validate


def _codes(messages: list, provider: str) -> set[str]:
    return {v.code for v in validate(messages, provider)}


def _chat_call(call_id: str = "call_1", name: str = "f", args: object = "{}") -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}]}


def test_openai_unanswered_call_is_reported() -> None:
    assert "tool_call_unanswered" in _codes([_chat_call(), {"role": "user", "content": "next"}], "openai")
    assert "tool_call_unanswered" in _codes([_chat_call()], "openai")


def test_openai_orphan_tool_message_is_reported() -> None:
    msgs = [{"role": "tool", "tool_call_id": "call_9", "content": "x"}]
    assert "tool_message_orphaned" in _codes(msgs, "openai")


def test_openai_shape_rules() -> None:
    msgs = [_chat_call("c" * 41, "multi_tool_use.parallel", {"a": 1}),
            {"role": "tool", "tool_call_id": "c" * 41, "content": "x"}]
    assert {"call_id_invalid", "call_name_invalid", "call_arguments_invalid"} <= _codes(msgs, "openai")
    ok = [_chat_call(), {"role": "tool", "tool_call_id": "call_1", "content": "x"}]
    assert validate(ok, "openai") == []


def test_mistral_ids_are_nine_alphanumerics() -> None:
    msgs = [_chat_call("call_1"), {"role": "tool", "tool_call_id": "call_1", "content": "x"}]
    assert "call_id_invalid" in _codes(msgs, "mistral")
    good = [_chat_call("abcDEF123"), {"role": "tool", "tool_call_id": "abcDEF123", "content": "x"}]
    assert validate(good, "mistral") == []


def test_responses_output_without_call_and_call_without_output() -> None:
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    assert "tool_call_unanswered" in _codes([call], "openai_responses")
    out = {"type": "function_call_output", "call_id": "c2", "output": "x"}
    assert "tool_output_orphaned" in _codes([call, out], "openai_responses")


def _use(ids: list[str], inp: object = None) -> dict:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": "f", "input": inp or {}}
                                             for i in ids]}


def _result(i: str) -> dict:
    return {"type": "tool_result", "tool_use_id": i, "content": "x"}


def test_anthropic_results_must_come_first_in_the_next_user_message() -> None:
    late = [_use(["t1"]), {"role": "user", "content": [{"type": "text", "text": "hi"}, _result("t1")]}]
    assert {"tool_result_not_first", "tool_use_unanswered"} <= _codes(late, "anthropic")
    skipped = [_use(["t1"]), {"role": "assistant", "content": "x"}, {"role": "user", "content": [_result("t1")]}]
    assert "tool_use_unanswered" in _codes(skipped, "anthropic")
    partial = [_use(["t1", "t2"]), {"role": "user", "content": [_result("t2")]}]
    assert "tool_use_unanswered" in _codes(partial, "anthropic")
    assert validate([_use(["t1", "t2"]), {"role": "user", "content": [_result("t1"), _result("t2")]}],
                    "anthropic") == []


def test_anthropic_input_must_be_an_object_and_ids_match_the_pattern() -> None:
    msgs = [{"role": "assistant", "content": [{"type": "tool_use", "id": "functions.f:0", "name": "f",
                                                "input": "{}"}]},
            {"role": "user", "content": [_result("functions.f:0")]}]
    assert {"call_arguments_invalid", "call_id_invalid"} <= _codes(msgs, "anthropic")


def _fc(n: int, name: str = "f") -> dict:
    return {"role": "model", "parts": [{"functionCall": {"name": name, "args": {}}} for _ in range(n)]}


def _fr(n: int, name: str = "f") -> dict:
    return {"role": "user", "parts": [{"functionResponse": {"name": name, "response": {"output": "x"}}}
                                      for _ in range(n)]}


@pytest.mark.parametrize(("calls", "responses"), [(2, 1), (1, 2), (3, 0)])
def test_gemini_response_count_must_equal_call_count(calls: int, responses: int) -> None:
    msgs = [_fc(calls), _fr(responses)] if responses else [_fc(calls), {"role": "user", "parts": [{"text": "hi"}]}]
    assert "function_response_count" in _codes(msgs, "gemini")
    assert validate([_fc(calls), _fr(calls)], "gemini") == []


def test_gemini_names_and_ids() -> None:
    msgs = [{"role": "model", "parts": [{"functionCall": {"id": "f", "name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "f", "name": "f", "response": {}}}]}]
    assert "call_id_invalid" in _codes(msgs, "gemini")
    assert "call_name_invalid" in _codes([_fc(1, "9lives"), _fr(1, "9lives")], "gemini")
    assert "function_response_name" in _codes([_fc(1, "f"), _fr(1, "g")], "gemini")


def test_openai_empty_tool_calls_array_is_reported() -> None:
    assert "tool_calls_empty" in _codes([{"role": "assistant", "content": "hi", "tool_calls": []}], "openai")


def test_gemini_call_turn_must_follow_a_user_turn() -> None:
    msgs = [{"role": "user", "parts": [{"text": "go"}]}, {"role": "model", "parts": [{"text": "thinking"}]},
            _fc(1), _fr(1)]
    assert "function_call_turn_order" in _codes(msgs, "gemini")
    assert validate([{"role": "user", "parts": [{"text": "go"}]}, _fc(1), _fr(1), _fc(2), _fr(2)], "gemini") == []
