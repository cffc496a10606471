"""Issue 11, item 1: a hostile model's turns through `Invocation.run`, records on.

Wire arguments of every JSON type, huge and deeply nested values, NaN and ±Infinity, lone
surrogates, NUL, non-str keys, bytes, texts that are almost JSON, and random names and ids. For
every turn: no exception escapes; one result per call, in call order, with the call's id; every
error code is one docs/errors.md documents; every call is closed in a real SQLite records file with
its raw arguments exactly as sent (read back through the records read API); a call a tool ran got
its arguments exactly; and the invocation replays valid for all five provider formats.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tooldeck
from tests.conftest import MakeRuntime
from tests.core.strategies import ANY_CHAR, ARGUMENTS, KEYS, MISSING, TEXT, pick
from tooldeck.core.jsonvalue import find_problem, json_text
from tooldeck.core.rawvalue import RawObject, to_tokens
from tooldeck.protocols import FORMATS, validate
from tooldeck.records.replay import replay_all

DOCS = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
FINAL = ("completed", "failed", "outcome_unknown")


def documented_codes() -> set[str]:
    """Every code in the first column of a table in docs/errors.md."""
    codes: set[str] = set()
    for line in DOCS.read_text().splitlines():
        if line.startswith("| `"):
            codes.update(re.findall(r"`([a-z_]+\.[a-z_.]+)`", line.split("|")[1]))
    return codes


def echo(args: dict[str, Any], ctx: Any) -> Any:
    return {"got": args}


KNOWN = st.sampled_from(["dice_roll", "echo", "exact"])
ODD_NAMES = st.one_of(st.text(st.one_of(ANY_CHAR, st.just("_")), max_size=20),
                      st.sampled_from(["", " ", "dice_roll<|channel|>x", "dice.roll", "DICE_ROLL", "\udc80", "a" * 300,
                                       "run_tool", "find_tools"]))
NAMES = st.sampled_from([KNOWN] * 7 + [ODD_NAMES] * 3).flatmap(pick)  # mostly tools that exist
IDS = st.one_of(st.from_regex(r"call_[a-z0-9]{1,8}", fullmatch=True), st.text(ANY_CHAR, min_size=1, max_size=50),
                st.just("x" * 100))


@st.composite
def calls(draw: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"id": draw(IDS), "name": draw(NAMES)}
    arguments = draw(ARGUMENTS)
    if arguments is not MISSING:
        call["arguments"] = arguments
    if draw(st.booleans()) and draw(st.booleans()):  # OpenAI's nesting, now and then
        call = {"id": call["id"], "function": {k: v for k, v in call.items() if k != "id"}}
    return call


TURNS = st.lists(calls(), min_size=1, max_size=4)
# Names that are not strings: the call still has its id, so it gets a result.
def _call(call_id: str, name: Any, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


ODD_NAME_TURNS = st.lists(st.builds(_call, IDS,
                                    st.one_of(st.none(), KEYS, st.lists(st.integers(), max_size=2)), TEXT),
                          min_size=1, max_size=2)


def expected_raw(call: dict[str, Any]) -> Any:
    fn = call.get("function", call)
    if "arguments" not in fn:
        return None
    wire = fn["arguments"]
    if isinstance(wire, str):
        return wire
    return json_text(wire) if find_problem(wire, None) is None else RawObject(wire)


def same_raw(recorded: Any, expected: Any) -> bool:
    if isinstance(expected, RawObject):  # recorded: rebuilt from the stored tokens; equal when it encodes alike
        return isinstance(recorded, RawObject) and to_tokens(recorded.value) == expected.tokens()
    return recorded == expected


def check_turn(rt: tooldeck.Runtime, turn: list[dict[str, Any]], codes: set[str]) -> None:
    inv = rt.invocation()
    results = inv.run(turn)  # nothing may escape
    assert [r.call_id for r in results] == [c["id"] for c in turn]
    for r in results:
        assert r.error_code is None or r.error_code in codes, r.error_code
        assert r.is_error == (r.error_code is not None)
    history = rt.recorder.history(inv.id)
    assert [(c.index, c.call_id) for c in history.calls] == [(i, c["id"]) for i, c in enumerate(turn)]
    for call, record, result in zip(turn, history.calls, results, strict=True):
        assert record.status in FINAL
        assert same_raw(record.raw_arguments, expected_raw(call)), (record.raw_arguments, call)
        assert (record.result.content, record.result.error_code) == (result.content, result.error_code)
        if record.call_name == "echo" and result.error_code is None:  # what ran got the arguments exactly
            assert json_text(result.structured["got"]) == json_text(record.arguments)  # (a tuple is an array)
    for fmt, messages in replay_all(rt.recorder, inv.id).items():
        assert validate(messages, fmt) == [], (fmt, validate(messages, fmt))


def test_no_wire_input_escapes_invocation_run(make_runtime: MakeRuntime) -> None:
    from tests.core.helpers import builtin
    from tooldeck.builtins.dice import TOOLS as DICE

    rt = make_runtime(builtins=[*DICE, builtin("echo", echo, {"type": "object"})],
                      allow=["builtin:*", "extension/*"], max_calls_per_invocation=1_000)

    @rt.tool("t")
    def exact(n: int = 0, note: str = "") -> str:
        """Say what arrived."""
        return f"{type(n).__name__}:{n!r}"

    codes = documented_codes()
    assert {"tool.invalid_arguments", "tool.unknown_tool", "dice.invalid_formula"} <= codes

    @settings(max_examples=2_000, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from([TURNS] * 9 + [ODD_NAME_TURNS]).flatmap(pick))
    def turns(turn: list[dict[str, Any]]) -> None:
        check_turn(rt, turn, codes)

    turns()
    assert set(FORMATS) == {"openai", "openai_responses", "anthropic", "gemini", "mistral"}


def test_every_code_the_core_produces_is_documented() -> None:
    from tooldeck.core import errors

    codes = documented_codes()
    constants = {v for k, v in vars(errors).items() if k.isupper() and isinstance(v, str) and "." in v}
    assert constants <= codes, constants - codes
