"""Stable `workspace.*` error codes, and the one table that says whose an OS error is.

Every code here is raised as a `ToolCallError` (a recoverable tool result). `classify_os_error` maps
the OS errors a model causes and can fix (a name too long, a path that vanished or never was, a
folder where a file was expected, a name the filesystem will not store, permissions it changed with
`chmod` in the shell) to such a result. Every other OS error (a full disk or quota, an I/O error, a
read-only filesystem, running out of file descriptors or memory) is the host's: it is not mapped
and propagates, and dispatch re-raises an `OSError` from a builtin out of `Invocation.arun`
(`docs/errors.md`, "OS errors: the model's or the host's").
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import Final

from tooldeck.core.errors import ToolCallError
from tooldeck.workspace.fs import NotRegularFile
from tooldeck.workspace.names import shown

INVALID_PATH = "workspace.invalid_path"
PATH_NOT_VISIBLE = "workspace.path_not_visible"
PATH_NOT_WRITABLE = "workspace.path_not_writable"
FILE_NOT_FOUND = "workspace.file_not_found"
PATH_IS_DIRECTORY = "workspace.path_is_directory"
PATH_NOT_FOUND = "workspace.path_not_found"
NOT_REGULAR_FILE = "workspace.not_regular_file"
SYMLINK_REFUSED = "workspace.symlink_refused"
FILE_NOT_TEXT = "workspace.file_not_text"
FILE_TOO_LARGE = "workspace.file_too_large"
INVALID_LINE_RANGE = "workspace.invalid_line_range"
LIST_DEPTH_TOO_LARGE = "workspace.list_depth_too_large"
LIST_DEPTH_INVALID = "workspace.list_depth_invalid"
GREP_PATTERN_INVALID = "workspace.grep_pattern_invalid"
WRITE_MODE_INVALID = "workspace.write_mode_invalid"
WRITE_REQUIRES_READ = "workspace.write_requires_read"
WRITE_STALE_FILE = "workspace.write_stale_file"
PATCH_EMPTY_OLD_STRING = "workspace.patch_empty_old_string"
PATCH_NO_CHANGE = "workspace.patch_no_change"
PATCH_REQUIRES_READ = "workspace.patch_requires_read"
PATCH_REQUIRES_FULL_READ = "workspace.patch_requires_full_read"
PATCH_STALE_FILE = "workspace.patch_stale_file"
PATCH_OLD_STRING_NOT_FOUND = "workspace.patch_old_string_not_found"
PATCH_OLD_STRING_NOT_UNIQUE = "workspace.patch_old_string_not_unique"
RESTORE_NOTHING_TO_RESTORE = "workspace.restore_nothing_to_restore"
RESTORE_VERSION_REQUIRED = "workspace.restore_version_required"
RESTORE_VERSION_NOT_FOUND = "workspace.restore_version_not_found"
RESTORE_TARGET_EXISTS = "workspace.restore_target_exists"
COMMIT_MODE_INVALID = "workspace.commit_mode_invalid"
COMMIT_TOO_LARGE = "workspace.commit_too_large"
PATH_TOO_LONG = "workspace.path_too_long"
NAME_NOT_SUPPORTED = "workspace.name_not_supported"
PERMISSION_DENIED = "workspace.permission_denied"
CONTENT_NOT_TEXT = "workspace.content_not_text"

TOOL_AFTER_FINISH = "agent.tool_after_finish"
FINISH_AFTER_FAILED_CALL = "agent.finish_after_failed_call"


def _missing(path: str, folder: bool) -> ToolCallError:
    code = PATH_NOT_FOUND if folder else FILE_NOT_FOUND
    return ToolCallError(code, f"`{shown(path)}` does not exist (or was removed meanwhile). List its folder with "
                         "`workspace_list_files` to see what is there.")


def _not_a_folder(path: str, folder: bool) -> ToolCallError:
    code = PATH_NOT_FOUND if folder else FILE_NOT_FOUND
    return ToolCallError(code, f"`{shown(path)}` does not exist: part of it is a file, not a folder. List its "
                         "folder with `workspace_list_files` to see what is there.")


def _is_directory(path: str, folder: bool) -> ToolCallError:
    return ToolCallError(PATH_IS_DIRECTORY, f"`{shown(path)}` is a folder, not a file. List it with "
                         "`workspace_list_files` and pick a file.")


def _too_long(path: str, folder: bool) -> ToolCallError:
    return ToolCallError(PATH_TOO_LONG, f"`{shown(path)}` is too long for the filesystem: a name can have at most "
                         "255 bytes and a whole path about 4,000 (in UTF-8, where most non-Latin letters take 2-4 "
                         "bytes). Use shorter names.")


def _not_supported(path: str, folder: bool) -> ToolCallError:
    return ToolCallError(NAME_NOT_SUPPORTED, f"The filesystem does not accept a name in `{shown(path)}` (it cannot "
                         "store some character of it). Use a name made of letters, digits, `-`, `_` and `.`.")


def _permission(path: str, folder: bool) -> ToolCallError:
    return ToolCallError(PERMISSION_DENIED, f"`{shown(path)}` cannot be used: its permissions (or its folder's) "
                         "forbid it; they may have been changed with `chmod` in the shell. Give them back with "
                         "`chmod u+rw` (`u+rwx` for a folder) in the shell, or use another path.")


MODEL_ERRNOS: Final[dict[int, Callable[[str, bool], ToolCallError]]] = {
    errno.ENOENT: _missing,
    errno.ESTALE: _missing,  # NFS: removed by another client since we looked it up
    errno.ENOTDIR: _not_a_folder,
    errno.EISDIR: _is_directory,
    errno.ELOOP: lambda path, folder: symlink_refused(path),
    errno.ENAMETOOLONG: _too_long,
    errno.EILSEQ: _not_supported,
    errno.EINVAL: _not_supported,  # what vfat/exFAT/NTFS mounts answer for a name they cannot store
    errno.EACCES: _permission,
    errno.EPERM: _permission,
}
"""The OS errors a model causes and can fix, each with its recoverable error. Anything else is a host fault."""

HOST_FAULT_EXAMPLES: Final = (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG, errno.EMFILE,
                              errno.ENFILE, errno.ENOMEM, errno.EXDEV, errno.EBUSY)
"""Documented host faults (not exhaustive: every errno missing from `MODEL_ERRNOS` is one)."""


def classify_os_error(exc: OSError, path: str, *, folder: bool = False) -> ToolCallError | None:
    """The recoverable error for an OS error on the model's `path` (a folder's when `folder`), or None
    when it is a host fault. Callers re-raise on None: `raise classify_os_error(e, p) or e`."""
    if isinstance(exc, NotRegularFile):
        return ToolCallError(NOT_REGULAR_FILE, f"`{shown(path)}` is not a regular file (a device, pipe or socket), "
                             "so it cannot be read as text.")
    make = MODEL_ERRNOS.get(exc.errno) if exc.errno is not None else None
    return make(path, folder) if make is not None else None


def symlink_refused(path: str) -> ToolCallError:
    return ToolCallError(SYMLINK_REFUSED, f"`{shown(path)}` goes through a symbolic link that leaves the visible "
                         "workspace (or changed while it was opened). Use a path inside the workspace.")
