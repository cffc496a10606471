"""The records store through the port and the read API only (adapter-independent)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from tooldeck.core.errors import TooldeckError
from tooldeck.records.port import FinishedCall, InvocationInfo, RequestedCall, StartedCall
from tooldeck.snapshot.snapshot import Snapshot

from .support import PlannedCall, PlannedRound, snapshot, start_invocation, tool_id, write_round

ODD_RAWS = [
    None, "", "   ", "null", "{}", '{"b": 1,  "a": [1, 2]}', "[1,2]", '{"path":', "42", "true",
    "x" * 5000, "é ü 中文 🎲", "tab\there\nnewline", "nul\x00byte", "lone \ud800 surrogate", '{"k": "\\u00e9"}',
]


def test_raw_arguments_are_stored_exactly_as_sent(open_store: Callable[[], Any]) -> None:
    store = open_store()
    inv = start_invocation(store)
    store.calls_requested(inv, 1, [RequestedCall(f"c{i}", "search", raw, i) for i, raw in enumerate(ODD_RAWS)],
                          time.time())
    got = [c.raw_arguments for c in store.history(inv).calls]
    assert got == ODD_RAWS
    assert all(type(a) is type(b) for a, b in zip(got, ODD_RAWS, strict=True))


def test_lifecycle_statuses_timings_and_results(open_store: Callable[[], Any]) -> None:
    store = open_store()
    inv = start_invocation(store)
    t0 = time.time()
    store.calls_requested(inv, 1, [RequestedCall("a", "search", '{"x":1}', 0), RequestedCall("b", "nope", "{}", 1)],
                          t0)
    history = store.history(inv)
    assert [c.status for c in history.calls] == ["requested", "requested"]
    store.calls_started(inv, 1, [StartedCall("a", 0, tool_id("search"), {"x": 1})], t0 + 1)
    assert [c.status for c in store.history(inv).calls] == ["started", "requested"]
    store.calls_finished(inv, 1, [
        FinishedCall("b", 1, None, "failed", None, "`nope` is not a tool", {"error": {"code": "tool.unknown_tool"}},
                     True, "tool.unknown_tool", [], None, None, t0 + 2),
        FinishedCall("a", 0, tool_id("search"), "completed", {"x": 1}, "found 3", {"hits": 3}, False, None,
                     ["tool-results/x.txt"], {"raw": [1, 2, 3]}, t0 + 1, t0 + 3, [{"kind": "file_written", "p": 1}]),
    ])
    a, b = store.history(inv).calls
    assert (a.status, a.tool_id, a.arguments, a.requested_at, a.started_at, a.finished_at) == (
        "completed", tool_id("search"), {"x": 1}, t0, t0 + 1, t0 + 3)
    assert a.result is not None and (a.result.content, a.result.structured, a.result.is_error) == (
        "found 3", {"hits": 3}, False)
    assert a.result.resource_refs == ["tool-results/x.txt"]
    assert a.result.raw_result == {"raw": [1, 2, 3]}
    assert a.result.effects == [{"kind": "file_written", "p": 1}]
    assert (b.status, b.tool_id, b.arguments, b.result.error_code) == ("failed", None, None, "tool.unknown_tool")
    assert a.owner is not None and b.owner == a.owner


def test_values_json_cannot_hold_are_kept_as_text(open_store: Callable[[], Any]) -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    store = open_store()
    inv = start_invocation(store)
    store.calls_requested(inv, 1, [RequestedCall("a", "search", "{}", 0)], time.time())
    store.calls_finished(inv, 1, [FinishedCall("a", 0, None, "completed", None, "ok", {"when": Opaque()}, False,
                                               None, [], {"tags": {"x"}, "blob": b"\xff\x00", 1: "int key"},
                                               None, time.time())])
    reopened = open_store()
    result = reopened.history(inv).calls[0].result
    assert result.structured == {"when": "<opaque>"}
    assert result.raw_result == {"tags": ["x"], "blob": "\ufffd\x00", "1": "int key"}


def test_list_invocations_newest_first_with_counts(open_store: Callable[[], Any]) -> None:
    store = open_store()
    first = start_invocation(store, run_id="run_a")
    write_round(store, first, 1, PlannedRound([PlannedCall("a", "search", "{}"), PlannedCall("b", "x", "{}")]))
    time.sleep(0.01)
    second = start_invocation(store, run_id="run_b")
    write_round(store, second, 1, PlannedRound([PlannedCall("c", "search", "{}")], interrupt="after_started"))
    listed = store.list_invocations()
    assert [s.invocation_id for s in listed] == [second, first]
    assert (listed[1].calls, listed[1].errors, listed[1].rounds) == (2, 1, 1)
    assert listed[0].open_calls == 1
    assert [s.invocation_id for s in store.list_invocations(run_id="run_a")] == [first]
    assert len(store.list_invocations(limit=1)) == 1


def test_snapshots_are_frozen_and_loadable(open_store: Callable[[], Any]) -> None:
    store = open_store()
    snap = snapshot()
    inv = start_invocation(store, snap)
    start_invocation(store, snap)  # the same snapshot again: fine
    assert Snapshot.from_json(store.snapshot_json(snap.id)) == snap
    assert store.history(inv).summary.snapshot_id == snap.id
    changed = Snapshot.build("openai", list(snap.bindings[:1]), 5, snapshot_id=snap.id)
    with pytest.raises(TooldeckError) as err:
        store.invocation_started(InvocationInfo("run_test", "inv_other", "openai", "chat", False, snap.id,
                                                changed.to_json(), time.time()))
    assert err.value.code == "records.snapshot_write_once"
    assert Snapshot.from_json(store.snapshot_json(snap.id)) == snap


def test_unknown_ids_give_errors_that_say_what_to_do(open_store: Callable[[], Any]) -> None:
    store = open_store()
    with pytest.raises(TooldeckError) as err:
        store.history("inv_missing")
    assert err.value.code == "records.unknown_invocation" and "tooldeck records list" in err.value.message
    with pytest.raises(TooldeckError) as err:
        store.snapshot_json("snap_missing")
    assert err.value.code == "records.unknown_snapshot"
    with pytest.raises(TooldeckError) as err:
        store.calls_requested("inv_missing", 1, [RequestedCall("a", "f", "{}", 0)], time.time())
    assert err.value.code == "records.write_rejected"


def test_a_round_number_cannot_be_reused(open_store: Callable[[], Any]) -> None:
    store = open_store()
    inv = start_invocation(store)
    write_round(store, inv, 1, PlannedRound([PlannedCall("a", "search", "{}")]))
    with pytest.raises(TooldeckError) as err:
        write_round(store, inv, 1, PlannedRound([PlannedCall("a", "search", "{}")]))
    assert err.value.code == "records.write_rejected"
    assert len(store.history(inv).calls) == 1


def test_large_batches_and_results(open_store: Callable[[], Any]) -> None:
    store = open_store()
    inv = start_invocation(store)
    calls = [PlannedCall(f"c{i}", "search", f'{{"x":{i}}}', "ok", "r" * (i * 100 + 1)) for i in range(150)]
    write_round(store, inv, 1, PlannedRound(calls, finish_order=list(reversed(range(150)))))
    history = store.history(inv)
    assert [c.call_id for c in history.calls] == [f"c{i}" for i in range(150)]
    assert all(c.status == "completed" and c.result.content == "r" * (c.index * 100 + 1) for c in history.calls)
    assert [c.arguments for c in history.calls] == [{"x": i} for i in range(150)]


def test_threads_share_one_store(open_store: Callable[[], Any]) -> None:
    store = open_store()
    invs = [start_invocation(store) for _ in range(4)]
    errors: list[BaseException] = []

    def work(inv: str) -> None:
        try:
            for r in range(1, 31):
                write_round(store, inv, r, PlannedRound([PlannedCall(f"{inv}-{r}-{i}", "search", f'{{"x":{i}}}',
                                                                     "ok", f"{inv}/{r}/{i}") for i in range(5)]))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(inv,)) for inv in invs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for inv in invs:
        calls = store.history(inv).calls
        assert len(calls) == 150
        assert all(c.result.content == f"{inv}/{c.round}/{c.index}" for c in calls)


def test_closed_store_refuses_writes(open_store: Callable[[], Any]) -> None:
    store = open_store()
    inv = start_invocation(store)
    store.close()
    with pytest.raises(TooldeckError) as err:
        store.calls_requested(inv, 1, [RequestedCall("a", "f", "{}", 0)], time.time())
    assert err.value.code == "records.closed"


def _done(call_id: str, index: int, content: str, status: str = "completed", at: float = 0.0) -> FinishedCall:
    is_error = status != "completed"
    return FinishedCall(call_id, index, tool_id("search"), status, {}, content, {"c": content}, is_error,
                        "test.failed" if is_error else None, [], None, at or None, at or time.time())


def test_an_admitted_turn_is_recorded_in_its_state_after_the_gate(open_store: Callable[[], Any]) -> None:
    store = open_store()
    inv = start_invocation(store)
    t0 = time.time()
    store.calls_admitted(inv, 1, [RequestedCall("a", "search", '{"x": 1}', 0), RequestedCall("b", "nope", "{}", 1),
                                  RequestedCall("c", "search", "[1]", 2)],
                         [StartedCall("a", 0, tool_id("search"), {"x": 1})], t0)
    a, b, c = open_store().history(inv).calls  # another connection sees the committed turn
    assert (a.status, a.tool_id, a.arguments, a.raw_arguments, a.requested_at, a.started_at) == (
        "started", tool_id("search"), {"x": 1}, '{"x": 1}', t0, t0)
    assert [(x.status, x.tool_id, x.arguments, x.raw_arguments, x.started_at) for x in (b, c)] == [
        ("requested", None, None, "{}", None), ("requested", None, None, "[1]", None)]
    assert store.invocation(inv).open_calls == 3


def test_calls_started_starts_only_calls_still_requested(open_store: Callable[[], Any]) -> None:
    store = open_store()
    inv = start_invocation(store)
    t0 = time.time()
    store.calls_requested(inv, 1, [RequestedCall("a", "search", '{"x":1}', 0), RequestedCall("b", "search", "{}", 1),
                                   RequestedCall("c", "search", "{}", 2)], t0)
    store.calls_finished(inv, 1, [FinishedCall("c", 2, None, "failed", None, "refused", None, True, "tool.refused",
                                               [], None, None, t0 + 1)])
    store.calls_started(inv, 1, [StartedCall("a", 0, tool_id("search"), {"x": 1})], t0 + 2)
    # Already started, already closed, or not in the round: left as they are.
    store.calls_started(inv, 1, [StartedCall("a", 0, tool_id("read_file"), {"x": 9}),
                                 StartedCall("c", 2, tool_id("search"), {}), StartedCall("z", 7, "t", {})], t0 + 3)
    store.calls_started(inv, 9, [StartedCall("a", 0, tool_id("search"), {})], t0 + 3)  # no such round
    a, b, c = store.history(inv).calls
    assert (a.status, a.tool_id, a.arguments, a.started_at) == ("started", tool_id("search"), {"x": 1}, t0 + 2)
    assert (b.status, b.tool_id, b.arguments, b.started_at) == ("requested", None, None, None)
    assert (c.status, c.tool_id, c.arguments, c.started_at, c.result.content) == ("failed", None, None, None,
                                                                                  "refused")
    assert [x.raw_arguments for x in (a, b, c)] == ['{"x":1}', "{}", "{}"]
    store.calls_finished(inv, 1, [_done("a", 0, "found", at=t0 + 4), _done("b", 1, "nope", "failed", t0 + 4)])
    a, b, _c = store.history(inv).calls
    # A result's own start time (when dispatch started the tool) wins over the turn's (its admission).
    assert (a.status, a.started_at, a.finished_at, b.status, b.started_at) == ("completed", t0 + 4, t0 + 4, "failed",
                                                                              t0 + 4)
    assert store.invocation(inv).open_calls == 0


def test_results_can_arrive_in_several_batches(open_store: Callable[[], Any]) -> None:
    store = open_store()
    inv = start_invocation(store)
    write_round(store, inv, 1, PlannedRound([PlannedCall(f"c{i}", "search", "{}") for i in range(3)],
                                            interrupt="after_started", admitted=True))
    store.calls_finished(inv, 1, [_done("c2", 2, "two")])
    assert [c.status for c in store.history(inv).calls] == ["started", "started", "completed"]
    store.calls_finished(inv, 1, [_done("c0", 0, "zero", "outcome_unknown")])
    store.calls_finished(inv, 1, [_done("c1", 1, "one", "failed")])
    calls = store.history(inv).calls
    assert [(c.status, c.result.content) for c in calls] == [("outcome_unknown", "zero"), ("failed", "one"),
                                                             ("completed", "two")]
    summary = store.invocation(inv)
    assert (summary.calls, summary.open_calls, summary.errors, summary.unknown_outcomes) == (3, 0, 2, 1)
    assert [e.kind for e in store.events(inv)] == ["invocation_started"]


def test_a_second_result_for_a_call_is_kept_as_a_late_result(open_store: Callable[[], Any]) -> None:
    store = open_store()
    inv = start_invocation(store)
    write_round(store, inv, 1, PlannedRound([PlannedCall("a", "search", "{}"), PlannedCall("b", "search", "{}")],
                                            interrupt="after_started", admitted=True))
    store.calls_finished(inv, 1, [_done("a", 0, "first")])
    # `a` again (twice in one batch, too) with `b`: `b` is recorded, the repeats become events.
    store.calls_finished(inv, 1, [_done("a", 0, "second", "failed"), _done("b", 1, "b"), _done("b", 1, "b again")])
    a, b = store.history(inv).calls
    assert (a.status, a.result.content, b.status, b.result.content) == ("completed", "first", "completed", "b")
    late = [e.data for e in store.events(inv) if e.kind == "late_result"]
    assert [(d["index"], d["content"], d["status"]) for d in late] == [(0, "second", "failed"), (1, "b again",
                                                                                                "completed")]


def test_results_of_calls_never_recorded_are_rejected_whole(open_store: Callable[[], Any]) -> None:
    store = open_store()
    inv = start_invocation(store)
    write_round(store, inv, 1, PlannedRound([PlannedCall("a", "search", "{}")], interrupt="after_started"))
    for round_no, calls in ((2, [_done("a", 0, "x")]), (1, [_done("a", 0, "x"), _done("ghost", 5, "boo")])):
        with pytest.raises(TooldeckError) as err:
            store.calls_finished(inv, round_no, calls)
        assert err.value.code == "records.write_rejected"
    with pytest.raises(TooldeckError) as err:
        store.calls_finished(inv, 1, [_done("a", 0, "x", "started")])
    assert err.value.code == "records.write_rejected" and "final status" in err.value.message
    [a] = store.history(inv).calls
    assert (a.status, a.result) == ("started", None)
    assert [e.kind for e in store.events(inv)] == ["invocation_started"]


def test_a_turn_cannot_hold_two_calls_with_one_index(open_store: Callable[[], Any]) -> None:
    store = open_store()
    inv = start_invocation(store)
    with pytest.raises(TooldeckError) as err:
        store.calls_requested(inv, 1, [RequestedCall("a", "search", "{}", 1), RequestedCall("b", "search", "{}", 1)],
                              time.time())
    assert err.value.code == "records.write_rejected"
    assert store.history(inv).calls == []


def test_call_indexes_need_not_be_dense(open_store: Callable[[], Any]) -> None:
    store = open_store()
    inv = start_invocation(store)
    now = time.time()
    store.calls_admitted(inv, 1, [RequestedCall("c7", "search", "{}", 7), RequestedCall("c3", "search", "{}", 3),
                                  RequestedCall("c5", "nope", "{}", 5)],
                         [StartedCall("c7", 7, tool_id("search"), {}), StartedCall("c3", 3, tool_id("search"), {})],
                         now)
    assert [(c.index, c.call_id, c.status) for c in store.history(inv).calls] == [
        (3, "c3", "started"), (5, "c5", "requested"), (7, "c7", "started")]
    store.calls_finished(inv, 1, [_done("c7", 7, "seven"), _done("c5", 5, "five", "failed"), _done("c3", 3, "three")])
    assert [(c.index, c.status, c.result.content) for c in store.history(inv).calls] == [
        (3, "completed", "three"), (5, "failed", "five"), (7, "completed", "seven")]
    with pytest.raises(TooldeckError):
        store.calls_finished(inv, 1, [_done("c0", 0, "zero")])


def test_text_that_is_not_valid_utf8_and_odd_values_round_trip(open_store: Callable[[], Any]) -> None:
    store = open_store()
    inv = start_invocation(store)
    odd = "lone \ud800 surrogate"
    store.calls_admitted(inv, 1, [RequestedCall(f"id {odd}", f"name {odd}", odd, 0), RequestedCall("b", "s", "{}", 1)],
                         [StartedCall(f"id {odd}", 0, f"tool {odd}", {"k": odd, "n": 1})], 1.0)
    store.calls_finished(inv, 1, [
        FinishedCall(f"id {odd}", 0, None, "failed", None, f"content {odd}", {"s": odd}, True, f"code {odd}",
                     [f"ref {odd}"], {"big": 2**70}, 1.0, 2.0, [{"e": odd}]),
        FinishedCall("b", 1, None, "completed", None, "plain é 中文 \x00", {"ok": [1, 2.5, None]}, False, None,
                     ["r.txt"], {"raw": True}, None, 2.0, [{"kind": "x"}])])
    a, b = open_store().history(inv).calls
    assert (a.call_id, a.call_name, a.raw_arguments, a.tool_id) == (f"id {odd}", f"name {odd}", odd, f"tool {odd}")
    assert (a.result.content, a.result.error_code) == (f"content {odd}", f"code {odd}")
    # Values JSON cannot hold are kept as their repr, value by value (as `sqlite.dump` does); an integer
    # beyond 64 bits is JSON and is kept exactly.
    assert a.arguments == repr({"k": odd, "n": 1}) and a.result.structured == repr({"s": odd})
    assert a.result.raw_result == {"big": 2**70} and a.result.effects == repr([{"e": odd}])
    assert (b.result.content, b.result.structured, b.result.resource_refs, b.result.raw_result, b.result.effects) == (
        "plain é 中文 \x00", {"ok": [1, 2.5, None]}, ["r.txt"], {"raw": True}, [{"kind": "x"}])


def test_calls_view_shows_one_row_per_call_as_the_read_api_does(open_store: Callable[[], Any]) -> None:
    import sqlite3

    store = open_store()
    if not hasattr(store, "path"):
        pytest.skip("the SQL view belongs to the SQLite adapter")
    inv = start_invocation(store)
    write_round(store, inv, 1, PlannedRound([PlannedCall("a", "search", '{"q": "x"}'), PlannedCall("b", "nope", "[1]"),
                                             PlannedCall("c", "search", "{}")], interrupt="after_started",
                                            admitted=True))
    store.calls_finished(inv, 1, [_done("a", 0, "found", at=time.time() + 3)])  # its own start time, not the turn's
    store.calls_finished(inv, 1, [_done("a", 0, "again", "failed")])  # a late result: not shown
    with sqlite3.connect(store.path) as conn:
        rows = conn.execute("SELECT idx, call_id, call_name, raw_arguments, status, content, started_at, finished_at "
                            "FROM calls_view WHERE invocation_id = ? ORDER BY round, idx", (inv,)).fetchall()
    history = store.history(inv).calls
    assert rows == [(c.index, c.call_id, c.call_name, c.raw_arguments, c.status,
                     c.result.content if c.result else None, c.started_at, c.finished_at) for c in history]
    assert history[0].started_at > history[2].started_at
    assert [r[4] for r in rows] == ["completed", "requested", "started"] and rows[0][5] == "found"
