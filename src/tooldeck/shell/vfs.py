"""Helpers over a bashkit `FileSystem` handle: path resolution against the shell's cwd, OS-style errors.

The `python` and `js` builtins reach files only through these, so they see exactly what the shell
sees: the mounted workspace roots (read-only ones refuse writes) and the in-memory rest. Every
failure comes out as an `OSError` with a POSIX errno, whatever bashkit or the host raised: bad names
(NUL, lone surrogates, too long) are refused here, before they reach either.
"""

from __future__ import annotations

import errno
import posixpath
from typing import Any, Protocol

from tooldeck.shell.limits import MIB
from tooldeck.shell.text import first_surrogate

NAME_MAX = 255
"""Longest file name component, in UTF-8 bytes (Linux's NAME_MAX)."""
PATH_MAX = 4096


class FsHandle(Protocol):
    def read_file(self, path: str) -> bytes: ...
    def write_file(self, path: str, content: bytes) -> None: ...
    def append_file(self, path: str, content: bytes) -> None: ...
    def mkdir(self, path: str, recursive: bool = False) -> None: ...
    def remove(self, path: str, recursive: bool = False) -> None: ...
    def stat(self, path: str) -> dict[str, Any]: ...
    def read_dir(self, path: str) -> list[dict[str, Any]]: ...
    def exists(self, path: str) -> bool: ...
    def rename(self, from_path: str, to_path: str) -> None: ...


def check_name(path: str) -> None:
    """Refuse a path no filesystem call should see: NUL, lone surrogates, over-long names."""
    if "\0" in path:
        raise OSError(errno.EINVAL, "path contains a NUL character", path)
    bad = first_surrogate(path)
    if bad is not None:
        raise OSError(errno.EILSEQ, f"file name holds a lone surrogate ({bad[1]}), which is not valid Unicode", path)
    size = len(path.encode("utf-8"))
    if size > PATH_MAX or any(len(part.encode("utf-8")) > NAME_MAX for part in path.split("/")):
        raise OSError(errno.ENAMETOOLONG, f"File name too long (a name may have at most {NAME_MAX} bytes, a path "
                                          f"{PATH_MAX})", path[:300] + ("…" if len(path) > 300 else ""))


def resolve(cwd: str, path: str) -> str:
    """An absolute, normalised VFS path; `..` never climbs above `/`."""
    check_name(path)
    joined = path if path.startswith("/") else posixpath.join(cwd or "/", path)
    out = posixpath.normpath(joined)
    if out.startswith("//"):
        out = "/" + out.lstrip("/")
    return out


_MESSAGES: tuple[tuple[str, type[OSError], int], ...] = (
    ("not found", FileNotFoundError, errno.ENOENT),
    ("no such file", FileNotFoundError, errno.ENOENT),
    ("is a directory", IsADirectoryError, errno.EISDIR),
    ("not a directory", NotADirectoryError, errno.ENOTDIR),
    ("readonly", PermissionError, errno.EROFS),
    ("read-only", PermissionError, errno.EROFS),
    ("permission", PermissionError, errno.EACCES),
    ("already exists", FileExistsError, errno.EEXIST),
    ("file exists", FileExistsError, errno.EEXIST),
    ("not empty", OSError, errno.ENOTEMPTY),
    ("name too long", OSError, errno.ENAMETOOLONG),
    ("too large", OSError, errno.EFBIG),
    ("no space", OSError, errno.ENOSPC),
    ("quota", OSError, errno.EDQUOT),
    ("escapes", PermissionError, errno.EACCES),
    ("invalid", OSError, errno.EINVAL),
)


def os_error(exc: BaseException, path: str) -> OSError:
    """The OSError subclass a Python or JS program expects for a bashkit filesystem failure."""
    if isinstance(exc, OSError):
        return exc
    text = str(exc)
    low = text.lower()
    for needle, cls, code in _MESSAGES:
        if needle in low:
            return cls(code, text.removeprefix("io error: "), path)
    return OSError(errno.EIO, text.removeprefix("io error: ") or type(exc).__name__, path)


def is_dir(fs: FsHandle, path: str) -> bool:
    try:
        return fs.stat(path).get("file_type") == "directory"
    except Exception:
        return False


def is_file(fs: FsHandle, path: str) -> bool:
    try:
        return fs.stat(path).get("file_type") == "file"
    except Exception:
        return False


def size_of(fs: FsHandle, path: str) -> int:
    """The file's size, 0 when it does not exist (yet)."""
    try:
        return int(fs.stat(path).get("size") or 0)
    except Exception:
        return 0


def read_bytes(fs: FsHandle, path: str, limit: int | None = None) -> bytes:
    try:
        info = fs.stat(path)
    except Exception as exc:
        raise os_error(exc, path) from None
    if info.get("file_type") == "directory":
        raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
    if limit is not None and int(info.get("size") or 0) > limit:
        raise OSError(errno.EFBIG, f"file is larger than {limit} bytes", path)
    try:
        return fs.read_file(path)
    except Exception as exc:
        raise os_error(exc, path) from None


def read_text(fs: FsHandle, path: str, limit: int | None = None) -> str:
    return read_bytes(fs, path, limit).decode("utf-8", "replace")


def too_large(path: str, size: int, limit: int) -> OSError:
    return OSError(errno.EFBIG, f"File too large: the write would make the file {size:,} bytes; shell files are "
                                f"limited to {limit // MIB} MiB ({limit:,} bytes)", path)


def write_bytes(fs: FsHandle, path: str, data: bytes, *, append: bool = False, make_parents: bool = False,
                max_bytes: int | None = None) -> None:
    """Write or append, refusing (before anything is read or joined) a result over `max_bytes`."""
    if max_bytes is not None:
        size = len(data) + (size_of(fs, path) if append else 0)
        if size > max_bytes:
            raise too_large(path, size, max_bytes)
    if make_parents:
        parent = posixpath.dirname(path)
        if parent and parent != "/" and not fs.exists(parent):
            try:
                fs.mkdir(parent, True)
            except Exception as exc:
                raise os_error(exc, parent) from None
    try:
        if append:
            fs.append_file(path, data)
        else:
            fs.write_file(path, data)
    except Exception as exc:
        raise os_error(exc, path) from None


def list_dir(fs: FsHandle, path: str) -> list[dict[str, Any]]:
    try:
        return fs.read_dir(path)
    except Exception as exc:
        raise os_error(exc, path) from None


def call(fn: Any, path: str, *args: Any) -> Any:
    """Run one filesystem operation, turning bashkit's errors into OSErrors."""
    try:
        return fn(*args)
    except Exception as exc:
        raise os_error(exc, path) from None


class Roots:
    """The mount points of one call: no command may remove or rename them, nor `/`."""

    def __init__(self, mount_points: list[str] | tuple[str, ...] = ()) -> None:
        self.points = frozenset(mount_points)

    def protected(self, path: str) -> bool:
        """`/`, a mount point, or a folder that holds one."""
        if path == "/" or path in self.points:
            return True
        prefix = path.rstrip("/") + "/"
        return any(p.startswith(prefix) for p in self.points)

    def refuse(self, path: str, shown: str | None = None) -> None:
        """Raise EBUSY when `path` (absolute, normalised) is `/` or a mount point."""
        if self.protected(path):
            what = "the workspace root `/`" if path == "/" else f"the workspace root {path}"
            raise OSError(errno.EBUSY, f"Device or resource busy: {what} cannot be removed or renamed "
                                       f"(its contents can)", shown or path)
