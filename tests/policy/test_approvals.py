"""Remembered approvals (issue 19 item 2): the confirmation port answers once, for the run, for an argument
pattern or always; remembered answers are rows of `<home>/records.sqlite`, honoured by a second process of the
same home, revocable, and never stronger than a deny."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tooldeck
from tooldeck.policy.approvals import applies
from tooldeck.policy.shell_commands import simple_commands
from tooldeck.records.approvals import ApprovalStore, RememberedApproval

DICE = "builtin:dice.roll"
SHELL = "builtin:workspace.shell"
ROLL = {"name": "dice_roll", "arguments": {"formula": "1d6"}}


class Asker:
    """A confirmation callback that answers from a list (the last answer repeats) and keeps what it was asked."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.asked: list[dict[str, Any]] = []

    def __call__(self, req: Any) -> Any:
        self.asked.append(req.arguments)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def call(inv: Any, i: int, name: str = "dice_roll", **args: Any) -> Any:
    return inv.run([{"id": f"c{i}", "name": name, "arguments": args or {"formula": "1d6"}}])[0]


def rows(home: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(home / "records.sqlite") as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM approvals ORDER BY created_at")]


@pytest.mark.parametrize("answer", [True, tooldeck.Approval("once")])
def test_once_asks_every_time_and_remembers_nothing(make_runtime: Any, tmp_path: Path, answer: Any) -> None:
    asker = Asker(answer)
    rt = make_runtime(permissions={DICE: "ask"}, max_identical_calls=0, confirm=asker)
    inv = rt.invocation(run_id="r")
    for i in range(3):
        assert not call(inv, i).is_error
    assert len(asker.asked) == 3
    assert ApprovalStore.of_home(tmp_path).list(include_revoked=True) == []


def test_run_scope_holds_for_the_run_only_and_is_a_records_row(make_runtime: Any, tmp_path: Path) -> None:
    asker = Asker(tooldeck.Approval("run", by="alice"))
    rt = make_runtime(permissions={DICE: "ask"}, max_identical_calls=0, confirm=asker)
    inv = rt.invocation(run_id="r1")
    for i in range(3):
        assert not call(inv, i).is_error
    assert len(asker.asked) == 1
    assert not call(rt.invocation(run_id="r1"), 9).is_error  # another invocation of the same run
    assert len(asker.asked) == 1
    assert not call(rt.invocation(run_id="r2"), 10).is_error  # another run asks again
    assert len(asker.asked) == 2
    first, second = rows(tmp_path)
    assert {k: first[k] for k in ("decision", "scope", "tool_id", "pattern", "run_id", "call_id", "confirmer",
                                  "revoked_at")} == {
        "decision": "allow", "scope": "run", "tool_id": DICE, "pattern": None, "run_id": "r1", "call_id": "c0",
        "confirmer": "alice", "revoked_at": None}
    assert first["invocation_id"] == inv.id and first["host"] and first["created_at"] > 0
    assert first["id"].startswith("apr_") and second["run_id"] == "r2"


def test_always_holds_in_every_run_and_without_a_callback(make_runtime: Any, tmp_path: Path) -> None:
    asker = Asker(tooldeck.Approval("always"))
    rt = make_runtime(permissions={DICE: "ask"}, max_identical_calls=0, confirm=asker)
    assert not call(rt.invocation(run_id="r1"), 0).is_error
    assert not call(rt.invocation(run_id="r2"), 1).is_error
    assert len(asker.asked) == 1
    headless = make_runtime(permissions={DICE: "ask"}, max_identical_calls=0)  # same home, no callback at all
    assert not call(headless.invocation(run_id="r3", headless=True), 2).is_error
    assert [r["scope"] for r in rows(tmp_path)] == ["always"]


SHELL_PROFILE: dict[str, Any] = {"permissions": {SHELL: "ask"}, "max_identical_calls": 0}
NOT_COVERED = ["git diff; rm x", "git diff && rm x", "git diff || rm x", "git diff | rm x", "git diff $(rm x)",
               "git diff `rm x`", 'eval "git diff; rm x"', 'sh -c "git diff; rm x"', "git diff\nrm x",
               "rm x; git diff", "(git diff; rm x)", "git diff > $(rm x)", "git status", "git dif", 'eval "$X"',
               "x=git; $x diff", "git diff | sh"]


def test_a_pattern_approval_covers_every_simple_command_never_the_raw_string(make_runtime: Any,
                                                                             tmp_path: Path) -> None:
    asker = Asker(tooldeck.Approval("pattern", command="git diff:*"), False)
    rt = make_runtime(confirm=asker, **SHELL_PROFILE)
    inv = rt.invocation(run_id="r")
    keep = rt.run_state("r").workspace_root / "x"
    keep.write_text("keep")
    assert call(inv, 0, "workspace_shell", command="git diff --stat").error_code != "tool.permission_denied"
    assert len(asker.asked) == 1
    for i, command in enumerate(["git diff", "git diff HEAD~1 -- a.txt", "git   diff"], 1):
        call(inv, i, "workspace_shell", command=command)
    assert len(asker.asked) == 1  # covered: not asked
    for i, command in enumerate(NOT_COVERED, 10):
        out = call(inv, i, "workspace_shell", command=command)
        assert asker.asked[-1] == {"command": command}, command  # asked, and told no
        assert out.error_code == "tool.permission_denied", command
    assert keep.read_text() == "keep"
    assert [(r["scope"], r["pattern"]) for r in rows(tmp_path)] == [("pattern", '{"command":"git diff:*"}')]


def test_a_run_scope_pattern_and_path_patterns(make_runtime: Any, tmp_path: Path) -> None:
    asker = Asker(tooldeck.Approval("run", path="output/*"), False)
    rt = make_runtime(confirm=asker, permissions={"builtin:workspace.write_file": "ask"})
    inv = rt.invocation(run_id="r")
    write = "workspace_write_file"
    assert not call(inv, 0, write, path="output/a.md", content="a").is_error
    assert not call(inv, 1, write, path="output/b.md", content="b").is_error
    assert len(asker.asked) == 1
    for i, path in enumerate(["output/../plan/c.md", "plan/c.md", "Output/c.md"], 2):
        assert call(inv, i, write, path=path, content="c").error_code == "tool.permission_denied", path
    assert len(asker.asked) == 4
    root = rt.run_state("r").workspace_root
    assert not (root / "plan" / "c.md").exists() and (root / "output" / "b.md").read_text() == "b"
    other = call(rt.invocation(run_id="other"), 9, write, path="output/a.md", content="z")
    assert other.error_code == "tool.permission_denied" and len(asker.asked) == 5  # another run: asked, told no


def test_a_remembered_denial_refuses_without_asking_and_beats_an_approval(make_runtime: Any, tmp_path: Path) -> None:
    asker = Asker(tooldeck.Approval("always"), tooldeck.Approval("run", allow=False))
    rt = make_runtime(permissions={DICE: "ask"}, max_identical_calls=0, confirm=asker)
    assert not call(rt.invocation(run_id="r0"), 0).is_error
    store = ApprovalStore.of_home(tmp_path)
    store.revoke(store.list()[0].id, "test")
    inv = rt.invocation(run_id="r1")
    assert call(inv, 1).error_code == "tool.permission_denied"  # asked: told no, for the run
    ApprovalStore.of_home(tmp_path).add("allow", "always", DICE, None, "r9", "inv", "c", "bob", "h")
    for i in range(2, 5):
        assert call(inv, i).error_code == "tool.permission_denied"  # the run's denial beats the newer approval
    assert len(asker.asked) == 2
    assert not call(rt.invocation(run_id="r2"), 5).is_error  # other runs: the approval holds
    assert len(asker.asked) == 2
    assert [(r["decision"], r["scope"]) for r in rows(tmp_path)] == [("allow", "always"), ("deny", "run"),
                                                                    ("allow", "always")]


def test_a_remembered_approval_never_overrides_a_deny(make_runtime: Any, tmp_path: Path) -> None:
    asker = Asker(tooldeck.Approval("always"), True)
    rt = make_runtime(confirm=asker, **SHELL_PROFILE)
    call(rt.invocation(run_id="r"), 0, "workspace_shell", command="echo hi")
    assert len(asker.asked) == 1
    denying = make_runtime(confirm=asker, rules=[{"tool": SHELL, "command": "rm:*", "permission": "deny"}],
                           **SHELL_PROFILE)
    inv = denying.invocation(run_id="r")
    keep = denying.run_state("r").workspace_root / "x"
    keep.write_text("keep")
    assert call(inv, 1, "workspace_shell", command="echo a; rm x").error_code == "tool.rule_denied"
    assert call(inv, 2, "workspace_shell", command="echo a").error_code is None  # the approval holds
    assert len(asker.asked) == 1
    # a deny rule that might apply: a human is asked every time, the approval does not settle it
    assert call(inv, 3, "workspace_shell", command='eval "$X"').error_code is None
    assert call(inv, 4, "workspace_shell", command="x=echo; $x hi").error_code is None
    assert asker.asked[1:] == [{"command": 'eval "$X"'}, {"command": "x=echo; $x hi"}]
    deny_all = make_runtime(confirm=asker, permissions={SHELL: "deny"})
    assert call(deny_all.invocation(run_id="r"), 5, "workspace_shell",
                command="echo a").error_code == "tool.permission_denied"
    assert len(asker.asked) == 3
    assert keep.read_text() == "keep"


def test_a_revoked_approval_asks_again_in_a_process_that_is_still_running(make_runtime: Any, tmp_path: Path) -> None:
    asker = Asker(tooldeck.Approval("run"), True)
    rt = make_runtime(permissions={DICE: "ask"}, max_identical_calls=0, confirm=asker)
    inv = rt.invocation(run_id="r")
    call(inv, 0)
    call(inv, 1)
    assert len(asker.asked) == 1
    approval_id = rows(tmp_path)[0]["id"]
    proc = subprocess.run([str(Path(sys.executable).with_name("tooldeck")), "approvals", "revoke", approval_id,
                           "--home", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and f"revoked {approval_id}" in proc.stdout, proc.stderr
    call(inv, 2)
    call(inv, 3)
    assert len(asker.asked) == 3  # asked again, each time (the new answer was "once")
    row = rows(tmp_path)[0]
    assert row["revoked_at"] >= row["created_at"] and "@" in row["revoked_by"]


SCRIPT = textwrap.dedent("""
    import sys
    import tooldeck

    home, scope, log = sys.argv[1], sys.argv[2], sys.argv[3]

    def confirm(req):
        with open(log, "a") as f:
            f.write(f"asked {req.call_id}\\n")
        return tooldeck.Approval(scope) if scope != "no" else False

    with tooldeck.Runtime(home, profile={"permissions": {"builtin:dice.roll": "ask"}}, confirm=confirm) as rt:
        out = rt.invocation(run_id="shared-run").run(
            [{"id": "p1", "name": "dice_roll", "arguments": {"formula": "1d6"}}])[0]
        print(out.error_code or "ran")
""")


@pytest.mark.parametrize("scope", ["run", "always"])
def test_a_second_process_of_the_home_is_not_asked(tmp_path: Path, scope: str) -> None:
    home, log = tmp_path / "home", tmp_path / "asked.log"

    def process(answer: str) -> str:
        proc = subprocess.run([sys.executable, "-c", SCRIPT, str(home), answer, str(log)], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    assert process(scope) == "ran"
    assert log.read_text().count("asked") == 1
    assert process("no") == "ran"  # its callback would say no: it is never asked
    assert log.read_text().count("asked") == 1
    assert [(r["scope"], r["run_id"]) for r in rows(home)] == [(scope, "shared-run")]


def test_a_bad_approval_is_a_host_fault_and_the_call_does_not_run(make_runtime: Any, tmp_path: Path) -> None:
    def confirm(req: Any) -> tooldeck.Approval:
        return tooldeck.Approval("pattern")  # no pattern

    rt = make_runtime(permissions={"builtin:workspace.write_file": "ask"}, confirm=confirm)
    with pytest.raises(tooldeck.TooldeckError) as err:
        call(rt.invocation(run_id="r"), 0, "workspace_write_file", path="output/a.md", content="a")
    assert err.value.code == "approval.invalid" and "needs a pattern" in err.value.message
    assert not (rt.run_state("r").workspace_root / "output" / "a.md").exists()


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"scope": "forever"}, "is not one of"), ({"scope": "pattern"}, "needs a pattern"),
    ({"scope": "once", "command": "ls:*"}, "takes no pattern"), ({"scope": "always", "path": "a"}, "scope 'pattern'"),
    ({"scope": "run", "command": " "}, "names no command"), ({"scope": "run", "match": {"repo": "x"}}, "JSON pointer"),
    ({"scope": "run", "allow": "yes"}, "True or False"), ({"scope": "run", "by": " "}, "non-empty"),
    ({"scope": "run", "match": ["/a"]}, "must be a mapping"), ({"scope": "run", "command": 3}, "command"),
])
def test_a_bad_approval_is_refused_where_it_is_made(kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(tooldeck.TooldeckError) as err:
        tooldeck.Approval(**kwargs)
    assert err.value.code == "approval.invalid" and needle in err.value.message


@settings(max_examples=200, derandomize=True, deadline=None)
@given(scope=st.text(max_size=8) | st.sampled_from(["once", "run", "pattern", "always"]),
       command=st.none() | st.text(alphabet=st.sampled_from(list("gitdf :*; ")), max_size=12),
       pointer=st.none() | st.text(alphabet=st.sampled_from(list("/ab~01")), max_size=5))
def test_any_approval_is_made_or_refused_with_its_code(scope: str, command: str | None, pointer: str | None) -> None:
    try:
        approval = tooldeck.Approval(scope, command=command, match={} if pointer is None else {pointer: "x*"})  # type: ignore[arg-type]
    except tooldeck.TooldeckError as exc:
        assert exc.code == "approval.invalid"
    else:
        assert approval.scope in ("once", "run", "pattern", "always")
        assert (approval.pattern is None) == (command is None and pointer is None)


FRAGMENTS = ["git", " diff", "git diff", " --stat", "rm x", ";", " && ", "|", "$(", ")", "`", "'", '"', "\\", "\n", " ",
             "eval ", "sh -c ", "x=", "$x", "{", "}"]
ROW = RememberedApproval("apr_x", 0.0, "allow", "pattern", SHELL, {"command": "git diff:*"}, "r", "i", "c", "me",
                         "h")


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=10).map("".join))
def test_a_command_pattern_applies_only_when_every_simple_command_is_covered(line: str) -> None:
    if applies(ROW, {"command": line}, None):
        found = simple_commands(line)
        assert found.certain and found.commands
        assert all(c.words[:2] == ("git", "diff") for c in found.commands), line


