"""`tooldeck schedules` and the serve runner end to end: the real CLI in subprocesses against the loopback
mock provider. add / list / remove with --json and their usage errors; run-due runs what is due; two
run-due processes racing on one home start a due fire once; `tooldeck serve` runs a due schedule."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tests.agent import chat_replies as chat
from tests.agent.mock_provider import MockProvider
from tooldeck.records.store import SqliteRecorder
from tooldeck.schedules.store import ScheduleStore
from tooldeck.schedules.timespec import parse_when

TOOLDECK = [sys.executable, "-m", "tooldeck.cli"]


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run([*TOOLDECK, "schedules", *args, "--home", str(home)], capture_output=True, text=True,
                          timeout=120, env={**env, "COLUMNS": "200", "TZ": "America/New_York"})


def due_schedule(home: Path, **what: Any) -> str:
    """A schedule whose one-shot time passed a minute ago (written as if an hour ago)."""
    earlier = datetime.now().astimezone() - timedelta(hours=1)
    return ScheduleStore.of_home(home).add(parse_when("+59m", None, earlier), **what).id


def test_add_list_remove(home: Path) -> None:
    added = cli(home, "add", "0 9 * * 1-5", "--skill", "daily-report", "--json")
    assert added.returncode == 0, added.stderr
    entry = json.loads(added.stdout)
    assert (entry["target"], entry["time"], entry["skill_name"], entry["timezone"]) == (
        "cron", "0 9 * * 1-5", "daily-report", "America/New_York")
    assert entry["next_run"].endswith(":00") and "T09:00:00" in entry["next_run"]
    once = cli(home, "add", "+2h", "--task", "Check the build.", "--model", "mock")
    assert once.returncode == 0 and once.stdout.startswith("scheduled sch_")
    listed = json.loads(cli(home, "list", "--json").stdout)
    assert sorted(s["target"] for s in listed) == ["cron", "task"]
    assert [s["next_run"] for s in listed] == sorted(s["next_run"] for s in listed)  # next fire first
    table = cli(home, "list").stdout
    assert entry["id"] in table and "skill daily-report" in table and "Check the build." in table
    assert [s["id"] for s in json.loads(cli(home, "list", "--target", "cron", "--json").stdout)] == [entry["id"]]
    removed = cli(home, "remove", entry["id"])
    assert removed.returncode == 0 and removed.stdout == f"removed {entry['id']}\n"
    assert len(json.loads(cli(home, "list", "--json").stdout)) == 1


def test_usage_errors_exit_2_with_the_code(home: Path) -> None:
    for args, code in [(["add", "soon", "--task", "x"], "schedules.time_invalid"),
                       (["add", "+5m"], "schedules.field_required"),
                       (["add", "61 * * * *", "--task", "x"], "schedules.cron_invalid"),
                       (["add", "+5m", "--skill", "weekly"], "schedules.skill_missing"),
                       (["remove", "sch_nope"], "schedules.not_found"),
                       (["list", "--target", "weekly"], "schedules.target_invalid")]:
        proc = cli(home, *args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert proc.stderr.startswith(f"error: {code}: "), proc.stderr
    assert json.loads(cli(home, "list", "--json").stdout) == []
    proc = cli(home.parent / "nowhere", "list")
    assert proc.returncode == 2 and "schedules.unavailable" in proc.stderr


def test_run_due_runs_what_is_due(home: Path, mock_provider: MockProvider) -> None:
    sid = due_schedule(home, task="Say done.")
    later = ScheduleStore.of_home(home).add(parse_when("+1h", None, datetime.now().astimezone()), task="later").id
    mock_provider.script(chat.stream("done"))
    proc = cli(home, "run-due", "--json")
    assert proc.returncode == 0, proc.stderr
    [outcome] = json.loads(proc.stdout)
    assert (outcome["schedule_id"], outcome["status"], outcome["missed"]) == (sid, "completed", 1)
    assert len(mock_provider.requests) == 1
    store = SqliteRecorder(home / "records.sqlite")
    try:
        assert store.run_events(outcome["run_id"], "schedule")[0]["schedule_id"] == sid
        assert store.run_events(outcome["run_id"], "agent")[-1]["status"] == "completed"
    finally:
        store.close()
    again = cli(home, "run-due")
    assert again.returncode == 0 and again.stdout == "nothing due\n"
    assert [s.id for s in ScheduleStore.of_home(home).list()] == [later]


def test_a_failed_fire_exits_1(home: Path, mock_provider: MockProvider) -> None:
    due_schedule(home, task="x", model="no-such-model")
    proc = cli(home, "run-due")
    assert proc.returncode == 1
    assert ": failed (model.config_invalid: " in proc.stdout
    assert mock_provider.requests == []


def test_two_run_due_processes_start_a_due_fire_once(home: Path, mock_provider: MockProvider) -> None:
    ids = {due_schedule(home, task=f"task {i}") for i in range(3)}
    mock_provider.always(chat.stream("done"))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    procs = [subprocess.Popen([*TOOLDECK, "schedules", "run-due", "--json", "--home", str(home)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outcomes = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outcomes += json.loads(out)
    assert sorted(o["schedule_id"] for o in outcomes) == sorted(ids)
    assert len(mock_provider.requests) == 3
    assert sorted(r.json["messages"][-1]["content"] for r in mock_provider.requests) == [f"task {i}" for i in range(3)]
    assert len(ScheduleStore.of_home(home).runs()) == 3


def test_serve_runs_due_schedules(home: Path, mock_provider: MockProvider) -> None:
    sid = due_schedule(home, skill="daily-report")
    mock_provider.script(chat.stream("REPORT-OK"))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    log = home.parent / "serve.log"  # a file, not a pipe nobody reads while the serve runs (it could fill and block)
    with log.open("w") as out:
        proc = subprocess.Popen([*TOOLDECK, "serve", "--http", "127.0.0.1:0", "--home", str(home)], env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, text=True)
    store = ScheduleStore.of_home(home)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (store.runs(sid) and store.runs(sid)[0]["status"] == "completed"):
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        [run] = store.runs(sid)
        assert run["status"] == "completed", (run, log.read_text())
        assert "Say REPORT-OK and stop." in mock_provider.requests[0].json["messages"][-1]["content"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert proc.returncode == 0, log.read_text()


def test_serve_no_schedules_leaves_them_alone(home: Path, mock_provider: MockProvider) -> None:
    sid = due_schedule(home, task="x")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.Popen([*TOOLDECK, "serve", "--http", "127.0.0.1:0", "--no-schedules", "--home", str(home)],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and "serving MCP on http://" in proc.stdout.readline()
        time.sleep(1.0)  # a runner would have passed at once
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert ScheduleStore.of_home(home).runs(sid) == [] and mock_provider.requests == []


def test_help_of_every_subcommand_is_clean(tmp_path: Path) -> None:
    from tests.cli.support import tooldeck

    for words in ([], ["list"], ["add"], ["remove"], ["run-due"]):
        proc = tooldeck("schedules", *words, "--help", cwd=tmp_path, columns=80)
        assert proc.returncode == 0, proc.stderr
        assert max(len(line) for line in proc.stdout.splitlines()) <= 80
        assert not any(junk in proc.stdout for junk in ("<bool>", "<str>", "BOOLEAN", "Traceback"))


def test_tooldeck_call_loads_neither_the_store_nor_cronsim(tmp_path: Path) -> None:
    from tests.cli.support import run_cli

    run = run_cli(tmp_path, "call", "dice_roll", '{"formula": "1d6"}', "--home", str(tmp_path / "home"))
    assert run.returncode == 0, run.stderr
    assert [m for m in ("cronsim", "tooldeck.schedules.store", "tooldeck.schedules.runner",
                        "tooldeck.schedules.timespec", "tooldeck.cli.schedules_cmd") if m in run.modules] == []
