"""`tooldeck run` answers ask_user with a prompt: questions on stderr, answers typed on stdin (the real CLI
in a subprocess against the loopback mock provider, stdin driven by the test)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.agent import chat_replies as chat
from tests.agent.mock_provider import MockProvider
from tests.agent.test_loop import tool_messages
from tests.agent.test_run_cli import TOOLDECK, env, setup_home
from tooldeck.builtins.ask_user import SECRET_MASK

SECRET = "s3cr3t-typed-at-the-prompt"
ASK = json.dumps({"questions": [
    {"question": "Which city?", "options": ["Paris", "Rome"]},
    {"question": "Extras?", "options": ["hotel", "car", "guide"], "multi_select": True},
    {"question": "Token?", "secret": True},
    {"question": "Any note?", "detail": "Seat, meal, anything."}],
    "state": {"objective": "Book the trip", "completed": [], "next_steps": ["Book it"]}})


def run_with_stdin(home: Path, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TOOLDECK, "run", "book my trip", "--home", str(home)], input=stdin,
                          capture_output=True, text=True, timeout=120, env=env(), cwd=home.parent)


def test_the_prompt_reads_each_answer_from_stdin(tmp_path: Path, mock_provider: MockProvider) -> None:
    home = setup_home(tmp_path, mock_provider)
    mock_provider.script(chat.stream(calls=[("a1", "ask_user", ASK)]), chat.stream("Booked."))
    # "7" fits no option: asked again; "Rome" by its text; "3, 1" picks guide and hotel
    proc = run_with_stdin(home, f"7\nRome\n3, 1\n{SECRET}\naisle seat\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Booked.\n"
    err = proc.stderr
    assert "[?] Book the trip" in err and "[?] Which city? (one number)\n  1) Paris\n  2) Rome\n> " in err
    assert "not an option; answer with one number from 1 to 2" in err
    assert "[?] Extras? (several: numbers separated by commas)" in err
    assert "[?] Token?\n(secret, not echoed): " in err and "    Seat, meal, anything.\n> " in err
    answers = json.loads(tool_messages(mock_provider.requests[1])[0]["content"])
    assert answers == {"answers": ["Rome", ["guide", "hotel"], SECRET, "aisle seat"]}
    assert SECRET not in err and SECRET_MASK in err  # the ← line shows what the records keep
    assert SECRET.encode() not in (home / "records.sqlite").read_bytes()


def test_end_of_input_declines(tmp_path: Path, mock_provider: MockProvider) -> None:
    home = setup_home(tmp_path, mock_provider)
    mock_provider.script(chat.stream(calls=[("a1", "ask_user", ASK)]), chat.stream("I will ask later."))
    proc = run_with_stdin(home, "Paris\n")
    assert proc.returncode == 0, proc.stderr
    assert "(no answer: the questions were declined)" in proc.stderr
    [message] = tool_messages(mock_provider.requests[1])
    assert message["content"].startswith("## Tool error\n\nthe user declined to answer.")
    assert "✗ [ask_user.declined]" in proc.stderr
