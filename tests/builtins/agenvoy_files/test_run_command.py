"""`run_command`: Agenvoy's argv form in the sandboxed shell (bare names, `sh -c`, `cd`, exit status as an
answer, network and write_paths refused), and host commands: refused unless the Profile allows them, then
confirmed, time-limited, and really stopped (the process group is gone, its files stop changing) on a
timeout or a cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

import pytest

from tests.builtins.agenvoy_files.support import Session, session
from tests.conftest import MakeRuntime
from tests.processes import gone as _gone


@pytest.fixture
def s(make_runtime: MakeRuntime) -> Session:
    return session(make_runtime)


def test_a_command_and_a_script_in_the_sandbox(s: Session) -> None:
    s.write("output/a.md", "one\ntwo\n")
    r = s.ok("run_command", {"argv": ["cat", "output/a.md"]})
    assert r.content == "one\ntwo\n" and r.structured["sandbox"] is True
    r = s.ok("run_command", {"argv": ["sh", "-c", "grep -c o output/a.md | tr -d '\\n'; echo ' lines' >&2; exit 3"]})
    assert r.content == "2\n lines\nError: exit status 3" and r.structured["exit_code"] == 3
    r = s.ok("run_command", {"argv": ["bash", "-c", "echo made > output/b.md"]})
    assert (s.root / "output/b.md").read_text() == "made\n"
    assert s.ok("run_command", {"argv": ["true"]}).content == "(no output)"


def test_words_are_quoted_not_interpreted(s: Session) -> None:
    r = s.ok("run_command", {"argv": ["echo", "$HOME", "a;b", "*"]})
    assert r.content == "$HOME a;b *\n"


def test_cd_changes_where_later_commands_start(s: Session) -> None:
    s.write("output/sub/x.md", "x\n")
    assert s.ok("run_command", {"argv": ["cd", "output"]}).content == "Changed working directory to: /output"
    assert s.ok("run_command", {"argv": ["cd", "sub"]}).content == "Changed working directory to: /output/sub"
    assert s.ok("run_command", {"argv": ["ls"]}).content.split() == ["x.md"]
    assert s.ok("run_command", {"argv": ["cd", ".."]}).content == "Changed working directory to: /output"
    assert s.ok("run_command", {"argv": ["cd"]}).content == "Changed working directory to: /"
    r = s.call("run_command", {"argv": ["cd", ".."]})
    assert r.error_code == "files.command_refused" and "above the workspace root" in r.content
    assert s.call("run_command", {"argv": ["cd", "output/nope"]}).error_code == "workspace.path_not_found"
    assert s.call("run_command", {"argv": ["cd", "input"]}).error_code == "workspace.path_not_visible"
    assert s.call("run_command", {"argv": ["cd", "a", "b"]}).content == "cd takes at most one folder"


@pytest.mark.parametrize(("args", "text"), [
    ({"argv": ["/bin/ls"]}, 'failed to run command: "/bin/ls" must be a bare command name ("ls"), not a path'),
    ({"argv": ["./run.sh"]}, 'failed to run command: "./run.sh" must be a bare command name ("run.sh"), not a path'),
    ({"argv": ["sh", "-c", "  "]}, "sh -c: empty script"),
    ({"argv": ["curl", "x"], "network": True}, "network: true is not available: the sandbox has no network"),
    ({"argv": ["ls"], "write_paths": ["/etc"]}, 'write_paths needs workspace paths, got "/etc"'),
    ({"argv": ["ls"], "write_paths": ["tool-results/x"]}, "write path tool-results/x was not approved"),
])
def test_refusals(s: Session, args: dict[str, Any], text: str) -> None:
    r = s.call("run_command", args)
    assert r.error_code == "files.command_refused" and r.content.startswith(text)


def test_host_commands_are_refused_unless_the_profile_allows_them(make_runtime: MakeRuntime) -> None:
    asked: list[Any] = []
    rt = make_runtime(records=False, profile={"builtins": "agenvoy"}, confirm=lambda r: asked.append(r) or True)
    s = Session(rt)
    r = s.call("run_command", {"argv": ["echo", "hi"], "sandbox": False})
    assert r.error_code == "files.host_commands_off" and r.content.startswith("sandbox: false is refused: this "
                                                                              "Profile does not allow host commands")
    assert asked == []  # refused by the tool, never asked about
    [tool] = [t for t in rt.invocation().tools() if t.get("function", t)["name"] == "run_command"]
    params = tool.get("function", tool)["parameters"]
    assert "only in the sandbox" in params["properties"]["sandbox"]["description"]


def host_session(make_runtime: MakeRuntime, approve: bool | None = True, **profile: Any) -> tuple[Session, list[Any]]:
    asked: list[Any] = []
    confirm = None if approve is None else (lambda r: asked.append(r) or approve)
    rt = make_runtime(records=False, confirm=confirm,
                      profile={"builtins": "agenvoy", "host_commands": True, **profile})
    return Session(rt), asked


def test_a_host_command_is_confirmed_and_runs_in_the_workspace(make_runtime: MakeRuntime,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "s3cret")  # the host's environment stays out of a host command
    s, asked = host_session(make_runtime)
    s.ok("run_command", {"argv": ["mkdir", "-p", "output"]})  # the writable roots exist after a first call
    r = s.ok("run_command", {"argv": ["sh", "-c", "pwd; echo \"[$SECRET_TOKEN]\"; exit 4"], "sandbox": False})
    assert r.content == f"{s.root}\n[]\nError: exit status 4" and r.structured["sandbox"] is False
    assert len(asked) == 1
    r = s.call("run_command", {"argv": ["no-such-program-here"], "sandbox": False})
    assert r.error_code == "files.command_refused" and "is not found on the host" in r.content


def test_a_host_command_without_an_answer_is_not_run(make_runtime: MakeRuntime) -> None:
    s, _ = host_session(make_runtime, approve=None)
    r = s.call("run_command", {"argv": ["sh", "-c", "touch ran"], "sandbox": False})
    assert r.error_code == "tool.permission_denied" and not (s.root / "ran").exists()
    s, asked = host_session(make_runtime, approve=False)
    assert s.call("run_command", {"argv": ["sh", "-c", "touch ran"], "sandbox": False}).is_error
    assert asked and not (s.root / "ran").exists()


def _stops_changing(path: Path, quiet_s: float = 0.6, deadline_s: float = 20.0) -> bool:
    """Poll until the file has not changed for `quiet_s` (True), or the deadline passes (False)."""
    end = time.monotonic() + deadline_s
    last = path.stat().st_size if path.exists() else -1
    quiet_since = time.monotonic()
    while time.monotonic() < end:
        time.sleep(0.1)
        size = path.stat().st_size if path.exists() else -1
        if size != last:
            last, quiet_since = size, time.monotonic()
        elif time.monotonic() - quiet_since >= quiet_s:
            return True
    return False


TICKER = "echo $$ > pid; (while true; do echo t >> tick; sleep 0.05; done) & echo $! > child; wait"


def test_a_host_command_past_its_time_limit_is_stopped_with_its_children(make_runtime: MakeRuntime) -> None:
    s, _ = host_session(make_runtime, shell_timeout_s=1.0)
    r = s.call("run_command", {"argv": ["sh", "-c", TICKER], "sandbox": False})
    assert r.error_code == "files.command_timeout" and "timed out after 1 s" in r.content
    assert (s.root / "tick").exists()
    assert _gone(int((s.root / "child").read_text())) and _gone(int((s.root / "pid").read_text()))
    assert _stops_changing(s.root / "tick")


@pytest.mark.parametrize("slow_start", [False, True], ids=["running", "while-it-starts"])
def test_a_cancelled_host_command_is_stopped_with_its_children(
        make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch, slow_start: bool) -> None:
    """Cancelled while it runs, or while asyncio is still setting it up (asyncio alone kills only the leader)."""
    if slow_start:
        from asyncio import base_subprocess

        connect = base_subprocess.BaseSubprocessTransport._connect_pipes

        async def slow_connect(self: Any, waiter: Any) -> None:  # the set-up outlasts the command's first steps
            await asyncio.sleep(1.0)
            await connect(self, waiter)

        monkeypatch.setattr(base_subprocess.BaseSubprocessTransport, "_connect_pipes", slow_connect)
    s, _ = host_session(make_runtime, shell_timeout_s=60.0, tool_timeout_s=120.0)
    child = s.root / "child"

    async def go() -> None:
        inv = s.rt.invocation(run_id=s.run_id)
        task = asyncio.ensure_future(inv.arun([{"id": "h", "name": "run_command",
                                                "arguments": {"argv": ["sh", "-c", TICKER], "sandbox": False}}]))
        end = time.monotonic() + 20
        while not (child.exists() and child.read_text().strip()) and time.monotonic() < end:
            await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert _gone(int(child.read_text())) and _gone(int((s.root / "pid").read_text()))
    assert _stops_changing(s.root / "tick")


def test_a_sandboxed_command_past_its_time_limit_is_an_error(make_runtime: MakeRuntime) -> None:
    s = session(make_runtime, shell_timeout_s=1.0)
    r = s.call("run_command", {"argv": ["sh", "-c", "while true; do echo t >> output/tick; done"]})
    assert r.error_code == "files.command_timeout" and "timed out after 1 s" in r.content
    assert _stops_changing(s.root / "output/tick")


def test_rm_moves_files_to_the_trash(s: Session) -> None:
    s.write("output/a.md", "a\n")
    s.write("output/b.md", "b\n")
    s.ok("run_command", {"argv": ["cd", "output"]})
    r = s.ok("run_command", {"argv": ["rm", "a.md", "/output/b.md", "missing.md"]})
    assert r.content.splitlines() == [
        "removed: output/a.md (to the workspace trash; restore_file brings it back)",
        "removed: output/b.md (to the workspace trash; restore_file brings it back)",
        "rm: missing.md: `output/missing.md` does not exist (or was removed meanwhile). List its folder with "
        "`find_files` (mode=list) to see what is there.",  # the engine's words, in this family's tool names
        "Error: exit status 1"]
    assert not (s.root / "output/a.md").exists()
    s.ok("restore_file", {"path": "output/a.md"})
    assert (s.root / "output/a.md").read_text() == "a\n"
    assert s.ok("run_command", {"argv": ["rm", "-f", "nothing.md"]}).content == ""
    assert s.ok("run_command", {"argv": ["cd", "~/output"]}).content == "Changed working directory to: /output"
