"""A timed-out or cancelled shell call stops its work: files stop changing, workers are free again.

Issue 11: a `python3` loop writing a file kept writing for minutes after its 3 s timeout (the
monty time budget restarted at every file operation), four of them exhausted the process-wide
Python pool, a JS `appendText` loop kept growing its file, and a timed-out write left a 60 MB
`.bashkit-tmp-*` file. Each test here failed on that code.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import tooldeck
from tests.shell.conftest import make_shell
from tooldeck.catalog.profile import Profile, WorkspaceRoots
from tooldeck.shell import Layout, ShellLimits, ShellRun, Status

TEMP_PREFIX = ".bashkit-tmp-"

PY_LOOP = 'python3 -c \'i=0\nwhile True:\n i+=1\n open("/scratch/n","w").write(str(i))\''
JS_LOOP = "rm -f /scratch/n; node -e 'for (;;) workspace.appendText(\"/scratch/n\", \"x\".repeat(100000))'"
BASH_LOOP = "i=0; while true; do i=$((i+1)); echo $i > /scratch/n; done"
LOOPS = {"python3": PY_LOOP, "js": JS_LOOP, "bash": BASH_LOOP}
_ids = itertools.count()


def _state(path: Path) -> tuple[int, int, bytes] | None:
    try:
        st = path.stat()
        return st.st_size, st.st_mtime_ns, path.read_bytes()[-64:]
    except FileNotFoundError:
        return None


def _assert_still(path: Path, seconds: float) -> None:
    """The file does not change (size, mtime, content) for `seconds`."""
    before = _state(path)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.05)
        assert _state(path) == before, f"{path.name} still changes"


def _wait_until(check: Callable[[], bool], timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return check()


def _pool_cpu_seconds(interval: float) -> float:
    """CPU time the pool's worker process groups used during `interval` (Linux /proc)."""
    from tooldeck.shell.pool import get_pool

    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc")
    groups = set(get_pool().pids())

    def ticks() -> int:
        total = 0
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) in groups:  # pgrp
                total += int(fields[11]) + int(fields[12])  # utime + stime
        return total

    before = ticks()
    time.sleep(interval)
    return (ticks() - before) / os.sysconf("SC_CLK_TCK")


def _temps(root: Path) -> list[Path]:
    return [p for p in root.rglob(f"{TEMP_PREFIX}*")]


@pytest.mark.parametrize("kind", list(LOOPS))
def test_a_timed_out_loop_writes_nothing_one_second_after_its_deadline(kind: str, tmp_path: Path) -> None:
    sh = make_shell(tmp_path, timeout_s=1.5)
    try:
        started = time.monotonic()
        result = sh.call(LOOPS[kind])
        assert result.error_code == "workspace.shell_timeout", result.content
        target = sh.ws / "scratch" / "n"
        assert target.exists(), "the loop never wrote: the test would prove nothing"
        time.sleep(max(0.0, started + 1.5 + 1.0 - time.monotonic()))
        _assert_still(target, 1.5)
        assert _temps(sh.ws) == []
    finally:
        sh.runtime.close()


def _quick(sh: object, command: str, expected: str, timeout: float = 5.0) -> None:
    """Liveness, not speed: the command answers `expected` within its own short time limit (0.5–1 s).
    Tried again until `timeout` only so that a loaded test machine cannot fail it; on the old code
    every try timed out (the Python pool stayed exhausted for minutes)."""
    answers: list[str] = []

    def answered() -> bool:
        result = sh.call(command)  # type: ignore[attr-defined]
        answers.append(result.content)
        return not result.is_error and expected in result.content

    assert _wait_until(answered, timeout), answers[-3:]


@pytest.mark.parametrize(("kind", "probe", "expected"), [
    ("python3", "python3 -c 'print(6*7)'", "42"),
    ("js", "node -e 'console.log(6*7)'", "42"),
    ("bash", "echo $((6*7))", "42"),
])
def test_ten_timed_out_calls_in_a_row_leave_the_shell_free(kind: str, probe: str, expected: str,
                                                          tmp_path: Path) -> None:
    sh = make_shell(tmp_path, timeout_s=0.5, max_identical_calls=0)  # ten identical calls on purpose
    try:
        for _ in range(10):
            assert sh.call(LOOPS[kind]).error_code == "workspace.shell_timeout"
        _quick(sh, probe, expected)
        _assert_still(sh.ws / "scratch" / "n", 1.0)
        from tooldeck.shell.pool import get_pool

        assert get_pool().counts[1] == 0
        assert _pool_cpu_seconds(0.5) < 0.1  # no worker (nor its monty processes) still computes
    finally:
        sh.runtime.close()


