"""One shell call, seen from the host: prepare it, run it on a worker process, stop it in time.

`ShellRun.run` (blocking) and `ShellRun.arun` (async, no thread) drive the same `Session`: send the
call to a worker from `pool.py`, collect its output frames, and at the deadline (or on `cancel()`)
send STOP. A worker stops a call by itself at the deadline and on STOP (the interpreter at its next
command boundary, `python3` by killing its monty process, `sleep` at once); one that has not
reported the outcome `stop_grace_s` later is killed with its process group, and the call reports
what it printed so far. So a call always ends within `stop_grace_s` of its deadline or cancel, and
nothing it started runs on.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooldeck.shell.layout import Layout
from tooldeck.shell.limits import KIB, ShellLimits
from tooldeck.shell.output import CappedText, clip
from tooldeck.shell.pool import Worker, WorkerUnavailable, get_pool
from tooldeck.shell.results import ShellResult, Status
from tooldeck.shell.session import CANCEL, Session
from tooldeck.shell.text import surrogate_note, well_formed

OutputSink = Callable[[str, str], None]
"""Receives `(stdout_chunk, stderr_chunk)` as the command produces output."""

_ids = itertools.count(1)


class ShellRun:
    """Build with the layout and limits, then `run(command)` or `await arun(command)` once; `cancel()`
    from any thread."""

    def __init__(self, layout: Layout, limits: ShellLimits, workdir: str = "/",
                 on_output: OutputSink | None = None, *, stream_bytes: int | None = None) -> None:
        self.layout = layout
        self.limits = limits
        self.workdir = workdir or "/"
        self.on_output = on_output
        self.stream_bytes = stream_bytes
        self.started = time.monotonic()
        self.deadline = self.started + limits.timeout_s
        self.stdout = CappedText(limits.max_stdout_bytes)
        self.stderr = CappedText(limits.max_stderr_bytes)
        self._cancelled = False
        self._session: Session | None = None
        self._lock = threading.Lock()

    # -- control ------------------------------------------------------------------------------------------
    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            session = self._session
        if session is not None:
            session.stop(CANCEL)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    # -- running ------------------------------------------------------------------------------------------
    def run(self, command: str) -> ShellResult:
        prepared = self._prepare(command)
        if isinstance(prepared, ShellResult):
            return prepared
        session = self._open(prepared, lambda: get_pool().checkout(self.deadline))
        if isinstance(session, ShellResult):
            return session
        session.drive()
        return session.finish()

    async def arun(self, command: str) -> ShellResult:
        """Run without a thread: the worker's pipe is watched by the running loop.

        Cancelling the awaiting task stops the call (STOP, then the kill after the grace period, on a
        background thread) and re-raises; `cancelled_result()` then gives what it printed so far.
        """
        prepared = self._prepare(command)
        if isinstance(prepared, ShellResult):
            return prepared
        loop = asyncio.get_running_loop()
        pool = get_pool()

        def checkout() -> Worker:
            try:
                return pool.checkout(time.monotonic())  # an idle worker or a new one, never a wait
            except WorkerUnavailable:
                if time.monotonic() >= self.deadline:
                    raise
            raise _MustWait

        try:
            session = self._open(prepared, checkout)
        except _MustWait:
            session = await self._open_waiting(prepared, loop)
        if isinstance(session, ShellResult):
            return session
        try:
            await session.drive_async(loop)
        except asyncio.CancelledError:
            self.cancel()
            session.detach_async()
            pool.in_background(session.drive)  # STOP was sent; wait the grace period, kill if need be
            raise
        return session.finish()

    async def _open_waiting(self, prepared: _Prepared, loop: asyncio.AbstractEventLoop) -> Session | ShellResult:
        """Wait on a thread for a busy pool to free a worker. If the caller is cancelled meanwhile, the
        session that thread opens (already stopped by `cancel()`) is driven to its end by whichever side
        sees it last, so its worker always goes back to the pool."""
        slot: list[Session | ShellResult] = []
        gone = [False]

        def wait_and_open() -> Session | ShellResult:
            result = self._open(prepared, lambda: get_pool().checkout(self.deadline))
            with self._lock:
                orphan = gone[0]
                if not orphan:
                    slot.append(result)
            if orphan and isinstance(result, Session):
                result.drive()
            return result

        future = loop.run_in_executor(None, wait_and_open)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            with self._lock:
                gone[0] = True
                opened = slot[0] if slot else None
            self.cancel()
            if isinstance(opened, Session):
                get_pool().in_background(opened.drive)
            raise

    def cancelled_result(self) -> ShellResult:
        """The outcome to report when the caller cancelled the run: cancelled, with the output so far."""
        return self._outcome(Status.CANCELLED, None, "shell: cancelled", False)

    # -- internals ----------------------------------------------------------------------------------------
    def _prepare(self, command: str) -> _Prepared | ShellResult:
        size = len(command.encode("utf-8", "surrogatepass"))
        if size > self.limits.max_command_bytes:
            return self._failed(f"the command is {size} bytes; the limit is {self.limits.max_command_bytes // KIB} "
                                "KiB. Write a long script to a file in scratch/ and run it with `bash file.sh`.")
        if self._cancelled:
            return self._outcome(Status.CANCELLED, None, "shell: cancelled", False)
        try:
            mounts, notes = self.layout.mounts()
        except OSError as exc:
            return self._failed(f"the workspace could not be prepared for the shell: {exc.strerror or exc}")
        note = surrogate_note(command)
        if note is not None:
            notes.append(note)
        stream = self.stream_bytes
        request = {
            "command": well_formed(command),
            "workdir": well_formed(self.workdir),
            "mounts": [[str(m.host_path), m.vfs_path, m.writable] for m in mounts],
            "notes": notes,
            "limits": self.limits.to_dict(),
            "replaced_text": note is not None,
            "stream_bytes": [stream or self.limits.max_stdout_bytes + 1, stream or self.limits.max_stderr_bytes + 1],
        }
        return _Prepared(request, [m.host_path for m in mounts if m.writable])

    def _open(self, prepared: _Prepared, checkout: Callable[[], Worker]) -> Session | ShellResult:
        """Check out a worker and send it the call; a worker that died while idle is replaced once."""
        pool = get_pool()
        for _ in range(3):
            try:
                worker = checkout()
            except WorkerUnavailable as exc:
                if time.monotonic() >= self.deadline:
                    return self._outcome(Status.TIMED_OUT, None, f"shell: {exc}", False)
                return self._failed(str(exc))
            session = Session(self, worker, dict(prepared.request, id=next(_ids)), prepared.writable)
            with self._lock:
                cancelled = self._cancelled
                if not cancelled:
                    self._session = session
            if cancelled:  # cancelled while it waited for a worker: nothing is started
                pool.checkin(worker)
                return self._outcome(Status.CANCELLED, None, "shell: cancelled", False)
            try:
                session.start()
            except OSError:
                worker.kill(())
                pool.discard(worker)
                continue
            return session
        return self._failed("the shell's worker process could not be started")

    def _sink(self, out: str, err: str) -> None:
        self.stdout.write(out)
        self.stderr.write(err)
        if self.on_output is not None:
            self.on_output(out, err)

    def _failed(self, message: str) -> ShellResult:
        return ShellResult(Status.FAILED, None, "", message, False, message, self.elapsed())

    def _outcome(self, status: Status, code: int | None, error: str | None, truncated: bool,
                 killed: bool = False) -> ShellResult:
        out, err = self.stdout.text, self.stderr.text
        if error and error not in err:
            err = f"{err}{'' if not err or err.endswith(chr(10)) else chr(10)}{error}\n"
        out, cut_out = clip(out, self.limits.max_stdout_bytes)
        err, cut_err = clip(err, self.limits.max_stderr_bytes)
        truncated = truncated or cut_out or cut_err or self.stdout.truncated or self.stderr.truncated
        return ShellResult(status, code, out, err, truncated, error, self.elapsed(), killed)


@dataclass(frozen=True, slots=True)
class _Prepared:
    request: dict[str, Any]
    writable: list[Path]
    """The writable roots' host folders: where a killed worker's staging files are looked for."""


class _MustWait(Exception):
    """Every worker is busy: the async caller waits for one on a thread."""
