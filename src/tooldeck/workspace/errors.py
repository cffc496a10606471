"""Stable `workspace.*` error codes and the mapping of OS errors the model can fix.

Every code here is raised as a `ToolCallError` (a recoverable tool result). An OS error that is
not the model's to fix (permissions of the host, I/O faults, a full disk) is never mapped: it
propagates, as TauriTavern's `classify_workspace_io_error` does.
"""

from __future__ import annotations

import errno

from tooldeck.core.errors import ToolCallError

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

TOOL_AFTER_FINISH = "agent.tool_after_finish"
FINISH_AFTER_FAILED_CALL = "agent.finish_after_failed_call"


def classify_os_error(exc: OSError, path: str) -> ToolCallError | None:
    """The recoverable error for an OS error on the model's `path`, or None when it is a host fault.

    Callers re-raise on None: `raise classify_os_error(e, p) or e`.
    """
    if isinstance(exc, IsADirectoryError):
        return ToolCallError(PATH_IS_DIRECTORY, f"`{path}` is a folder, not a file. List it with "
                             "`workspace_list_files` and pick a file.")
    if isinstance(exc, FileNotFoundError):
        return ToolCallError(FILE_NOT_FOUND, f"`{path}` does not exist. List its folder with "
                             "`workspace_list_files` to see what is there.")
    if exc.errno == errno.ENOTDIR:
        return ToolCallError(FILE_NOT_FOUND, f"`{path}` does not exist: part of it is a file, not a folder. "
                             "List its folder with `workspace_list_files` to see what is there.")
    if exc.errno == errno.ELOOP:
        return symlink_refused(path)
    return None


def symlink_refused(path: str) -> ToolCallError:
    return ToolCallError(SYMLINK_REFUSED, f"`{path}` goes through a symbolic link that leaves the visible "
                         "workspace (or changed while it was opened). Use a path inside the workspace.")
