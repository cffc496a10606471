"""A pydantic-monty `AbstractOS` backed by the shell's bashkit filesystem.

Python code running in the monty worker reaches files only through these callbacks, so it sees the
same tree as the shell: read-only roots refuse writes, hidden roots do not exist, a workspace root
cannot be removed or renamed, and no write may make a file larger than the shell's file limit.
Every callback first checks the call's budget: once the call is stopped, no file operation runs.
Whatever goes wrong comes back to the program as an `OSError` (or the `ValueError` of a text
decode), never as an exception out of the shell.
"""

from __future__ import annotations

import errno
from pathlib import PurePosixPath
from typing import Any

from pydantic_monty import AbstractOS, MontyFileHandle, StatResult

from tooldeck.shell import vfs
from tooldeck.shell.budget import Budget


def _path(arg: Any) -> str:
    if isinstance(arg, MontyFileHandle):
        return str(arg.path)
    if isinstance(arg, bytes | bytearray):
        return bytes(arg).decode("utf-8", "surrogateescape")  # check_name refuses what is not UTF-8
    return str(arg)


class ShellFsOS(AbstractOS):
    def __init__(self, fs: vfs.FsHandle, cwd: str, env: dict[str, str], *, budget: Budget, roots: vfs.Roots,
                 max_read_bytes: int, max_write_bytes: int) -> None:
        self.fs = fs
        self.cwd = cwd or "/"
        self.env = dict(env)
        self.budget = budget
        self.roots = roots
        self.max_read_bytes = max_read_bytes
        self.max_write_bytes = max_write_bytes

    def __call__(self, **kwargs: Any) -> Any:
        if self.budget.stopped.is_set():
            raise TimeoutError(errno.ETIMEDOUT, "the shell call was stopped (time limit or cancel); "
                                                "no more file operations run")
        try:
            return super().__call__(**kwargs)
        except (OSError, ValueError):
            raise
        except Exception as exc:  # a bridge failure is the program's OSError, not the shell's crash
            raise OSError(errno.EIO, f"{type(exc).__name__}: {exc}") from None

    def _abs(self, p: Any) -> str:
        return vfs.resolve(self.cwd, _path(p))

    # -- queries ------------------------------------------------------------------------------------
    def path_exists(self, path: PurePosixPath) -> bool:
        return bool(self.fs.exists(self._abs(path)))

    def path_is_file(self, path: PurePosixPath) -> bool:
        return vfs.is_file(self.fs, self._abs(path))

    def path_is_dir(self, path: PurePosixPath) -> bool:
        return vfs.is_dir(self.fs, self._abs(path))

    def path_is_symlink(self, path: PurePosixPath) -> bool:
        try:
            return self.fs.stat(self._abs(path)).get("file_type") == "symlink"
        except Exception:
            return False

    def path_stat(self, path: PurePosixPath) -> StatResult:
        p = self._abs(path)
        info = vfs.call(self.fs.stat, p, p)
        mtime = info.get("modified")
        if info.get("file_type") == "directory":
            return StatResult.dir_stat(int(info.get("mode") or 0o755), mtime)
        return StatResult.file_stat(int(info.get("size") or 0), int(info.get("mode") or 0o644), mtime)

    def path_iterdir(self, path: PurePosixPath) -> list[PurePosixPath]:
        p = self._abs(path)
        if not vfs.is_dir(self.fs, p):
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", _path(path))
        return [PurePosixPath(_path(path)) / e["name"] for e in vfs.list_dir(self.fs, p)]

    def path_resolve(self, path: PurePosixPath) -> str:
        return self._abs(path)

    def path_absolute(self, path: PurePosixPath) -> str:
        return self._abs(path)

    # -- reading and writing ------------------------------------------------------------------------
    def path_open(self, path: PurePosixPath, mode: str) -> MontyFileHandle:
        p = self._abs(path)
        handle = MontyFileHandle(_path(path), mode)
        action = handle.mode[0]
        if vfs.is_dir(self.fs, p):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", _path(path))
        if action == "r":
            if not self.fs.exists(p):
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", _path(path))
        elif action == "w" or not self.fs.exists(p):
            vfs.write_bytes(self.fs, p, b"")
        return handle

    def path_read_bytes(self, path: PurePosixPath | MontyFileHandle) -> bytes:
        return vfs.read_bytes(self.fs, self._abs(path), self.max_read_bytes)

    def path_read_text(self, path: PurePosixPath | MontyFileHandle) -> str:
        data = self.path_read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{_path(path)} is not UTF-8 text; open it in binary mode ('rb')") from exc

    def _write(self, path: Any, data: bytes, append: bool) -> int:
        vfs.write_bytes(self.fs, self._abs(path), data, append=append, max_bytes=self.max_write_bytes)
        return len(data)

    def path_write_text(self, path: PurePosixPath | MontyFileHandle, data: str) -> int:
        self._write(path, data.encode("utf-8", "replace"), False)
        return len(data)

    def path_write_bytes(self, path: PurePosixPath | MontyFileHandle, data: bytes) -> int:
        return self._write(path, bytes(data), False)

    def path_append_text(self, path: PurePosixPath | MontyFileHandle, data: str) -> int:
        self._write(path, data.encode("utf-8", "replace"), True)
        return len(data)

    def path_append_bytes(self, path: PurePosixPath | MontyFileHandle, data: bytes) -> int:
        return self._write(path, bytes(data), True)

    # -- changing the tree --------------------------------------------------------------------------
    def path_mkdir(self, path: PurePosixPath, parents: bool, exist_ok: bool) -> None:
        p = self._abs(path)
        if self.fs.exists(p):
            if exist_ok and vfs.is_dir(self.fs, p):
                return
            raise FileExistsError(errno.EEXIST, "File exists", _path(path))
        vfs.call(self.fs.mkdir, p, p, parents)

    def path_unlink(self, path: PurePosixPath) -> None:
        p = self._abs(path)
        if vfs.is_dir(self.fs, p):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", _path(path))
        vfs.call(self.fs.remove, p, p, False)

    def path_rmdir(self, path: PurePosixPath) -> None:
        p = self._abs(path)
        self.roots.refuse(p, _path(path))
        if not vfs.is_dir(self.fs, p):
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", _path(path))
        if vfs.list_dir(self.fs, p):
            raise OSError(errno.ENOTEMPTY, "Directory not empty", _path(path))
        vfs.call(self.fs.remove, p, p, False)

    def path_rename(self, path: PurePosixPath, target: PurePosixPath) -> None:
        p, t = self._abs(path), self._abs(target)
        self.roots.refuse(p, _path(path))
        self.roots.refuse(t, _path(target))
        vfs.call(self.fs.rename, p, p, t)

    # -- environment --------------------------------------------------------------------------------
    def getenv(self, key: str, default: str | None = None) -> str | None:
        return self.env.get(key, default)

    def get_environ(self) -> dict[str, str]:
        return dict(self.env)
