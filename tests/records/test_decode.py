"""Decoding tool calls from each provider's response shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from tooldeck.core.errors import TooldeckError
from tooldeck.protocols import decode_calls, runtime_calls
from tooldeck.protocols.gemini import synthesize_id
from tooldeck.runtime import Runtime

OPENAI = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
    {"id": "call_a", "type": "function", "function": {"name": "dice_roll", "arguments": '{"formula":"d6"}'}},
    {"id": "call_b", "type": "function", "function": {"name": "dice_roll", "arguments": "[1,2]"}},
    {"id": "call_c", "type": "function", "function": {"name": "dice_roll<|channel|>commentary", "arguments": ""}},
]}}]}
RESPONSES = {"output": [
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "dice_roll", "arguments": '{"formula":"d6"}'},
    {"type": "message", "role": "assistant", "content": []},
    {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "nope", "arguments": '{"path":'},
]}
ANTHROPIC = {"role": "assistant", "content": [
    {"type": "text", "text": "Rolling."},
    {"type": "tool_use", "id": "toolu_1", "name": "dice_roll", "input": {"formula": "2d6"}},
    {"type": "tool_use", "id": "toolu_2", "name": "dice_roll", "input": {}},
]}
GEMINI = {"candidates": [{"content": {"role": "model", "parts": [
    {"text": "ok"},
    {"functionCall": {"name": "dice_roll", "args": {"formula": "d20"}}},
    {"functionCall": {"name": "dice_roll", "args": {"formula": "d20"}}},
    {"functionCall": {"name": "dice_roll"}},
]}}]}


def test_openai_chat_keeps_raw_arguments_and_cuts_template_tokens() -> None:
    calls = decode_calls(OPENAI, "openai")
    assert [c.id for c in calls] == ["call_a", "call_b", "call_c"]
    assert [c.name for c in calls] == ["dice_roll"] * 3
    assert calls[0].arguments.to_replay_object() == {"formula": "d6"}
    assert calls[1].raw == "[1,2]" and not calls[1].arguments.is_valid
    assert calls[2].raw == "" and calls[2].arguments.to_replay_object() == {}
    assert runtime_calls(OPENAI, "openai")[1] == {"id": "call_b", "name": "dice_roll", "arguments": "[1,2]"}


def test_mistral_uses_the_chat_shape() -> None:
    assert [c.id for c in decode_calls(OPENAI, "mistral")] == ["call_a", "call_b", "call_c"]


def test_openai_responses_reads_function_call_items_by_call_id() -> None:
    calls = decode_calls(RESPONSES, "openai_responses")
    assert [(c.id, c.name, c.raw) for c in calls] == [("call_a", "dice_roll", '{"formula":"d6"}'),
                                                       ("call_b", "nope", '{"path":')]


def test_anthropic_input_objects_are_the_raw_arguments() -> None:
    calls = decode_calls(ANTHROPIC, "anthropic")
    assert [(c.id, c.raw) for c in calls] == [("toolu_1", {"formula": "2d6"}), ("toolu_2", {})]
    assert calls[0].arguments.to_replay_object() == {"formula": "2d6"}


def test_gemini_synthesises_deterministic_distinct_ids_never_the_name() -> None:
    first = decode_calls(GEMINI, "gemini", id_seed="inv_1:1")
    again = decode_calls(GEMINI, "gemini", id_seed="inv_1:1")
    other_round = decode_calls(GEMINI, "gemini", id_seed="inv_1:2")
    ids = [c.id for c in first]
    assert ids == [c.id for c in again]
    assert len(set(ids)) == 3 and all(c.synthesized_id for c in first)
    assert "dice_roll" not in ids
    assert set(ids).isdisjoint(c.id for c in other_round)
    assert first[2].to_call() == {"id": ids[2], "name": "dice_roll"}
    assert ids[0] == synthesize_id("inv_1:1", 0, "dice_roll", {"formula": "d20"})


def test_gemini_keeps_ids_the_api_sends_unless_it_is_the_name() -> None:
    parts = [{"functionCall": {"id": "abc", "name": "f", "args": {}}},
             {"functionCall": {"id": "f", "name": "f", "args": {}}}]
    calls = decode_calls({"parts": parts}, "gemini")
    assert calls[0].id == "abc" and not calls[0].synthesized_id
    assert calls[1].id != "f" and calls[1].synthesized_id


@pytest.mark.parametrize(("provider", "response", "what"), [
    ("openai", {"choices": [{"message": {"tool_calls": [{"type": "function", "function": {"name": "f"}}]}}]}, "id"),
    ("openai", {"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}}]}, "name"),
    ("openai", {"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"name": "<|call|>"}}]}}]}, "name"),
    ("openai_responses", {"output": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, "id"),
    ("openai_responses", {"output": [{"type": "function_call", "call_id": "c", "arguments": "{}"}]}, "name"),
    ("anthropic", {"content": [{"type": "tool_use", "name": "f", "input": {}}]}, "id"),
    ("anthropic", {"content": [{"type": "tool_use", "id": "t", "name": "  ", "input": {}}]}, "name"),
    ("gemini", {"parts": [{"functionCall": {"args": {}}}]}, "name"),
])
def test_missing_id_or_name_is_a_clear_decode_error(provider: str, response: dict, what: str) -> None:
    with pytest.raises(TooldeckError) as err:
        decode_calls(response, provider)
    assert err.value.code == "model.invalid_tool_call"
    assert ("call id" if what == "id" else "name") in err.value.message
    assert "retry" in err.value.message


def test_unknown_names_reach_the_gate_as_a_recoverable_error(tmp_path: Path) -> None:
    with Runtime(tmp_path, records=True) as rt:
        inv = rt.invocation("openai")
        results = inv.run(runtime_calls(RESPONSES, "openai_responses"))
    assert [r.error_code for r in results] == [None, "tool.unknown_tool"]
    assert results[0].content.startswith("Rolled 1d6")


def test_unknown_format_is_refused() -> None:
    with pytest.raises(TooldeckError) as err:
        decode_calls({}, "cohere")
    assert err.value.code == "protocol.unknown_format"
