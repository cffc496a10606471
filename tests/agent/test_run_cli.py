"""`tooldeck run` end to end: the real CLI in a subprocess against the mock provider."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.agent import chat_replies as chat
from tests.agent.mock_provider import MockProvider, Reply
from tooldeck.records.store import SqliteRecorder

KEY = "sk-cli-secret-0123456789"
TOOLDECK = [sys.executable, "-m", "tooldeck.cli"]


def setup_home(tmp_path: Path, mock: MockProvider) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "tooldeck.toml").write_text(f"""
[models.mock]
provider = "openai"
model = "gpt-mock"
base_url = "{mock.url}/v1"
api_key = "${{MOCK_KEY}}"
retry_base_delay = 0.01
""", encoding="utf-8")
    return home


def env(**extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    out.update({"MOCK_KEY": KEY, "COLUMNS": "100", **extra})
    return out


def run(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TOOLDECK, "run", *args, "--home", str(home)], capture_output=True, text=True,
                          timeout=120, env=env(**extra), cwd=home.parent)


def write_call() -> Reply:
    return chat.stream("Writing.", calls=[("w1", "workspace_write_file",
                                           '{"path": "output/a.txt", "content": "hello"}')])


def test_a_run_streams_text_and_shows_calls(tmp_path: Path, mock_provider: MockProvider) -> None:
    home = setup_home(tmp_path, mock_provider)
    mock_provider.script(write_call(), chat.stream("All written.", pieces=5, use=chat.usage(40, 9, cached=32)))
    proc = run(home, "write hello to a.txt")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Writing.\nAll written.\n"
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("→ workspace_write_file {") and '"output/a.txt"' in lines[0]
    assert lines[1].startswith("← ")
    assert lines[-1] == "[completed · 2 turn(s) · in=50 out=14 cached=32]"
    first, second = mock_provider.requests
    assert first.headers["authorization"] == f"Bearer {KEY}"
    assert first.json["messages"] == [{"role": "user", "content": "write hello to a.txt"}]
    assert [m["role"] for m in second.json["messages"]] == ["user", "assistant", "tool"]
    runs = list((home / "workspaces").iterdir())
    assert len(runs) == 1 and (runs[0] / "output" / "a.txt").read_text() == "hello"
    assert KEY not in proc.stdout + proc.stderr
    assert KEY.encode() not in (home / "records.sqlite").read_bytes()
    store = SqliteRecorder(home / "records.sqlite")
    try:
        events = store.run_events(runs[0].name, "agent")
        assert [e["type"] for e in events] == ["run_started", "model_turn", "model_turn", "run_finished"]
        assert len(store.list_invocations(10, runs[0].name)) == 2
    finally:
        store.close()


def test_json_lines(tmp_path: Path, mock_provider: MockProvider) -> None:
    home = setup_home(tmp_path, mock_provider)
    mock_provider.script(write_call(), chat.stream("Done."))
    proc = run(home, "go", "--json")
    assert proc.returncode == 0, proc.stderr
    events: list[dict[str, Any]] = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert {"turn_started", "text", "tool_call_started", "model_turn", "tool_call", "tool_result"} <= set(kinds)
    assert events[-1]["status"] == "completed" and events[-1]["turns"] == 2
    assert events[0]["model"] == {"name": "mock", "provider": "openai", "model": "gpt-mock",
                                  "base_url": f"{mock_provider.url}/v1"}
    assert proc.stderr == ""


def test_flags_without_a_config(tmp_path: Path, mock_provider: MockProvider) -> None:
    home = tmp_path / "bare"
    home.mkdir()
    mock_provider.script(chat.stream("hi"))
    proc = run(home, "say hi", "--model", "llama3", "--provider", "openai", "--base-url",
               f"{mock_provider.url}/v1")
    assert proc.returncode == 0, proc.stderr
    assert mock_provider.requests[0].json["model"] == "llama3"
    assert "authorization" not in mock_provider.requests[0].headers  # a local server: no key needed


def test_turn_budget_exits_one(tmp_path: Path, mock_provider: MockProvider) -> None:
    home = setup_home(tmp_path, mock_provider)
    mock_provider.always(lambda req: chat.stream(calls=[(f"c{req.number}", "dice_roll", '{"formula": "d6"}')]))
    proc = run(home, "roll forever", "--max-turns", "2")
    assert proc.returncode == 1
    assert "[max_turns · 2 turn(s)" in proc.stderr and len(mock_provider.requests) == 2


def test_a_failed_model_exits_one_with_the_code(tmp_path: Path, mock_provider: MockProvider) -> None:
    home = setup_home(tmp_path, mock_provider)
    mock_provider.script(Reply.error(401, {"error": {"message": "Incorrect API key provided"}}))
    proc = run(home, "hi")
    assert proc.returncode == 1
    assert "error: model.auth_failed:" in proc.stderr and "Incorrect API key provided" in proc.stderr
    assert KEY not in proc.stderr


def test_configuration_errors_exit_two(tmp_path: Path) -> None:
    home = tmp_path / "bare"
    home.mkdir()
    proc = run(home, "hi")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: model.config_invalid: no model chosen")
    proc = run(home, "hi", "--model", "gpt-x")
    assert proc.returncode == 2 and "set OPENAI_API_KEY" in proc.stderr


def test_sigint_cancels_the_run_and_the_request(tmp_path: Path, mock_provider: MockProvider) -> None:
    home = setup_home(tmp_path, mock_provider)
    mock_provider.script(Reply.sse([chat.chunk({"content": "Let me think"})], hang=True))
    proc = subprocess.Popen([*TOOLDECK, "run", "think", "--home", str(home)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env(), cwd=tmp_path)
    try:
        assert proc.stdout is not None
        assert proc.stdout.read(len("Let me think")) == "Let me think"  # streamed; the answer now hangs
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "cancelled by SIGINT" in err and "[cancelled" in err
    mock_provider.wait_for(lambda: mock_provider.disconnects == [1])
    store = SqliteRecorder(home / "records.sqlite")
    try:
        (run_dir,) = (home / "workspaces").iterdir()
        assert store.run_events(run_dir.name, "agent")[-1]["status"] == "cancelled"
    finally:
        store.close()


def test_call_and_run_help_load_neither_the_agent_nor_httpx(tmp_path: Path) -> None:
    from tests.cli.support import run_cli

    home = str(tmp_path / "home")
    called = run_cli(tmp_path, "call", "dice_roll", '{"formula": "d6"}', "--home", home)
    assert called.returncode == 0, called.stderr
    assert not called.loaded("tooldeck.agent") and not called.loaded("httpx")
    helped = run_cli(tmp_path, "run", "--help")
    assert helped.returncode == 0 and "--base-url" in helped.stdout
    assert not helped.loaded("tooldeck.agent") and not helped.loaded("httpx") and not helped.loaded("rich")