def test_approvals_cli_lists_and_revokes(make_runtime: Any, tmp_path: Path) -> None:
    from tests.cli.support import tooldeck as cli

    asker = Asker(tooldeck.Approval("pattern", command="git diff:*", by="carol"))
    rt = make_runtime(confirm=asker, **SHELL_PROFILE)
    call(rt.invocation(run_id="r"), 0, "workspace_shell", command="git diff")
    listed = cli("approvals", "list", "--json", "--home", str(tmp_path), cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    import json

    [entry] = json.loads(listed.stdout)
    assert {k: entry[k] for k in ("decision", "scope", "tool_id", "pattern", "run_id", "confirmer", "revoked_at")} \
        == {"decision": "allow", "scope": "pattern", "tool_id": SHELL, "pattern": {"command": "git diff:*"},
            "run_id": "r", "confirmer": "carol", "revoked_at": None}
    table = cli("approvals", "list", "--home", str(tmp_path), cwd=tmp_path, columns=80).stdout
    assert entry["id"] in table and "command=git diff:*" in table and max(map(len, table.splitlines())) <= 80
    wide = cli("approvals", "list", "--home", str(tmp_path), cwd=tmp_path, columns=160).stdout
    assert "every run" in wide and "carol@" in wide
    gone = cli("approvals", "revoke", entry["id"], "--json", "--home", str(tmp_path), cwd=tmp_path)
    assert gone.returncode == 0 and json.loads(gone.stdout)["revoked_at"] is not None
    assert json.loads(cli("approvals", "list", "--json", "--home", str(tmp_path), cwd=tmp_path).stdout) == []
    everything = json.loads(cli("approvals", "list", "--all", "--json", "--home", str(tmp_path), cwd=tmp_path).stdout)
    assert [e["id"] for e in everything] == [entry["id"]]
    again = cli("approvals", "revoke", entry["id"], "--home", str(tmp_path), cwd=tmp_path)
    assert again.returncode == 2 and "approvals.unknown_id" in again.stderr and "already revoked" in again.stderr
    unknown = cli("approvals", "revoke", "apr_nope", "--home", str(tmp_path), cwd=tmp_path)
    assert unknown.returncode == 2 and "approvals.unknown_id" in unknown.stderr
    empty = cli("approvals", "list", "--home", str(tmp_path / "fresh"), cwd=tmp_path)
    assert empty.returncode == 2 and "no tooldeck home" in empty.stderr


def open_files(path: Path) -> int:
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if str(fd.resolve()).startswith(str(path)))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open files through /proc")
def test_the_lookup_connection_closes_with_the_runtime(tmp_path: Path) -> None:
    home = tmp_path / "home"
    rt = tooldeck.Runtime(home, profile={"permissions": {DICE: "ask"}, "max_identical_calls": 0},
                          confirm=Asker(tooldeck.Approval("run")))
    inv = rt.invocation(run_id="r")
    for i in range(3):
        assert not call(inv, i).is_error
    assert open_files(home / "records.sqlite") > 0
    rt.close()
    assert open_files(home / "records.sqlite") == 0


