"""Agenvoy's file family over the workspace engine (docs/workspace.md, "Agenvoy's file family"):
`find_files`, `read_files`, `edit_file`, `remove_file`, `restore_file`, `file_history`, `run_command`.
The Profile's `builtins` key says which family an invocation gets (`catalog/profile.py`)."""

from __future__ import annotations

from tooldeck.builtins.registry import BuiltinTool


def tools() -> list[BuiltinTool]:
    from tooldeck.builtins.agenvoy_files import (
        edit_file,
        file_history,
        find_files,
        read_files,
        remove_file,
        restore_file,
        run_command,
    )

    return [*find_files.TOOLS, *read_files.TOOLS, *edit_file.TOOLS, *remove_file.TOOLS, *restore_file.TOOLS,
            *file_history.TOOLS, *run_command.TOOLS]
