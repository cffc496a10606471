"""The intent journal: what a process wrote to the records before SQLite has it (docs/records.md,
"The journal").

Each process appends the writes of its turns (an admission before its tools run, a batch of results
before `arun` returns) to a file of its own, `<home>/records.journal/<owner_id>-<gen>.log`, with one
`os.write` on an `O_APPEND` descriptor per entry: once `append` returns, the entry is in the kernel's
page cache and survives the process being killed (not a power loss: the same class as SQLite's WAL
with `synchronous=NORMAL`). The store moves the entries into SQLite in one transaction per batch
(group commit), then appends a marker `["c", offset]`: the segment's first `offset` bytes are in
SQLite. A segment is replaced by a new one (and deleted once committed) when it holds SEGMENT_BYTES,
and deleted at close. A process that dies leaves its segments behind: the next store to open merges
what follows their last marker (records/merge.py).

Framing, per entry: 4 bytes little-endian payload length, 4 bytes little-endian CRC-32 of the
payload, the payload (compact JSON of a list, records/merge.py says which). `decode` stops at the
first entry that is short or whose CRC does not match: a torn tail (the process died inside a write)
or damage. Everything before it is good; the rest is reported and kept, never guessed at.
"""

from __future__ import annotations

import contextlib
import os
import re
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

HEADER = struct.Struct("<II")
MAX_ENTRY_BYTES = 1 << 30
"""An entry longer than this is damage, not data (a result is capped far below it)."""
_SEGMENT = re.compile(r"^(\d+)-(\d+)\.log$")
SEGMENT_BYTES = 4 << 20
"""A segment is replaced by a new one at the first group commit after it holds this much."""
_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


def frame(entry: list[Any]) -> bytes:
    """One entry as written: header + payload."""
    payload = orjson.dumps(entry)
    return HEADER.pack(len(payload), zlib.crc32(payload)) + payload


@dataclass(frozen=True, slots=True)
class Decoded:
    entries: list[list[Any]]
    starts: list[int]
    """The byte offset of each entry."""
    good: int
    """Bytes of the good prefix (every entry in `entries`)."""
    problem: str | None
    """Why decoding stopped before the end (None when every byte was read)."""


def decode(data: bytes) -> Decoded:
    """The entries of a segment up to the first bad one. Never raises, whatever the bytes."""
    entries: list[list[Any]] = []
    starts: list[int] = []
    pos, end = 0, len(data)
    size = HEADER.size
    while pos < end:
        if end - pos < size:
            return Decoded(entries, starts, pos, f"a torn header at byte {pos} ({end - pos} of {size} bytes)")
        length, crc = HEADER.unpack_from(data, pos)
        if length > MAX_ENTRY_BYTES:
            return Decoded(entries, starts, pos, f"an entry length of {length} bytes at byte {pos} (damaged)")
        start = pos + size
        payload = data[start:start + length]
        if len(payload) < length:
            return Decoded(entries, starts, pos, f"a torn entry at byte {pos} ({len(payload)} of {length} bytes)")
        if zlib.crc32(payload) != crc:
            return Decoded(entries, starts, pos, f"a CRC mismatch at byte {pos} (damaged entry)")
        try:
            entry = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return Decoded(entries, starts, pos, f"an entry at byte {pos} that is not JSON (damaged)")
        if not isinstance(entry, list) or not entry:
            return Decoded(entries, starts, pos, f"an entry at byte {pos} that is not a journal entry")
        entries.append(entry)
        starts.append(pos)
        pos = start + length
    return Decoded(entries, starts, pos, None)


def directory(store_path: Path) -> Path:
    """The journal folder of a store: `records.sqlite` → `records.journal/`."""
    return store_path.with_suffix(".journal")


@dataclass(frozen=True, slots=True, order=True)
class Segment:
    owner_id: int
    gen: int
    path: Path


def segments(folder: Path) -> Iterator[Segment]:
    """Every segment in the folder, any owner, in (owner, generation) order; nothing if it does not exist."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return iter(())
    found = []
    for name in names:
        m = _SEGMENT.match(name)
        if m:
            found.append(Segment(int(m[1]), int(m[2]), folder / name))
    return iter(sorted(found))


@dataclass(frozen=True, slots=True)
class Mark:
    """Everything appended up to a point: the closed segments, and the current one up to `size` bytes."""

    closed: tuple[Path, ...]
    path: Path | None
    size: int


class Journal:
    """The segments one store object appends to. The current segment is kept across group commits:
    after a commit a marker entry `["c", offset]` says its first `offset` bytes are in SQLite (a merge
    skips them), and it is replaced by a new one only once it holds SEGMENT_BYTES, so a commit creates
    and deletes no file (directory changes wait on the file system's own journal, milliseconds when
    other processes sync). Not thread-safe: the group serialises appends, marks and commits."""

    __slots__ = ("_closed", "_fd", "_gen", "_path", "_size", "folder", "owner_id")

    def __init__(self, folder: Path, owner_id: int) -> None:
        self.folder = folder
        self.owner_id = owner_id
        self._gen = 0
        self._fd = -1
        self._path: Path | None = None
        self._size = 0
        self._closed: list[Path] = []

    def append(self, data: bytes) -> None:
        """Make `data` durable against a killed process: one write on the O_APPEND descriptor."""
        fd = self._fd
        if fd < 0:
            fd = self._open()
        written = os.write(fd, data)
        self._size += written
        if written != len(data):  # a regular file takes the whole write unless the disk is full
            raise OSError(f"short write to {self._path}: {written} of {len(data)} bytes")

    def _open(self) -> int:
        self.folder.mkdir(parents=True, exist_ok=True)
        while True:  # another store object of this process (same owner) may use some generations
            path = self.folder / f"{self.owner_id}-{self._gen}.log"
            self._gen += 1
            try:
                self._fd = os.open(path, _FLAGS, 0o600)
            except FileExistsError:
                continue
            self._path, self._size = path, 0
            return self._fd

    def mark(self) -> Mark:
        """What has been appended so far (the group commit commits exactly that); a full segment is
        closed here, so the next entry starts a new one."""
        if self._fd >= 0 and self._size >= SEGMENT_BYTES:
            self._close_current()
        return Mark(tuple(self._closed), self._path, self._size)

    def committed(self, mark: Mark) -> None:
        """The entries up to `mark` are in SQLite: delete the closed segments, and mark the current one."""
        for path in mark.closed:
            path.unlink(missing_ok=True)
            self._closed.remove(path)
        if mark.path is not None and mark.path == self._path and mark.size:
            # Only an optimisation: a merge of entries already in SQLite skips them anyway.
            with contextlib.suppress(OSError):
                self.append(frame(["c", mark.size]))

    def _close_current(self) -> None:
        os.close(self._fd)
        self._fd = -1
        self._closed.append(self._path)  # type: ignore[arg-type]
        self._path, self._size = None, 0

    def close(self, *, committed: bool = False) -> None:
        """Close the current segment; with `committed` (everything appended is in SQLite) delete them all."""
        if self._fd >= 0:
            self._close_current()
        if committed:
            for path in self._closed:
                path.unlink(missing_ok=True)
            self._closed.clear()
