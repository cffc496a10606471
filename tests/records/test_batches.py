"""A turn's results in several batches, through the port only (so every adapter runs them): refusals
stored with the turn, results written as they arrive, repeats and recovery in between. A hypothesis
property checks any such sequence against a model of the contract: at most one result per call (the
first), a repeat is a `late_result` event, recovery closes only the calls with no result."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooldeck.core.errors import TooldeckError
from tooldeck.protocols import validate
from tooldeck.records.port import FinishedCall, RequestedCall, StartedCall
from tooldeck.records.replay import replay_all

from .support import ADAPTERS, start_invocation, tool_id

SEARCH = tool_id("search")


def _requested(n: int, names: dict[int, str] | None = None) -> list[RequestedCall]:
    return [RequestedCall(f"c{i}", (names or {}).get(i, "search"), f'{{"x": {i}}}', i) for i in range(n)]


def _started(indexes: list[int]) -> list[StartedCall]:
    return [StartedCall(f"c{i}", i, SEARCH, {"x": i}) for i in indexes]


def _refused(i: int, code: str = "tool.unknown_tool", at: float = 1.0) -> FinishedCall:
    return FinishedCall(f"c{i}", i, None, "failed", None, f"refused {i}", {"error": {"code": code}}, True, code, [],
                        None, None, at)


def _result(i: int, content: str, status: str = "completed") -> FinishedCall:
    now = time.time()
    return FinishedCall(f"c{i}", i, SEARCH, status, {"x": i}, content, None, status != "completed",
                        None if status == "completed" else "test.failed", [], None, now - 0.5, now)


def test_refusals_are_stored_in_the_transaction_that_admits_the_turn(open_store: Any) -> None:
    store = open_store()
    inv = start_invocation(store)
    store.calls_admitted(inv, 1, _requested(4, {1: "nope"}), _started([0, 3]), 5.0,
                         [_refused(1, at=5.0), _refused(2, "tool.budget_exhausted", at=5.0)])
    calls = open_store().history(inv).calls  # another connection sees the turn with its refusals
    assert [(c.status, c.result and c.result.error_code) for c in calls] == [
        ("started", None), ("failed", "tool.unknown_tool"), ("failed", "tool.budget_exhausted"), ("started", None)]
    assert (calls[1].started_at, calls[1].finished_at, calls[1].result.content) == (None, 5.0, "refused 1")
    summary = store.invocation(inv)
    assert (summary.calls, summary.errors, summary.open_calls) == (4, 2, 2)
    # Recovery (here forced, as on resume) closes only what has no result: the refusals keep their reason.
    assert [c.call_id for c in store.recover(inv, force=True)] == ["c0", "c3"]
    calls = store.history(inv).calls
    assert [c.result.error_code for c in calls] == ["tool.outcome_unknown", "tool.unknown_tool",
                                                    "tool.budget_exhausted", "tool.outcome_unknown"]
    assert [c.finished_at for c in calls] == [None, 5.0, 5.0, None]
    for fmt, messages in replay_all(store, inv).items():
        assert validate(messages, fmt) == [], fmt


@pytest.mark.parametrize(("refused", "why"), [
    ([_refused(7)], "not a call of this turn"), ([_refused(0)], "admitted"), ([_refused(1), _refused(1)], "twice"),
    ([FinishedCall("c1", 1, None, "started", None, "x", None, True, "t", [], None, None, 1.0)], "final status")])
def test_refusals_that_are_not_calls_of_the_turn_are_rejected_whole(open_store: Any, refused: list[FinishedCall],
                                                                     why: str) -> None:
    store = open_store()
    inv = start_invocation(store)
    with pytest.raises(TooldeckError) as err:
        store.calls_admitted(inv, 1, _requested(3), _started([0]), 1.0, refused)
    assert err.value.code == "records.write_rejected" and why in err.value.message
    assert store.history(inv).calls == []


def test_a_turn_takes_its_results_in_as_many_batches_as_they_arrive(open_store: Any) -> None:
    store = open_store()
    inv = start_invocation(store)
    store.calls_admitted(inv, 1, _requested(6), _started([0, 2, 3, 4, 5]), 1.0, [_refused(1)])
    store.calls_finished(inv, 1, [_result(3, "three"), _result(2, "two", "failed")])
    store.calls_finished(inv, 1, [_result(0, "zero")])
    # A repeat (of a refusal, of a result, twice in one batch) never replaces the first; the rest lands.
    store.calls_finished(inv, 1, [_result(1, "one?"), _result(4, "four"), _result(0, "zero again"),
                                  _result(4, "four again")])
    assert store.invocation(inv).open_calls == 1
    store.calls_finished(inv, 1, [_result(5, "five")])
    store.calls_finished(inv, 1, [_result(5, "five again")])
    calls = open_store().history(inv).calls
    assert [(c.status, c.result.content) for c in calls] == [
        ("completed", "zero"), ("failed", "refused 1"), ("failed", "two"), ("completed", "three"),
        ("completed", "four"), ("completed", "five")]
    late = [(e.data["index"], e.data["content"]) for e in store.events(inv) if e.kind == "late_result"]
    assert late == [(1, "one?"), (0, "zero again"), (4, "four again"), (5, "five again")]
    summary = store.invocation(inv)
    assert (summary.calls, summary.errors, summary.open_calls, summary.unknown_outcomes) == (6, 2, 0, 0)
    assert store.recover(inv, force=True) == []


def test_a_sparse_turn_can_store_its_refusals_too(open_store: Any) -> None:
    store = open_store()
    inv = start_invocation(store)
    requested = [RequestedCall("a", "search", "{}", 7), RequestedCall("b", "nope", "{}", 3)]
    store.calls_admitted(inv, 1, requested, [StartedCall("a", 7, SEARCH, {})], 1.0,
                         [FinishedCall("b", 3, None, "failed", None, "no", None, True, "tool.unknown_tool", [], None,
                                       None, 1.0)])
    store.calls_finished(inv, 1, [FinishedCall("a", 7, SEARCH, "completed", {}, "yes", None, False, None, [], None,
                                               1.0, 2.0)])
    assert [(c.index, c.status, c.result.content) for c in store.history(inv).calls] == [
        (3, "failed", "no"), (7, "completed", "yes")]


# -- the property ----------------------------------------------------------------------------------

_N = 5
_OPS = st.lists(st.one_of(
    st.lists(st.integers(0, _N - 1), min_size=1, max_size=4).map(lambda batch: ("finish", batch)),
    st.just(("recover", None))), min_size=1, max_size=6)


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(admitted=st.lists(st.sampled_from(("started", "requested", "refused")), min_size=_N, max_size=_N),
       ops=_OPS)
def test_any_sequence_of_batches_keeps_the_first_result_of_each_call(admitted: list[str],
                                                                     ops: list[tuple[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for adapter in ADAPTERS.values():
            store, other = adapter(Path(tmp)), None
            try:
                other = adapter(Path(tmp))
                _check_sequence(store, other, admitted, ops)
            finally:
                store.close()
                if other is not None:
                    other.close()


def _check_sequence(store: Any, other: Any, admitted: list[str], ops: list[tuple[str, Any]]) -> None:
    inv = start_invocation(store)
    store.calls_admitted(inv, 1, _requested(_N), _started([i for i, a in enumerate(admitted) if a == "started"]),
                         1.0, [_refused(i) for i, a in enumerate(admitted) if a == "refused"])
    # The model: each call's first result, and the events a store must log.
    model: dict[int, tuple[str, str | None]] = {i: ("failed", "refused " + str(i))
                                                for i, a in enumerate(admitted) if a == "refused"}
    events: list[tuple[str, int]] = []
    for k, (op, batch) in enumerate(ops):
        if op == "finish":
            store.calls_finished(inv, 1, [_result(i, f"{i}@{k}") for i in batch])
            for i in batch:
                if i in model:
                    events.append(("late_result", i))
                else:
                    model[i] = ("completed", f"{i}@{k}")
        else:  # another process closes what is open (a resume elsewhere)
            closed = [c.index for c in other.recover(inv, force=True)]
            assert closed == [i for i in range(_N) if i not in model]
            for i in closed:
                status = "outcome_unknown" if admitted[i] == "started" else "failed"
                model[i] = (status, None)
                events.append(("call_recovered", i))
    calls = store.history(inv).calls
    for c in calls:
        if c.index in model:
            status, content = model[c.index]
            assert c.status == status and (content is None or c.result.content == content), (c, model)
        else:
            assert c.is_open and c.result is None and c.status == admitted[c.index]
    assert [(e.kind, e.data["index"]) for e in store.events(inv) if e.kind != "invocation_started"] == events
    summary = store.invocation(inv)
    assert (summary.calls, summary.open_calls) == (_N, _N - len(model))
    assert summary.unknown_outcomes == sum(1 for s, _ in model.values() if s == "outcome_unknown")
    for fmt, messages in replay_all(store, inv).items():
        assert validate(messages, fmt) == [], fmt
