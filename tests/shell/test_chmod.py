"""`chmod` in the shell: the workspace roots keep their mode on the host; everything else changes as
GNU chmod would (checked against the host's own chmod)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.shell.conftest import Shell
from tooldeck.shell.chmod import apply_mode, parse_mode


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("command", ["chmod 000 /output", "chmod -x /output", "chmod a-rwx /output/",
                                     "cd /output && chmod 000 .", "chmod 000 /"])
def test_a_root_keeps_its_mode(shell: Shell, command: str) -> None:
    """The reproducer: `chmod 000 /output` made the mounted folder mode 000 on the host."""
    root = shell.ws / "output"
    before = _mode(root)
    result = shell.call(f"{command}; echo status $?")
    assert "status 1" in result.content and "Device or resource busy" in result.content, result.content
    assert _mode(root) == before
    assert shell.call("echo x > /output/after.txt && cat /output/after.txt").content.endswith("x")


def test_recursive_changes_what_is_inside_a_root(shell: Shell) -> None:
    root = shell.ws / "output"
    before = _mode(root)
    result = shell.call("mkdir -p /output/d && echo y > /output/d/f && chmod -R go-rwx /output; echo status $?")
    assert result.content.endswith("status 0"), result.content
    assert _mode(root) == before
    assert _mode(root / "d") == 0o700 and _mode(root / "d" / "f") == 0o600
    assert _mode(root / "hello.txt") == 0o600


def test_modes_verbose_and_errors(shell: Shell) -> None:
    verbose = shell.call("chmod -v 640 /output/hello.txt")
    assert "mode of '/output/hello.txt' changed from 0644 to 0640" in verbose.content, verbose.content
    assert _mode(shell.ws / "output" / "hello.txt") == 0o640
    assert _mode(shell.ws / "output" / "hello.txt") == 0o640
    for command, message in [("chmod 9 /output/hello.txt", "invalid mode: '9'"), ("chmod", "missing operand"),
                             ("chmod 644", "missing operand after '644'"),
                             ("chmod 644 /output/nope", "cannot access '/output/nope'")]:
        result = shell.call(command)
        assert result.error_code == "workspace.shell_exit" and message in result.content, result.content


WHO = st.text(st.sampled_from("ugoa"), min_size=1, max_size=3)
PERMS = st.text(st.sampled_from("rwxXt"), max_size=4)
CLAUSE = st.builds(lambda w, op, p: f"{w}{op}{p}", WHO, st.sampled_from("+-="), PERMS)
MODES = st.one_of(st.integers(0, 0o1777).map(lambda m: f"{m:o}"),
                  st.lists(CLAUSE, min_size=1, max_size=3).map(",".join))


@pytest.mark.skipif(shutil.which("chmod") is None, reason="needs the host's chmod to compare with")
@settings(derandomize=True, max_examples=150, deadline=None)
@given(start=st.integers(0, 0o777), mode=MODES)
def test_the_mode_arithmetic_is_gnu_chmods(tmp_path_factory: pytest.TempPathFactory, start: int, mode: str) -> None:
    """Against the host's chmod on a regular file (explicit `who`, so the umask plays no part)."""
    assert parse_mode(mode) is None
    path = tmp_path_factory.mktemp("m") / "f"
    path.write_text("x")
    os.chmod(path, start)
    subprocess.run(["chmod", mode, str(path)], check=True)
    assert apply_mode(mode, start, is_dir=False) == _mode(path), (oct(start), mode)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(text=st.text(max_size=12))
def test_any_mode_text_is_valid_or_says_why(text: str) -> None:
    problem = parse_mode(text)
    if problem is None:
        assert 0 <= apply_mode(text, 0o644, is_dir=False) <= 0o7777
    else:
        assert problem.startswith("invalid mode")
