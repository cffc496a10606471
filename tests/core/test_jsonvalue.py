"""Properties of the JSON-value edge (`core.jsonvalue`, `core.rawvalue`): the decoder and encoder are
exact, the fast checks never admit what the slow check refuses, the raw form reads back equal, and
nothing raises on any input."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.strategies import JSON_VALUES, TEXTS, VALUES, nest
from tooldeck.core.arguments import ToolArguments
from tooldeck.core.jsonfast import decoded_fast, plain_fast
from tooldeck.core.jsonvalue import (
    MAX_DEPTH,
    Problem,
    find_problem,
    json_text,
    loads,
)
from tooldeck.core.rawvalue import RawObject, raw_form, to_tokens

SETTINGS = settings(max_examples=600, derandomize=True, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MAX_NUMBER_INT = int(sys.float_info.max)


def reference_problem(value: Any, depth: int = 1) -> bool:
    """True when `value` is not JSON arguments: a plain recursive statement of the rule."""
    if value is None or isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) > MAX_NUMBER_INT
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, list | tuple | dict):
        if depth > MAX_DEPTH:
            return True
        if isinstance(value, dict):
            return any(reference_problem(k, depth) or not isinstance(k, str) or reference_problem(v, depth + 1)
                       for k, v in value.items())
        return any(reference_problem(v, depth + 1) for v in value)
    return True


@SETTINGS
@given(VALUES)
def test_find_problem_states_the_rule_and_the_fast_check_never_admits_more(value: Any) -> None:
    problem = find_problem(value)
    assert (problem is not None) == reference_problem(value)
    if plain_fast(value):
        assert problem is None
    if problem is not None:
        assert isinstance(problem.message, str) and problem.message.encode("utf-8")


@SETTINGS
@given(VALUES)
def test_the_raw_form_reads_back_equal_through_json(value: Any) -> None:
    form = raw_form(value)
    if isinstance(form, str):
        assert find_problem(value, None) is None
        assert form == json_text(value)
        if form.count("[") + form.count("{") < 900:  # Python's json (the reference) recurses
            assert to_tokens(json.loads(form)) == to_tokens(_as_json(value))
    else:
        stored = orjson.loads(orjson.dumps(form.to_record()))  # what the records keep
        back = RawObject.from_tokens(stored["host"])
        assert back == form and to_tokens(back.value) == to_tokens(value)


def _as_json(value: Any) -> Any:
    """`value` as JSON sees it (tuples are arrays), by Python's own encoder and decoder."""
    return json.loads(json.dumps(value))


@SETTINGS
@given(JSON_VALUES)
def test_json_text_and_loads_are_exact_for_json(value: Any) -> None:
    text = json_text(value)
    back = loads(text)
    assert not isinstance(back, Problem)
    assert to_tokens(back) == to_tokens(value)
    assert to_tokens(json.loads(text)) == to_tokens(value)  # Python's decoder agrees, integers included
    spaced = json.dumps(value)  # another spelling of the same value
    assert to_tokens(loads(spaced)) == to_tokens(value)


@SETTINGS
@given(TEXTS)
def test_loads_and_decode_never_raise_and_the_fast_path_is_exact(text: str) -> None:
    value = loads(text)
    args = ToolArguments.decode(text)
    assert args.is_valid == (args.value is not None)
    if not args.is_valid:
        assert args.invalid_message("t").encode("utf-8")
    try:
        fast = orjson.loads(text)
    except orjson.JSONDecodeError:
        return
    if isinstance(fast, dict) and decoded_fast(fast, text):
        # What the gate admits inline is exactly what the slow path decodes, and within the limits.
        assert to_tokens(fast) == to_tokens(value) and find_problem(fast) is None and args.value == fast


@pytest.mark.parametrize("levels", [MAX_DEPTH - 1, MAX_DEPTH, 1_023, 1_024, 5_000])
def test_depth_at_the_limits(levels: int) -> None:
    value = {"a": nest(levels, 1, as_dict=False)}  # levels + 1 levels with the arguments object
    assert (find_problem(value) is None) == (levels + 1 <= MAX_DEPTH)
    text = json_text(value)
    assert ToolArguments.decode(text).is_valid == (levels + 1 <= MAX_DEPTH)
    assert ToolArguments.decode(value).is_valid == (levels + 1 <= MAX_DEPTH)


