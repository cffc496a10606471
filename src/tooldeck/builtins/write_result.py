"""`write_result` (Agenvoy's tool of the same name): save a report for the user as
`report-<timestamp>.<md|html>` in the run's output folder.

Agenvoy writes to its `output_dir` (`~/Downloads`); tooldeck writes to the workspace's output root
(the folder of the Profile's body file, `output/` by default), so the file tools, the records and
`changed_files` see it like any other write. `content` (required) and `format` `md` (default) | `html`.
The name is the local time to the second (`report-20261201-154500.md`); a name that is taken (a second
report in the same second, or a file of that name already there) gets `-2`, `-3`, … instead. The file
is created only if absent (the store's compare-and-swap against "no file", so another process writing
the same name in between is never overwritten). The answer: `successfully created: <path> (<bytes>
bytes, <lines> lines on disk)`.
"""

from __future__ import annotations

import time
from typing import Any, Final

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.builtins.workspace_common import create_first_free, new_file_effect, workspace
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput
from tooldeck.workspace.limits import encoded

FORMATS: Final = ("md", "html")
MAX_TRIES: Final = 1000
EMPTY_CONTENT: Final = "write_result.empty_content"
INVALID_FORMAT: Final = "write_result.invalid_format"
NO_FREE_NAME: Final = "write_result.no_free_name"


def stamp(now: float | None = None) -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(now))


def write_result(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    content: str = args["content"]
    if not content.strip():
        raise ToolCallError(EMPTY_CONTENT, "content is empty; pass the whole report text in `content`.")
    fmt = args.get("format") or "md"
    if fmt not in FORMATS:
        raise ToolCallError(INVALID_FORMAT, f'format must be "md" or "html", got "{fmt}"')
    store, policy = workspace(ctx)
    root = policy.root_of(policy.body_file)
    data = encoded(content, "content")
    base = f"{root}/report-{stamp()}"
    loc, swap = create_first_free(store, policy, f"{base}.{fmt}", data, tries=MAX_TRIES, no_free_name=ToolCallError(
        NO_FREE_NAME, f"{base}.{fmt} and {MAX_TRIES - 1} numbered variants are all taken; nothing was written. "
        "Try again in a second."))
    lines = content.count("\n") + (not content.endswith("\n"))
    effect = new_file_effect(loc, swap.sha256, len(content), mode="create")
    return ToolOutput(f"successfully created: {loc.shown} ({len(data)} bytes, {lines} lines on disk)",
                      {"path": loc.shown, "format": fmt, "bytes": len(data), "lines": lines, "sha256": swap.sha256},
                      resource_refs=[loc.shown], effects=[effect])


DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("write_result"),
    title="Save a report",
    description="Save a finished report for the user as a new file `report-<timestamp>.md` or `.html` in the "
                "workspace's output folder (never overwriting an earlier one) and get its path back. For the "
                "deliverable itself, not for notes.",
    input_schema={
        "type": "object",
        "properties": {
            "content": {"type": "string", "description": "The whole report: Markdown, or a standalone HTML page."},
            "format": {"type": "string", "description": "md (default) | html."},
        },
        "required": ["content"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(mutating=True),
)

TOOLS = [BuiltinTool(DESCRIPTOR, write_result, blocking=True)]
