"""One shell call on one worker process, as the host drives it: frames in, STOP at the deadline or on
cancel, the kill after the grace period (`engine.ShellRun` opens and finishes it)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import threading
import time
from typing import TYPE_CHECKING, Any

from tooldeck.shell import protocol
from tooldeck.shell.pool import Worker, get_pool
from tooldeck.shell.results import ShellResult, Status

if TYPE_CHECKING:
    from pathlib import Path

    from tooldeck.shell.engine import ShellRun

TIMEOUT, CANCEL = "timeout", "cancel"


class Session:
    """One call on one worker: frames in, STOP at the deadline, the kill after the grace period."""

    def __init__(self, run: ShellRun, worker: Worker, request: dict[str, Any], writable: list[Path]) -> None:
        self.run = run
        self.worker = worker
        self.request = request
        self.id: int = request["id"]
        self.writable = writable
        self.reader = protocol.FrameReader()
        self.done: dict[str, Any] | None = None
        self.fault: str | None = None
        self.eof = False
        self.killed = False
        self.removed_temps: list[str] = []
        self.last_error = ""
        self.stopping: str | None = None
        self.kill_at: float | None = None
        self.finished = False
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._future: asyncio.Future[None] | None = None

    def start(self) -> None:
        self.request["timeout"] = max(self.run.deadline - time.monotonic(), 0.0)
        self.worker.writable = self.writable
        self.worker.send(protocol.json_frame(protocol.RUN, self.request))

    # -- events -------------------------------------------------------------------------------------------
    def stop(self, reason: str) -> None:
        with self._lock:
            if self.stopping is not None or self.finished:
                return
            self.stopping = reason
            self.kill_at = time.monotonic() + self.run.limits.stop_grace_s
        with contextlib.suppress(OSError):
            self.worker.send(protocol.json_frame(protocol.STOP, {"id": self.id, "reason": reason}), control=True)
        self._wake()

    def _wake(self) -> None:
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._reschedule)
        else:
            self.worker.wake()

    def _read(self) -> None:
        try:
            data = os.read(self.worker.rfd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.eof = True
            return
        for kind, payload in self.reader.feed(data):
            if kind == protocol.STDOUT:
                self.run._sink(payload.decode("utf-8", "replace"), "")
            elif kind == protocol.STDERR:
                self.run._sink("", payload.decode("utf-8", "replace"))
            elif kind == protocol.DONE:
                done = protocol.load(payload)
                if done.get("id") == self.id:
                    self.done = done
            elif kind == protocol.FAULT:
                self.fault = str(protocol.load(payload).get("traceback", ""))

    def _tick(self) -> None:
        now = time.monotonic()
        if self.stopping is None and now >= self.run.deadline:
            self.stop(TIMEOUT)
        if self.kill_at is not None and now >= self.kill_at and not self._over:
            self.killed = True
            self.removed_temps = self.worker.kill(self.writable)
            self.eof = True

    @property
    def _over(self) -> bool:
        return self.done is not None or self.eof

    def _next_wake(self) -> float:
        return self.kill_at if self.kill_at is not None else self.run.deadline

    # -- the blocking driver ------------------------------------------------------------------------------
    def drive(self) -> None:
        poller = select.poll()
        poller.register(self.worker.rfd, select.POLLIN | select.POLLHUP | select.POLLERR)
        poller.register(self.worker.wake_r, select.POLLIN)
        while not self._over:
            wait_ms = max(0, int((self._next_wake() - time.monotonic()) * 1000) + 1)
            for fd, _ in poller.poll(wait_ms):
                if fd == self.worker.rfd:
                    self._read()
                else:
                    self.worker.drain_wake()
            self._tick()
        if self._loop is None:
            self._settle()

    # -- the async driver ---------------------------------------------------------------------------------
    async def drive_async(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._future = loop.create_future()
        loop.add_reader(self.worker.rfd, self._on_readable)
        self._reschedule()
        await self._future
        self.detach_async()
        self._settle()

    def _on_readable(self) -> None:
        self._read()
        self._tick()
        self._check()

    def _reschedule(self) -> None:
        if self._loop is None:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._tick()
        if self._check():
            return
        self._timer = self._loop.call_at(self._loop.time() + max(self._next_wake() - time.monotonic(), 0),
                                         self._reschedule)

    def _check(self) -> bool:
        if self._over and self._future is not None and not self._future.done():
            self._future.set_result(None)
        return self._over

    def detach_async(self) -> None:
        """Hand the session back to a blocking driver (after the awaiting task was cancelled)."""
        loop = self._loop
        if loop is None:
            return
        with contextlib.suppress(Exception):
            loop.remove_reader(self.worker.rfd)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._loop = None

    # -- the end --------------------------------------------------------------------------------------------
    def _settle(self) -> None:
        """Return the worker to the pool (or forget it when it was killed or died)."""
        with self._lock:
            if self.finished:
                return
            self.finished = True
        pool = get_pool()
        if self.done is not None and not self.killed:
            pool.checkin(self.worker)
        else:
            if not self.killed:
                self.last_error = self.worker.last_error()
                self.worker.kill(self.writable)
            pool.discard(self.worker)

    def finish(self) -> ShellResult:
        run, done = self.run, self.done
        if done is not None and not self.killed:
            status = Status(done.get("status", "failed"))
            truncated = bool(done.get("truncated") or done.get("stream_truncated"))
            code = done.get("exit_code")
            return run._outcome(status, code if isinstance(code, int) else None, done.get("error"), truncated)
        grace = run.limits.stop_grace_s
        if self.stopping is not None:
            stopped = ("cancelled" if self.stopping == CANCEL
                       else f"stopped at the time limit ({run.limits.timeout_s:g} s)")
            message = (f"shell: {stopped}; a command did not stop within {grace:g} s, so its worker process was "
                       "killed (output it had not printed yet is lost)")
            status = Status.CANCELLED if self.stopping == CANCEL else Status.TIMED_OUT
            return run._outcome(status, None, message, False, killed=True)
        why = self.fault.strip().splitlines()[-1] if self.fault else self.last_error
        detail = f" ({why})" if why else ""
        return run._outcome(Status.FAILED, None, f"shell: the worker process stopped unexpectedly{detail}; the next "
                                                 "call gets a new one", False)
