"""Executable hooks configured in the Profile (issue 19 item 4): real programs on stdin/stdout — allow, deny,
rewrite (and a rewrite the schema refuses), ask, context, exit 2 vs exit 1, garbage output, a program that
cannot start, a timeout whose processes are really gone, the minimal environment and cwd, a post-call
hook editing a result."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import tooldeck
from tooldeck.core.errors import ProfileError

ADD = "extension/t:add"
HOOK = f"""#!{sys.executable}
import json, os, sys
call = json.load(sys.stdin)
with open("seen.jsonl", "a") as f:
    f.write(json.dumps(call) + "\\n")
with open("env.json", "w") as f:
    json.dump({{"env": dict(os.environ), "cwd": os.getcwd()}}, f)
if call["event"] == "post_call":
    print(json.dumps({{"result": "sum is " + call["result"], "context": "(post)"}}))
    sys.exit(0)
a = call["arguments"]["a"]
answers = {{2: {{"decision": "deny", "reason": "two is denied"}}, 3: {{"arguments": {{"a": 30, "b": 0}}}},
           4: {{"arguments": {{"a": "x"}}}}, 5: {{"decision": "ask"}}, 6: {{"context": "ctx from hook"}}}}
if a in answers:
    print(json.dumps(answers[a]))
elif a == 7:
    print("this is not json")
elif a == 8:
    sys.stderr.write("blocked by policy")
    sys.exit(2)
elif a == 9:
    sys.stderr.write("oops")
    sys.exit(1)
