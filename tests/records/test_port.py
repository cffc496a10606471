"""The Recorder port on every recorder: the SQLite store and `NullRecorder` (records off), and how the
runtime decides "records on" (by the port's `recording`, never by the recorder's type)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import tooldeck
from tooldeck.builtins.background import pending_reports
from tooldeck.catalog.profile import Profile
from tooldeck.records.port import FinishedCall, NullRecorder, Recorder, RequestedCall, StartedCall
from tooldeck.records.store import SqliteRecorder
from tooldeck.shell.background import STATE_KEY

from .support import start_invocation, tool_id

RECORDERS: dict[str, Callable[[Path], Any]] = {
    "sqlite": lambda home: SqliteRecorder(home / "records.sqlite"),
    "null": lambda home: NullRecorder(),
}
"""Every recorder the port tests run against (the read API's tests use `support.ADAPTERS`)."""


@pytest.fixture(params=sorted(RECORDERS))
def recorder(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    rec = RECORDERS[request.param](tmp_path)
    yield rec
    rec.close()


def _finished(call_id: str, index: int, content: str) -> FinishedCall:
    now = time.time()
    return FinishedCall(call_id, index, tool_id("search"), "completed", {"x": index}, content, None, False, None, [],
                        None, now, now)


def test_recording_says_whether_the_recorder_keeps_records(recorder: Any) -> None:
    assert recorder.recording is (type(recorder) is SqliteRecorder)


def test_the_turn_writes_of_the_port(recorder: Any) -> None:
    inv = start_invocation(recorder)
    now = time.time()
    recorder.calls_admitted(inv, 1, [RequestedCall("a", "search", '{"x": 0}', 0)],
                            [StartedCall("a", 0, tool_id("search"), {"x": 0})], now)
    recorder.calls_requested(inv, 2, [RequestedCall("b", "search", '{"x": 1}', 0)], now)
    recorder.calls_started(inv, 2, [StartedCall("b", 0, tool_id("search"), {"x": 1})], now)
    recorder.calls_finished(inv, 1, [_finished("a", 0, "a done")])
    recorder.calls_finished(inv, 2, [_finished("b", 0, "b done")])
    if recorder.recording:
        calls = recorder.history(inv).calls
        assert [(c.call_id, c.status, c.result.content) for c in calls] == [
            ("a", "completed", "a done"), ("b", "completed", "b done")]


def test_record_event_is_an_event_of_its_invocation(recorder: Any) -> None:
    inv = start_invocation(recorder)
    recorder.record_event(inv, "invocation_resumed", {"round": 3, "recovered": []})
    recorder.record_event(None, "note", {"n": 1})  # not tied to an invocation
    if recorder.recording:
        events = recorder.events(inv)
        assert [(e.kind, e.data) for e in events] == [
            ("invocation_started", events[0].data), ("invocation_resumed", {"round": 3, "recovered": []})]


def test_run_event_streams_are_kept_per_run_and_kind_in_order(recorder: Any) -> None:
    for i in range(5):
        recorder.append_run_event("run_a", "background", {"type": "task", "i": i})
    recorder.append_run_event("run_b", "background", {"type": "task", "i": 99})
    recorder.append_run_event("run_a", "other", {"type": "x"})
    got = recorder.run_events("run_a", "background")
    if recorder.recording:
        assert got == [{"type": "task", "i": i} for i in range(5)]
        assert recorder.run_events("run_b", "background") == [{"type": "task", "i": 99}]
        assert recorder.run_events("run_a", "other") == [{"type": "x"}]
    else:  # records off: nothing is kept (the background log lives in the workspace then)
        assert got == []
    assert recorder.run_events("run_c", "background") == []


class _Capture(NullRecorder):
    """A recorder that keeps the port calls in memory: a NullRecorder subclass that records."""

    recording = True

    def __init__(self) -> None:
        self.writes: list[str] = []
        self.streams: dict[tuple[str, str], list[dict[str, Any]]] = {}

    def invocation_started(self, *args: Any) -> None:
        self.writes.append("invocation_started")

    def calls_admitted(self, *args: Any, **kwargs: Any) -> None:
        self.writes.append("calls_admitted")

    def calls_finished(self, *args: Any) -> None:
        self.writes.append("calls_finished")

    def append_run_event(self, run_id: str, kind: str, data: dict[str, Any]) -> None:
        self.streams.setdefault((run_id, kind), []).append(data)

    def run_events(self, run_id: str, kind: str) -> list[dict[str, Any]]:
        return list(self.streams.get((run_id, kind), []))


class _Silent(NullRecorder):
    def calls_admitted(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("records are off: the runtime must not write")


DICE = [{"id": "d1", "name": "dice_roll", "arguments": '{"formula": "d6"}'}]


@pytest.mark.parametrize("calls", [DICE, DICE * 2], ids=["one call", "two calls"])
def test_a_null_recorder_subclass_that_records_gets_the_writes(tmp_path: Path, calls: list[dict[str, Any]]) -> None:
    capture = _Capture()
    calls = [{**c, "id": f"d{i}"} for i, c in enumerate(calls)]
    with tooldeck.Runtime(tmp_path, profile={"loading": "eager"}, records=capture) as rt:
        assert rt.recording
        inv = rt.invocation(run_id="r")
        results = inv.run(calls)
        assert not any(r.is_error for r in results)
        assert rt.run_state("r").records is capture
    assert capture.writes == ["invocation_started", "calls_admitted", "calls_finished"]


def test_a_recorder_that_says_it_does_not_record_gets_nothing(tmp_path: Path) -> None:
    with tooldeck.Runtime(tmp_path, profile={"loading": "eager"}, records=_Silent()) as rt:
        assert not rt.recording
        assert not rt.invocation(run_id="r").run(DICE)[0].is_error
        assert rt.run_state("r").records is None


def test_background_events_go_to_a_recording_recorder_through_the_port(tmp_path: Path) -> None:
    capture = _Capture()
    rt = tooldeck.Runtime(tmp_path / "home", profile=Profile(), records=capture)
    try:
        inv = rt.invocation(run_id="bg")
        started = inv.run([{"id": "b1", "name": "background_command", "arguments": {"command": "echo kept"}}])[0]
        assert not started.is_error, started.content
        assert inv.run_state.state[STATE_KEY].wait(started.structured["task_id"], 10)
        reports = pending_reports(inv)
        assert len(reports) == 1 and "kept" in reports[0].text
    finally:
        rt.close()
    kinds = [e["type"] for e in capture.streams[("bg", "background")]]
    assert {"task", "group", "report", "delivered"} <= set(kinds)
    assert not (tmp_path / "home" / "workspaces" / "bg" / ".tooldeck" / "background" / "events.jsonl").exists()


def test_resume_logs_invocation_resumed_with_what_it_closed(tmp_path: Path) -> None:
    with tooldeck.Runtime(tmp_path, profile={"loading": "eager"}) as rt:
        inv = rt.invocation()
        inv.run(DICE)
        store: Recorder = rt.recorder
        assert isinstance(store, SqliteRecorder)
        store.calls_admitted(inv.id, 2, [RequestedCall("open", "dice_roll", '{"formula": "d6"}', 0)],
                             [StartedCall("open", 0, "builtin:dice_roll", {"formula": "d6"})], time.time())
        resumed = rt.resume(inv.id)
        assert resumed.round == 2
        logged = [e.data for e in store.events(inv.id) if e.kind == "invocation_resumed"]
        assert logged == [{"round": 2, "recovered": [[2, 0, "open", "outcome_unknown"]]}]
