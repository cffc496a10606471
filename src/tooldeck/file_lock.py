"""An exclusive lock between processes that share a home: `flock` on a lock file of its own."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive `flock` on `lock_file` (created, with its folder, if missing) until the block ends; the
    kernel releases it if the process dies."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