"""
SLOW = """#!/bin/sh
( while :; do echo x >> tick; sleep 0.05; done ) &
echo $! > child.pid
echo $$ > hook.pid
sleep 30
"""


def make(make_runtime: Any, ran: list[int], event: str = "pre_call", command: list[str] | None = None,
         timeout_s: float = 20, records: bool = True, **profile: Any) -> tooldeck.Runtime:
    hooks = [{"event": event, "tool": "extension/t:*", "command": command or ["./hook.py"], "timeout_s": timeout_s}]
    rt = make_runtime(records=records, max_identical_calls=0, hooks=hooks, **profile)
    for name, text in (("hook.py", HOOK), ("slow.sh", SLOW)):
        path = rt.home / name
        path.write_text(text)
        path.chmod(0o755)

    @rt.tool(extension_id="t")
    def add(a: int, b: int) -> int:
        ran.append(a)
        return a + b

    return rt


def call(inv: Any, a: int, b: int = 1) -> Any:
    return inv.run([{"id": f"c{a}", "name": "add", "arguments": json.dumps({"a": a, "b": b})}])[0]


def test_allow_and_what_the_program_is_told(make_runtime: Any) -> None:
    ran: list[int] = []
    rt = make(make_runtime, ran)
    inv = rt.invocation(run_id="r1")
    assert call(inv, 1).content == "2" and ran == [1]
    seen = [json.loads(line) for line in (rt.home / "seen.jsonl").read_text().splitlines()]
    assert seen == [{"event": "pre_call", "tool_id": ADD, "call_name": "add", "arguments": {"a": 1, "b": 1},
                     "call_id": "c1", "run_id": "r1", "invocation_id": inv.id}]


def test_deny_rewrite_invalid_rewrite_ask_and_context(make_runtime: Any) -> None:
    ran: list[int] = []
    rt = make(make_runtime, ran)
    inv = rt.invocation()
    denied = call(inv, 2)
    assert denied.error_code == "hook.denied" and "two is denied" in denied.content
    assert call(inv, 3).content == "30"  # rewritten to a=30, b=0
    invalid = call(inv, 4)
    assert invalid.error_code == "hook.invalid_arguments" and "`b`" in invalid.content
    assert call(inv, 5).error_code == "tool.permission_denied"  # ask, and no confirmation callback
    assert call(rt.invocation(confirm=lambda req: True), 5).content == "6"
    assert call(inv, 6).content == "7\n\nctx from hook"
    assert ran == [30, 5, 6]
    calls = rt.recorder.history(inv.id).calls  # type: ignore[attr-defined]
    rewritten = next(c for c in calls if c.call_id == "c3")
    assert (json.loads(rewritten.raw_arguments), rewritten.arguments) == ({"a": 3, "b": 1}, {"a": 30, "b": 0})


def test_exit_2_blocks_with_stderr_and_other_exits_fail(make_runtime: Any) -> None:
    ran: list[int] = []
    rt = make(make_runtime, ran)
    inv = rt.invocation()
    blocked = call(inv, 8)
    assert (blocked.error_code, "blocked by policy" in blocked.content) == ("hook.denied", True)
    failed = call(inv, 9)
    assert failed.error_code == "hook.failed" and "exit 1" in failed.content and "oops" in failed.content
    garbage = call(inv, 7)
    assert garbage.error_code == "hook.invalid_output" and "not one JSON object" in garbage.content
    assert ran == []


def test_a_program_that_cannot_start_is_a_failure(make_runtime: Any) -> None:
    ran: list[int] = []
    rt = make(make_runtime, ran, command=["./missing-hook"])
    result = call(rt.invocation(), 1)
    assert (result.error_code, ran) == ("hook.failed", [])
    assert "could not start" in result.content


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def test_a_timeout_kills_the_program_and_what_it_started(make_runtime: Any) -> None:
    ran: list[int] = []
    rt = make(make_runtime, ran, command=["./slow.sh"], timeout_s=1.0)
    result = call(rt.invocation(), 1)
    assert (result.error_code, ran) == ("hook.timeout", [])
    assert "1 s" in result.content
    pids = [int((rt.home / name).read_text()) for name in ("hook.pid", "child.pid")]
    deadline = time.monotonic() + 15
    while not all(_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_gone(p) for p in pids), pids
    tick = rt.home / "tick"
    size = tick.stat().st_size
    time.sleep(0.3)  # the loop wrote every 0.05 s: a live one would have grown the file
    assert tick.stat().st_size == size


def test_minimal_environment_and_cwd_the_home(make_runtime: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLDECK_TEST_SECRET", "s3cret")
    ran: list[int] = []
    rt = make(make_runtime, ran)
    call(rt.invocation(), 1)
    seen = json.loads((rt.home / "env.json").read_text())
    assert seen["cwd"] == str(rt.home)
    env = seen["env"]
    assert "TOOLDECK_TEST_SECRET" not in env
    assert env["HOME"] == env["TOOLDECK_HOME"] == str(rt.home) and env["TOOLDECK_HOOK_EVENT"] == "pre_call"
    assert set(env) - {"LC_CTYPE"} == {"PATH", "LANG", "HOME", "TOOLDECK_HOME", "TOOLDECK_HOOK_EVENT"}


def test_a_post_call_program_edits_the_result(make_runtime: Any) -> None:
    ran: list[int] = []
    rt = make(make_runtime, ran, event="post_call")
    inv = rt.invocation()
    result = call(inv, 20)
    assert (result.content, ran) == ("sum is 21\n\n(post)", [20])
    told = json.loads((rt.home / "seen.jsonl").read_text().splitlines()[0])
    assert (told["event"], told["result"], told["is_error"], told["code"]) == ("post_call", "21", False, None)
    assert rt.recorder.history(inv.id).calls[0].result.content == "sum is 21\n\n(post)"  # type: ignore[attr-defined]


@pytest.mark.parametrize("hook", [{"event": "before", "command": ["x"]}, {"event": "pre_call", "command": []},
                                  {"event": "pre_call", "command": ["x"], "timeout_s": 0},
                                  {"event": "pre_call", "command": ["x"], "tool": "not an id"},
                                  {"event": "pre_call", "command": ["x"], "shell": True}])
def test_bad_hook_entries_are_refused_by_the_profile(hook: dict[str, Any]) -> None:
    with pytest.raises(ProfileError) as err:
        tooldeck.Profile.parse({"hooks": [hook]})
    assert err.value.code == "profile.invalid" and "hooks.0" in err.value.message


def test_relative_commands_are_the_homes_and_bare_names_are_on_path(make_runtime: Any) -> None:
    ran: list[int] = []
    rt = make(make_runtime, ran, command=["sh", "-c", "cat > /dev/null; echo '{\"context\": \"from sh\"}'"])
    assert call(rt.invocation(), 1).content == "2\n\nfrom sh"
    assert os.path.exists(rt.home / "hook.py")
