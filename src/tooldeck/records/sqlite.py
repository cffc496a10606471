"""SQLite plumbing for the records store: connections per thread, pragmas, write transactions that
retry on SQLITE_BUSY, and the value encodings (JSON, byte-exact text).
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import orjson

from tooldeck.core.errors import TooldeckError

T = TypeVar("T")
_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


class _Process:
    """The current process's pid, refreshed in a forked child (cheaper than os.getpid() per write)."""

    pid = os.getpid()


def _after_fork() -> None:
    _Process.pid = os.getpid()


os.register_at_fork(after_in_child=_after_fork)


def current_pid() -> int:
    return _Process.pid


def is_busy(exc: BaseException) -> bool:
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _BUSY_CODES
    text = str(exc)
    return "locked" in text or "busy" in text


class Connections:
    """One connection per thread (and per process after a fork), all closed by `close()`."""

    def __init__(self, path: Path, busy_timeout_ms: int, synchronous: str) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self.synchronous = synchronous
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self.closed = False

    def get(self) -> sqlite3.Connection:
        if self.closed:
            raise TooldeckError("records.closed", f"the records store {self.path} is closed; open a new Runtime")
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is not None and local.pid == _Process.pid:
            return conn
        conn = self._open()
        local.conn, local.pid = conn, _Process.pid
        return conn

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout_ms / 1000, isolation_level=None,
                               check_same_thread=False, cached_statements=256)
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        retry(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone(), self.busy_timeout_ms)
        conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        conn.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_CHECKPOINT_PAGES}")
        conn.execute("PRAGMA foreign_keys = ON")
        with self._lock:
            self._all.append(conn)
        return conn

    def close(self) -> None:
        with self._lock:
            self.closed = True
            conns, self._all = self._all, []
        for conn in conns:
            with contextlib.suppress(sqlite3.Error):
                conn.close()


BACKSTOP_CHECKPOINT_PAGES = 16_384
"""Writers checkpoint inline only if the background checkpointer falls this far behind (64 MiB)."""


class Checkpointer:
    """Moves WAL checkpoints (page copies and fsyncs) off the writers' path: a daemon thread runs a
    PASSIVE checkpoint after `every` write transactions, or after `idle_s` with any pending."""

    def __init__(self, conns: Connections, every: int = 200, idle_s: float = 1.0) -> None:
        self._conns = conns
        self.every = every
        self.idle_s = idle_s
        self.pending = 0
        self._pid = 0
        self._wake = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None

    def wrote(self) -> None:
        self.pending += 1
        if self._pid != _Process.pid:
            self._start()
        elif self.pending >= self.every and not self._wake.is_set():
            # Once: while the thread checkpoints (an fsync, milliseconds) writers go on, and an
            # Event.set per write (a lock and a notify) cost them more than the write's own Python.
            self._wake.set()

    def _start(self) -> None:
        self._pid = _Process.pid
        self._stop = False
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tooldeck-records-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop:
            self._wake.wait(self.idle_s)
            self._wake.clear()
            if self._stop or not self.pending:
                continue
            self.pending = 0
            with contextlib.suppress(sqlite3.Error, TooldeckError):
                self._conns.get().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()

    def stop(self) -> None:
        thread = self._thread
        if thread is None or self._pid != _Process.pid:
            return
        self._stop = True
        self._wake.set()
        thread.join(timeout=5)
        self._thread = None


def retry(fn: Callable[[], T], budget_ms: int) -> T:
    """Call `fn`, retrying with jittered backoff while SQLite reports BUSY/LOCKED."""
    deadline = time.monotonic() + max(budget_ms, 1000) / 1000
    delay = 0.0005
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() > deadline:
                raise
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, 0.05)


def write(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T], budget_ms: int, path: Path) -> T:
    """Run `fn` in one `BEGIN IMMEDIATE` transaction; on SQLITE_BUSY roll back and run it again."""

    def attempt() -> T:
        conn.execute("BEGIN IMMEDIATE")
        try:
            out = fn(conn)
            conn.execute("COMMIT")
            return out
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    return _retried(attempt, budget_ms, path)  # the common case: no contention beyond what busy_timeout absorbs


def write_one(conn: sqlite3.Connection, statement: str, params: Any, budget_ms: int, path: Path) -> sqlite3.Cursor:
    """One statement as its own transaction, retried and reported as `write` does. With no transaction
    open (`isolation_level=None`), SQLite takes the write lock as the statement starts, so this is
    `BEGIN IMMEDIATE; statement; COMMIT` without the two extra round trips through the driver."""
    try:
        return conn.execute(statement, params)  # the common case, on every recorded turn: no closure, no retry
    except sqlite3.OperationalError:
        pass  # busy or not, `_retried` runs it again and reports what it finally gives
    return _retried(lambda: conn.execute(statement, params), budget_ms, path)


def _retried(attempt: Callable[[], T], budget_ms: int, path: Path) -> T:
    """`attempt()` once, then with `retry` while SQLite is busy; a failure as `records.busy` or
    `records.write_failed`."""
    try:
        try:
            return attempt()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
        return retry(attempt, budget_ms)
    except sqlite3.OperationalError as exc:
        if is_busy(exc):
            raise TooldeckError("records.busy", f"the records store {path} stayed locked by another writer; "
                                "retry, or raise busy_timeout_ms") from exc
        raise TooldeckError("records.write_failed", f"writing {path} failed: {exc}; check free disk space and "
                            "that the file is writable") from exc


# -- value encodings -------------------------------------------------------------------------------

def untext(value: Any) -> Any:
    """A v2 text column as read: bytes there are the surrogate-preserving UTF-8 of a str that was not
    valid UTF-8 (the v3 entries escape such a str instead, see records/turns.py)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogatepass")
    return value


def safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except ValueError:  # an int longer than sys.get_int_max_str_digits()
        if isinstance(value, int):
            return hex(value)
        return f"<{type(value).__name__}: its repr failed>"


def fallback(value: Any) -> Any:
    """`default` for orjson: sets and tuples as lists, bytes decoded, anything else as its repr (an int
    too long for repr, beyond orjson's 64 bits, as its exact hex text)."""
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return safe_repr(value)


def dump(value: Any) -> str | None:
    """JSON text for a column (None stays NULL); values JSON cannot hold are kept as their repr."""
    if value is None:
        return None
    try:
        return orjson.dumps(value, default=fallback, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return orjson.dumps(safe_repr(value)).decode()


def load(value: Any) -> Any:
    if value is None:
        return None
    return orjson.loads(value)
