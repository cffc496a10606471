"""One shell call inside a worker process: a fresh bashkit interpreter over the mounts, run to an outcome.

Nothing of the host is reachable: bashkit runs every command in-process (no host programs), sees a
synthetic environment, has networking off, and reaches host files only through the mounts the host
sent. `python`/`python3`, `js`/`node`, `rm`, `rmdir` and `sleep` are our own builtins (see their
modules). The process runs under `RLIMIT_FSIZE`, so no write of any command can make a file larger
than the shell's file limit: the kernel refuses it (`File too large`) and the command fails.
"""

from __future__ import annotations

import os
import shlex
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tooldeck.shell import vfs
from tooldeck.shell.budget import CANCEL, TIMEOUT, Budget
from tooldeck.shell.limits import MIB, ShellLimits

ENV = {"HOME": "/", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "USER": "sandbox", "SHELL": "/bin/bash"}
BACKSTOP_S = 4 * 3600.0
"""bashkit's own timeout, past any call's (background tasks run up to 30 minutes): the worker's
monitor and the host stop a call long before; it only matters if both are gone."""
EXITED, TIMED_OUT, CANCELLED, FAILED = "exited", "timed_out", "cancelled", "failed"

Emit = Callable[[str, str], None]
"""Receives `(stdout_chunk, stderr_chunk)` as the command produces output."""


@dataclass(frozen=True, slots=True)
class CallRequest:
    command: str
    workdir: str
    mounts: tuple[tuple[str, str, bool], ...]
    """(host path, mount point, writable)."""
    notes: tuple[str, ...]
    limits: ShellLimits
    replaced_text: bool = False
    """The command held lone surrogates, replaced by U+FFFD (see `text.py`)."""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CallRequest:
        return cls(str(d["command"]), str(d.get("workdir") or "/"),
                   tuple((str(h), str(v), bool(w)) for h, v, w in d.get("mounts", ())),
                   tuple(str(n) for n in d.get("notes", ())), ShellLimits.from_dict(d.get("limits") or {}),
                   bool(d.get("replaced_text")))


class CallHooks:
    """What an interpreter's builtins act on: set for the one call the interpreter runs."""

    budget: Budget
    limits: ShellLimits
    roots: vfs.Roots
    replaced: bool = False

    def __init__(self) -> None:
        self.budget = Budget(0.0)
        self.limits = ShellLimits()
        self.roots = vfs.Roots()

    def emit(self, out: str, err: str) -> None:
        pass

    def flush(self) -> None:
        pass


def builtins(hooks: CallHooks) -> dict[str, Callable[..., Any]]:
    """The custom builtins of every shell call. Engines load lazily on first use."""
    from tooldeck.shell import chmod, commands

    def kept(result: Any) -> Any:
        # bashkit drops the output of the command it was running when the call is stopped: what a
        # stopped python3/js printed (and why it stopped) goes to the call's output instead.
        if hooks.budget.stopped.is_set() and (result.stdout or result.stderr):
            hooks.emit(result.stdout, result.stderr)
            return type(result)("", "", result.exit_code)
        return result

    def python(ctx: Any) -> Any:
        from tooldeck.shell.python import PythonProgram

        hooks.flush()  # the engines may run long: what came before reaches the host first
        return kept(PythonProgram(ctx, hooks.budget, hooks.limits, hooks.roots,
                                  replaced_text=hooks.replaced).main(list(ctx.argv)))

    def js(ctx: Any) -> Any:
        from tooldeck.shell.js import JsProgram

        hooks.flush()  # QuickJS holds this process's interpreter lock: nothing is sent while it runs
        return kept(JsProgram(ctx, hooks.budget, hooks.limits, hooks.roots,
                              replaced_text=hooks.replaced).main(list(ctx.argv)))

    async def sleep(ctx: Any) -> Any:
        hooks.flush()  # what came before is out while this waits
        return await commands.sleep(ctx, hooks.budget)

    return {"python": python, "python3": python, "js": js, "node": js, "sleep": sleep,
            "rm": lambda ctx: commands.rm(ctx, hooks.roots), "rmdir": lambda ctx: commands.rmdir(ctx, hooks.roots),
            "chmod": lambda ctx: chmod.chmod(ctx, hooks.roots)}


@dataclass(frozen=True, slots=True)
class Interpreter:
    """A fresh bashkit interpreter for one call, built ahead of time: building one costs about 0.5 ms,
    so a worker builds the next while it waits for the next call."""

    bash: Any
    hooks: CallHooks
    key: tuple[int, int]

    @classmethod
    def build(cls, limits: ShellLimits) -> Interpreter:
        from bashkit import Bash

        hooks = CallHooks()
        bash = Bash(cwd="/", env=ENV, hostname="sandbox", username="sandbox", timeout_seconds=BACKSTOP_S,
                    max_commands=limits.max_commands, max_loop_iterations=limits.max_loop_iterations,
                    custom_builtins=builtins(hooks))
        return cls(bash, hooks, interpreter_key(limits))


def interpreter_key(limits: ShellLimits) -> tuple[int, int]:
    return limits.max_commands, limits.max_loop_iterations


_file_limit: list[int] = []


def set_file_limit(max_bytes: int) -> None:
    """The kernel's cap on any file this process (and its monty children) writes."""
    if _file_limit == [max_bytes]:
        return
    try:
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of being killed
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        want = max_bytes if hard == resource.RLIM_INFINITY else min(max_bytes, hard)
        if soft != want:
            resource.setrlimit(resource.RLIMIT_FSIZE, (want, hard))
        _file_limit[:] = [max_bytes]
    except (ImportError, OSError, ValueError):  # not a POSIX host: the python/js file APIs still check
        pass


