"""One shell call: a fresh bashkit interpreter over the workspace mounts, run to an outcome.

Nothing of the host is reachable: bashkit runs every command in-process (no host programs), sees a
synthetic environment, has networking off, and reaches host files only through the mounts of
`Layout`. `python`/`python3` and `js`/`node` are custom builtins that work on the same filesystem.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tooldeck.shell.budget import Budget
from tooldeck.shell.layout import Layout
from tooldeck.shell.limits import KIB, ShellLimits
from tooldeck.shell.output import CappedText, clip

OutputSink = Callable[[str, str], None]
"""Receives `(stdout_chunk, stderr_chunk)` as the command produces output."""

ENV = {"HOME": "/", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "USER": "sandbox", "SHELL": "/bin/bash"}


class Status(StrEnum):
    EXITED = "exited"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    FAILED = "failed"


@dataclass(slots=True)
class ShellResult:
    status: Status
    exit_code: int | None
    stdout: str
    stderr: str
    truncated: bool
    error: str | None = None
    duration_s: float = 0.0


def builtins(budget: Budget, limits: ShellLimits) -> dict[str, Callable[[Any], Any]]:
    """The custom builtins of every shell call. Engines load lazily on first use."""

    def python(ctx: Any) -> Any:
        from tooldeck.shell.python import PythonProgram

        return PythonProgram(ctx, budget, limits).main(list(ctx.argv))

    def js(ctx: Any) -> Any:
        from tooldeck.shell.js import JsProgram

        return JsProgram(ctx, budget, limits).main(list(ctx.argv))

    return {"python": python, "python3": python, "js": js, "node": js}


class ShellRun:
    """Build with the layout and limits, then `run(command)` once; `cancel()` from any thread."""

    def __init__(self, layout: Layout, limits: ShellLimits, workdir: str = "/",
                 on_output: OutputSink | None = None) -> None:
        self.layout = layout
        self.limits = limits
        self.workdir = workdir or "/"
        self.on_output = on_output
        self.budget = Budget(limits.timeout_s)
        self.stdout = CappedText(limits.max_stdout_bytes)
        self.stderr = CappedText(limits.max_stderr_bytes)
        self._bash: Any = None
        self._cut = False

    def cancel(self) -> None:
        self.budget.cancelled.set()
        bash = self._bash
        if bash is not None:
            bash.cancel()

    def _sink(self, out: str, err: str) -> None:
        self.stdout.write(out)
        self.stderr.write(err)
        if self.on_output is not None:
            self.on_output(out, err)

    def _failed(self, message: str) -> ShellResult:
        return ShellResult(Status.FAILED, None, "", message, False, message, self.budget.elapsed())

    def run(self, command: str) -> ShellResult:
        size = len(command.encode("utf-8", "replace"))
        if size > self.limits.max_command_bytes:
            return self._failed(f"the command is {size} bytes; the limit is {self.limits.max_command_bytes // KIB} "
                                "KiB. Write a long script to a file in scratch/ and run it with `bash file.sh`.")
        from bashkit import Bash, FileSystem

        try:
            mounts, notes = self.layout.mounts()
        except OSError as exc:
            return self._failed(f"the workspace could not be prepared for the shell: {exc.strerror or exc}")
        bash = Bash(cwd="/", env=ENV, hostname="sandbox", username="sandbox", timeout_seconds=self.limits.timeout_s,
                    max_commands=self.limits.max_commands, max_loop_iterations=self.limits.max_loop_iterations,
                    custom_builtins=builtins(self.budget, self.limits))
        for m in mounts:
            try:
                bash.mount(m.vfs_path, FileSystem.real(str(m.host_path), writable=m.writable))
            except Exception as exc:  # a root the host cannot open: leave it out, say so
                notes.append(f"shell: /{m.name} could not be mounted ({exc})")
        self._bash = bash
        for note in notes:
            self._sink("", note + "\n")
        if self.workdir != "/":
            if not _is_dir(bash, self.workdir):
                return self._failed(f"workdir `{self.workdir.lstrip('/')}` is not a folder in the workspace. Use "
                                    "`/` (the workspace root) or an existing folder such as `output`.")
            bash.execute_sync(f"cd -- {shlex.quote(self.workdir)}")
        if self.budget.cancelled.is_set():
            return self._outcome(Status.CANCELLED, None, "", "", None)
        result = bash.execute_sync(command, on_output=self._sink)
        return self._classify(result)

    def _classify(self, result: Any) -> ShellResult:
        error = result.error
        self._cut = bool(getattr(result, "stdout_truncated", False) or getattr(result, "stderr_truncated", False))
        if self.budget.cancelled.is_set():
            return self._outcome(Status.CANCELLED, None, result.stdout, result.stderr, error)
        if (error and ("timeout" in error or "timed out" in error)) or self.budget.expired():
            return self._outcome(Status.TIMED_OUT, None, result.stdout, result.stderr, error)
        if error and "cancel" in error:
            return self._outcome(Status.CANCELLED, None, result.stdout, result.stderr, error)
        if error:
            return self._outcome(Status.FAILED, result.exit_code, result.stdout, result.stderr, error)
        return self._outcome(Status.EXITED, result.exit_code, result.stdout, result.stderr, None)

    def _outcome(self, status: Status, code: int | None, stdout: str, stderr: str, error: str | None) -> ShellResult:
        # The streamed copy survives a timeout or cancel; the final result is complete otherwise.
        out = stdout if len(stdout) >= len(self.stdout.text) else self.stdout.text
        err = stderr if len(stderr) >= len(self.stderr.text) else self.stderr.text
        if error and error not in err:
            err = f"{err}{'' if not err or err.endswith(chr(10)) else chr(10)}{error}\n"
        out, cut_out = clip(out, self.limits.max_stdout_bytes)
        err, cut_err = clip(err, self.limits.max_stderr_bytes)
        truncated = cut_out or cut_err or self.stdout.truncated or self.stderr.truncated or self._cut
        return ShellResult(status, code, out, err, truncated, error, self.budget.elapsed())

    async def arun(self, command: str, grace_s: float = 2.0) -> ShellResult:
        """Run on a daemon thread; give up `grace_s` after the deadline if a builtin ignores it.

        Cancelling the awaiting task cancels the shell (at its next command boundary) and re-raises.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ShellResult] = loop.create_future()

        def settle(value: ShellResult | None, exc: BaseException | None) -> None:
            if future.done():
                return
            if exc is not None:
                future.set_exception(exc)
            else:
                future.set_result(value)  # type: ignore[arg-type]

        def hand_over(value: ShellResult | None, exc: BaseException | None) -> None:
            # A closed loop means the caller was cancelled and its outcome already recorded: nobody waits.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, value, exc)

        def work() -> None:
            try:
                value = self.run(command)
            except BaseException as exc:  # handed to the awaiting task
                hand_over(None, exc)
                return
            hand_over(value, None)

        threading.Thread(target=work, name="tooldeck-shell", daemon=True).start()
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.limits.timeout_s + grace_s)
        except TimeoutError:
            return self.abandon()
        except asyncio.CancelledError:
            self.cancel()
            raise

    def cancelled_result(self) -> ShellResult:
        """The outcome to report when the caller cancelled the run: cancelled, with the output so far."""
        return self._outcome(Status.CANCELLED, None, "", "", None)

    def abandon(self) -> ShellResult:
        """The outcome to report when the caller stops waiting (a builtin ignored the deadline)."""
        self.cancel()
        return self._outcome(Status.TIMED_OUT, None, "", "", f"execution timeout ({self.limits.timeout_s:g}s)")


def _is_dir(bash: Any, path: str) -> bool:
    try:
        return bash.fs().stat(path).get("file_type") == "directory"
    except Exception:
        return False


def run_command(layout: Layout, limits: ShellLimits, command: str, workdir: str = "/",
                on_output: OutputSink | None = None) -> ShellResult:
    """Convenience: one blocking call."""
    started = time.monotonic()
    result = ShellRun(layout, limits, workdir, on_output).run(command)
    result.duration_s = time.monotonic() - started
    return result
