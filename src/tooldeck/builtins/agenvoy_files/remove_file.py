"""`remove_file`: move a workspace file to the workspace trash (restorable with `restore_file`)."""

from __future__ import annotations

from typing import Any

from tooldeck.builtins.agenvoy_files import task
from tooldeck.builtins.agenvoy_files.common import workspace
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolEffect, ToolOutput
from tooldeck.workspace import effects

TOOL_ID = ToolId.builtin("remove_file")


def remove_file(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    store, policy = workspace(ctx)
    loc = store.locate(policy, args["path"], write=True)
    entry = store.remove(loc)
    task.touched(ctx).note_removed(loc.real_rel)
    effect = ToolEffect(effects.FILE_REMOVED, {"path": loc.shown, "sha256": entry.sha256, "size": entry.size})
    return ToolOutput(f"removed: {loc.shown} ({entry.size:,} bytes), moved to the workspace trash; "
                      f'restore_file(path="{loc.shown}") brings it back',
                      {"path": loc.shown, "sha256": entry.sha256, "size": entry.size},
                      resource_refs=[loc.shown], effects=[effect])


DESCRIPTOR = ToolDescriptor(
    id=TOOL_ID,
    title="Remove a workspace file",
    description="Remove one file by moving it to the workspace trash; restore_file brings it back, file_history "
    "lists what was removed. Only files in the writable folders (output/, scratch/, plan/, summaries/, persist/).",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string", "description": "Workspace path of the file, e.g. "
                                                                 "`output/old.md`."}},
        "required": ["path"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(mutating=True),
)

TOOLS = [BuiltinTool(DESCRIPTOR, remove_file, blocking=True)]