class Sandbox:
    def __init__(self, request: CallRequest, budget: Budget, emit: Emit,
                 flush: Callable[[], None] = lambda: None, interpreter: Interpreter | None = None) -> None:
        self.request = request
        self.limits = request.limits
        self.budget = budget
        self.emit = emit
        self.flush = flush
        self.roots = vfs.Roots([v for _, v, _ in request.mounts])
        self.file_too_large = False
        if interpreter is None or interpreter.key != interpreter_key(self.limits):
            interpreter = Interpreter.build(self.limits)
        self.interpreter = interpreter

    def _sink(self, out: str, err: str) -> None:
        if "(os error 27)" in err or "(os error 27)" in out:  # EFBIG: RLIMIT_FSIZE refused a write
            self.file_too_large = True
        self.emit(out, err)

    def run(self) -> dict[str, Any]:
        """Run the command; the outcome as the DONE frame's payload."""
        req, limits = self.request, self.limits
        set_file_limit(limits.max_file_bytes)
        bash, hooks = self.interpreter.bash, self.interpreter.hooks
        hooks.budget, hooks.limits, hooks.roots, hooks.replaced = self.budget, limits, self.roots, req.replaced_text
        hooks.emit, hooks.flush = self._sink, self.flush  # type: ignore[method-assign]
        notes = list(req.notes)
        for host, point, writable in req.mounts:
            try:
                bash.mount(point, _real_fs(host, writable))
            except Exception as exc:  # a root the host cannot open: leave it out, say so
                notes.append(f"shell: {point} could not be mounted ({exc})")
        for note in notes:
            self._sink("", note + "\n")
        unregister = self.budget.on_stop(bash.cancel)
        try:
            if req.workdir != "/":
                if not _is_dir(bash, req.workdir):
                    from tooldeck.workspace.names import shown

                    where = shown(req.workdir.lstrip("/"))
                    return self._done(FAILED, None, f"workdir `{where}` is not a folder in the workspace. "
                                                    "Use `/` (the workspace root) or an existing folder "
                                                    "such as `output`.")
                bash.execute_sync(f"cd -- {shlex.quote(req.workdir)}")
            if self.budget.stopped.is_set():
                return self._stopped()
            result = bash.execute_sync(req.command, on_output=self._sink)
        finally:
            unregister()
        restored = self._restore_roots()
        truncated = bool(getattr(result, "stdout_truncated", False) or getattr(result, "stderr_truncated", False))
        if self.file_too_large or "(os error 27)" in (result.error or ""):
            self._sink("", f"shell: files are limited to {limits.max_file_bytes // MIB} MiB "
                           f"({limits.max_file_bytes:,} bytes); the write that would go past it was refused\n")
        if self.budget.expired():  # stopped, or a command (js at its own time limit) ended right at the deadline
            return self._stopped(truncated)
        error = result.error
        if error and ("timeout" in error or "timed out" in error):
            return self._done(TIMED_OUT, None, self._time_message(), truncated)
        if error:
            return self._done(FAILED, result.exit_code, error, truncated)
        code = result.exit_code
        if restored and code == 0:
            code = 1
        return self._done(EXITED, code, None, truncated)

    def _restore_roots(self) -> bool:
        """A writable root removed by a command we do not guard (`find -delete`) is created again."""
        restored = False
        for host, point, writable in self.request.mounts:
            if writable and not os.path.isdir(host):
                try:
                    os.makedirs(host, exist_ok=True)
                except OSError:
                    continue
                restored = True
                self._sink("", f"shell: {point} was removed; a workspace root cannot be removed, so it was created "
                               f"again, empty. To empty it instead: find {point} -mindepth 1 -delete\n")
        return restored

    def _time_message(self) -> str:
        return f"shell: stopped at the time limit ({self.limits.timeout_s:g} s)"

    def _stopped(self, truncated: bool = False) -> dict[str, Any]:
        if self.budget.reason == CANCEL:
            return self._done(CANCELLED, None, "shell: cancelled", truncated)
        return self._done(TIMED_OUT, None, self._time_message(), truncated)

    def _done(self, status: str, code: int | None, error: str | None, truncated: bool = False) -> dict[str, Any]:
        reason = self.budget.reason or (TIMEOUT if status == TIMED_OUT else None)
        return {"status": status, "exit_code": code, "error": error, "truncated": truncated, "reason": reason}


_real: OrderedDict[tuple[str, bool], Any] = OrderedDict()
REAL_FS_CACHE = 32


def _real_fs(host: str, writable: bool) -> Any:
    """bashkit's real-folder filesystem for a root, kept for the next calls (building one costs ~30 µs
    and a worker serves the same workspace call after call). A kept one stays safe: it checks every
    path against the root it resolved when built, so a root later replaced by a symbolic link is
    refused ("path escapes realfs root"), and the host never sends such a root anyway."""
    from bashkit import FileSystem

    key = (host, writable)
    fs = _real.get(key)
    if fs is None or not os.path.isdir(host):
        fs = _real[key] = FileSystem.real(host, writable=writable)
        if len(_real) > REAL_FS_CACHE:
            _real.popitem(last=False)
    else:
        _real.move_to_end(key)
    return fs


def _is_dir(bash: Any, path: str) -> bool:
    try:
        return bash.fs().stat(path).get("file_type") == "directory"
    except Exception:
        return False
