"""The shell worker process: runs one shell call at a time for the host.

Started by `pool.py` with `BOOTSTRAP`, which loads only `tooldeck.shell` (not the `tooldeck`
package: its imports would cost a third of a second per worker). Three pipes: the host sends RUN
frames on stdin, read by the main thread, which runs the call at once (no hand-over between threads
on the way); STOP frames on a control pipe (`CONTROL_FD_ENV` names its descriptor), read by a
monitor thread; the worker's frames go out on stdout. The monitor also stops a call at its deadline
(so the deadline holds even when the host is slow to send STOP) and sends output a call held
past `HOLD_S`. End of either input stops the running call and ends the process. The host kills the
whole process group (this process and its monty processes) when a call does not stop within its
grace period.
"""

from __future__ import annotations

import os
import select
import sys
import threading
import time
from typing import Any

from tooldeck.shell import protocol
from tooldeck.shell.budget import CANCEL, TIMEOUT, Budget

CONTROL_FD_ENV = "TOOLDECK_SHELL_CONTROL_FD"

BOOTSTRAP = """
import sys, types
root = sys.argv[1]
for extra in sys.argv[2:]:
    if extra not in sys.path:
        sys.path.append(extra)
for name, path in (("tooldeck", root), ("tooldeck.shell", root + "/shell")):
    module = types.ModuleType(name)
    module.__path__ = [path]
    sys.modules[name] = module
from tooldeck.shell.worker import main
main()
"""


