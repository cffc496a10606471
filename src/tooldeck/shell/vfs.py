"""Helpers over a bashkit `FileSystem` handle: path resolution against the shell's cwd, OS-style errors.

The `python` and `js` builtins reach files only through these, so they see exactly what the shell
sees: the mounted workspace roots (read-only ones refuse writes) and the in-memory rest.
"""

from __future__ import annotations

import errno
import posixpath
from typing import Any, Protocol


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


def resolve(cwd: str, path: str) -> str:
    """An absolute, normalised VFS path; `..` never climbs above `/`."""
    if "\0" in path:
        raise OSError(errno.EINVAL, "path contains a NUL character", path)
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
    ("not empty", OSError, errno.ENOTEMPTY),
    ("too large", OSError, errno.EFBIG),
    ("escapes", PermissionError, errno.EACCES),
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
    return OSError(errno.EIO, text.removeprefix("io error: "), path)


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


def write_bytes(fs: FsHandle, path: str, data: bytes, *, append: bool = False, make_parents: bool = False) -> None:
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