@settings(max_examples=100, derandomize=True, deadline=None)
@given(st.text(max_size=30))
def test_revoking_any_id_that_is_not_there_is_unknown_id_and_changes_nothing(approval_id: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        store = ApprovalStore.of_home(tmp)
        kept = store.add("allow", "always", DICE, None, "r", "i", "c", "me", "h")
        if approval_id.strip() == kept.id:
            return
        with pytest.raises(tooldeck.TooldeckError) as err:
            store.revoke(approval_id, "me")
        assert err.value.code == "approvals.unknown_id"
        assert [a.id for a in store.list()] == [kept.id]


def test_a_records_file_that_is_not_a_database_is_approvals_unavailable(make_runtime: Any, tmp_path: Path) -> None:
    from tests.cli.support import tooldeck as cli

    (tmp_path / "records.sqlite").write_bytes(b"not a database" * 100)
    rt = make_runtime(records=False, permissions={"builtin:workspace.write_file": "ask"}, confirm=Asker(True))
    with pytest.raises(tooldeck.TooldeckError) as err:
        call(rt.invocation(run_id="r"), 0, "workspace_write_file", path="output/a.md", content="a")
    assert err.value.code == "approvals.unavailable" and "records.sqlite" in err.value.message
    assert not (rt.run_state("r").workspace_root / "output" / "a.md").exists()
    listed = cli("approvals", "list", "--home", str(tmp_path), cwd=tmp_path)
    assert listed.returncode == 2 and "approvals.unavailable" in listed.stderr and "Traceback" not in listed.stderr
