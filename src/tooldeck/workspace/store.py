"""The files of one run's workspace: locating paths safely, reading, compare-and-swap writes,
removal to the trash and restoring.

Every write of an existing file is a compare-and-swap on its sha256 under a per-path lock that is
shared by all threads and all runs of the process (a session workspace may serve several runs), and
goes through a temp file and an atomic rename, so two writers never lose an update. The read-state
is per run (one `WorkspaceStore` per `RunState`).
"""

from __future__ import annotations

import errno
import hashlib
import os
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from tooldeck.core.errors import ToolCallError
from tooldeck.workspace import fs
from tooldeck.workspace.errors import (
    FILE_NOT_FOUND,
    FILE_NOT_TEXT,
    FILE_TOO_LARGE,
    NOT_REGULAR_FILE,
    classify_os_error,
    symlink_refused,
)
from tooldeck.workspace.history import History, TrashEntry
from tooldeck.workspace.paths import PathPolicy, RootsLike, parse_path, split_root
from tooldeck.workspace.readstate import ReadStates
from tooldeck.workspace.views import Views

MAX_FILE_BYTES: Final = 64 * 1024 * 1024
"""No file tool loads a file larger than this; the shell can handle bigger ones."""


class _Any:
    __slots__ = ()


ANY: Final = _Any()
"""CAS guard: no condition (append, restore). `None` means the file must not exist; a str is the sha256
the current bytes must have."""
Guard = _Any | str | None


