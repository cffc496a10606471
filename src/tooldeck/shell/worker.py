"""The shell worker process: runs one shell call at a time for the host, over its stdin and stdout.

Started by `pool.py` with `BOOTSTRAP`, which loads only `tooldeck.shell` (not the `tooldeck`
package: its imports would cost a third of a second per worker). A reader thread takes frames from
the host: RUN queues a call, STOP stops the running call (if its id matches), end of input stops it
and ends the process. The main thread runs the calls; a watchdog thread stops a call at its
deadline. The host kills the whole process group (this process and its monty processes) when a
call does not stop within its grace period.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from typing import Any

from tooldeck.shell import protocol
from tooldeck.shell.budget import CANCEL, TIMEOUT, Budget, Watchdog

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


class _Call:
    """The running call, as the reader thread sees it."""

    def __init__(self, call_id: int, budget: Budget) -> None:
        self.id = call_id
        self.budget = budget


class Worker:
    def __init__(self, in_fd: int = 0, out_fd: int = 1) -> None:
        self.in_fd = in_fd
        self.out = _Channel(out_fd)
        self.calls: queue.SimpleQueue[tuple[dict[str, Any], float] | None] = queue.SimpleQueue()
        self.watchdog = Watchdog()
        self.lock = threading.Lock()
        self.current: _Call | None = None
        self.finished_id = 0
        self.early_stops: dict[int, str] = {}

    # -- the reader thread ----------------------------------------------------------------------------
    def read_frames(self) -> None:
        reader = protocol.FrameReader()
        try:
            while True:
                data = os.read(self.in_fd, 1 << 16)
                if not data:
                    break
                for kind, payload in reader.feed(data):
                    if kind == protocol.RUN:
                        self.calls.put((protocol.load(payload), time.monotonic()))
                    elif kind == protocol.STOP:
                        msg = protocol.load(payload)
                        self.stop(int(msg.get("id", -1)), str(msg.get("reason") or CANCEL))
        except (OSError, ValueError, protocol.ProtocolError):
            pass
        with self.lock:
            call = self.current
        if call is not None:  # the host is gone: stop what runs, then end
            call.budget.stop(CANCEL)
        self.calls.put(None)

    def stop(self, call_id: int, reason: str) -> None:
        with self.lock:
            call = self.current
            if call is None or call.id != call_id:
                if call_id > self.finished_id:  # a STOP that overtook its RUN in the queue; a later one is stale
                    self.early_stops[call_id] = reason
                return
        call.budget.stop(reason if reason in (TIMEOUT, CANCEL) else CANCEL)

    # -- the main thread ------------------------------------------------------------------------------
    def serve(self) -> None:
        threading.Thread(target=self.read_frames, name="tooldeck-shell-reader", daemon=True).start()
        while True:
            item = self.calls.get()
            if item is None:
                return
            request, received = item
            self.run(request, received)

    def run(self, request: dict[str, Any], received: float) -> None:
        from tooldeck.shell.sandbox import FAILED, CallRequest, Sandbox

        call_id = int(request.get("id", 0))
        budget = Budget(float(request.get("timeout", 30.0)), started=received)
        with self.lock:
            self.current = _Call(call_id, budget)
            early = self.early_stops.pop(call_id, None)
        if early is not None:
            budget.stop(early)
        self.watchdog.watch(budget)
        limits = _stream_limits(request)
        sent = [0, 0]
        cut = [False, False]

        def emit(out: str, err: str) -> None:
            for i, (kind, text) in enumerate(((protocol.STDOUT, out), (protocol.STDERR, err))):
                if not text or cut[i]:
                    continue
                data = text.encode("utf-8", "replace")
                room = limits[i] - sent[i]
                if len(data) > room:
                    data, cut[i] = data[:room].decode("utf-8", "ignore").encode("utf-8"), True
                sent[i] += len(data)
                if data and not self.out.send(protocol.frame(kind, data)):
                    budget.stop(CANCEL)

        try:
            done = Sandbox(CallRequest.from_dict(request), budget, emit).run()
        except BaseException as exc:  # a fault of our own code: reported, and this worker keeps serving
            import traceback

            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            self.out.send(protocol.json_frame(protocol.FAULT, {"id": call_id, "traceback": text[-8000:]}))
            done = {"status": FAILED, "exit_code": None, "error": f"shell: internal error: {type(exc).__name__}: "
                                                                    f"{exc}", "truncated": False, "reason": None}
            if not isinstance(exc, Exception):
                raise
        finally:
            self.watchdog.watch(None)
            with self.lock:
                self.current = None
                self.finished_id = max(self.finished_id, call_id)
        done["id"] = call_id
        done["stream_truncated"] = cut[0] or cut[1]
        self.out.send(protocol.json_frame(protocol.DONE, done))


def _stream_limits(request: dict[str, Any]) -> tuple[int, int]:
    stream = request.get("stream_bytes") or [1 << 20, 1 << 20]
    return int(stream[0]), int(stream[1])


def main() -> None:
    """The worker's entry point (see `BOOTSTRAP`)."""
    sys.stdout = sys.stderr  # nothing but frames may reach fd 1
    Worker().serve()
