"""Group commit: a store's journaled writes, and the thread that moves them into SQLite.

`add` makes a write durable (one `os.write` to the process's journal, records/journal.py) and queues
it. The first write of a batch arms one timer on the running event loop: GROUP_COMMIT_DELAY_S later
the loop commits every queued write in one SQLite transaction and deletes the journal segments that
held them. The commit runs on the loop's own thread, between its callbacks, as the writes did before
the journal: a commit thread would take the GIL from the loop at each of its system calls. A daemon
thread (one per store and process) is the backstop: it commits a batch that is BACKSTOP_S old, when
no loop was running (a sync caller) or the loop did not come round to its timer (it stopped, or a
tool blocks it). `flush` commits at once, in the calling thread: the store calls it before every
read, so a process reads its own writes, and at close and at exit. A commit that fails keeps its
writes queued and their segments on disk, and the thread tries again a second later.

Every store object a process opens on one file shares one group (`attach`): a read through any of
them sees what the others wrote, and one thread commits for all.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from tooldeck.records.journal import Journal, frame
from tooldeck.records.sqlite import current_pid

GROUP_COMMIT_DELAY_S = 0.05
"""How long journaled writes wait to share one SQLite transaction. Most of a commit's cost is per
transaction (the pages of every index it touches, written to the WAL), not per write: `tooldeck serve`
at ~600 calls/s spent ≈ 65-75 µs of CPU per call committing batches of 7 at 20 ms, ≈ 33 µs in batches
of 20 at 50 ms. The writes are durable in the journal before that either way."""
BACKSTOP_S = 0.065
"""The commit thread commits a batch this old that the loop's timer has not."""
RETRY_AFTER_S = 1.0
"""After a failed commit (the store busy or full), the thread tries again this much later."""

logger = logging.getLogger("tooldeck.records")


class Write(Protocol):
    def entry(self) -> list[Any]:
        """The journal entry (records/merge.py reads it back after a crash)."""
        ...


