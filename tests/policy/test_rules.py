"""Argument rules (issue 19 item 1): shell command rules against bypass attempts, path, host and JSON-pointer
rules, precedence. The gate's answer is what is checked (Admitted, asked or not / Refused with its code), and a
few calls run for real to show a denied command changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tooldeck
from tooldeck.gate import Admitted, Refused
from tooldeck.policy.rules import normalize_path, url_host
from tooldeck.policy.shell_commands import simple_commands

SHELL = "builtin:workspace.shell"
SHELL_RULES = [
    {"tool": SHELL, "command": "git diff:*", "permission": "allow"},
    {"tool": SHELL, "command": "ls:*", "permission": "allow"},
    {"tool": SHELL, "command": "echo:*", "permission": "allow"},
    {"tool": SHELL, "command": "rm:*", "permission": "deny"},
    {"tool": SHELL, "command": "curl:*", "permission": "deny"},
    {"tool": SHELL, "command": "git push:*", "permission": "ask"},
]


def verdict(rt: tooldeck.Runtime, name: str, args: dict[str, Any]) -> str:
    """allow | ask | deny:<code> as the gate answers (no tool runs)."""
    check = rt.invocation().gate.check("c1", name, args)
    if isinstance(check, Refused):
        return f"deny:{check.result.error_code}"
    assert isinstance(check, Admitted)
    return "ask" if check.needs_confirmation else "allow"


@pytest.fixture
def shell_rt(make_runtime: Any) -> tooldeck.Runtime:
    # without rules every shell call would ask: "allow" below can only come from the allow rules
    return make_runtime(permissions={SHELL: "ask"}, rules=SHELL_RULES, max_identical_calls=0)


DENIED = "deny:tool.rule_denied"
BYPASSES = [
    ("rm a", DENIED), ("ls; rm a", DENIED), ("ls && rm a", DENIED), ("ls || rm a", DENIED),
    ("ls | rm a", DENIED), ("(rm a)", DENIED), ("{ rm a; }", DENIED), ("echo $(rm a)", DENIED),
    ("echo `rm a`", DENIED), ('eval "rm a"', DENIED), ("eval rm a", DENIED), ('sh -c "rm a"', DENIED),
    ("bash -c 'rm -rf a'", DENIED), ("f(){ rm a; }; f", DENIED), ('"r"m a', DENIED), ("r\\m a", DENIED),
    ("$'rm' a", DENIED), ("/bin/rm a", DENIED), ("/usr/bin/rm a", DENIED), ("A=1 rm a", DENIED),
    ("env rm a", DENIED), ("env A=1 B=2 rm a", DENIED), ("command rm a", DENIED),
    ('builtin eval "rm a"', DENIED), ("exec rm a", DENIED), ("nice -n 5 rm a", DENIED),
    ("timeout 5 rm a", DENIED), ("xargs rm < list", DENIED), ("find . -name x -exec rm {} \\;", DENIED),
    ("cat <(rm a)", DENIED), ("if true; then rm a; fi", DENIED), ("for f in *; do rm $f; done", DENIED),
    ('trap "rm a" EXIT', DENIED), ("rm a &", DENIED), ("git diff; rm a", DENIED),
    ("git diff && curl http://x", DENIED), ('git diff "$(rm a)"', DENIED), ("ls\nrm a", DENIED),
    ("ls # c\nrm a", DENIED), ("case x in x) rm a;; esac", DENIED), ("ls 2>&1 | xargs -I {} rm {}", DENIED),
    ('FOO="$(rm a)" ls', DENIED), ("echo hi > $(rm a)", DENIED),
    # cannot be known for sure: ask, never allow
    ("x=rm; $x a", "ask"), ("IFS=x; r${IFS}m a", "ask"), ("alias r=rm; r a", "ask"), ("source s.sh", "ask"),
    (". s.sh", "ask"), ('eval "$CMD"', "ask"), ('sh -c "$CMD"', "ask"), ("{rm,a}", "ask"), ("r*m a", "ask"),
    ('ls "', "ask"), ("bash s.sh", "ask"), ('echo "rm a" | bash', "ask"), ("bash <<< 'rm a'", "ask"),
    ("git push origin main", "ask"), ("git diff && git push", "ask"),
]


@pytest.mark.parametrize(("command", "expected"), BYPASSES)
def test_no_bypass_slips_a_denied_command_past_the_rules(shell_rt: tooldeck.Runtime, command: str,
                                                         expected: str) -> None:
    assert verdict(shell_rt, "workspace_shell", {"command": command}) == expected


@pytest.mark.parametrize("command", ["git diff", "git diff --stat", "ls -la", "ls && git diff", "echo $HOME",
                                     "ls | echo done", "git   diff"])
def test_commands_every_allow_rule_covers_run_unasked(shell_rt: tooldeck.Runtime, command: str) -> None:
    assert verdict(shell_rt, "workspace_shell", {"command": command}) == "allow"


@pytest.mark.parametrize("command", ["git status", "git diff | cat", "cat x", "git dif"])
def test_a_command_no_rule_covers_falls_back_to_the_tools_permission(shell_rt: tooldeck.Runtime,
                                                                      command: str) -> None:
    assert verdict(shell_rt, "workspace_shell", {"command": command}) == "ask"  # permissions: shell = ask


def test_a_denied_command_does_not_run(make_runtime: Any) -> None:
    rt = make_runtime(rules=SHELL_RULES)
    inv = rt.invocation(run_id="r")
    made = inv.run([{"id": "w", "name": "workspace_write_file", "arguments": {"path": "output/keep.txt",
                                                                             "content": "safe"}}])[0]
    assert not made.is_error, made.content
    refused = inv.run([{"id": "s", "name": "workspace_shell",
                        "arguments": {"command": "echo start; rm output/keep.txt"}}])[0]
    assert refused.error_code == "tool.rule_denied"
    assert 'command = "rm:*"' in refused.content and "Do it another way" in refused.content
    kept = rt.run_state("r").workspace_root / "output" / "keep.txt"
    assert kept.read_text() == "safe"
    ran = inv.run([{"id": "l", "name": "workspace_shell", "arguments": {"command": "ls output"}}])[0]
    assert "keep.txt" in ran.content


def test_path_rules_see_through_dots_case_and_look_alikes(make_runtime: Any) -> None:
    rt = make_runtime(rules=[{"tool": "builtin:workspace.*", "path": "persist/secrets/*", "permission": "deny"},
                             {"tool": "builtin:workspace.read_file", "path": "output/*", "permission": "allow"}],
                      permissions={"builtin:workspace.read_file": "ask"})
    denied = ["persist/secrets/key", "output/../persist/secrets/key", "./persist/secrets/key",
              "persist//secrets/key", "Persist/Secrets/key", "/persist/secrets/key", "persist\\secrets\\key",
              "ｐersist/secrets/key",  # fullwidth p
              "persist/secrets/./key"]
    for path in denied:
        assert verdict(rt, "workspace_read_file", {"path": path}) == DENIED, path
        assert verdict(rt, "workspace_write_file", {"path": path, "content": "x"}) == DENIED, path
    assert verdict(rt, "workspace_read_file", {"path": "../outside"}) == "ask"  # climbs out: cannot be sure
    assert verdict(rt, "workspace_read_file", {"path": "output/a.md"}) == "allow"
    assert verdict(rt, "workspace_read_file", {"path": "Output/a.md"}) == "ask"  # allow is exact: no look-alike
    assert verdict(rt, "workspace_read_file", {"path": "plan/a.md"}) == "ask"


def test_host_rules_and_pointer_rules(make_runtime: Any) -> None:
    rt = make_runtime(allow=["builtin:http_request", "builtin:dice.roll"], rules=[
        {"tool": "builtin:http_request", "host": "*.internal.example", "permission": "deny"},
        {"tool": "builtin:dice.*", "match": {"/formula": "*d100*"}, "permission": "ask"}])
    for url in ("https://db.internal.example/x", "https://DB.Internal.Example./x",
                "http://user@db.internal.example:8080/", "https://a.b.internal.example"):
        assert verdict(rt, "http_request", {"url": url}) == DENIED, url
    assert verdict(rt, "http_request", {"url": "https://internal.example.org/"}) == "allow"
    assert verdict(rt, "http_request", {"url": "not a url"}) == "ask"  # deny rule might apply: cannot be sure
    assert verdict(rt, "dice_roll", {"formula": "2d100+1"}) == "ask"
    assert verdict(rt, "dice_roll", {"formula": "2d6"}) == "allow"


def test_exact_tool_rules_decide_before_glob_rules_and_deny_beats_ask_beats_allow(make_runtime: Any) -> None:
    rt = make_runtime(rules=[
        {"tool": "builtin:workspace.*", "command": "git:*", "permission": "deny"},
        {"tool": SHELL, "command": "git status", "permission": "allow"},
        {"tool": SHELL, "command": "git status", "permission": "ask"},
        {"tool": SHELL, "command": "git log:*", "permission": "allow"}])
    assert verdict(rt, "workspace_shell", {"command": "git status"}) == "ask"  # ask beats allow (same tier)
    assert verdict(rt, "workspace_shell", {"command": "git log -1"}) == "allow"  # exact rule beats the glob deny
    assert verdict(rt, "workspace_shell", {"command": "git push"}) == DENIED  # only the glob rule decides


def test_rules_are_checked_when_the_profile_is_read(tmp_path: Path) -> None:
    bad = [{"tool": SHELL, "permission": "allow"}, {"tool": SHELL, "command": " ", "permission": "deny"},
           {"tool": SHELL, "match": {"repo": "x"}, "permission": "ask"}, {"tool": "nope", "path": "a",
                                                                            "permission": "deny"}]
    for rule in bad:
        with pytest.raises(tooldeck.TooldeckError) as err:
            tooldeck.Profile.parse({"rules": [rule]})
        assert err.value.code == "profile.invalid"


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("rmlsecho $()`;&|'\"\\{}*=\n<>ab-")), max_size=40))
def test_any_command_line_is_analysed_without_a_fault(line: str) -> None:
    found = simple_commands(line)
    assert isinstance(found.certain, bool)
    if not found.certain:
        assert found.why
    # a line that names rm literally is never reported free of rm with certainty
    if found.certain and line.strip() == "rm":
        assert [c.name for c in found.commands] == ["rm"]


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(max_size=30))
def test_paths_and_hosts_normalise_without_a_fault(text: str) -> None:
    path = normalize_path(text)
    assert path is None or (".." not in path.split("/") and not path.startswith("/"))
    url_host(text)
    url_host(f"http://{text}/")


def test_path_rules_follow_symbolic_links_inside_the_workspace(make_runtime: Any) -> None:
    rt = make_runtime(rules=[{"tool": "builtin:workspace.*", "path": "persist/secrets/*", "permission": "deny"},
                             {"tool": "builtin:workspace.read_file", "path": "output/*", "permission": "allow"}],
                      permissions={"builtin:workspace.read_file": "ask"})
    root = rt.run_state("r").workspace_root
    (root / "persist" / "secrets").mkdir(parents=True)
    (root / "persist" / "secrets" / "key").write_text("s3cret")
    (root / "output").mkdir(exist_ok=True)
    (root / "output" / "link").symlink_to(root / "persist" / "secrets" / "key")
    (root / "output" / "dir").symlink_to(root / "persist" / "secrets")
    inv = rt.invocation(run_id="r")
    for path in ("output/link", "output/dir/key"):
        check = inv.gate.check("c", "workspace_read_file", {"path": path})
        assert isinstance(check, Refused) and check.result.error_code == "tool.rule_denied", path
    read = inv.run([{"id": "x", "name": "workspace_read_file", "arguments": {"path": "output/link"}}])[0]
    assert read.error_code == "tool.rule_denied" and "s3cret" not in read.content
    (root / "output" / "plain.md").write_text("fine")
    assert verdict_in(inv, "workspace_read_file", {"path": "output/plain.md"}) == "allow"


def verdict_in(inv: Any, name: str, args: dict[str, Any]) -> str:
    check = inv.gate.check("c2", name, args)
    if isinstance(check, Refused):
        return f"deny:{check.result.error_code}"
    return "ask" if check.needs_confirmation else "allow"


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["/a", "/b", "/a/x"]),
                          st.sampled_from(["x*", "*y", "xy", "?y", "*", "[xz]y"]),
                          st.sampled_from(["allow", "ask", "deny"]), st.booleans()), min_size=1, max_size=8),
       st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from(["xy", "zy", "x", "y", "q"]), max_size=2))
def test_rules_decide_as_each_rule_would_alone(specs: list[tuple[str, str, str, bool]], args: dict[str, Any]) -> None:
    """Whatever the grouping the compiler does (one alternation per argument), the answer is the one the
    rules give one by one: deny beats ask beats allow, exact-id rules first."""
    import fnmatch

    from tooldeck.catalog.profile import Profile, matches
    from tooldeck.policy.rules import compile_rules, decide

    tool = "builtin:dice.roll"
    rules = [{"tool": tool if exact else "builtin:*", "match": {ptr: glob}, "permission": perm}
             for ptr, glob, perm, exact in specs]
    compiled = compile_rules(Profile.parse({"rules": rules}).rules, tool, matches)
    assert compiled is not None
    got = decide(compiled, args)

    def holds(ptr: str, glob: str) -> bool:
        key = ptr[1:]
        return "/" not in key and key in args and fnmatch.fnmatchcase(args[key], glob)

    want = None
    for exact in (True, False):
        tier = [(p, g, perm) for p, g, perm, e in specs if e is exact]
        hit = {perm for p, g, perm in tier if holds(p, g)}
        for perm in ("deny", "ask", "allow"):
            if perm in hit:
                want = perm
                break
        if want is not None:
            break
    assert (got.permission if got is not None else None) == want