class CasConflict(Exception):
    def __init__(self, current_sha: str | None) -> None:
        super().__init__(current_sha or "missing")
        self.current_sha = current_sha


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _PathLock:
    __slots__ = ("__weakref__", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()


_locks: weakref.WeakValueDictionary[str, _PathLock] = weakref.WeakValueDictionary()
_locks_guard = threading.Lock()


def path_lock(key: str) -> _PathLock:
    """The process-wide lock of one real file path (kept alive while someone holds it)."""
    with _locks_guard:
        lk = _locks.get(key)
        if lk is None:
            lk = _locks[key] = _PathLock()
        return lk


@dataclass(frozen=True, slots=True)
class Location:
    """A checked, symlink-resolved place: `rel` as the model wrote it (normalised), `base` + `parts`
    on disk (no symlinks in `parts` at check time)."""

    rel: str
    base: str
    parts: tuple[str, ...]
    mounted: bool = False

    @property
    def key(self) -> str:
        return os.path.join(self.base, *self.parts)

    @property
    def real_rel(self) -> str:
        """The resolved path relative to the workspace (history is keyed by it)."""
        return "/".join(self.parts)


@dataclass(frozen=True, slots=True)
class FileData:
    data: bytes
    sha256: str
    text: str


@dataclass(frozen=True, slots=True)
class Swap:
    old_sha256: str | None
    sha256: str
    data: bytes
    old_data: bytes | None


class WorkspaceStore:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        os.makedirs(root, exist_ok=True)
        self.root = os.path.realpath(root)
        self.views = Views()
        self.read_states = ReadStates()
        self.history = History(self.root)
        self._policies: dict[int, tuple[RootsLike, PathPolicy]] = {}

    # -- policy and paths -------------------------------------------------------------------------
    def policy(self, roots: RootsLike) -> PathPolicy:
        """The policy for a Profile's roots (cached); its writable roots are created on first use."""
        hit = self._policies.get(id(roots))
        if hit is not None and hit[0] is roots:
            return hit[1]
        policy = PathPolicy.from_roots(roots)
        for root in policy.writable:
            if fs.resolve_within(self.root, (root,)) == (root,):
                os.makedirs(os.path.join(self.root, root), exist_ok=True)
        self._policies[id(roots)] = (roots, policy)
        return policy

    def locate(self, policy: PathPolicy, raw: str, *, write: bool = False) -> Location:
        """Parse, check the policy, resolve symlinks and check the policy again on where they lead."""
        rel = parse_path(raw)
        check = policy.check_writable if write else policy.check_visible
        check(rel)
        root, rest = split_root(rel)
        mount = None if write or root not in policy.read_only else self.views.base_of(root)
        if mount is not None:
            parts = tuple(rest.split("/")) if rest else ()
            resolved = fs.resolve_within(mount, parts)
            if resolved is None:
                raise symlink_refused(rel)
            return Location(rel, mount, resolved, True)
        parts = tuple(rel.split("/"))
        resolved = fs.resolve_within(self.root, parts)
        if resolved is None or not resolved:
            raise symlink_refused(rel)
        if resolved != parts:
            target = "/".join(resolved)
            if not (policy.is_writable(target) if write else policy.is_visible(target)):
                raise symlink_refused(rel)
        return Location(rel, self.root, resolved)

    def locate_dir(self, policy: PathPolicy, rel: str) -> Location:
        """Like `locate` for a folder argument; `rel == ""` is the workspace root itself."""
        if not rel:
            return Location("", self.root, ())
        return self.locate(policy, rel)

    def kind(self, loc: Location) -> str | None:
        return fs.kind_of(loc.base, loc.parts)

    # -- reading ----------------------------------------------------------------------------------
    def read(self, loc: Location) -> FileData:
        data = self._read_bytes(loc)
        return FileData(data, sha256(data), decode(loc, data))

    def read_if_exists(self, loc: Location) -> bytes | None:
        """The bytes of the file, or None when it does not exist."""
        try:
            return self._read_bytes(loc)
        except ToolCallError as exc:
            if exc.code == FILE_NOT_FOUND:
                return None
            raise

    def _read_bytes(self, loc: Location) -> bytes:
        try:
            return fs.read_bytes(loc.base, loc.parts, MAX_FILE_BYTES)
        except fs.FileTooLarge as exc:
            raise ToolCallError(FILE_TOO_LARGE, f"`{loc.rel}` has {exc.size:,} bytes, over the file tools' "
                                f"limit of {MAX_FILE_BYTES:,}. Use the shell for files this large.") from None
        except fs.NotRegularFile:
            raise ToolCallError(NOT_REGULAR_FILE, f"`{loc.rel}` is not a regular file (a device, pipe or "
                                "socket), so it cannot be read as text.") from None
        except OSError as exc:
            raise os_error(loc, exc) from None

    def current_sha(self, loc: Location) -> str | None:
        """The sha256 of the file now, or None when it does not exist."""
        data = self.read_if_exists(loc)
        return None if data is None else sha256(data)

    # -- writing ----------------------------------------------------------------------------------
    def swap(self, loc: Location, guard: Guard, make: Callable[[bytes | None], bytes]) -> Swap:
        """Compare-and-swap under the path lock: check `guard` against the current bytes, write
        `make(current)` through a temp file and an atomic rename, keep the previous bytes as a version.
        Raises CasConflict when the guard does not hold."""
        holder = path_lock(loc.key)
        with holder.lock:
            old = self.read_if_exists(loc)
            old_sha = sha256(old) if old is not None else None
            if not isinstance(guard, _Any) and guard != old_sha:
                raise CasConflict(old_sha)
            new = make(old)
            if old is not None:
                self.history.save_version(loc.real_rel, old)
            try:
                fs.install(loc.base, loc.parts, new, clobber=old is not None)
            except FileExistsError:
                raise CasConflict(self.current_sha(loc)) from None
            except OSError as exc:
                raise os_error(loc, exc) from None
        return Swap(old_sha, sha256(new), new, old)

    def remove(self, loc: Location) -> TrashEntry:
        """Move the file into the trash (restorable). Raises the recoverable not-found / folder errors."""
        holder = path_lock(loc.key)
        with holder.lock:
            data = self._read_bytes(loc)
            entry = self.history.new_trash_entry(loc.real_rel, sha256(data), len(data))
            try:
                fs.move_out(loc.base, loc.parts, str(entry.content))
            except OSError as exc:
                self.history.discard(entry)
                raise os_error(loc, exc) from None
        self.read_states.drop(loc.key)
        return entry

    def restore_removed(self, loc: Location, entry: TrashEntry) -> None:
        """Put a trashed file back at `loc`; FileExistsError when something is there now."""
        holder = path_lock(loc.key)
        with holder.lock:
            try:
                fs.move_in(str(entry.content), loc.base, loc.parts)
            except FileExistsError:
                raise
            except OSError as exc:
                raise os_error(loc, exc) from None
            self.history.discard(entry)
        self.read_states.drop(loc.key)


def os_error(loc: Location, exc: OSError) -> BaseException:
    """The recoverable error for an OS error at `loc`, or the error itself when it is a host fault."""
    if exc.errno in (errno.ENOTDIR, errno.ELOOP) and fs.symlink_on_path(loc.base, loc.parts):
        return symlink_refused(loc.rel)
    return classify_os_error(exc, loc.rel) or exc


def decode(loc: Location, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolCallError(FILE_NOT_TEXT, f"`{loc.rel}` is not UTF-8 text, so the file tools cannot show or "
                            "edit it. Inspect it with the shell instead.") from None


def for_run(run: Any) -> WorkspaceStore:
    """The workspace store of a `RunState` (created on first use and kept in `run.state`)."""
    store = run.state.get(STATE_KEY)
    if store is None:
        store = run.state.setdefault(STATE_KEY, WorkspaceStore(run.workspace_root))
    return store


STATE_KEY = "tooldeck.workspace"