class GroupCommit:
    """The queued writes of one store in this process, their journal, and the committing thread."""

    def __init__(self, folder: Path, commit: Callable[[list[Any]], None],
                 delay_s: float = GROUP_COMMIT_DELAY_S, backstop_s: float = BACKSTOP_S) -> None:
        self.folder = folder
        self.committers = [commit]
        """The `commit` of each store object attached; the last one commits."""
        self.conflicted: set[tuple[str, int]] = set()
        """(invocation, round) of the turns whose results must be checked call by call (records/merge.py)."""
        self.delay_s = delay_s
        self.backstop_s = backstop_s
        self._reset()
        _OPEN.add(self)

    def _commit(self, writes: list[Any]) -> None:
        self.committers[-1](writes)

    def _reset(self) -> None:
        """Fresh state for this process (also in a forked child: the parent's queue, journal and thread
        are the parent's to commit)."""
        self._pid = current_pid()
        self._lock = threading.Lock()
        """Appends against the swap of the queue and the rotation of the journal."""
        self._committing = threading.Lock()
        """One commit at a time (the thread, a reader's flush, close)."""
        self._queue: list[Any] = []
        self._inflight = False
        """A batch taken from the queue and not yet committed (`pending` stays true until it is)."""
        self._journal: Journal | None = None
        self._armed = False
        self._due = 0.0
        """When the thread commits the current batch (monotonic), unless the loop's timer did."""
        self._due_inline = 0.0
        """When a write joining the current batch commits it itself (a loop that never yields to its timer)."""
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.closed = False

    def add(self, write: Write, owner_id: int) -> None:
        """Journal `write` (durable when this returns) and queue it for the next group commit."""
        data = frame(write.entry())
        if self._pid != current_pid():
            self._forked()
        with self._lock:
            journal = self._journal
            if journal is None or journal.owner_id != owner_id:
                journal = self._new_journal(owner_id)
            journal.append(data)
            self._queue.append(write)
            armed, self._armed = self._armed, True
        if not armed:
            self._arm()
        elif time.monotonic() >= self._due_inline:
            # The batch is due and the timer has not run: the loop is busy with turns that never yield
            # (or there is no loop). Commit here rather than leave it to the thread, which would take the
            # GIL from this thread at each of its system calls.
            try:
                self.flush()
            except Exception:  # the write is in the journal; the thread tries again
                self._due_inline = time.monotonic() + RETRY_AFTER_S
                logger.warning("committing the journaled records to %s failed; they stay in the journal",
                               self.folder, exc_info=True)

    def _arm(self) -> None:
        """The first write of a batch: a timer on the running loop, and the thread's deadline."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            loop.call_later(self.delay_s, self._on_loop)
        now = time.monotonic()
        self._due = now + (self.backstop_s if loop is not None else self.delay_s)
        self._due_inline = now + self.delay_s
        if self._thread is None:
            self._start()
        self._wake.set()

    def _on_loop(self) -> None:
        if not self.pending:
            return
        try:
            self.flush()
        except Exception:  # the thread tries again; the writes are in the journal
            logger.warning("committing the journaled records to %s failed; they stay in the journal",
                           self.folder, exc_info=True)

    def _new_journal(self, owner_id: int) -> Journal:
        if self._journal is not None:
            self._journal.close()
        self._journal = Journal(self.folder, owner_id)
        return self._journal

    def _forked(self) -> None:
        journal = self._journal
        if journal is not None:
            with contextlib.suppress(OSError):
                journal.close()  # the inherited descriptor only; the parent's segments stay
        self._reset()

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="tooldeck-records-commit", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()  # a batch armed after this wakes the thread again
            while self._queue and not self._stop.is_set():
                wait = self._due - time.monotonic()
                if wait > 0:  # the batch is younger than its deadline (or the loop committed it, and a new one began)
                    self._stop.wait(wait)
                    continue
                try:
                    self.flush()
                except Exception:
                    logger.warning("committing the journaled records to %s failed; they stay in the journal and "
                                   "are committed again in %g s", self.folder, RETRY_AFTER_S, exc_info=True)
                    self._due = time.monotonic() + RETRY_AFTER_S

    @property
    def pending(self) -> bool:
        """Writes queued, or being committed right now by another thread (a reader must wait for those too)."""
        return bool(self._queue or self._inflight) and self._pid == current_pid()

    def flush(self) -> None:
        """Commit every queued write now (one transaction), then mark the journal (records/journal.py)."""
        if self._pid != current_pid():
            self._forked()
            return
        with self._committing:
            with self._lock:
                writes, self._queue = self._queue, []
                self._armed = False
                journal = self._journal
                mark = journal.mark() if journal is not None else None
                self._inflight = bool(writes)
            if not writes:
                return
            try:
                self._commit(writes)
            except BaseException:
                with self._lock:
                    self._queue[:0] = writes
                    self._armed = True
                    self._due = time.monotonic() + RETRY_AFTER_S  # the thread tries again
                    self._inflight = False
                self._wake.set()
                raise
            self._inflight = False
            with self._lock:
                if journal is self._journal:
                    journal.committed(mark)  # type: ignore[union-attr,arg-type]

    def close(self) -> None:
        """Stop the thread and commit what is queued. Should that fail, the journal stays on disk and the
        next store to open after this process ends commits it (records/merge.py)."""
        if self.closed:
            return
        self.closed = True
        _OPEN.discard(self)
        if self._pid != current_pid():
            self._forked()
            self.closed = True
            return
        thread = self._thread
        if thread is not None:
            self._stop.set()
            self._wake.set()
            thread.join(timeout=5)
            self._thread = None
        try:
            self.flush()
        except BaseException:
            if self._journal is not None:
                self._journal.close()  # kept: the next store opened after this process merges it
            raise
        if self._journal is not None:
            self._journal.close(committed=not self._queue)


_OPEN: weakref.WeakSet[GroupCommit] = weakref.WeakSet()
_SHARED: dict[tuple[int, Path], GroupCommit] = {}
_SHARED_LOCK = threading.Lock()


def attach(folder: Path, commit: Callable[[list[Any]], None]) -> GroupCommit:
    """The group of the store at `folder` in this process, with `commit` (a store object's) attached."""
    key = (current_pid(), folder.resolve())
    with _SHARED_LOCK:
        group = _SHARED.get(key)
        if group is None or group.closed:
            group = _SHARED[key] = GroupCommit(folder, commit)
        else:
            group.committers.append(commit)
        return group


def detach(group: GroupCommit, commit: Callable[[list[Any]], None]) -> None:
    """A store object closes: what is queued is committed (by it); the last one closes the group."""
    with _SHARED_LOCK:
        last = group.committers == [commit]
        if last:
            for key, shared in list(_SHARED.items()):
                if shared is group:
                    del _SHARED[key]
    if last:
        group.close()
        return
    try:
        group.committers.append(commit)  # this store commits what it (and the others) queued
        group.flush()
    finally:
        group.committers.remove(commit)
        group.committers.remove(commit)


@atexit.register
def _flush_at_exit() -> None:
    """A store the host never closed still gets its queued writes into SQLite when the process exits."""
    for group in list(_OPEN):
        try:
            group.flush()
        except Exception:
            logger.warning("committing the journaled records to %s at exit failed; the next store to open "
                           "commits them from the journal", group.folder, exc_info=True)
