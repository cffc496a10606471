"""Agenvoy's file family over the workspace engine (docs/workspace.md, "Agenvoy's file family"):
`find_files`, `read_files`, `edit_file`, `remove_file`, `restore_file`, `file_history`, `run_command`.
The Profile's `builtins` key says which family an invocation gets (`catalog/profile.py`).

The catalog takes the descriptors (`descriptors.py`, one light module) when a Runtime starts; a tool's
own module is imported on its first call, so a runtime that never calls them never pays for them."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from tooldeck.builtins.registry import BuiltinTool, Handler
from tooldeck.core.errors import ToolCallError

_BLOCKING = frozenset(("read_files", "edit_file", "remove_file", "restore_file", "file_history"))
"""Sync handlers that do file I/O (a worker thread); find_files and run_command are async."""


def tools() -> list[BuiltinTool]:
    from tooldeck.builtins.agenvoy_files import descriptors as d

    pairs = [(d.FIND_FILES, "find_files"), (d.READ_FILES, "read_files"), (d.EDIT_FILE, "edit_file"),
             (d.REMOVE_FILE, "remove_file"), (d.RESTORE_FILE, "restore_file"), (d.FILE_HISTORY, "file_history"),
             (d.RUN_COMMAND, "run_command")]
    return [BuiltinTool(descriptor, _on_first_call(name), blocking=name in _BLOCKING) for descriptor, name in pairs]


def _on_first_call(name: str) -> Handler:
    """A handler that imports `agenvoy_files.<name>` when first called, then calls its `<name>` function
    (an async one's coroutine is returned as it is: dispatch awaits what a handler returns)."""
    real: list[Handler] = []

    def handler(args: dict[str, Any], ctx: Any) -> Any:
        if not real:
            real.append(getattr(importlib.import_module(f"tooldeck.builtins.agenvoy_files.{name}"), name))
        try:
            out = real[0](args, ctx)
        except ToolCallError as exc:
            raise _translated(exc) from None
        return _translating(out) if inspect.iscoroutine(out) else out

    handler.__name__ = handler.__qualname__ = name
    return handler


async def _translating(coro: Any) -> Any:
    try:
        return await coro
    except ToolCallError as exc:
        raise _translated(exc) from None


def _translated(exc: ToolCallError) -> ToolCallError:
    from tooldeck.builtins.agenvoy_files.common import translated

    return translated(exc)
