"""`workspace.list_files`, `workspace.search_files`, `workspace.read_file`: the read-only file tools."""

from __future__ import annotations

import asyncio
from typing import Any

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.builtins.workspace_common import (
    PATH_PROPERTY,
    call_name,
    profile_aware,
    roots_sentence,
    workspace,
)
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput
from tooldeck.workspace import grep, listing, reading, search
from tooldeck.workspace.errors import LIST_DEPTH_INVALID, LIST_DEPTH_TOO_LARGE
from tooldeck.workspace.names import shown
from tooldeck.workspace.paths import parse_dir

READ_ONLY = ToolAnnotations(read_only=True, concurrency_safe=True, idempotent=True)
SEARCH_TOOL_ID = "builtin:workspace.search_files"
SEARCH_MARGIN_S = 1.0
"""The search stops this long before the call's dispatch timeout, so it reports what it found."""


# -- list_files ---------------------------------------------------------------------------------------
def list_files(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    depth = args.get("depth")
    depth = listing.DEFAULT_LIST_DEPTH if depth is None else depth
    if depth > listing.MAX_LIST_DEPTH:
        raise ToolCallError(LIST_DEPTH_TOO_LARGE, f"depth must be <= {listing.MAX_LIST_DEPTH} (got {depth}). "
                            "List a subfolder to go deeper.")
    if depth < 1:
        raise ToolCallError(LIST_DEPTH_INVALID, f"depth must be at least 1 (got {depth}).")
    store, policy = workspace(ctx)
    rel = parse_dir(args.get("path"))
    result = listing.list_tree(store, policy, rel, depth)
    entries = [e.to_dict() for e in result.entries]
    structured = {"path": shown(rel), "entries": entries, "truncated": result.truncated}
    return ToolOutput(listing.render(result, policy), structured, resource_refs=[e["path"] for e in entries])


LIST_FILES = ToolDescriptor(
    id=ToolId.builtin("workspace.list_files"),
    title="List workspace files",
    description="List the files and folders of the run's workspace as a tree. " + roots_sentence()
    + f" Omit `path` (or use `.`) for the workspace root. `depth` is 1-{listing.MAX_LIST_DEPTH} levels "
    f"(default {listing.DEFAULT_LIST_DEPTH}); at most {listing.MAX_LIST_ENTRIES} entries are shown.",
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": ["string", "null"], "description": "Folder to list; omit or `.` for the workspace root."},
            "depth": {"type": "integer", "description": f"Levels to show, 1-{listing.MAX_LIST_DEPTH} "
                                                          f"(default {listing.DEFAULT_LIST_DEPTH})."},
        },
        "additionalProperties": False,
    },
    annotations=READ_ONLY,
)


# -- search_files -------------------------------------------------------------------------------------
async def search_files(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    """The walk and the matching run on a worker thread; this coroutine stays on the event loop so that a
    timeout or a cancellation of the call reaches it, and it stops the thread's work (`Stop`)."""
    stop = grep.Stop(search_seconds(ctx))
    try:
        return await asyncio.to_thread(_search, args, ctx, stop)
    except asyncio.CancelledError:
        stop.cancel()
        raise


def search_seconds(ctx: CallContext) -> float:
    """The search's own time limit: `MAX_SEARCH_SECONDS`, kept under the call's dispatch timeout so the
    model gets what was found so far rather than `tool.timeout`."""
    timeout = ctx.invocation.profile.timeout_for(str(ctx.tool_id))
    return min(search.MAX_SEARCH_SECONDS, max(timeout - SEARCH_MARGIN_S, timeout / 2))


def _search(args: dict[str, Any], ctx: CallContext, stop: grep.Stop) -> ToolOutput:
    pattern = grep.compile_pattern(args["pattern"])  # on the worker too: a large pattern takes a while
    store, policy = workspace(ctx)
    rel = parse_dir(args.get("path"))
    result = search.search(store, policy, pattern, rel, stop)
    refs = sorted({shown(p) for p, _, _ in result.matches})
    return ToolOutput(search.render(result, pattern), search.structured(result, pattern), resource_refs=refs)


SEARCH_FILES = ToolDescriptor(
    id=ToolId.builtin("workspace.search_files"),
    title="Search workspace files",
    description="Search workspace files line by line with a regular expression (RE2 syntax: Python `re` without "
    "backreferences and look-around; start it with `(?i)` to ignore case). Without `path` it searches every "
    "visible folder except `tool-results/` and `skills/`; with `path` (a file or folder, read-only ones "
    "included) only there. Matching lines come sorted "
    f"by path and line, at most {search.MAX_LISTED_LINES}, with the total count. " + roots_sentence(),
    input_schema={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression matched against each line."},
            "path": {"type": ["string", "null"], "description": "File or folder to search; omit for all visible "
                                                                 "folders except tool-results/ and skills/."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
    annotations=READ_ONLY,
)


# -- read_file ----------------------------------------------------------------------------------------
def read_file(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    store, policy = workspace(ctx)
    loc = store.locate(policy, args["path"])
    data = store.read(loc)
    budget = reading.page_budget(ctx.invocation.profile.result_inline_limit, loc.shown)
    total_lines, total_words = reading.text_stats(data.sha256, data.text, data.data)
    pg = reading.page(data.text, len(data.data), args.get("start_line"), args.get("line_count"), budget, total_lines)
    states = store.read_states
    if pg.full:
        states.record_full(loc.key, data.sha256, data.text)
    elif pg.line_truncated:
        states.record_partial(loc.key, data.sha256, {}, (pg.lines[0],))
    else:
        states.record_partial(loc.key, data.sha256, dict(enumerate(pg.lines, pg.start)))
    shown = pg.text
    shown_words = reading.count_words(shown)
    structured = {
        "path": loc.shown, "sha256": data.sha256, "startLine": pg.start, "endLine": pg.end,
        "totalLines": pg.total_lines, "chars": len(shown), "words": shown_words,
        "totalChars": len(data.text), "totalWords": total_words, "lineTruncated": pg.line_truncated,
        "fullRead": pg.full,
    }
    content = reading.render(loc.shown, pg, len(data.text), total_words, shown_words, call_name(ctx, SEARCH_TOOL_ID))
    return ToolOutput(content, structured, resource_refs=[loc.shown])


READ_FILE = ToolDescriptor(
    id=ToolId.builtin("workspace.read_file"),
    title="Read a workspace file",
    description="Read a text file of the workspace as numbered lines (number, tab, text; the number is not part "
    f"of the file). The whole file comes back when it fits one page ({reading.MAX_READ_LINES:,} lines, 256 KiB "
    "and about 49,000 characters); otherwise a preview that says which `start_line` and `line_count` to read "
    "next. Read a file before replacing or patching it; for `workspace_apply_patch` copy "
    "`old_string` without the line numbers. " + roots_sentence(),
    input_schema={
        "type": "object",
        "properties": {
            "path": PATH_PROPERTY,
            "start_line": {"type": "integer", "description": "First line to show, 1-based (default 1)."},
            "line_count": {"type": "integer", "description": "How many lines to show, at least 1 (default: as "
                                                             "many as fit)."},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    annotations=READ_ONLY,
)

TOOLS = profile_aware([
    BuiltinTool(LIST_FILES, list_files, blocking=True),
    BuiltinTool(SEARCH_FILES, search_files),
    BuiltinTool(READ_FILE, read_file, blocking=True),
])
