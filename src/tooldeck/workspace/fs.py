"""Symlink-safe file operations below a base directory (POSIX `openat`-style).

Paths are given as a trusted real base directory plus already-parsed segments. Every directory on
the way is opened relative to its parent with `O_NOFOLLOW | O_DIRECTORY`, and the file itself with
`O_NOFOLLOW`, so a symlink swapped in after the policy check makes the operation fail (ELOOP /
ENOTDIR) instead of following it out of the workspace. Callers resolve symlinks they accept first
(`resolve_within`), then operate on the resolved, symlink-free segments.
"""

from __future__ import annotations

import errno
import os
import stat
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass

TMP_PREFIX = ".tooldeck-tmp-"
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC


class NotRegularFile(OSError):
    """The path names something that is neither a regular file nor a directory (FIFO, socket, device)."""


class FileTooLarge(Exception):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size} bytes > {limit}")
        self.size = size
        self.limit = limit


def resolve_within(base: str, parts: Sequence[str]) -> tuple[str, ...] | None:
    """Follow the symlinks of `base/parts` (a missing tail is fine); the resolved segments below
    `base`, or None when the result leaves `base`. `base` must already be a real path."""
    real = os.path.realpath(os.path.join(base, *parts))
    if real == base:
        return ()
    if not real.startswith(base + os.sep):
        return None
    return tuple(real[len(base) + 1:].split(os.sep))


def symlink_on_path(base: str, parts: Sequence[str]) -> bool:
    """Whether some segment of `base/parts` is a symlink now (to explain an ENOTDIR/ELOOP)."""
    path = base
    for part in parts:
        path = os.path.join(path, part)
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return True
        except OSError:
            return False
    return False


def open_dir(base: str, parts: Sequence[str], create: bool = False) -> int:
    """An fd for the directory `base/parts`, never following a symlink; missing ones made if `create`."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        for part in parts:
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def parent_dir(base: str, parts: Sequence[str], create: bool = False) -> Iterator[int]:
    fd = open_dir(base, parts[:-1], create)
    try:
        yield fd
    finally:
        os.close(fd)


def read_bytes(base: str, parts: Sequence[str], max_bytes: int) -> bytes:
    """The bytes of a regular file. Raises FileNotFoundError, IsADirectoryError, NotRegularFile,
    FileTooLarge, or OSError(ELOOP) for a symlink."""
    with parent_dir(base, parts) as dfd:
        return read_at(dfd, parts[-1], max_bytes)


def read_at(dir_fd: int, name: str, max_bytes: int) -> bytes:
    fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", name)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", name)
        if st.st_size > max_bytes:
            raise FileTooLarge(st.st_size, max_bytes)
        # One read of the size fstat gave (plus one byte, to see the end): the file is held once in
        # memory, not once in chunks and again joined. More reads only if it grew meanwhile.
        chunks = [os.read(fd, st.st_size + 1)]
        total = len(chunks[0])
        if total <= st.st_size:
            return chunks[0]  # a regular file's read comes back short only at its end: no read to see EOF
        while total <= max_bytes:
            chunk = os.read(fd, min(max_bytes + 1 - total, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            raise FileTooLarge(total, max_bytes)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


def kind_of(base: str, parts: Sequence[str]) -> str | None:
    """`file`, `directory`, `symlink`, `other`, or None when missing; never follows the last segment."""
    if not parts:
        return "directory"
    try:
        with parent_dir(base, parts) as dfd:
            st = os.stat(parts[-1], dir_fd=dfd, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return _kind(st.st_mode)


def size_of(base: str, parts: Sequence[str]) -> int | None:
    """The size of the file `base/parts` in bytes (not following a final symlink), or None when missing."""
    try:
        with parent_dir(base, parts) as dfd:
            return os.stat(parts[-1], dir_fd=dfd, follow_symlinks=False).st_size
    except FileNotFoundError:
        return None


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def install(base: str, parts: Sequence[str], data: bytes, *, clobber: bool) -> None:
    """Write `data` to a temp file beside the target, then move it into place atomically.

    `clobber=False` links it in only if the name is free (FileExistsError otherwise), so a file
    created meanwhile by anyone is never overwritten; `clobber=True` replaces (os.replace)."""
    with parent_dir(base, parts, create=True) as dfd:
        tmp = f"{TMP_PREFIX}{uuid.uuid4().hex}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC, 0o644, dir_fd=dfd)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            if clobber:
                os.replace(tmp, parts[-1], src_dir_fd=dfd, dst_dir_fd=dfd)
            else:
                os.link(tmp, parts[-1], src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
                os.unlink(tmp, dir_fd=dfd)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dfd)
            raise


def move_out(base: str, parts: Sequence[str], dest: str) -> None:
    """Move the file `base/parts` (not following a final symlink) to the trusted absolute path `dest`."""
    with parent_dir(base, parts) as dfd:
        os.rename(parts[-1], dest, src_dir_fd=dfd)


def move_in(src: str, base: str, parts: Sequence[str]) -> None:
    """Move the trusted file `src` to `base/parts` only if that name is free (FileExistsError otherwise)."""
    with parent_dir(base, parts, create=True) as dfd:
        os.link(src, parts[-1], dst_dir_fd=dfd, follow_symlinks=False)
    os.unlink(src)


@dataclass(frozen=True, slots=True)
class DirEntry:
    name: str
    kind: str
    size: int


def scan(dir_fd: int, sizes: bool = True) -> list[DirEntry]:
    """The entries of an open directory, sorted by name; temp files of in-flight writes are skipped.
    Without `sizes`, kinds come from the directory itself (no `lstat` per entry where the filesystem
    reports them) and every size is -1."""
    out: list[DirEntry] = []
    with os.scandir(dir_fd) as it:
        for e in it:
            if e.name.startswith(TMP_PREFIX):
                continue
            try:
                if sizes:
                    st = e.stat(follow_symlinks=False)
                    out.append(DirEntry(e.name, _kind(st.st_mode), st.st_size))
                else:
                    out.append(DirEntry(e.name, _entry_kind(e), -1))
            except FileNotFoundError:
                continue
    out.sort(key=lambda d: d.name)
    return out


def _entry_kind(e: os.DirEntry[str]) -> str:
    if e.is_symlink():
        return "symlink"
    if e.is_file(follow_symlinks=False):
        return "file"
    if e.is_dir(follow_symlinks=False):
        return "directory"
    return "other"


def open_subdir(dir_fd: int, name: str) -> int:
    return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
