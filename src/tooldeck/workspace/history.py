"""Earlier versions of workspace files and the trash of removed files.

Both live in the workspace's hidden `.tooldeck/` folder (not a root, so the model never sees it),
which makes them survive across the runs of a session workspace. Every overwrite keeps the previous
bytes as a numbered version (the newest `MAX_VERSIONS` per file are kept); a removed file is moved,
not copied, into the trash. Callers hold the file's lock around the calls that change them.

Other processes may share the workspace, and a reader does not take the lock: anything listed may be
gone by the time it is opened (another process pruned a version, restored a trashed file). Readers
skip what vanished instead of failing.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import orjson

from tooldeck.workspace.names import shown

MAX_VERSIONS = 20
HIDDEN_DIR = ".tooldeck"
_MAX_NUMBER = 10**18
"""No version number reaches this (a file would need that many writes); larger asks name no version."""


def path_key(rel: str) -> str:
    return hashlib.sha256(os.fsencode(rel)).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Version:
    number: int
    size: int
    saved_at: float
    path: Path


@dataclass(frozen=True, slots=True)
class TrashEntry:
    entry_id: str
    rel: str
    sha256: str
    size: int
    removed_at: float
    directory: Path

    @property
    def content(self) -> Path:
        return self.directory / "content"


class History:
    def __init__(self, workspace_root: str) -> None:
        base = Path(workspace_root) / HIDDEN_DIR
        self.versions_dir = base / "versions"
        self.trash_dir = base / "trash"

    # -- versions ---------------------------------------------------------------------------------
    def _version_dir(self, rel: str) -> Path:
        return self.versions_dir / path_key(rel)

    def versions(self, rel: str) -> list[Version]:
        """Saved versions of `rel`, oldest first (those still there when looked at)."""
        d = self._version_dir(rel)
        try:
            names = os.listdir(d)
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for name in names:
            if name.isascii() and name.isdigit():
                try:
                    st = (d / name).stat()
                except FileNotFoundError:
                    continue  # pruned by another process since the listing
                out.append(Version(int(name), st.st_size, st.st_mtime, d / name))
        out.sort(key=lambda v: v.number)
        return out

    def save_version(self, rel: str, data: bytes) -> int:
        d = self._version_dir(rel)
        d.mkdir(parents=True, exist_ok=True)
        existing = sorted(int(name) for name in os.listdir(d) if name.isascii() and name.isdigit())  # no stat each
        number = existing[-1] + 1 if existing else 1
        if not existing:
            _write_atomic(d / "path", os.fsencode(rel))
        _write_atomic(d / f"{number:08d}", data)
        for old in existing[: max(0, len(existing) + 1 - MAX_VERSIONS)]:
            (d / f"{old:08d}").unlink(missing_ok=True)
        return number

    def version_size(self, rel: str, number: int) -> int | None:
        """The size of version `number` in bytes, or None when there is no such version."""
        if not 1 <= number < _MAX_NUMBER:
            return None
        try:
            return (self._version_dir(rel) / f"{number:08d}").stat().st_size
        except (FileNotFoundError, NotADirectoryError):
            return None

    def version_bytes(self, rel: str, number: int, max_bytes: int) -> bytes | None:
        """The bytes of version `number` (at most `max_bytes + 1` are read), or None when it is gone."""
        if not 1 <= number < _MAX_NUMBER:
            return None
        try:
            with open(self._version_dir(rel) / f"{number:08d}", "rb") as f:
                return f.read(max_bytes + 1)
        except (FileNotFoundError, NotADirectoryError):
            return None

    # -- trash ------------------------------------------------------------------------------------
    def new_trash_entry(self, rel: str, sha256: str, size: int) -> TrashEntry:
        entry_id = f"{path_key(rel)}-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
        directory = self.trash_dir / entry_id
        directory.mkdir(parents=True)
        entry = TrashEntry(entry_id, rel, sha256, size, time.time(), directory)
        meta = {"path": shown(rel), "sha256": sha256, "size": size, "removed_at": entry.removed_at}
        _write_atomic(directory / "meta.json", orjson.dumps(meta))
        return entry

    def latest_removed(self, rel: str) -> TrashEntry | None:
        """The most recently removed file that was at `rel`, if it is still in the trash."""
        prefix = path_key(rel) + "-"
        try:
            names = sorted((n for n in os.listdir(self.trash_dir) if n.startswith(prefix)), reverse=True)
        except FileNotFoundError:
            return None
        for name in names:
            directory = self.trash_dir / name
            try:
                meta = orjson.loads((directory / "meta.json").read_bytes())
            except (FileNotFoundError, NotADirectoryError, orjson.JSONDecodeError):
                continue  # restored or discarded by another process meanwhile
            if (directory / "content").exists():
                return TrashEntry(name, meta["path"], meta["sha256"], meta["size"], meta["removed_at"], directory)
        return None

    def discard(self, entry: TrashEntry) -> None:
        (entry.directory / "meta.json").unlink(missing_ok=True)
        entry.content.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            entry.directory.rmdir()


def _write_atomic(path: Path, data: bytes) -> None:
    """Write through a temp file and a rename, so a reader (or a crash) never sees half a file."""
    tmp = path.with_name(f".tmp-{uuid.uuid4().hex}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
