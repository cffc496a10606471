"""Repeated-call detection (issue 19 item 5): `tool.repeated_call` for a model stuck on one call."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.repeats import canonical

LOOKUP = "lookup"


def add_tools(rt: Any, ran: list[str]) -> None:
    @rt.tool(extension_id="t")
    async def lookup(city: str) -> str:
        """Weather of a city (always the same answer)."""
        ran.append(f"lookup {city}")
        return f"{city}: 21 C, clear"

    @rt.tool(extension_id="t")
    async def convert(value: int) -> str:
        """Convert a value (always the same answer)."""
        ran.append(f"convert {value}")
        return f"{value} -> {value * 2}"

    counter = iter(range(1_000))

    @rt.tool(extension_id="t")
    async def progress(task: str) -> str:
        """Progress of a task: changes every call (a poll)."""
        ran.append(f"progress {task}")
        return f"{task}: {next(counter)} %"


def call(name: str, i: int, **args: Any) -> list[dict[str, Any]]:
    return [{"id": f"c{i}", "name": name, "arguments": args}]


def test_the_fourth_identical_call_is_refused_with_what_the_model_already_has(make_runtime) -> None:
    rt, ran = make_runtime(profile={"allow": ["extension/*"]}), []
    add_tools(rt, ran)
    inv = rt.invocation()
    for i in range(3):
        assert inv.run(call(LOOKUP, i, city="Oslo"))[0].content == "Oslo: 21 C, clear"
    refused = inv.run(call(LOOKUP, 3, city="Oslo"))[0]
    assert refused.is_error and refused.error_code == "tool.repeated_call"
    assert "already called 3 times in a row" in refused.content
    assert "Oslo: 21 C, clear" in refused.content  # what it already received
    assert "take a different step" in refused.content
    assert ran == ["lookup Oslo"] * 3  # the fourth never ran
    again = inv.run(call(LOOKUP, 4, city="Oslo"))[0]  # still stuck: still refused
    assert again.error_code == "tool.repeated_call" and ran == ["lookup Oslo"] * 3
    assert not inv.run(call(LOOKUP, 5, city="Bergen"))[0].is_error  # other arguments: a new streak
    assert not inv.run(call(LOOKUP, 6, city="Oslo"))[0].is_error


def test_arguments_are_compared_canonically(make_runtime) -> None:
    rt, ran = make_runtime(profile={"allow": ["extension/*"]}), []
    add_tools(rt, ran)
    inv = rt.invocation()
    spellings = ['{"city": "Oslo"}', '{ "city":"Oslo" }', {"city": "Oslo"}]
    for i, wire in enumerate(spellings):
        assert not inv.run([{"id": f"c{i}", "name": LOOKUP, "arguments": wire}])[0].is_error
    assert inv.run([{"id": "c9", "name": LOOKUP, "arguments": '{"city":"Oslo"}'}])[0].error_code == \
        "tool.repeated_call"


def test_an_a_b_a_b_cycle_is_refused(make_runtime) -> None:
    rt, ran = make_runtime(profile={"allow": ["extension/*"]}), []
    add_tools(rt, ran)
    inv = rt.invocation()
    assert not inv.run(call(LOOKUP, 0, city="Oslo"))[0].is_error
    assert not inv.run(call("convert", 1, value=3))[0].is_error
    assert not inv.run(call(LOOKUP, 2, city="Oslo"))[0].is_error
    refused = inv.run(call("convert", 3, value=3))[0]
    assert refused.error_code == "tool.repeated_call"
    assert "alternates with `lookup`" in refused.content and "3 -> 6" in refused.content
    assert ran == ["lookup Oslo", "convert 3", "lookup Oslo"]


def test_a_call_whose_result_changes_is_a_poll_and_is_never_refused(make_runtime) -> None:
    rt, ran = make_runtime(profile={"allow": ["extension/*"]}), []
    add_tools(rt, ran)
    inv = rt.invocation()
    outs = [inv.run(call("progress", i, task="build"))[0] for i in range(10)]
    assert [o.is_error for o in outs] == [False] * 10 and len(ran) == 10


def test_calls_of_one_turn_count_once(make_runtime) -> None:
    rt, ran = make_runtime(profile={"allow": ["extension/*"]}), []
    add_tools(rt, ran)
    inv = rt.invocation()
    turn = [{"id": f"c{i}", "name": LOOKUP, "arguments": {"city": "Oslo"}} for i in range(5)]
    assert [r.is_error for r in inv.run(turn)] == [False] * 5  # issued together, without seeing a result
    assert len(ran) == 5


def test_the_streak_spans_the_invocations_of_a_run_and_not_other_runs(make_runtime) -> None:
    rt, ran = make_runtime(profile={"allow": ["extension/*"]}), []
    add_tools(rt, ran)
    for i in range(3):
        assert not rt.invocation(run_id="r1").run(call(LOOKUP, i, city="Oslo"))[0].is_error
    assert not rt.invocation(run_id="r2").run(call(LOOKUP, 9, city="Oslo"))[0].is_error
    assert rt.invocation(run_id="r1").run(call(LOOKUP, 3, city="Oslo"))[0].error_code == "tool.repeated_call"


def test_the_limit_is_a_profile_key_and_zero_turns_detection_off(make_runtime) -> None:
    rt, ran = make_runtime(profile={"allow": ["extension/*"], "max_identical_calls": 1}), []
    add_tools(rt, ran)
    inv = rt.invocation()
    assert not inv.run(call(LOOKUP, 0, city="Oslo"))[0].is_error
    assert inv.run(call(LOOKUP, 1, city="Oslo"))[0].error_code == "tool.repeated_call"
    off, ran_off = make_runtime(home="off", profile={"allow": ["extension/*"], "max_identical_calls": 0}), []
    add_tools(off, ran_off)
    inv = off.invocation()
    assert not any(inv.run(call(LOOKUP, i, city="Oslo"))[0].is_error for i in range(8))
    assert len(ran_off) == 8


def test_the_refusal_is_in_the_records_file(make_runtime, tmp_path) -> None:
    rt, ran = make_runtime(profile={"allow": ["extension/*"]}), []
    add_tools(rt, ran)
    inv = rt.invocation()
    for i in range(4):
        inv.run(call(LOOKUP, i, city="Oslo"))
    rt.close()
    with contextlib.closing(sqlite3.connect(tmp_path / "records.sqlite")) as db:
        rows = db.execute("SELECT round, error_code, content FROM calls_view ORDER BY round").fetchall()
    assert [(r, code) for r, code, _ in rows] == [(1, None), (2, None), (3, None), (4, "tool.repeated_call")]
    assert "already called 3 times in a row" in rows[3][2]


json_leaf = st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80) | st.text(max_size=6) | \
    st.floats(allow_nan=False, allow_infinity=False)
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3) |
                          st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=10)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.dictionaries(st.text(max_size=4), json_value, max_size=5),
       st.dictionaries(st.text(max_size=4), json_value, max_size=5), st.randoms(use_true_random=False))
def test_canonical_ignores_key_order_and_tells_different_arguments_apart(args: dict[str, Any], other: dict[str, Any],
                                                                         rnd: Any) -> None:
    items = list(args.items())
    rnd.shuffle(items)
    assert canonical(dict(items)) == canonical(args)
    assert canonical(json.loads(json.dumps(args))) == canonical(args)  # the same arguments decoded again
    if json.dumps(other, sort_keys=True) != json.dumps(args, sort_keys=True):
        assert canonical(other) != canonical(args)


def test_a_huge_argument_is_not_copied_to_compare_calls() -> None:
    import tracemalloc

    text = "x" * 50_000_000
    tracemalloc.start()
    canonical({"content": text, "path": "output/a"})
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1_000_000