class _Channel:
    """Frames out on fd 1; a write the host no longer reads stops the current call."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock = threading.Lock()
        self.broken = False

    def send(self, data: bytes) -> bool:
        with self.lock:
            if self.broken:
                return False
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(self.fd, view):]
            except OSError:
                self.broken = True
                return False
            return True


class _Output:
    """A call's output frames. What a call prints in its first `HOLD_S` is held and leaves with the
    next output or the DONE, so a short call costs the host one wakeup; after that every chunk goes
    out at once (the monitor sends what is held when the call outlives `HOLD_S` without printing
    more). Each stream is cut at its byte limit."""

    HOLD_S = 0.005
    HOLD_BYTES = 32 * 1024

    def __init__(self, channel: _Channel, limits: tuple[int, int]) -> None:
        self.channel = channel
        self.limits = limits
        self.sent = [0, 0]
        self.cut = [False, False]
        self.buf = bytearray()
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.broken = False

    def emit(self, out: str, err: str) -> None:
        with self.lock:
            for i, (kind, text) in enumerate(((protocol.STDOUT, out), (protocol.STDERR, err))):
                if not text or self.cut[i]:
                    continue
                data = text.encode("utf-8", "replace")
                room = self.limits[i] - self.sent[i]
                if len(data) > room:
                    data, self.cut[i] = data[:room].decode("utf-8", "ignore").encode("utf-8"), True
                if data:
                    self.sent[i] += len(data)
                    self.buf += protocol.frame(kind, data)
            if self.buf and (len(self.buf) >= self.HOLD_BYTES or time.monotonic() - self.started >= self.HOLD_S):
                self._send(b"")

    def flush(self, *, due_only: bool = False, wait: bool = True) -> None:
        """Send what is held (with `due_only`, only once the call is `HOLD_S` old); `wait=False` skips it
        rather than wait for a write in progress (the monitor must never block on a host that does not
        read)."""
        if not self.lock.acquire(blocking=wait):
            return
        try:
            if self.buf and (not due_only or time.monotonic() - self.started >= self.HOLD_S):
                self._send(b"")
        finally:
            self.lock.release()

    def finish(self, last: bytes) -> None:
        with self.lock:
            self._send(last)

    def _send(self, tail: bytes) -> None:
        data = bytes(self.buf) + tail
        self.buf.clear()
        if data and not self.channel.send(data):
            self.broken = True


class _Call:
    """The running call: its budget, its output, whether the main thread is done with it."""

    def __init__(self, call_id: int, budget: Budget, output: _Output) -> None:
        self.id = call_id
        self.budget = budget
        self.output = output
        self.finished = False
        self.held_checked = False


class Worker:
    def __init__(self, in_fd: int = 0, out_fd: int = 1, control_fd: int | None = None) -> None:
        self.in_fd = in_fd
        self.control_fd = control_fd
        self.out = _Channel(out_fd)
        self.lock = threading.Lock()
        self.current: _Call | None = None
        self.finished_id = 0
        self.early_stops: dict[int, str] = {}
        self.host_gone = False
        self.wake_r, self.wake_w = os.pipe()
        self.spare: Any = None
        """The interpreter for the next call, built while this worker waits for it."""
        self.warm = False

    # -- the monitor thread ---------------------------------------------------------------------------
    def monitor(self) -> None:
        """STOP frames, the running call's deadline, and output it held past `HOLD_S`.

        Woken once when a call starts; then it sleeps until the call is `HOLD_S` old (to send what the
        call held, if anything), then until its deadline, unless a STOP comes first. It takes the
        interpreter lock only at those moments: a thread that woke on a timer would contend for it
        with the call all along (on a loaded machine a descheduled lock holder stalls the call).
        """
        reader = protocol.FrameReader()
        sources = [self.wake_r] + ([self.control_fd] if self.control_fd is not None else [])
        try:
            while True:
                with self.lock:
                    call = self.current
                wait = None
                if call is not None and not call.finished:
                    due = call.budget.deadline if call.held_checked else call.output.started + _Output.HOLD_S
                    wait = max(0.0, due - time.monotonic())
                ready = select.select(sources, [], [], wait)[0]
                if call is not None and not call.finished:
                    now = time.monotonic()
                    if not call.held_checked and now >= call.output.started + _Output.HOLD_S:
                        call.held_checked = True
                        call.output.flush(wait=False)
                    if now >= call.budget.deadline:
                        call.budget.stop(TIMEOUT)  # the deadline, even if the host's STOP is late
                if self.wake_r in ready:
                    os.read(self.wake_r, 64)
                if self.control_fd in ready:
                    data = os.read(self.control_fd, 1 << 16)
                    if not data:
                        break
                    for kind, payload in reader.feed(data):
                        if kind == protocol.STOP:
                            msg = protocol.load(payload)
                            self.stop(int(msg.get("id", -1)), str(msg.get("reason") or CANCEL))
        except (OSError, ValueError, protocol.ProtocolError):
            pass
        self.gone()

    def gone(self) -> None:
        """The host is gone: stop what runs; the main thread ends at the end of its input."""
        with self.lock:
            self.host_gone = True
            call = self.current
        if call is not None:
            call.budget.stop(CANCEL)

    def stop(self, call_id: int, reason: str) -> None:
        with self.lock:
            call = self.current
            if call is None or call.id != call_id:
                if call_id > self.finished_id and (call is None or call_id > call.id):
                    self.early_stops[call_id] = reason  # a STOP that overtook its RUN; a later one is stale
                return
        call.output.flush(wait=False)  # what it printed so far is out before the host might kill this process
        call.budget.stop(reason if reason in (TIMEOUT, CANCEL) else CANCEL)

    # -- the main thread ------------------------------------------------------------------------------
    def serve(self) -> None:
        threading.Thread(target=self.monitor, name="tooldeck-shell-monitor", daemon=True).start()
        reader = protocol.FrameReader()
        try:
            while True:
                if self.spare is None and not reader.pending and not select.select([self.in_fd], [], [], 0)[0]:
                    self.prepare_next()  # nothing waits: build the next call's interpreter now
                if not self.warm and not select.select([self.in_fd], [], [], 0)[0]:
                    self.warm_up()
                data = os.read(self.in_fd, 1 << 16)
                if not data:
                    break
                for kind, payload in reader.feed(data):
                    if kind == protocol.RUN:
                        self.run(protocol.load(payload))
        except (OSError, ValueError, protocol.ProtocolError):
            pass
        self.gone()

    def warm_up(self) -> None:
        """Once, while idle: start the monty pool and load QuickJS, so a call's first `python3` or
        `node` does not pay for them (about 35 ms and 20 ms)."""
        self.warm = True
        try:
            import tooldeck.shell.js
            import tooldeck.shell.python_os  # noqa: F401
            from tooldeck.shell.python import warm_pool

            warm_pool()
        except Exception:  # the first call that needs them starts them, and reports what fails
            pass

    def prepare_next(self) -> None:
        from tooldeck.shell.limits import ShellLimits
        from tooldeck.shell.sandbox import Interpreter

        try:
            self.spare = Interpreter.build(ShellLimits())
        except Exception:  # the call builds its own, and reports what fails
            self.spare = None

    def run(self, request: dict[str, Any]) -> None:
        from tooldeck.shell.sandbox import FAILED, CallRequest, Sandbox

        call = _Call(int(request.get("id", 0)), Budget(float(request.get("timeout", 30.0))),
                     _Output(self.out, _stream_limits(request)))
        with self.lock:
            self.current = call
            early = self.early_stops.pop(call.id, None)
            gone = self.host_gone
        os.write(self.wake_w, b"!")  # the monitor watches this call from now on
        if early is not None or gone:
            call.budget.stop(early or CANCEL)
        budget, output = call.budget, call.output

        def emit(out: str, err: str) -> None:
            output.emit(out, err)
            if output.broken:  # the host no longer reads
                budget.stop(CANCEL)

        interpreter, self.spare = self.spare, None
        try:
            done = Sandbox(CallRequest.from_dict(request), budget, emit, output.flush, interpreter).run()
        except BaseException as exc:  # a fault of our own code: reported, and this worker keeps serving
            import traceback

            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            output.finish(protocol.json_frame(protocol.FAULT, {"id": call.id, "traceback": text[-8000:]}))
            done = {"status": FAILED, "exit_code": None, "error": f"shell: internal error: {type(exc).__name__}: "
                                                                    f"{exc}", "truncated": False, "reason": None}
            if not isinstance(exc, Exception):
                raise
        finally:
            call.finished = True
            with self.lock:
                self.current = None
                self.finished_id = max(self.finished_id, call.id)
                self.early_stops = {k: v for k, v in self.early_stops.items() if k > call.id}
        done["id"] = call.id
        done["stream_truncated"] = output.cut[0] or output.cut[1]
        output.finish(protocol.json_frame(protocol.DONE, done))


def _stream_limits(request: dict[str, Any]) -> tuple[int, int]:
    stream = request.get("stream_bytes") or [1 << 20, 1 << 20]
    return int(stream[0]), int(stream[1])


def main() -> None:
    """The worker's entry point (see `BOOTSTRAP`)."""
    sys.stdout = sys.stderr  # nothing but frames may reach fd 1
    control = os.environ.get(CONTROL_FD_ENV)
    Worker(control_fd=int(control) if control else None).serve()