@pytest.mark.parametrize(("number", "valid"), [(MAX_NUMBER_INT, True), (-MAX_NUMBER_INT, True),
                                               (MAX_NUMBER_INT + 1, False), (10**4300, False),
                                               (2**63, True), (-(2**63) - 1, True)],
                         ids=["max", "-max", "max+1", "10**4300", "2**63", "-2**63-1"])
def test_integers_are_exact_up_to_the_largest_json_number(number: int, valid: bool) -> None:
    for wire in ({"n": number}, '{"n": ' + str(number) + "}" if number != 10**4300 else '{"n": 1' + "0" * 4300 + "}"):
        args = ToolArguments.decode(wire)
        assert args.is_valid == valid
        if valid:
            assert type(args.value["n"]) is int and args.value["n"] == number  # type: ignore[index]


@st.composite
def cyclic(draw: Any) -> Any:
    outer: dict[str, Any] = {"a": draw(JSON_VALUES)}
    inner: list[Any] = [outer]
    outer["loop"] = inner
    return outer


@settings(SETTINGS, max_examples=100)
@given(cyclic())
def test_a_cycle_is_named_and_recorded_without_looping(value: Any) -> None:
    problem = find_problem(value)
    assert problem is not None and problem.kind == "cycle"
    form = raw_form(value)
    assert isinstance(form, RawObject) and "cycle" in str(form)


def test_damaged_tokens_read_back_as_an_opaque_value_not_an_exception() -> None:
    for tokens in (["d", 2, "s", "a"], ["x"], ["l", -1], ["i", "0xZZ"], "not a list", [1, 2, 3]):
        back = RawObject.from_tokens(tokens)
        assert type(back.value).__name__ == "Opaque" and back.value.type_name == "unreadable record"


def test_the_gate_inline_paths_agree_with_tool_arguments(make_runtime: Any) -> None:
    """Differential: what `Gate.check` decides inline (orjson on a str, one orjson.dumps on a dict) is what
    the general path (`ToolArguments.decode`) decides, for a tool whose schema takes any object."""
    from tests.core.helpers import builtin
    from tests.core.strategies import ARGUMENTS
    from tests.core.strategies import MISSING as LEFT_OUT
    from tooldeck.core.arguments import MISSING
    from tooldeck.gate import Admitted

    rt = make_runtime(builtins=[builtin("echo", lambda a, c: "ok", {"type": "object"})], allow=["builtin:*"],
                      records=False)
    gate = rt.invocation().gate

    @SETTINGS
    @given(ARGUMENTS)
    def agree(wire: Any) -> None:
        wire = MISSING if wire is LEFT_OUT else wire
        gate.budget.total = 0
        check = gate.check("c1", "echo", wire)
        args = ToolArguments.decode(wire)
        if type(check) is Admitted:
            assert args.is_valid and json_text(check.args) == json_text(args.value)
        else:
            assert not args.is_valid
            assert (check.result.error_code, check.result.content) == ("tool.invalid_arguments",
                                                                       args.invalid_message("echo"))

    agree()


@pytest.mark.parametrize("where", [0, 500, 999])
def test_dense_arguments_are_scanned_past_the_walk_budget_and_a_big_integer_is_still_found(where: int) -> None:
    items = [{"id": i, "v": i * 1.5, "name": f"item {i}"} for i in range(1_000)]
    text = json.dumps({"items": items})
    assert decoded_fast(orjson.loads(text), text)
    items[where]["id"] = 123456789012345678901
    text = json.dumps({"items": items})
    assert not decoded_fast(orjson.loads(text), text)
    args = ToolArguments.decode(text)
    assert args.value["items"][where]["id"] == 123456789012345678901  # type: ignore[index]
    deep = json.dumps({"items": items[:10], "deep": nest(70, 1, as_dict=False)})
    assert not decoded_fast(orjson.loads(deep), deep) and not ToolArguments.decode(deep).is_valid
