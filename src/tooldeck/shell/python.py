"""`python` / `python3`: a Python subset (pydantic-monty) as a bashkit builtin.

The code runs in a `monty` process from this shell worker's own pool, under a memory cap and the
shell call's remaining time. When the call is stopped (its deadline, a cancel), that monty process
is killed (at once on a cancel; `KILL_AFTER_S` after the deadline, so that monty's own
`TimeoutError` and its traceback usually come first) and the pool starts a fresh one. Its files are
the shell's files (through `ShellFsOS`); it has no subprocess, socket, host environment or host
files. bashkit's own embedded Python lacks `re`,
`collections`, `itertools`, dataclasses and inheritance; monty has all but inheritance.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
from typing import Any

from tooldeck.shell import vfs
from tooldeck.shell.budget import CANCEL, Budget
from tooldeck.shell.limits import MIB, ShellLimits
from tooldeck.shell.output import CappedText
from tooldeck.shell.text import REPLACEMENT, well_formed

VERSION = "Python 3.14 subset (pydantic-monty 1.4.0, tooldeck sandbox)"
HELP = """usage: python3 [-c CODE | FILE | -] [ARG...]

Runs a Python subset (pydantic-monty) in a sandboxed worker. Available: json, re, math, collections,
itertools, functools, datetime, dataclasses, decimal, random, hashlib, base64, time, typing, pathlib,
tomllib, match statements, decorators, async/await, open()/pathlib on the shell's files (paths relative
to the shell's current directory). Script arguments: the global list `argv` (sys.argv holds only the
script name). End with exit(N) or quit(N) (sys.exit does not exist).
Not available: class inheritance, generator functions (yield), csv/io, sys.stdin, input(),
subprocess, sockets, pip and third-party packages.
"""

_EXIT_MARK = "__tooldeck_exit__"
KILL_AFTER_S = 0.2
_pool_lock = threading.Lock()
_pool: Any = None


def _get_pool() -> Any:
    """This worker process's monty pool (a shell call runs one `python3` at a time, rarely two with `&`)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            from pydantic_monty import Monty

            pool = Monty(min_processes=1, max_processes=2, max_checkouts_per_worker=500)
            pool.__enter__()
            atexit.register(pool.__exit__, None, None, None)
            _pool = pool
        return _pool


def warm_pool() -> None:
    """Start this worker's monty pool ahead of the first `python3` (the worker calls it while idle)."""
    _get_pool()


class _Exit(Exception):
    """Raised by `exit()`/`quit()` to end the program; the code travels beside it."""


def _result(stdout: str = "", stderr: str = "", exit_code: int = 0) -> Any:
    from bashkit import BuiltinResult

    return BuiltinResult(stdout, stderr, exit_code)


