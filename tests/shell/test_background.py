"""background_command / background_tasks through a real Runtime, and the host's report queue."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import tooldeck
from tests.shell.conftest import Shell
from tooldeck.builtins.background import pending_reports, render_reports
from tooldeck.catalog.profile import Profile
from tooldeck.records.store import SqliteRecorder
from tooldeck.shell.background import STATE_KEY


def _wait_done(shell: Shell, task_ids: list[str], timeout: float = 10.0) -> None:
    manager = shell.invocation.run_state.state[STATE_KEY]
    for task_id in task_ids:
        assert manager.wait(task_id, timeout), f"{task_id} did not finish"


def _wait_for_reports(shell: Shell, count: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(pending_reports(shell.invocation, drain=False)) >= count:
            return
        time.sleep(0.02)


def test_error_line_gives_an_early_report_then_a_final_one(shell: Shell) -> None:
    # the task finishes only once the test writes output/go: the early report is checked while it surely runs
    started = shell.call("echo building; echo 'Error: missing semicolon' >&2; "
                         "until [ -f output/go ]; do sleep 0.02; done; echo finished; exit 2",
                         name="background_command", objective="build the site", next="fix the error if any")
    assert not started.is_error, started.content
    task_id = started.structured["task_id"]
    assert task_id.startswith("bg_") and started.structured["output_path"].startswith("tool-results/background/")

    _wait_for_reports(shell, 1)
    early = pending_reports(shell.invocation)
    assert [r.kind for r in early] == ["early"]
    assert "Error: missing semicolon" in early[0].text and "still running" in early[0].text
    assert shell.invocation.run_state.state[STATE_KEY].get(task_id).status == "running"

    (shell.ws / "output" / "go").write_text("")
    _wait_done(shell, [task_id])
    final = pending_reports(shell.invocation)
    assert [r.kind for r in final] == ["final"]
    text = final[0].text
    assert "exit code 2" in text and "finished" in text and "Objective: build the site" in text
    assert "Next: fix the error if any" in text and started.structured["output_path"] in text
    full = (shell.ws / started.structured["output_path"]).read_text()
    assert "building" in full and "missing semicolon" in full and "finished" in full
    assert pending_reports(shell.invocation) == []


def test_a_group_started_in_one_turn_reports_once(shell: Shell) -> None:
    calls = [{"id": "b1", "name": "background_command",
              "arguments": {"command": "sleep 0.2; echo first > output/first.txt", "objective": "two jobs"}},
             {"id": "b2", "name": "background_command",
              # ends after the first, once the test has seen the first alone and writes output/go
              "arguments": {"command": "until [ -f output/first.txt ] && [ -f output/go ]; do sleep 0.02; done; "
                                       "echo second",
                            "next": "merge the results"}}]
    results = shell.invocation.run(calls)
    ids = [r.structured["task_id"] for r in results]
    assert results[0].structured["group_id"] == results[1].structured["group_id"]
    _wait_done(shell, ids[:1])
    time.sleep(0.05)
    assert pending_reports(shell.invocation, drain=False) == []  # the first alone does not report
    (shell.ws / "output" / "go").write_text("")
    _wait_done(shell, ids)
    reports = pending_reports(shell.invocation)
    assert len(reports) == 1 and reports[0].kind == "final"
    assert all(i in reports[0].text for i in ids)
    assert "Objective: two jobs" in reports[0].text and "Next: merge the results" in reports[0].text
    assert (shell.ws / "output" / "first.txt").read_text() == "first\n"
    assert "[background report" in render_reports(reports)


def test_tasks_list_output_and_cancel(shell: Shell) -> None:
    long = shell.call("echo tick; sleep 30", name="background_command")
    task_id = long.structured["task_id"]
    time.sleep(0.2)
    listed = shell.tool("background_tasks", action="list")
    assert task_id in listed.content and "[running]" in listed.content
    out = shell.tool("background_tasks", action="output", task_id=task_id, tail_lines=5)
    assert "tick" in out.content
    cancelled = shell.tool("background_tasks", action="cancel", task_id=task_id)
    assert cancelled.structured["status"] == "cancelled"
    again = shell.tool("background_tasks", action="cancel", task_id=task_id)
    assert "not running" in again.content
    reports = pending_reports(shell.invocation)
    assert len(reports) == 1 and "cancelled" in reports[0].text
    missing = shell.tool("background_tasks", action="output", task_id="bg_nope")
    assert missing.error_code == "background.unknown_task"


def test_background_timeout_is_reported(shell: Shell) -> None:
    started = shell.call("echo start; sleep 5", name="background_command", timeout_s=1)
    _wait_done(shell, [started.structured["task_id"]])
    reports = pending_reports(shell.invocation)
    assert len(reports) == 1 and "timed out" in reports[0].text


def test_headless_invocations_do_not_list_the_tools(shell: Shell) -> None:
    interactive = shell.runtime.invocation(run_id=shell.run_id)
    headless = shell.runtime.invocation(run_id=shell.run_id, headless=True)
    assert {"background_command", "background_tasks"} <= set(interactive.call_names())
    assert not {"background_command", "background_tasks"} & set(headless.call_names())
    assert "workspace_shell" in headless.call_names()
    names = [t.get("function", t).get("name") for t in headless.tools()]
    assert "background_command" not in names
    refused = headless.run([{"id": "h1", "name": "background_command", "arguments": {"command": "echo"}}])[0]
    assert refused.is_error


@pytest.mark.parametrize("records", [True, False])
def test_reports_survive_a_restart(tmp_path: Path, records: bool) -> None:
    home = tmp_path / "home"
    first = tooldeck.Runtime(home=home, profile=Profile(), records=records)
    inv = first.invocation(run_id="persist")
    started = inv.run([{"id": "p1", "name": "background_command", "arguments": {"command": "echo saved"}}])[0]
    manager = inv.run_state.state[STATE_KEY]
    assert manager.wait(started.structured["task_id"], 10)
    first.close()

    second = tooldeck.Runtime(home=home, profile=Profile(), records=records)
    reports = pending_reports(second, "persist")
    assert len(reports) == 1 and "saved" in reports[0].text
    assert pending_reports(second, "persist") == []
    second.close()

    third = tooldeck.Runtime(home=home, profile=Profile(), records=records)
    assert pending_reports(third, "persist") == []  # delivery was persisted too
    log = home / "workspaces" / "persist" / ".tooldeck" / "background" / "events.jsonl"
    if records:  # in the records store, not in a file
        assert not log.exists()
        store = SqliteRecorder(home / "records.sqlite")
        kinds = [e["type"] for e in store.run_events("persist", "background")]
        store.close()
        assert {"task", "group", "report", "delivered"} <= set(kinds)
    else:
        assert all(json.loads(line)["type"] for line in log.read_text().splitlines())
    third.close()


def test_a_task_running_when_the_process_died_is_reported_interrupted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = tooldeck.Runtime(home=home, profile=Profile())
    inv = first.invocation(run_id="crash")
    inv.run([{"id": "c1", "name": "background_command", "arguments": {"command": "sleep 30"}}])
    # a new process (a fresh Runtime without the first one's in-memory state) replays the log
    second = tooldeck.Runtime(home=home, profile=Profile())
    reports = pending_reports(second, "crash")
    assert len(reports) == 1 and "interrupted" in reports[0].text
    for task in inv.run_state.state[STATE_KEY].list():
        inv.run_state.state[STATE_KEY].cancel(task.id)
    first.close()
    second.close()


def test_closing_the_runtime_stops_running_tasks_and_they_report_interrupted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = tooldeck.Runtime(home=home, profile=Profile())
    inv = first.invocation(run_id="closing")
    inv.run([{"id": "c1", "name": "background_command", "arguments": {"command": "sleep 30"}}])
    first.close()  # the store closes after the tasks stopped: nothing writes to a closed store
    second = tooldeck.Runtime(home=home, profile=Profile())
    reports = pending_reports(second, "closing")
    assert len(reports) == 1 and "interrupted" in reports[0].text
    second.close()
