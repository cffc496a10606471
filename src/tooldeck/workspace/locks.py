"""The lock a compare-and-swap of one workspace file holds: across threads and across processes.

Two layers, taken in this order and released in reverse:

1. a `threading.Lock` per real file path, shared by every thread and run of the process (cheap; it
   keeps threads of one process from queueing on the OS lock);
2. an exclusive `flock` on a lock file of that path, `<workspace>/.tooldeck/locks/<key>`, so that
   processes sharing the workspace (two `tooldeck serve`, a CLI beside a server, web workers) take
   turns too. The OS releases it when the holder's process dies, so a crash never leaves a file
   locked.

Lock files live in the hidden `.tooldeck/` folder: no file tool can see or name them and the shell
does not mount it, so they never show up in a listing or a commit (a `.gitignore` in the folder
keeps them out of git too). One exists per file a tool has written; `remove_file` deletes its lock
file while holding it. A process that was waiting on a deleted lock file notices (the name no
longer leads to the inode it locked) and takes the new one, so deleting never lets two holders in.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Final

LOCKS_DIR: Final = os.path.join(".tooldeck", "locks")
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | _CLOEXEC


class _ThreadLock:
    __slots__ = ("__weakref__", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()


_thread_locks: weakref.WeakValueDictionary[str, _ThreadLock] = weakref.WeakValueDictionary()
_thread_locks_guard = threading.Lock()


def thread_lock(key: str) -> _ThreadLock:
    """The process-wide lock of one real file path (kept alive while someone holds it)."""
    with _thread_locks_guard:
        lk = _thread_locks.get(key)
        if lk is None:
            lk = _thread_locks[key] = _ThreadLock()
        return lk


def lock_name(rel: str) -> str:
    return hashlib.sha256(os.fsencode(rel)).hexdigest()[:32]


class FileLocks:
    """The CAS locks of one workspace. `cross_process=False` keeps only the in-memory layer (what
    tooldeck did before; the workspace bench measures the difference)."""

    def __init__(self, workspace_root: str, *, cross_process: bool = True) -> None:
        self.root = workspace_root
        self.directory = os.path.join(workspace_root, LOCKS_DIR)
        self.cross_process = cross_process
        self._made = False

    @contextmanager
    def hold(self, rel: str, *, drop: bool = False) -> Iterator[None]:
        """Hold the lock of the file `rel` (its real path below the workspace). `drop` deletes the lock
        file before letting go (after the file itself was removed)."""
        holder = thread_lock(os.path.join(self.root, rel))
        with holder.lock:
            if not self.cross_process:
                yield
                return
            path = os.path.join(self.directory, lock_name(rel))
            fd = self._acquire(path)
            try:
                yield
            finally:
                if drop:
                    with suppress(FileNotFoundError):
                        os.unlink(path)
                os.close(fd)  # releases the flock

    def _acquire(self, path: str) -> int:
        while True:
            fd = self._open(path)
            try:
                _flock(fd)
                mine = os.fstat(fd)
                try:
                    now = os.stat(path, follow_symlinks=False)
                except FileNotFoundError:
                    now = None
            except BaseException:
                os.close(fd)
                raise
            if now is not None and (now.st_ino, now.st_dev) == (mine.st_ino, mine.st_dev):
                return fd
            os.close(fd)  # deleted (and maybe re-created) by a holder meanwhile: lock the current one

    def _open(self, path: str) -> int:
        if not self._made:
            self._make_directory()
        try:
            return os.open(path, _OPEN_FLAGS, 0o600)
        except FileNotFoundError:  # the folder was removed under us (a whole `.tooldeck/` wiped)
            self._make_directory()
            return os.open(path, _OPEN_FLAGS, 0o600)

    def _make_directory(self) -> None:
        os.makedirs(self.directory, exist_ok=True)
        ignore = os.path.join(self.directory, ".gitignore")
        if not os.path.exists(ignore):
            with suppress(FileExistsError):
                fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o644)
                try:
                    os.write(fd, b"*\n")
                finally:
                    os.close(fd)
        self._made = True


def _flock(fd: int) -> None:
    """Block until the exclusive lock is ours. On NFS, Linux emulates `flock` with POSIX record locks,
    whose deadlock detection is per process and can report EDEADLK for threads of two processes that
    each wait on a different file; nobody holds two of our locks, so waiting again is safe."""
    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return
        except OSError as exc:
            if exc.errno != errno.EDEADLK:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
