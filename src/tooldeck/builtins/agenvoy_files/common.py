"""What Agenvoy's file tools share: the `files.*` codes, mode inference and its messages, the walk's
exclude list, batch answers keyed by input, and the workspace store of the call.

Agenvoy's conventions for multi-action tools (reference §2.2): a `mode` enum inferred when omitted;
an unknown mode is `unknown mode "<m>"; available: a, b`; a missing per-mode field is
`<field> is required when mode=<m>`; batch tools answer a JSON object keyed by the input, with
`"error: …"` for an item that failed instead of failing the whole call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from tooldeck.builtins.workspace_common import workspace
from tooldeck.catalog.sources import CallContext
from tooldeck.core.errors import ToolCallError

__all__ = ["workspace"]

UNKNOWN_MODE: Final = "files.unknown_mode"
MODE_REQUIRED: Final = "files.mode_required"
FIELD_REQUIRED: Final = "files.field_required"
GLOB_CATCH_ALL: Final = "files.glob_catch_all"
GLOB_INVALID: Final = "files.glob_invalid"
ANCHOR_NOT_FOUND: Final = "files.anchor_not_found"
ANCHOR_AMBIGUOUS: Final = "files.anchor_ambiguous"
TARGET_INVALID: Final = "files.target_invalid"
TARGETS_OVERLAP: Final = "files.targets_overlap"
WOULD_EMPTY: Final = "files.would_empty"
TOO_LARGE: Final = "files.too_large"
NO_EDIT: Final = "files.no_edit"
TIME_INVALID: Final = "files.time_invalid"
TASK_UNKNOWN: Final = "files.task_unknown"
COMMAND_REFUSED: Final = "files.command_refused"
HOST_COMMANDS_OFF: Final = "files.host_commands_off"
COMMAND_TIMEOUT: Final = "files.command_timeout"

EXCLUDED_NAMES: Final = frozenset((".git", "node_modules", "vendor", "dist", "build", ".DS_Store", ".vscode",
                                   ".idea", "Library"))
"""Agenvoy's `configs/jsons/exclude_list.json`: names a walk (list, glob, search) never enters or shows."""

MAX_TEXT_BYTES: Final = 1024 * 1024
"""read_files' text cap and edit_file's cap on overwriting an existing file (Agenvoy: 1 MB)."""


def choose_mode(args: Mapping[str, Any], available: Sequence[str], inferred: str | None) -> str:
    """The call's mode: as given (it must be one of `available`), else `inferred`, else an error."""
    mode = args.get("mode")
    if mode is None or mode == "":
        if inferred is None:
            raise ToolCallError(MODE_REQUIRED, f"mode is required; available: {', '.join(available)}")
        return inferred
    if mode not in available:
        raise ToolCallError(UNKNOWN_MODE, f'unknown mode "{mode}"; available: {", ".join(available)}')
    return str(mode)


def require(value: Any, field: str, mode: str) -> Any:
    """A per-mode field that must be present (and, for text, not blank)."""
    if value is None or (isinstance(value, str) and not value.strip()) or (isinstance(value, list) and not value):
        raise ToolCallError(FIELD_REQUIRED, f"{field} is required when mode={mode}")
    return value


_TOOL_NAMES: Final = (
    ("`workspace_list_files`", "`find_files` (mode=list)"),
    ("`workspace_search_files`", "`find_files` (mode=search)"),
    ("`workspace_read_file`", "`read_files`"),
    ("`workspace_write_file`", "`edit_file` (mode=write)"),
    ("`workspace_apply_patch`", "`edit_file` (mode=patch)"),
    ("`workspace_remove_file`", "`remove_file`"),
    ("`workspace_restore_file`", "`restore_file`"),
    ("in the shell", "with `run_command`"),
    ("Use the shell", "Use `run_command`"),
    ("use the shell", "use `run_command`"),
    ("with the shell", "with `run_command`"),
)
"""The engine's messages name the TauriTavern tools; this family's models have these instead."""


def in_family_words(message: str) -> str:
    if "workspace_" not in message and "shell" not in message:
        return message
    for old, new in _TOOL_NAMES:
        message = message.replace(old, new)
    return message


def translated(exc: ToolCallError) -> ToolCallError:
    """The engine's error with the family's tool names (the same code)."""
    text = in_family_words(exc.message)
    if text == exc.message:
        return exc
    return ToolCallError(exc.code, text, exc.structured)


def item_error(exc: ToolCallError) -> str:
    """A failed item of a batch: Agenvoy's `"error: …"` string."""
    return f"error: {in_family_words(exc.message)}"


def batch_json(answer: Mapping[str, Any]) -> str:
    return orjson.dumps(answer, option=orjson.OPT_INDENT_2).decode()


def unique_key(answer: Mapping[str, Any], key: str) -> str:
    """`key`, or `key (2)`, `key (3)` … when a batch names the same input twice."""
    if key not in answer:
        return key
    n = 2
    while f"{key} ({n})" in answer:
        n += 1
    return f"{key} ({n})"


def call_name(ctx: CallContext, tool_id: str, fallback: str) -> str:
    for b in ctx.invocation.snapshot.bindings:
        if b.tool_id == tool_id:
            return b.call_name
    return fallback