def _parse(argv: list[str]) -> tuple[str | None, str | None, list[str], str | None]:
    """(code, script, args, special) where special is 'help' or 'version'."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "-c":
            if i + 1 >= len(argv):
                raise ValueError("Argument expected for the -c option")
            return argv[i + 1], None, ["-c", *argv[i + 2:]], None
        if arg in ("-h", "--help"):
            return None, None, [], "help"
        if arg in ("-V", "--version"):
            return None, None, [], "version"
        if arg == "-m":
            raise ValueError("-m is not supported: there are no installed modules to run")
        if arg == "-" or not arg.startswith("-"):
            return None, arg, [arg, *argv[i + 1:]], None
        i += 1  # -u, -B, -I, -E, -O ... change nothing here
    return None, None, [""], None


class _Killer:
    """Kills one monty worker process when the call stops; a pidfd makes sure it is that process."""

    def __init__(self, pid: int | None, budget: Budget) -> None:
        self.budget = budget
        self.pid = pid
        self.fd: int | None = None
        self.killed = False
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        if pid is not None and hasattr(os, "pidfd_open"):
            try:
                self.fd = os.pidfd_open(pid)
            except OSError:
                self.fd = None

    def on_stop(self) -> None:
        if self.budget.reason == CANCEL:
            self.kill()
        else:
            self._timer = threading.Timer(KILL_AFTER_S, self.kill)
            self._timer.daemon = True
            self._timer.start()

    def kill(self) -> None:
        with self._lock:
            if self.pid is None or self.killed:
                return
            self.killed = True
            try:
                if self.fd is not None:
                    signal.pidfd_send_signal(self.fd, signal.SIGKILL)
                else:
                    os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass

    def close(self) -> None:
        with self._lock:
            self.pid = None  # a finished feed: the process went back to the pool, never kill it now
            if self._timer is not None:
                self._timer.cancel()
            if self.fd is not None:
                os.close(self.fd)
                self.fd = None


class PythonProgram:
    def __init__(self, ctx: Any, budget: Budget, limits: ShellLimits, roots: vfs.Roots | None = None,
                 *, replaced_text: bool = False) -> None:
        self.ctx = ctx
        self.cwd: str = ctx.cwd or "/"
        self.budget = budget
        self.limits = limits
        self.roots = roots or vfs.Roots()
        self.replaced_text = replaced_text

    def main(self, argv: list[str]) -> Any:
        try:
            code, script, args, special = _parse(argv)
        except ValueError as exc:
            return _result("", f"python3: {exc}\n", 2)
        if special == "help":
            return _result(HELP)
        if special == "version":
            return _result(VERSION + "\n")
        script_name = "<string>"
        if code is None:
            if script and script != "-":
                try:
                    path = vfs.resolve(self.cwd, script)
                    code = vfs.read_text(self.ctx.fs, path, self.limits.max_script_bytes)
                except OSError as exc:
                    return _result("", f"python3: can't open file '{script}': [Errno {exc.errno}] {exc.strerror}\n", 2)
                script_name = path
            elif self.ctx.stdin is not None:
                code, script_name = self.ctx.stdin, "<stdin>"
            else:
                return _result("", "python3: no program given (the sandbox has no REPL); use -c CODE or a file\n", 2)
        if self.replaced_text and REPLACEMENT in code and script_name in ("<string>", "<stdin>"):
            return _result("", f'  File "{script_name}"\nSyntaxError: the program held a lone surrogate, which is not '
                               "valid Unicode (the shell replaced it by U+FFFD); write the text as valid Unicode\n", 1)
        remaining = self.budget.remaining()
        if remaining <= 0:
            return _result("", "python3: the shell's time limit was already reached\n", 124)
        return self._run(code, script_name, args, remaining)

    def _run(self, code: str, script_name: str, args: list[str], remaining: float) -> Any:
        from pydantic_monty import MontyCrashedError, MontyError, MontyRuntimeError, MontySyntaxError

        from tooldeck.shell.python_os import ShellFsOS

        stdout = CappedText(self.limits.max_stdout_bytes + 1)
        stderr = CappedText(self.limits.max_stderr_bytes + 1)

        def printed(stream: str, text: str) -> None:
            (stderr if stream == "stderr" else stdout).write(text)

        limits = {"max_feed_duration_secs": remaining, "max_memory": self.limits.python_memory_bytes,
                  "max_suspensions": self.limits.python_max_os_calls, "max_total_sleep_secs": remaining}
        os_policy = {"sleep": "system", "sleep_system_max": max(remaining, 0.001)}
        handler = ShellFsOS(self.ctx.fs, self.cwd, dict(self.ctx.env or {}), budget=self.budget, roots=self.roots,
                            max_read_bytes=self.limits.max_script_bytes * 8,
                            max_write_bytes=self.limits.max_file_bytes)
        requested: list[int] = []

        def exit_(code: object = 0) -> None:
            requested.append(code if isinstance(code, int) else 0 if code is None else 1)
            if isinstance(code, str):
                stderr.write(code + "\n")
            raise _Exit(_EXIT_MARK)

        exit_code = 0
        killer: _Killer | None = None
        unregister = None
        try:
            with _get_pool().checkout(script_name=script_name, limits=limits, os_policy=os_policy) as session:
                killer = _Killer(session.worker_pid, self.budget)
                unregister = self.budget.on_stop(killer.on_stop)
                try:
                    session.feed_run(code, inputs={"argv": args}, print_callback=printed, os=handler, cwd=self.cwd,
                                     external_lookup={"exit": exit_, "quit": exit_})
                finally:
                    unregister()
                    killer.close()
        except (MontyRuntimeError, MontySyntaxError) as exc:
            exit_code = requested[0] & 0xFF if requested and _EXIT_MARK in str(exc) else self._report(exc, stderr)
        except MontyCrashedError as exc:
            if killer is not None and killer.killed:
                stopped = "cancelled" if self.budget.reason == CANCEL else \
                    f"stopped at the shell's time limit ({self.limits.timeout_s:g} s for the whole call)"
                stderr.write(f"python3: {stopped}\n")
                exit_code = 130 if self.budget.reason == CANCEL else 124
            else:
                stderr.write(f"python3: the Python worker stopped ({exc}); it is restarted for the next run\n")
                exit_code = 124 if getattr(exc, "timed_out", False) else 1
        except MontyError as exc:
            stderr.write(f"python3: {exc}\n")
            exit_code = 1
        except Exception as exc:  # a failure of the bridge itself is this command's error, never the call's
            stderr.write(f"python3: internal error: {type(exc).__name__}: {exc}\n")
            exit_code = 1
        return _result(well_formed(stdout.text), well_formed(stderr.text), exit_code)

    def _report(self, exc: Any, stderr: CappedText) -> int:
        text = str(exc)
        stderr.write(exc.display() + "\n")
        if text.startswith("TimeoutError") and "time limit" in text:
            stderr.write(f"python3: time limit exceeded ({self.limits.timeout_s:g} s for the whole shell call)\n")
            return 124
        if text.startswith("MemoryError"):
            stderr.write(f"python3: memory limit is {self.limits.python_memory_bytes // MIB} MiB\n")
        return 1
