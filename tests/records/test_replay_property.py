"""Property: any recorded history (parallel calls, invalid arguments, errors, completion out of
order, interruption points, odd ids and names) replays into every provider format so that the
validator finds nothing and every call has exactly one result, in call order."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooldeck.protocols import validate
from tooldeck.records.replay import replay

from .support import (
    ADAPTERS,
    ALL_FORMATS,
    TOOL_NAMES,
    PlannedCall,
    PlannedRound,
    count_results,
    start_invocation,
    write_round,
)

_IDS = st.one_of(
    st.sampled_from(["call_0", "call_1", "toolu_01A", "functions.dice_roll:0", "0", "x" * 60, "a b", "call_0"]),
    st.text(alphabet="abcXYZ019_-.:", min_size=1, max_size=12),
)
_NAMES = st.one_of(st.sampled_from(TOOL_NAMES), st.sampled_from(
    ["multi_tool_use.parallel", "dice.roll", "n" * 90, "bad name!", "9lives", "ünïcode", "search"]))
_RAW = st.one_of(
    st.none(),
    st.sampled_from(["", "  ", "null", "{}", '{"x":1}', "[1,2]", '{"x":', "42", '"str"', "x" * 300, '{"x": 2}']),
    st.dictionaries(st.sampled_from("xyz"), st.integers(-5, 5), max_size=3).map(
        lambda d: __import__("orjson").dumps(d).decode()),
)
_CALL = st.builds(PlannedCall, _IDS, _NAMES, _RAW, st.sampled_from(["ok", "error", "unknown"]),
                  st.text(max_size=20))


@st.composite
def _round(draw: Any) -> PlannedRound:
    calls = draw(st.lists(_CALL, min_size=1, max_size=6))
    order = draw(st.permutations(range(len(calls))))
    interrupt = draw(st.sampled_from([None, None, None, "after_requested", "after_started"]))
    return PlannedRound(calls, list(order), interrupt, draw(st.booleans()))


_STORE: dict[str, Any] = {}


def _store() -> Any:
    if "store" not in _STORE:
        _STORE["dir"] = tempfile.TemporaryDirectory()
        _STORE["store"] = ADAPTERS["sqlite"](Path(_STORE["dir"].name))
    return _STORE["store"]


@pytest.fixture(scope="module", autouse=True)
def _close_store() -> Any:
    yield
    if "store" in _STORE:
        _STORE.pop("store").close()
        _STORE.pop("dir").cleanup()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_round(), min_size=1, max_size=5))
def test_every_replay_is_valid_and_pairs_every_call(rounds: list[PlannedRound]) -> None:
    store = _store()
    inv = start_invocation(store)
    for n, planned in enumerate(rounds, start=1):
        write_round(store, inv, n, planned)
    history = store.history(inv)
    assert [len(c) for _r, c in history.rounds()] == [len(r.calls) for r in rounds]
    for fmt in ALL_FORMATS:
        messages = replay(store, inv, fmt)
        assert validate(messages, fmt) == [], fmt
        calls, results = count_results(messages, fmt)
        assert [len(c) for c in calls] == [len(r.calls) for r in rounds]
        assert results == calls, f"{fmt}: results must follow call order, one each"
