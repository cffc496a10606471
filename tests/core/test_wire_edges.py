"""Issue 11, item 1: wire arguments that used to escape `Invocation.run` as exceptions (R1–R5), big
integers that arrived as floats, and host objects recorded as their repr. Each test runs the real
pipeline with records on (a real SQLite file), reads the records back through the read API and
replays them into every provider format."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import MakeRuntime
from tooldeck.protocols import validate
from tooldeck.records.replay import replay_all


def nest_dict(levels: int) -> dict[str, Any]:
    value: Any = 1
    for _ in range(levels):
        value = {"x": value}
    return value


def nest_list(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.fixture
def rt(make_runtime: MakeRuntime) -> Any:
    runtime = make_runtime(allow=["builtin:dice.roll", "extension/*"])

    @runtime.tool("t")
    def exact(n: int) -> str:
        """Say what arrived."""
        return f"{type(n).__name__}:{n!r}"

    @runtime.tool("t", input_schema={"type": "object"})
    def anything(**kwargs: Any) -> str:
        """Take any object."""
        return "ran"

    return runtime


def run_one(rt: Any, name: str, arguments: Any) -> tuple[Any, Any, Any]:
    """(result, the call's record, the invocation) of one call; every replay of it is valid."""
    inv = rt.invocation()
    [result] = inv.run([{"id": "c1", "name": name, "arguments": arguments}])
    [record] = rt.recorder.history(inv.id).calls
    assert record.status in ("completed", "failed", "outcome_unknown"), "the call is left open"
    assert (record.result.content, record.result.error_code) == (result.content, result.error_code)
    for fmt, messages in replay_all(rt.recorder, inv.id).items():
        assert validate(messages, fmt) == [], fmt
    return result, record, inv


def test_r1_a_dict_nested_too_deep_is_a_result_that_says_so(rt: Any) -> None:
    sent = nest_dict(256)
    result, record, _ = run_one(rt, "dice_roll", sent)
    assert result.error_code == "tool.invalid_arguments"
    assert "nested more than 64 levels deep" in result.content and "flatter" in result.content
    assert json.loads(record.raw_arguments) == sent  # kept whole, as JSON text
    # The same depth sent as a JSON string gets the same answer.
    result, _, _ = run_one(rt, "dice_roll", json.dumps(nest_dict(600)))
    assert result.error_code == "tool.invalid_arguments" and "nested more than 64 levels" in result.content


def test_r2_a_lone_surrogate_key_is_a_result_and_kept_exactly(rt: Any) -> None:
    sent = json.loads('{"\\udc80": 1}')  # what Python's json makes of the escape a model wrote
    result, record, _ = run_one(rt, "dice_roll", sent)
    assert result.error_code == "tool.invalid_arguments"
    assert "not valid Unicode" in result.content and "\\udc80" in result.content
    assert result.content.encode("utf-8")  # the message itself is valid text
    assert getattr(record.raw_arguments, "value", None) == sent
    # The escape itself, as a JSON string, gets the same answer.
    result, record, _ = run_one(rt, "dice_roll", '{"\\udc80": 1}')
    assert "not valid Unicode" in result.content and record.raw_arguments == '{"\\udc80": 1}'


def test_r3_a_non_string_key_is_a_result_and_kept_exactly(rt: Any) -> None:
    result, record, _ = run_one(rt, "dice_roll", {1: "x"})
    assert result.error_code == "tool.invalid_arguments"
    assert "keys must be strings" in result.content
    assert getattr(record.raw_arguments, "value", None) == {1: "x"}


def test_r4_an_integer_beyond_any_json_number_is_a_result_and_recorded(rt: Any) -> None:
    result, record, _ = run_one(rt, "dice_roll", {"formula": 10**4300})
    assert result.error_code == "tool.invalid_arguments"
    assert "`formula` is an integer of 4,301 digits, too large" in result.content
    assert getattr(record.raw_arguments, "value", None) == {"formula": 10**4300}


def test_r5_a_list_nested_1000_deep_is_a_result_and_recorded(rt: Any) -> None:
    result, record, _ = run_one(rt, "dice_roll", {"formula": nest_list(1000)})
    assert result.error_code == "tool.invalid_arguments" and "nested more than 64 levels" in result.content
    assert record.raw_arguments == '{"formula":' + "[" * 1000 + "1" + "]" * 1000 + "}"
    result, record, _ = run_one(rt, "dice_roll", nest_list(1000))  # not even an object
    assert result.error_code == "tool.invalid_arguments" and "must be a JSON object" in result.content
    assert record.raw_arguments == "[" * 1000 + "1" + "]" * 1000


@pytest.mark.parametrize("wire", ['{"n": 123456789012345678901}', {"n": 123456789012345678901}])
def test_a_big_integer_arrives_exact_and_replays_exact(rt: Any, wire: Any) -> None:
    result, record, inv = run_one(rt, "exact", wire)
    assert result.content == "int:123456789012345678901"
    assert record.arguments == {"n": 123456789012345678901}
    replays = replay_all(rt.recorder, inv.id)
    assert json.loads(replays["openai"][0]["tool_calls"][0]["function"]["arguments"]) == {"n": 123456789012345678901}
    assert replays["anthropic"][0]["content"][0]["input"] == {"n": 123456789012345678901}


def test_numbers_outside_a_json_number_are_named(rt: Any) -> None:
    for wire, said in (('{"n": 1e400}', "the number 1e400 is too large"), ('{"n": NaN}', "`n` is NaN"),
                       ({"n": float("inf")}, "`n` is Infinity"), ('{"n": ' + "9" * 309 + "}", "309 digits")):
        result, _, _ = run_one(rt, "exact", wire)
        assert result.error_code == "tool.invalid_arguments" and said in result.content, wire


@pytest.mark.parametrize("sent", [{"text": "a\udc80b"}, {"blob": b"\xff\x00"}, {"n": float("nan")},
                                  {"s": {1, 2}}, {(1, 2): [b"x"]}])
def test_a_host_object_json_cannot_hold_is_recorded_exactly_and_replays_with_its_error(rt: Any, sent: Any) -> None:
    result, record, inv = run_one(rt, "anything", sent)
    assert result.error_code == "tool.invalid_arguments"
    raw = record.raw_arguments
    assert not isinstance(raw, str), "kept as the object, not as its repr"
    if "n" in sent:  # NaN != NaN: compare what it is
        assert str(raw.value["n"]) == "nan"
    else:
        assert raw.value == sent
    for fmt, messages in replay_all(rt.recorder, inv.id).items():
        text = json.dumps(messages)
        assert "Invalid arguments for `anything`" in text, fmt


def test_plain_host_objects_are_still_recorded_as_json_text(rt: Any) -> None:
    _, record, _ = run_one(rt, "anything", {"a": [1, 2.5, None, "é\x00"], "b": {"c": True}})
    assert record.raw_arguments == '{"a":[1,2.5,null,"é\\u0000"],"b":{"c":true}}'