def test_another_run_is_not_starved_by_timed_out_python(tmp_path: Path) -> None:
    """Four looping python3 calls used to occupy the whole Python pool for every run of the process."""
    sh = make_shell(tmp_path / "a", timeout_s=1.0)
    other = make_shell(tmp_path / "b", timeout_s=1.0)
    try:
        async def four() -> list[object]:
            calls = [{"id": f"c{i}", "name": "workspace_shell", "arguments": {"command": PY_LOOP}} for i in range(4)]
            return await sh.invocation.arun(calls)

        results = asyncio.run(four())
        assert all(getattr(r, "error_code", None) == "workspace.shell_timeout" for r in results)
        _quick(other, "python3 -c 'print(6*7)'", "42")
    finally:
        sh.runtime.close()
        other.runtime.close()


@pytest.mark.parametrize("kind", list(LOOPS))
def test_cancelling_the_invocation_stops_the_work(kind: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    runtime = tooldeck.Runtime(home=home, profile=Profile(shell_timeout_s=20))
    inv = runtime.invocation(run_id=f"cancel{next(_ids)}")
    target = inv.run_state.workspace_root / "scratch" / "n"

    async def main() -> float:
        task = asyncio.ensure_future(inv.arun([{"id": "c1", "name": "workspace_shell",
                                                "arguments": {"command": LOOPS[kind]}}]))
        assert await asyncio.to_thread(_wait_until, target.exists, 10.0), "the loop never started writing"
        await asyncio.sleep(0.3)
        cancelled_at = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return cancelled_at

    try:
        cancelled_at = asyncio.run(main())
        time.sleep(max(0.0, cancelled_at + 1.0 - time.monotonic()))
        _assert_still(target, 1.5)
        assert _temps(inv.run_state.workspace_root) == []
    finally:
        runtime.close()


def test_shellrun_cancel_from_another_thread_stops_a_stuck_js_computation(tmp_path: Path) -> None:
    """QuickJS ignores its time limit inside one long native operation: the worker is killed."""
    layout = Layout.for_workspace(tmp_path, WorkspaceRoots())
    run = ShellRun(layout, ShellLimits(timeout_s=30))
    threading.Timer(0.8, run.cancel).start()
    started = time.monotonic()
    result = run.run("echo before; node -e 'for (;;) String(7n ** 300000n)'; echo never")
    assert result.status is Status.CANCELLED
    assert result.stdout == "before\n"
    assert time.monotonic() - started < 30  # it did not run to its deadline
    assert result.killed and "killed" in result.stderr


def test_a_stuck_native_operation_is_killed_at_its_deadline(tmp_path: Path) -> None:
    layout = Layout.for_workspace(tmp_path, WorkspaceRoots())
    result = ShellRun(layout, ShellLimits(timeout_s=1.0)).run("node -e 'for (;;) String(7n ** 300000n)'")
    assert result.status is Status.TIMED_OUT and result.killed
    assert "stopped at the time limit (1 s)" in result.stderr


def test_timed_out_big_writes_leave_no_staging_files(tmp_path: Path) -> None:
    """bashkit writes through `.bashkit-tmp-*` files; a write cut short must not leave one behind."""
    sh = make_shell(tmp_path, timeout_s=1.0)
    try:
        (sh.ws / "scratch" / "big").write_bytes(b"x" * 10_000_000)
        for command in ("while true; do cat /scratch/big > /scratch/copy; done",
                        "python3 -c 'd = open(\"/scratch/big\").read()\n"
                        "while True: open(\"/scratch/p\", \"w\").write(d)'",
                        "node -e 'const d = workspace.readText(\"/scratch/big\"); "
                        "for (;;) workspace.writeText(\"/scratch/j\", d)'"):
            assert sh.call(command).error_code == "workspace.shell_timeout"
        assert _wait_until(lambda: not _temps(sh.ws), 2.0), _temps(sh.ws)
        time.sleep(0.5)
        assert _temps(sh.ws) == []
    finally:
        sh.runtime.close()


def test_killing_a_worker_deletes_only_the_staging_files_it_had_open(tmp_path: Path) -> None:
    from tooldeck.shell.pool import Worker

    root = tmp_path / "output"
    root.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    theirs = root / f"{TEMP_PREFIX}someone-else"  # not open by the worker: another process's
    theirs.write_text("keep")
    holder = ("import os, sys, time\n"
              "files = [open(p, 'w') for p in sys.argv[1:]]\n"
              "[f.write('x') or f.flush() for f in files]\n"
              "os.write(1, b'ready')\n"
              "time.sleep(60)\n")
    mine, outside, plain = root / f"{TEMP_PREFIX}mine", elsewhere / f"{TEMP_PREFIX}outside", root / "plain.txt"
    worker = Worker([sys.executable, "-c", holder, str(mine), str(outside), str(plain)])
    try:
        assert os.read(worker.rfd, 5) == b"ready"
        removed = worker.kill([root])
    finally:
        worker.kill([])
    assert removed == [str(mine.resolve())]
    assert not mine.exists()
    assert outside.exists() and plain.exists() and theirs.read_text() == "keep"
    assert worker.proc.returncode is not None


def test_a_worker_that_dies_mid_call_is_reported_and_replaced(tmp_path: Path) -> None:
    import signal

    layout = Layout.for_workspace(tmp_path, WorkspaceRoots())
    run = ShellRun(layout, ShellLimits(timeout_s=20))
    results: list[object] = []
    thread = threading.Thread(target=lambda: results.append(run.run("echo started; sleep 10")))
    thread.start()
    assert _wait_until(lambda: "started" in run.stdout.text, 10)
    os.killpg(run._session.worker.pid, signal.SIGKILL)  # type: ignore[union-attr]  # as a crash would
    thread.join(10)
    [result] = results
    assert result.status is Status.FAILED and "stopped unexpectedly" in result.stderr  # type: ignore[attr-defined]
    assert result.stdout == "started\n"  # type: ignore[attr-defined]
    again = ShellRun(layout, ShellLimits(timeout_s=20)).run("echo ok")
    assert again.status is Status.EXITED and again.stdout == "ok\n"


def test_a_worker_that_cannot_start_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tooldeck.shell import engine, session
    from tooldeck.shell.pool import WorkerPool

    broken = WorkerPool()
    crash = "import sys; sys.stderr.write('ImportError: no bashkit here\\n'); sys.exit(3)"
    broken._argv = [sys.executable, "-c", crash]
    for module in (engine, session):  # both take workers from the pool
        monkeypatch.setattr(module, "get_pool", lambda: broken)
    try:
        result = ShellRun(Layout.for_workspace(tmp_path, WorkspaceRoots()), ShellLimits(timeout_s=5)).run("echo hi")
    finally:
        broken.close()
    assert result.status is Status.FAILED
    assert "stopped unexpectedly (ImportError: no bashkit here)" in result.stderr


def test_a_call_cancelled_while_waiting_for_a_worker_gives_the_worker_back(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from tooldeck.shell import engine, session
    from tooldeck.shell.pool import WorkerPool

    small = WorkerPool(max_workers=1)
    for module in (engine, session):  # both take workers from the pool
        monkeypatch.setattr(module, "get_pool", lambda: small)
    layout = Layout.for_workspace(tmp_path, WorkspaceRoots())

    async def main() -> None:
        first = asyncio.ensure_future(ShellRun(layout, ShellLimits(timeout_s=20)).arun("sleep 0.8; echo first"))
        await asyncio.sleep(0.3)
        waiting = ShellRun(layout, ShellLimits(timeout_s=20))
        second = asyncio.ensure_future(waiting.arun("echo second > /output/second.txt"))
        await asyncio.sleep(0.2)
        second.cancel()
        with pytest.raises(asyncio.CancelledError):
            await second
        assert (await first).stdout == "first\n"

    try:
        asyncio.run(main())
        assert _wait_until(lambda: small.counts == (1, 0), 5), small.counts
        assert not (tmp_path / "output" / "second.txt").exists()
        third = ShellRun(layout, ShellLimits(timeout_s=5))
        assert asyncio.run(third.arun("echo third")).stdout == "third\n"
    finally:
        small.close()
