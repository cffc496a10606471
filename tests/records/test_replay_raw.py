"""Replay of raw arguments at the edges (issue 11): exact big integers in every format, host objects
no JSON text holds (a RawObject) replayed as `{}` with their error, an open call holding one closed by
recovery with the gate's message, ids that are not valid Unicode rewritten, and messages that are
not JSON reported by `validate`. Through the port and the read API on a real SQLite file; the CLI
prints all of it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from tests.records.support import snapshot, start_invocation, tool_id
from tooldeck.cli.app import app
from tooldeck.core.rawvalue import RawObject
from tooldeck.protocols import FORMATS, validate
from tooldeck.records.port import FinishedCall, RequestedCall, StartedCall
from tooldeck.records.replay import replay_all
from tooldeck.records.store import SqliteRecorder

BIG = 123456789012345678901


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = SqliteRecorder(tmp_path / "records.sqlite")
    yield s
    s.close()


def _done(call_id: str, index: int, content: str, error: str | None = None) -> FinishedCall:
    return FinishedCall(call_id, index, tool_id("dice_roll"), "failed" if error else "completed", None, content, None,
                        error is not None, error, [], None, 1.0, 2.0)


def test_big_integers_replay_exact_in_every_format(store: Any) -> None:
    inv = start_invocation(store)
    store.calls_admitted(inv, 1, [RequestedCall("c1", "dice_roll", f'{{"x": {BIG}}}', 0),
                                  RequestedCall("c2", "dice_roll", f'{{"x": -{BIG}}}', 1)],
                         [StartedCall("c1", 0, tool_id("dice_roll"), {"x": BIG})], time.time())
    store.calls_finished(inv, 1, [_done("c1", 0, "ok"), _done("c2", 1, "ok")])
    [first, _] = store.history(inv).calls
    assert first.arguments == {"x": BIG} and type(first.arguments["x"]) is int  # the decoded arguments too
    replays = replay_all(store, inv)
    for fmt, messages in replays.items():
        assert validate(messages, fmt) == [], fmt
    assert json.loads(replays["openai"][0]["tool_calls"][0]["function"]["arguments"]) == {"x": BIG}
    assert json.loads(replays["openai"][0]["tool_calls"][1]["function"]["arguments"]) == {"x": -BIG}
    assert json.loads(replays["mistral"][0]["tool_calls"][0]["function"]["arguments"]) == {"x": BIG}
    assert json.loads(replays["openai_responses"][0]["arguments"]) == {"x": BIG}
    assert replays["anthropic"][0]["content"][0]["input"] == {"x": BIG}
    assert replays["gemini"][0]["parts"][0]["functionCall"]["args"] == {"x": BIG}


def test_a_host_object_json_cannot_hold_reads_back_equal_and_replays_as_its_error(store: Any) -> None:
    sent = {"\udc80": b"\xff", 1: float("nan"), "deep": [[[{1, 2}]]]}
    inv = start_invocation(store)
    store.calls_requested(inv, 1, [RequestedCall("c1", "dice_roll", RawObject(sent), 0)], time.time())
    # The process "dies" here: recovery closes the call; its arguments could never have run.
    [closed] = store.recover(inv, force=True)
    assert (closed.status, closed.result.error_code) == ("failed", "tool.invalid_arguments")
    assert "Invalid arguments for `dice_roll`" in closed.result.content
    [call] = store.history(inv).calls
    assert isinstance(call.raw_arguments, RawObject)
    back = call.raw_arguments.value
    assert back["\udc80"] == b"\xff" and back["deep"] == [[[{1, 2}]]] and str(back[1]) == "nan"
    for fmt, messages in replay_all(store, inv).items():
        assert validate(messages, fmt) == [], fmt
        assert "Invalid arguments for `dice_roll`" in orjson.dumps(messages).decode()
    openai = replay_all(store, inv)["openai"]
    assert openai[0]["tool_calls"][0]["function"]["arguments"] == "{}"


def test_ids_that_are_not_valid_unicode_are_rewritten_for_every_provider(store: Any) -> None:
    inv = start_invocation(store, snapshot())
    odd = "call_\udc80"
    store.calls_admitted(inv, 1, [RequestedCall(odd, "dice_roll", "{}", 0)],
                         [StartedCall(odd, 0, tool_id("dice_roll"), {})], time.time())
    store.calls_finished(inv, 1, [_done(odd, 0, "ok")])
    assert store.history(inv).calls[0].call_id == odd  # the records keep it as sent
    for fmt, messages in replay_all(store, inv).items():
        assert validate(messages, fmt) == [], fmt
        orjson.dumps(messages)  # sendable


@pytest.mark.parametrize("bad", ["lone \udc80", float("nan"), b"bytes", {1, 2}])
def test_validate_reports_messages_that_are_not_json(bad: Any) -> None:
    messages = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok", "extra": bad}]
    for fmt in ("openai", "mistral"):
        problems = validate(messages, fmt)
        assert [v.code for v in problems][-1:] == ["not_json"], problems


def test_the_cli_prints_big_integers_and_raw_objects(tmp_path: Path) -> None:
    store = SqliteRecorder(tmp_path / "records.sqlite")
    inv = start_invocation(store)
    store.calls_admitted(inv, 1, [RequestedCall("c1", "dice_roll", f'{{"x": {BIG}}}', 0),
                                  RequestedCall("c2", "dice_roll", RawObject({"b": b"\x00"}), 1)],
                         [StartedCall("c1", 0, tool_id("dice_roll"), {"x": BIG})], time.time())
    store.calls_finished(inv, 1, [_done("c1", 0, "ok"), _done("c2", 1, "bad", "tool.invalid_arguments")])
    store.close()
    runner = CliRunner()
    shown = runner.invoke(app, ["records", "show", inv, "--json", "--home", str(tmp_path)])
    assert shown.exit_code == 0, shown.output
    calls = json.loads(shown.stdout)["calls"]
    assert calls[0]["arguments"] == {"x": BIG}
    assert calls[1]["raw_arguments"] == {"host": ["d", 1, "s", "b", "b", "AA=="]}
    table = runner.invoke(app, ["records", "show", inv, "--home", str(tmp_path)], env={"COLUMNS": "250"})
    assert table.exit_code == 0 and '{"host":' in table.output
    for fmt in FORMATS:
        replayed = runner.invoke(app, ["replay", inv, "--provider", fmt, "--home", str(tmp_path)])
        assert replayed.exit_code == 0, replayed.output
        assert validate(json.loads(replayed.stdout), fmt) == []
