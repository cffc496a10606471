"""Limits that hold on every shell write path, and workspace roots no command can remove.

Issue 11: shell writes had no file size limit (a JS append loop grew a file past 80 MB), and
`rm -rf /output` removed the writable root itself.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.shell.conftest import Shell, make_shell
from tooldeck.catalog.profile import WorkspaceRoots
from tooldeck.shell import Layout, ShellLimits, ShellRun
from tooldeck.shell.limits import MIB

SMALL = 1 * MIB


def _run(tmp_path: Path, command: str, **limits: object) -> object:
    layout = Layout.for_workspace(tmp_path, WorkspaceRoots())
    layout.mounts()
    return ShellRun(layout, ShellLimits(timeout_s=20, **limits)).run(command)  # type: ignore[arg-type]


def _sizes(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in folder.iterdir() if p.is_file()}


# -- the file size limit -------------------------------------------------------------------------------

WRITES = {
    # how: (command, the rest of the call still runs)
    "redirect": ("cat /scratch/chunk /scratch/chunk > /scratch/t", True),
    "append-loop": ("for i in 1 2 3; do cat /scratch/chunk >> /scratch/t; done", True),
    "dd-seek": ("dd if=/scratch/chunk of=/scratch/t bs=1000 seek=1000 2>&1", True),
    "cp-over-limit": ("cat /scratch/chunk /scratch/chunk > /scratch/t; cp /scratch/t /scratch/t2", True),
    "sort-o": ("cat /scratch/chunk /scratch/chunk | sort -o /scratch/t", True),
    "awk-print": ("cat /scratch/chunk /scratch/chunk | awk '{print > \"/scratch/t\"}'", True),
    "python-write": ("python3 -c 'open(\"/scratch/t\", \"w\").write(\"x\" * 1500000)'", True),
    "python-append": ("python3 -c 'for i in range(4):\n    open(\"/scratch/t\", \"a\").write(\"x\" * 400000)'", True),
    "python-handle": ("python3 -c 'f = open(\"/scratch/t\", \"w\")\nfor i in range(4):\n    f.write(\"x\" * 400000)'",
                      True),
    "js-write": ("node -e 'workspace.writeText(\"/scratch/t\", \"x\".repeat(1500000))'", True),
    "js-append": ("node -e 'for (let i = 0; i < 4; i++) workspace.appendText(\"/scratch/t\", \"x\".repeat(400000))'",
                  True),
    # bashkit ends the whole call on a failed write inside these builtins (workspace.shell_failed)
    "tee-append": ("for i in 1 2 3; do cat /scratch/chunk | tee -a /scratch/t >/dev/null; done", False),
    "exec-fd": ("exec 3>/scratch/t; cat /scratch/chunk >&3; cat /scratch/chunk >&3", False),
}


@pytest.mark.parametrize("how", list(WRITES))
def test_no_shell_write_makes_a_file_larger_than_the_limit(how: str, tmp_path: Path) -> None:
    (tmp_path / "scratch").mkdir()
    (tmp_path / "scratch" / "chunk").write_bytes(b"y\n" * 350_000)
    command, continues = WRITES[how]
    result = _run(tmp_path, "echo before; " + command + "; echo after-$?", max_file_bytes=SMALL)
    sizes = _sizes(tmp_path / "scratch")
    assert all(size <= SMALL for size in sizes.values()), sizes
    assert "before" in result.stdout, result
    text = (result.stdout + result.stderr).lower()
    assert "too large" in text and "limited to 1 mib" in text, result
    if continues:
        assert "after-" in result.stdout, result  # the write failed as one command; the rest ran
    else:
        assert result.status.value == "failed", result
    assert not any(name.startswith(".bashkit-tmp-") for name in sizes)


def test_a_file_exactly_at_the_limit_is_fine(tmp_path: Path) -> None:
    (tmp_path / "scratch").mkdir()
    result = _run(tmp_path, "python3 -c 'open(\"/scratch/t\", \"w\").write(\"x\" * 1048576)'; "
                            "node -e 'workspace.writeText(\"/scratch/j\", \"x\".repeat(1048576))'; "
                            "head -c 1048576 /dev/zero > /scratch/b; wc -c < /scratch/b", max_file_bytes=SMALL)
    assert result.exit_code == 0, result
    assert _sizes(tmp_path / "scratch") == {"t": SMALL, "j": SMALL, "b": SMALL}


def test_the_64_mib_limit_holds_on_a_bash_append_loop(tmp_path: Path) -> None:
    """Through the tool, with the real limit: each `>>` adds 30 MB until the kernel refuses."""
    shell = make_shell(tmp_path, timeout_s=30)
    try:
        (shell.ws / "scratch" / "c30").write_bytes(b"z" * 30_000_000)
        result = shell.call("for i in 1 2 3; do cat /scratch/c30 >> /scratch/acc || echo refused-$i; done; echo done")
        assert result.error_code is None, result.content
        assert "refused-3" in result.content and "done" in result.content
        assert "File too large" in result.content and "64 MiB" in result.content
        assert (shell.ws / "scratch" / "acc").stat().st_size == 60_000_000
        assert not list((shell.ws / "scratch").glob(".bashkit-tmp-*"))
    finally:
        shell.runtime.close()


def test_the_python_and_js_limits_say_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "scratch").mkdir()
    big = tmp_path / "scratch" / "big"
    big.write_bytes(b"q" * 900_000)
    before = big.stat().st_mtime_ns
    result = _run(tmp_path, "node -e 'workspace.appendText(\"/scratch/big\", \"x\".repeat(200000))'",
                  max_file_bytes=SMALL)
    assert "EFBIG" in result.stderr and "limited to 1 MiB" in result.stderr and "1,100,000 bytes" in result.stderr
    assert big.stat().st_mtime_ns == before and big.stat().st_size == 900_000
    result = _run(tmp_path, "python3 -c 'open(\"/scratch/big\", \"a\").write(\"x\" * 200000)'", max_file_bytes=SMALL)
    assert "OSError: [Errno 27]" in result.stderr and "limited to 1 MiB" in result.stderr
    assert big.stat().st_size == 900_000


# -- workspace roots -----------------------------------------------------------------------------------

REMOVALS = {
    "rm-rf": "rm -rf /output",
    "rm-r-slash": "rm -r /output/",
    "rm-double-slash": "rm -rf //output",
    "rm-dotdot": "rm -rf /output/../output",
    "rm-relative": "cd / && rm -rf output",
    "rm-dot": "cd /output && rm -rf .",
    "rm-trailing-dot": "rm -rf /output/.",
    "rm-glob-root": "rm -rf /*",
    "rm-root": "rm -rf /",
    "rmdir": "rm -rf /output/*; rmdir /output",
    "rmdir-parents": "mkdir -p /output/a/b && rmdir -p /output/a/b",
    "command-rm": "command rm -rf /output",
    "xargs-rm": "echo /output | xargs rm -rf",
    "find-exec-rm": "find / -maxdepth 1 -name output -exec rm -rf {} \\;",
    "mv-away": "mv /output /scratch/moved",
    "mv-onto": "mkdir -p /scratch/d && mv -T /scratch/d /output",
    "python-rmdir": "rm -rf /output/*; python3 -c 'import pathlib; pathlib.Path(\"/output\").rmdir()'",
    "python-rename": "python3 -c 'import pathlib; pathlib.Path(\"/output\").rename(\"/scratch/o\")'",
    "js-remove": "node -e 'workspace.remove(\"/output\")'",
    "readonly-view": "rm -rf /tool-results; rmdir /skills",
}


@pytest.mark.parametrize("how", list(REMOVALS))
def test_a_workspace_root_is_never_removed_or_renamed(how: str, shell: Shell) -> None:
    (shell.ws / "output" / "sub").mkdir()
    inode = (shell.ws / "output").stat().st_ino
    result = shell.call(f"echo before; {REMOVALS[how]}; echo after")
    assert "before" in result.content and "after" in result.content, result.content
    output = shell.ws / "output"
    assert output.is_dir() and not output.is_symlink()
    assert output.stat().st_ino == inode, "the root was removed and created again"
    assert (shell.ws / "tool-results" / "keep.txt").read_text() == "spilled result\n"
    assert (shell.ws / "skills" / "keep.md").read_text() == "# a skill\n"
    text = result.content
    assert ("Device or resource busy" in text or "refusing to remove" in text or "dangerous" in text
            or "cross-mount" in text or "readonly" in text or how in ("rmdir-parents",)), text


def test_rm_still_removes_what_is_inside_a_root(shell: Shell) -> None:
    (shell.ws / "output" / "d" / "e").mkdir(parents=True)
    (shell.ws / "output" / "d" / "e" / "f.txt").write_text("x")
    result = shell.call("rm -rf /output/*; ls -A /output | wc -l; rm -rv /nope 2>&1; rm -f /nope && echo quiet")
    assert "0" in result.content.split("\n")[1], result.content
    assert "No such file or directory" in result.content and "quiet" in result.content
    assert sorted(os.listdir(shell.ws / "output")) == []
    assert shell.call("rm -rf /output").error_code == "workspace.shell_exit"
    assert shell.call("mkdir /output/x && rmdir -v /output/x").content.endswith("removing directory, '/output/x'")


def test_a_root_removed_by_find_delete_comes_back_and_the_call_fails(shell: Shell) -> None:
    result = shell.call("find /output -delete; echo next")
    assert result.error_code == "workspace.shell_exit", result.content
    assert "next" in result.content and "/output was removed" in result.content
    assert (shell.ws / "output").is_dir()


def test_sleep_wakes_at_the_deadline_and_keeps_its_errors(shell: Shell) -> None:
    # Woken at the deadline: the call ends long before the 100 s sleep would (a generous wait, not a timing).
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(shell.call, "sleep 100").result(timeout=60).error_code == "workspace.shell_timeout"
    assert "invalid time interval 'abc'" in shell.call("sleep abc").content
    assert shell.call("timeout 0.2 sleep 5; echo rc=$?").content.endswith("rc=124")
    assert shell.call("sleep 0.1 0.1; sleep 0.01m; echo ok").content == "Exit code: 0\nok"
