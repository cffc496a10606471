"""`remove_file`: move a workspace file to the workspace trash (restorable with `restore_file`)."""

from __future__ import annotations

from typing import Any

from tooldeck.builtins.agenvoy_files import descriptors, task
from tooldeck.builtins.agenvoy_files.common import workspace
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
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



DESCRIPTOR = descriptors.REMOVE_FILE
TOOLS = [BuiltinTool(DESCRIPTOR, remove_file, blocking=True)]
