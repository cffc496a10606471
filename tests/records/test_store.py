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
