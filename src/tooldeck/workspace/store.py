"""The files of one run's workspace: locating paths safely, reading, compare-and-swap writes,
removal to the trash and restoring.

Every write of an existing file is a compare-and-swap on its sha256 under the file's lock, held
across the threads and runs of the process and across processes sharing the workspace
(`workspace.locks`), and goes through a temp file and an atomic rename, so two writers never lose an
update. No write makes a file larger than `MAX_FILE_BYTES`: the size of the result is known before
it is built. The read-state is per run (one `WorkspaceStore` per `RunState`).
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from tooldeck.core.errors import ToolCallError
from tooldeck.workspace import fs
from tooldeck.workspace.errors import (
    FILE_NOT_FOUND,
    FILE_NOT_TEXT,
    FILE_TOO_LARGE,
    RESTORE_NOTHING_TO_RESTORE,
    classify_os_error,
    symlink_refused,
)
from tooldeck.workspace.history import History, TrashEntry
from tooldeck.workspace.limits import MAX_FILE_BYTES, check_size
from tooldeck.workspace.locks import FileLocks
from tooldeck.workspace.names import shown
from tooldeck.workspace.paths import PathPolicy, RootsLike, parse_path, split_root
from tooldeck.workspace.readstate import ReadStates
from tooldeck.workspace.text import decode_utf8
from tooldeck.workspace.views import Views


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
        """The resolved path relative to the workspace (history and locks are keyed by it)."""
        return "/".join(self.parts)

    @property
    def shown(self) -> str:
        """`rel` as the model sees it (`names.shown`: control and bidi characters escaped)."""
        return shown(self.rel)


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
        self.locks = FileLocks(self.root)
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
        """What is at `loc` now (`file`, `directory`, `symlink`, `other`), or None when nothing is."""
        try:
            return fs.kind_of(loc.base, loc.parts)
        except OSError as exc:
            raise os_error(loc, exc) from None

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
            raise ToolCallError(FILE_TOO_LARGE, f"`{loc.shown}` has {exc.size:,} bytes, over the file tools' "
                                f"limit of {MAX_FILE_BYTES:,}. Use the shell for files this large.") from None
        except OSError as exc:
            raise os_error(loc, exc) from None

    def _size_now(self, loc: Location) -> int:
        try:
            return fs.size_of(loc.base, loc.parts) or 0
        except OSError as exc:
            raise os_error(loc, exc) from None

    def current_sha(self, loc: Location) -> str | None:
        """The sha256 of the file now, or None when it does not exist."""
        data = self.read_if_exists(loc)
        return None if data is None else sha256(data)

    # -- writing ----------------------------------------------------------------------------------
    def swap(self, loc: Location, guard: Guard, make: Callable[[bytes | None], bytes], *,
             size: Callable[[int], int] | None = None) -> Swap:
        """Compare-and-swap under the file's lock: check `guard` against the current bytes, write
        `make(current)` through a temp file and an atomic rename, keep the previous bytes as a version.
        Raises CasConflict when the guard does not hold.

        Sizes: `size(current size)` (when given) is the size of the result, checked before the current
        bytes are even read; `make` checks what it will build (`check_size`) before building it; and the
        result is checked again here before anything is written."""
        with self.locks.hold(loc.real_rel):
            if size is not None:
                check_size(loc, size(self._size_now(loc)))
            old = self.read_if_exists(loc)
            old_sha = sha256(old) if old is not None else None
            if not isinstance(guard, _Any) and guard != old_sha:
                raise CasConflict(old_sha)
            new = make(old)
            check_size(loc, len(new))
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
        with self.locks.hold(loc.real_rel, drop=True):
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
        with self.locks.hold(loc.real_rel):
            try:
                fs.move_in(str(entry.content), loc.base, loc.parts)
            except FileExistsError:
                raise
            except OSError as exc:
                if isinstance(exc, FileNotFoundError) and not entry.content.exists():
                    raise ToolCallError(RESTORE_NOTHING_TO_RESTORE, f"The removed `{loc.shown}` was brought back "
                                        "or discarded meanwhile (by another process sharing the workspace). List "
                                        "its folder with `workspace_list_files` to see what is there.") from None
                raise os_error(loc, exc) from None
            self.history.discard(entry)
        self.read_states.drop(loc.key)


def os_error(loc: Location, exc: OSError, *, folder: bool = False) -> BaseException:
    """The recoverable error for an OS error at `loc`, or the error itself when it is a host fault."""
    if exc.errno in (errno.ENOTDIR, errno.ELOOP) and fs.symlink_on_path(loc.base, loc.parts):
        return symlink_refused(loc.rel)
    return classify_os_error(exc, loc.rel, folder=folder) or exc


def decode(loc: Location, data: bytes) -> str:
    try:
        return decode_utf8(data)
    except UnicodeDecodeError:
        raise ToolCallError(FILE_NOT_TEXT, f"`{loc.shown}` is not UTF-8 text, so the file tools cannot show or "
                            "edit it. Inspect it with the shell instead.") from None


def for_run(run: Any) -> WorkspaceStore:
    """The workspace store of a `RunState` (created on first use and kept in `run.state`)."""
    store = run.state.get(STATE_KEY)
    if store is None:
        store = run.state.setdefault(STATE_KEY, WorkspaceStore(run.workspace_root))
    return store


STATE_KEY = "tooldeck.workspace"
