"""The host's pool of shell worker processes (`worker.py`): one call at a time per worker.

Why processes: a shell call must stop within a second of its deadline or cancel whatever it runs,
and the host must stay responsive meanwhile. QuickJS holds the interpreter lock while it runs and
cannot be interrupted inside one long native operation; a thread cannot be killed; a process can.
A worker also carries the per-process limits the host cannot take on itself (`RLIMIT_FSIZE`).

A worker is reused across calls (its Python, bashkit and engines stay loaded, so a call costs a
round trip of two pipe writes); at most `max_idle` wait idle, and a worker is retired after
`max_runs` calls. A spare is started in the background when calls run side by side and when a
worker was killed, so the next call rarely waits for a worker to start (about 0.1 s). A worker that
did not stop in time is killed with its whole process group (its monty processes too); the
`.bashkit-tmp-*` staging files it had open, which bashkit would have renamed or removed, are
deleted (read from `/proc/<pid>/fd` while the group is stopped, so none can appear in between).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from tooldeck.shell.worker import BOOTSTRAP, CONTROL_FD_ENV

TEMP_PREFIX = ".bashkit-tmp-"


class WorkerUnavailable(Exception):
    """No worker could be had before the call's deadline, or none could be started."""


def _worker_argv() -> list[str]:
    package = Path(__file__).resolve().parent.parent
    extra: list[str] = []
    for name in ("bashkit", "jsbox", "pydantic_monty"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            parent = str(Path(spec.origin).resolve().parent.parent)
            if parent not in extra:
                extra.append(parent)
    return [sys.executable, "-I", "-c", BOOTSTRAP, str(package), *extra]


class Worker:
    def __init__(self, argv: list[str]) -> None:
        # The worker's stderr (a crash's traceback, bashkit's own warnings) goes to an unlinked file that is
        # read only when the worker dies unexpectedly; RLIMIT_FSIZE keeps it from growing past the file limit.
        self.errlog = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the worker; closed in close_fds)
        control_r, self.cfd = os.pipe()  # STOP frames go here, so a stop never waits behind a RUN
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errlog,
                                         bufsize=0, close_fds=True, pass_fds=(control_r,), start_new_session=True,
                                         cwd="/", env={"LANG": "C.UTF-8", "PATH": os.defpath,
                                                       CONTROL_FD_ENV: str(control_r)})
        except BaseException:
            self.errlog.close()
            os.close(self.cfd)
            raise
        finally:
            os.close(control_r)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.pid = self.proc.pid
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.runs = 0
        self.dead = False
        self.writable: list[Path] = []
        """The writable roots of the call it runs (where its staging files may be)."""
        self._wlock = threading.Lock()

    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def send(self, data: bytes, *, control: bool = False) -> None:
        """Write all of `data` to the worker's stdin (or its control pipe); OSError when it is gone."""
        fd = self.cfd if control else self.wfd
        with self._wlock:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]

    def wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self.wake_w, b"!")

    def drain_wake(self) -> None:
        with contextlib.suppress(OSError):
            while os.read(self.wake_r, 64):
                pass

    def kill(self, writable: Iterable[Path]) -> list[str]:
        """Kill the worker's process group; delete the bashkit staging files it had open under `writable`."""
        temps: list[str] = []
        if self.proc.returncode is None:
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGSTOP)
            temps = self._open_temp_files()
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self.dead = True
        roots = [str(Path(r).resolve()) + os.sep for r in writable]
        removed: list[str] = []
        for path in temps:
            if any(path.startswith(r) for r in roots):
                with contextlib.suppress(OSError):
                    os.unlink(path)
                    removed.append(path)
        self.close_fds()
        return removed

    def _open_temp_files(self) -> list[str]:
        found: list[str] = []
        fd_dir = f"/proc/{self.pid}/fd"
        try:
            names = os.listdir(fd_dir)
        except OSError:
            return found
        for name in names:
            try:
                target = os.readlink(f"{fd_dir}/{name}")
            except OSError:
                continue
            if os.path.basename(target).startswith(TEMP_PREFIX) and not target.endswith(" (deleted)"):
                found.append(target)
        return found

    def retire(self) -> None:
        """Ask an idle worker to end (end of its input), and reap it."""
        self.dead = True
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        with contextlib.suppress(OSError):
            os.close(self.cfd)
            self.cfd = -1
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=2)
        self.close_fds()

    def last_error(self) -> str:
        """The last line the worker wrote to its stderr (why it died), or ""."""
        try:
            size = self.errlog.seek(0, os.SEEK_END)
            self.errlog.seek(max(0, size - 4096))
            lines = self.errlog.read().decode("utf-8", "replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return lines[-1] if lines else ""

    def close_fds(self) -> None:
        with contextlib.suppress(OSError):
            self.errlog.close()
        for f in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if f is not None:
                    f.close()
        for fd in (self.wake_r, self.wake_w, self.cfd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.wake_r = self.wake_w = self.cfd = -1


class WorkerPool:
    def __init__(self, *, max_workers: int = 64, max_idle: int = 4, max_runs: int = 1000) -> None:
        self.max_workers = max_workers
        self.max_idle = max_idle
        self.max_runs = max_runs
        self._argv = _worker_argv()
        self._idle: list[Worker] = []
        self._busy: set[Worker] = set()
        self._cond = threading.Condition()
        self._chores: list[Callable[[], None]] = []
        self._janitor: threading.Thread | None = None
        self._closed = False

    # -- checkout and return ----------------------------------------------------------------------------
    def checkout(self, deadline: float) -> Worker:
        """An idle worker (the most recently used), or a new one; waits for one until `deadline`."""
        with self._cond:
            while True:
                if self._closed:
                    raise WorkerUnavailable("the shell is shutting down")
                while self._idle:
                    worker = self._idle.pop()
                    if worker.alive():
                        self._busy.add(worker)
                        return worker
                    self._chore(worker.retire)
                if len(self._busy) < self.max_workers:
                    worker = self._spawn()
                    if self._busy:  # calls run side by side: keep one more ready for the next
                        self._want_spare()
                    self._busy.add(worker)
                    return worker
                left = deadline - time.monotonic()
                if left <= 0:
                    raise WorkerUnavailable(f"all {self.max_workers} shell workers stayed busy until the time limit")
                self._cond.wait(left)

    def checkin(self, worker: Worker) -> None:
        with self._cond:
            self._busy.discard(worker)
            worker.runs += 1
            if self._closed or not worker.alive() or worker.runs >= self.max_runs or len(self._idle) >= self.max_idle:
                self._chore(worker.retire)
            else:
                self._idle.append(worker)
            self._cond.notify()

    def discard(self, worker: Worker) -> None:
        """A worker that was killed or died: forget it, and start its replacement in the background."""
        with self._cond:
            self._busy.discard(worker)
            self._cond.notify()
            if not self._idle:
                self._want_spare()

    def in_background(self, chore: Callable[[], None]) -> None:
        with self._cond:
            self._chore(chore)

    @property
    def counts(self) -> tuple[int, int]:
        """(idle, busy), for tests and diagnostics."""
        with self._cond:
            return len(self._idle), len(self._busy)

    def pids(self) -> list[int]:
        with self._cond:
            return [w.pid for w in (*self._idle, *self._busy)]

    # -- internals ----------------------------------------------------------------------------------------
    def _spawn(self) -> Worker:
        try:
            return Worker(self._argv)
        except OSError as exc:
            raise WorkerUnavailable(f"the shell's worker process could not be started: {exc.strerror or exc}") from None

    def _want_spare(self) -> None:
        def spare() -> None:
            with self._cond:
                if self._closed or self._idle or len(self._busy) >= self.max_workers:
                    return
            try:
                worker = Worker(self._argv)
            except OSError:
                return
            with self._cond:
                if self._closed:
                    self._chore(worker.retire)
                    return
                self._idle.insert(0, worker)  # the coldest: used after the warm ones
                self._cond.notify()

        self._chore(spare)

    def _chore(self, chore: Callable[[], None]) -> None:
        self._chores.append(chore)
        if self._janitor is None or not self._janitor.is_alive():
            self._janitor = threading.Thread(target=self._work, name="tooldeck-shell-pool", daemon=True)
            self._janitor.start()
        self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._chores:
                    if not self._cond.wait(30) and not self._chores:
                        self._janitor = None  # idle for 30 s: the next chore starts a new thread
                        return
                chore = self._chores.pop(0)
            with contextlib.suppress(Exception):
                chore()

    def close(self) -> None:
        """Stop every worker (at interpreter exit)."""
        with self._cond:
            self._closed = True
            idle, busy = list(self._idle), list(self._busy)
            self._idle.clear()
            self._cond.notify_all()
        for worker in idle:
            with contextlib.suppress(OSError):
                worker.proc.stdin.close()  # type: ignore[union-attr]
        for worker in busy:
            with contextlib.suppress(OSError):
                worker.kill(worker.writable)
        for worker in idle:
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                worker.proc.wait(timeout=1)


_lock = threading.Lock()
_pool: WorkerPool | None = None
_owner = 0


def get_pool() -> WorkerPool:
    """The process-wide pool (a new one in a forked child: workers belong to the process that started them)."""
    global _pool, _owner
    pid = os.getpid()
    with _lock:
        if _pool is None or _owner != pid:
            _pool = WorkerPool()
            _owner = pid
            atexit.register(_pool.close)
        return _pool
