"""Names and text no UTF-8 can hold, and names no filesystem takes, are each command's own error.

Issue 11: `pathlib.Path('/output/<lone surrogate>').write_text('x')` inside python3 failed the
whole shell call as `tool.execution_failed` and lost its output.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.shell.conftest import Shell, make_shell

NORMAL_CODES = {None, "workspace.shell_exit", "workspace.shell_failed"}


@pytest.fixture(scope="module")
def roomy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shell]:
    sh = make_shell(tmp_path_factory.mktemp("text"), timeout_s=20, max_calls_per_invocation=1_000_000)
    yield sh
    sh.runtime.close()


def _files(sh: Shell) -> set[str]:
    return {p.name for p in (sh.ws / "output").iterdir()}


def test_a_lone_surrogate_in_python_code_is_that_commands_error(roomy: Shell) -> None:
    """The issue's reproducer: the escape `\\udcff` in python3 source. The call runs to its end and no
    file name that UTF-8 cannot hold reaches the host. (The roomy limit: a fresh worker's first python3
    can take over the short 1.5 s on a loaded machine, and this test is about text, not time.)"""
    shell = roomy
    result = shell.call("echo a; python3 -c \"import pathlib; pathlib.Path('/output/\\udcff').write_text('x')\"; "
                        "echo b")
    assert result.error_code is None, result.content  # the call ran to its end: `echo b` exited 0
    assert result.content.startswith("Exit code: 0\na\nb"), result.content
    for name in _files(shell):
        name.encode("utf-8")
    result.content.encode("utf-8")


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


@pytest.mark.parametrize("command", [
    "echo a; python3 -c \"import pathlib; pathlib.Path('/output/\udcff').write_text('x')\"; echo b",
    "echo a; node -e \"workspace.writeText('/output/\ud800x', 'y')\"; echo b",
    "echo '\udcff'; echo ok",
])
def test_a_command_text_holding_a_lone_surrogate_is_refused_before_anything_runs(shell: Shell, command: str) -> None:
    """No provider can send such a text as UTF-8 JSON: the gate says where it is and how to fix it
    (docs/errors.md), and nothing runs."""
    before = _files(shell)
    result = shell.call(command)
    assert result.error_code == "tool.invalid_arguments", result.content
    assert "lone surrogate" in result.content and "valid UTF-8" in result.content, result.content
    assert _files(shell) == before
    result.content.encode("utf-8")


def test_js_strings_with_lone_surrogates_never_reach_the_host(shell: Shell) -> None:
    name = shell.call("node -e 'workspace.writeText(\"/output/\\udcff\", \"x\")'")
    assert name.error_code == "workspace.shell_exit" and "EILSEQ" in name.content, name.content
    printed = shell.call("node -e 'console.log(\"a\\udcffb\"); process.stdout.write(\"\\ud800\\n\")'")
    assert printed.content == "Exit code: 0\na\ufffdb\n\ufffd", printed.content
    content = shell.call("node -e 'workspace.writeText(\"/output/s.txt\", \"a\\udcffb\")' && cat /output/s.txt")
    assert content.content == "Exit code: 0\na\ufffdb", content.content
    value = shell.call("node -p '\"\\udcff\"'; node -e '\"\\udcff\"'; node -e 'process.exit(\"\\udcff\")'; echo $?")
    assert value.error_code is None and value.content.endswith("\ufffd\n1"), value.content


@pytest.mark.parametrize(("command", "expected"), [
    ("python3 -c 'open(\"/output/\" + \"a\" * 300, \"w\")'", "File name too long"),
    ("node -e 'workspace.writeText(\"/output/\" + \"a\".repeat(300), \"x\")'", "ENAMETOOLONG"),
    ("touch /output/$(printf 'a%.0s' {1..300})", "filename too long"),
    ("python3 -c 'open(\"/output/a\\x00b\", \"w\")'", "ValueError: embedded null byte"),
    ("node -e 'workspace.writeText(\"/output/a\\u0000b\", \"x\")'", "EINVAL"),
    ("python3 -c 'open(b\"/output/by\", \"w\").write(\"x\")' && cat /output/by && echo ok", "ok"),
    ("python3 -c 'open(b\"/output/\\xff\", \"w\")'", "UnicodeDecodeError"),
])
def test_bad_names_are_the_commands_error(shell: Shell, command: str, expected: str) -> None:
    result = shell.call(command)
    assert result.error_code in NORMAL_CODES, result.content
    assert expected in result.content, result.content


def _quoted(text: str) -> str:
    return shlex.quote(text)


ANY_CHAR = st.characters(exclude_categories=())  # lone surrogates, NUL, controls, bidi: everything
NAMES = st.one_of(
    st.text(ANY_CHAR, min_size=1, max_size=40),
    st.text(st.sampled_from("a\udcff\ud800\x00\n\u202e/.é"), min_size=1, max_size=12),
    st.sampled_from([".", "..", "/", "//", "/output", "a" * 256, "é" * 200, "a/" * 2100, "-n", "--"]),
)


@settings(derandomize=True, max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(name=NAMES, content=st.text(ANY_CHAR, max_size=200), engine=st.sampled_from(["python3", "js", "bash"]))
def test_any_file_name_and_content_gives_a_normal_result(roomy: Shell, name: str, content: str, engine: str) -> None:
    n, c = _quoted(name), _quoted(content)
    if engine == "python3":
        command = ("python3 -c 'open(argv[1], \"w\").write(argv[2])\nprint(open(argv[1]).read() == argv[2])' "
                   f"{n} {c}")
    elif engine == "js":
        command = ("node -e 'workspace.writeText(process.argv[1], process.argv[2]); "
                   f"console.log(workspace.readText(process.argv[1]) === process.argv[2])' {n} {c}")
    else:
        command = f"printf %s {c} > {n}; cat -- {n}; ls -A | head -3"
    result = roomy.call(f"echo start; {command}; echo end", workdir="output")
    if _has_lone_surrogate(command):  # refused by the gate (the test above); nothing ran
        assert result.error_code == "tool.invalid_arguments", result.content
        return
    assert result.error_code in NORMAL_CODES, result.content
    assert result.content.count("\n") >= 1 and "start" in result.content, result.content
    result.content.encode("utf-8")  # valid text, whatever went in


@pytest.mark.parametrize(("workdir", "shown"), [("output/\\u{DCFF}", "output/\\u{DCFF}"),
                                                ("output/a\\u{202E}b", "output/a\\u{202E}b"),
                                                ("output/tab\tx", "output/tab\\u{9}x")])
def test_a_missing_workdir_is_shown_as_the_model_can_send_it_back(shell: Shell, workdir: str, shown: str) -> None:
    """The workdir in the message uses the workspace's escapes (docs/workspace.md), never a raw
    surrogate or U+FFFD."""
    result = shell.call("pwd", workdir=workdir)
    assert result.error_code == "workspace.shell_failed", result.content
    assert f"workdir `{shown}` is not a folder in the" in result.content, result.content
    result.content.encode("utf-8")
