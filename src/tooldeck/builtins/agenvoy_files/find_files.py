"""`find_files`: Agenvoy's list | glob | search over the workspace, several queries per call.

Mode inference (when `mode` is omitted): a query with both `pattern` and `file_pattern` → search; a
query with `pattern` → glob; else list. list answers `{dir: [entries] | "error: …"}` per query;
glob and search merge their queries' hits (deduplicated) and page them with `offset` / `limit`.
The walk and the matching run on a worker thread under a `Stop` (time limit, cancel flag), as
`workspace_search_files` does, so a timeout or a cancellation stops the work itself.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Final

from tooldeck.builtins.agenvoy_files import descriptors, listing, walk
from tooldeck.builtins.agenvoy_files.common import choose_mode, workspace
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.builtins.workspace_files import search_seconds
from tooldeck.catalog.sources import CallContext
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput
from tooldeck.workspace import fs, grep
from tooldeck.workspace.names import shown, shown_line
from tooldeck.workspace.paths import parse_dir
from tooldeck.workspace.search import MAX_SEARCH_FILE_BYTES, MAX_SEARCH_FILES

TOOL_ID = ToolId.builtin("find_files")
MODES: Final = descriptors.FIND_MODES
PAGE: Final = descriptors.PAGE
MAX_GLOB_FILES: Final = 50_000
FIRST_ROWS: Final = 5
MAX_CONTEXT: Final = descriptors.MAX_CONTEXT
LINE_CHARS: Final = 300


def infer(queries: list[dict[str, Any]]) -> str:
    if any(q.get("pattern") and q.get("file_pattern") for q in queries):
        return "search"
    if any(q.get("pattern") for q in queries):
        return "glob"
    return "list"


async def find_files(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    stop = grep.Stop(search_seconds(ctx))
    try:
        return await asyncio.to_thread(_find, args, ctx, stop)
    except asyncio.CancelledError:
        stop.cancel()
        raise


def _find(args: dict[str, Any], ctx: CallContext, stop: grep.Stop) -> ToolOutput:
    queries: list[dict[str, Any]] = args["queries"]
    mode = choose_mode(args, MODES, infer(queries))
    if mode == "list":
        return listing.list_dirs(queries, ctx, stop)
    for q in queries:
        if not q.get("pattern"):
            raise ToolCallError("files.field_required", f"pattern is required when mode={mode}")
    if mode == "glob":
        for q in queries:
            walk.refuse_catch_all(q["pattern"])
            walk.glob_regex(q["pattern"])
        return _glob(queries, args, ctx, stop)
    return _search(queries, args, ctx, stop)


# -- glob ---------------------------------------------------------------------------------------------
def _paging(args: dict[str, Any]) -> tuple[int, int]:
    offset = args.get("offset") or 0
    limit = args.get("limit") or PAGE
    return offset, min(limit, PAGE)


def _glob(queries: list[dict[str, Any]], args: dict[str, Any], ctx: CallContext, stop: grep.Stop) -> ToolOutput:
    store, policy = workspace(ctx)
    hits: dict[str, float] = {}
    notes: list[str] = []
    stopped = False
    for q in queries:
        rel = parse_dir(q.get("dir") or ".")
        seen = 0
        try:
            for found in walk.walk(store, policy, rel, stop):
                seen += 1
                if seen > MAX_GLOB_FILES:
                    notes.append(f"stopped after {MAX_GLOB_FILES:,} files under `{shown(rel) or '.'}`; "
                                 "pass a narrower dir")
                    break
                if found.rel not in hits and walk.matches(q["pattern"], found.below):
                    try:
                        hits[found.rel] = found.mtime()
                    except FileNotFoundError:
                        continue
        except grep.Stopped as exc:
            stopped = exc.reason == "time"
            break
    ordered = sorted(hits, key=lambda p: (-hits[p], p))  # newest first
    offset, limit = _paging(args)
    page = ordered[offset:offset + limit]
    structured = {"mode": "glob", "total": len(ordered), "offset": offset, "paths": [shown(p) for p in page]}
    if not ordered:
        return ToolOutput(_with_notes("no files found", notes, stopped, stop), structured)
    lines = [shown(p) for p in page]
    lines.append(_footer(len(ordered), offset, len(page), "files, newest first"))
    return ToolOutput(_with_notes("\n".join(lines), notes, stopped, stop), structured,
                      resource_refs=structured["paths"])


def _footer(total: int, offset: int, shown_count: int, what: str) -> str:
    if shown_count == 0:
        return f"offset {offset} is past the end: {total} {what} in all"
    end = offset + shown_count
    more = f"; next page: offset={end}" if end < total else ""
    return f"({offset + 1}-{end} of {total} {what}{more})"


def _with_notes(text: str, notes: list[str], stopped: bool, stop: grep.Stop) -> str:
    if stopped:
        notes = [*notes, f"stopped at the time limit ({stop.seconds:g} s) before every file was seen; "
                 "pass a narrower dir"]
    return text + "".join(f"\nnote: {n}" for n in notes)


# -- search -------------------------------------------------------------------------------------------
@dataclass(slots=True)
class _Hits:
    rows: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    texts: dict[str, list[str]] = field(default_factory=dict)
    searched: int = 0
    skipped: int = 0


def _search(queries: list[dict[str, Any]], args: dict[str, Any], ctx: CallContext, stop: grep.Stop) -> ToolOutput:
    store, policy = workspace(ctx)
    output = args.get("output") or "content"
    context = min(max(args.get("context") or 0, 0), MAX_CONTEXT)
    hits = _Hits()
    notes: list[str] = []
    stopped = False
    for q in queries:
        pattern = grep.compile_pattern(q["pattern"])
        file_glob = q.get("file_pattern") or "**/*"
        walk.glob_regex(file_glob)
        every_file = file_glob in ("**/*", "**", "*")
        rel = parse_dir(q.get("dir") or ".")
        try:
            for found in walk.walk(store, policy, rel, stop):
                if hits.searched >= MAX_SEARCH_FILES:
                    notes.append(f"stopped after {MAX_SEARCH_FILES:,} files; pass a narrower dir or file_pattern")
                    break
                if not every_file and not walk.matches(file_glob, found.below):
                    continue
                _search_file(pattern, found, hits, stop, context)
        except grep.Stopped as exc:
            stopped = exc.reason == "time"
            break
    if not hits.rows:
        structured = {"mode": "search", "total": 0, "offset": 0, "files": [], "searchedFiles": hits.searched}
        return ToolOutput(_with_notes("no files found", notes, stopped, stop), structured)
    offset, limit = _paging(args)
    if output == "files":
        text, structured = _files_page(hits, offset, limit)
    else:
        text, structured = _content_page(hits, offset, limit, context)
    structured["searchedFiles"] = hits.searched
    return ToolOutput(_with_notes(text, notes, stopped, stop), structured,
                      resource_refs=sorted({shown(p) for p in hits.rows}))


def _search_file(pattern: grep.Pattern, found: walk.Found, hits: _Hits, stop: grep.Stop, context: int) -> None:
    try:
        data = found.read(MAX_SEARCH_FILE_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        return
    except (fs.FileTooLarge, OSError):
        hits.skipped += 1
        return
    if b"\0" in data[:512]:
        return  # binary
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            hits.skipped += 1
            return
    hits.searched += 1
    rows = [(n, data[s:e].decode("utf-8")) for n, s, e in grep.matching_lines(pattern, data, stop)]
    if rows and found.rel not in hits.rows:
        hits.rows[found.rel] = rows
        if context:
            rows_text = data.decode("utf-8").split("\n")
            if data.endswith(b"\n"):
                rows_text.pop()  # no row after a final newline
            hits.texts[found.rel] = rows_text


def _cut(line: str) -> str:
    return shown_line(line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + "…")


def _content_page(hits: _Hits, offset: int, limit: int, context: int) -> tuple[str, dict[str, Any]]:
    flat = [(p, n, t) for p in sorted(hits.rows) for n, t in hits.rows[p]]
    page = flat[offset:offset + limit]
    lines: list[str] = []
    for p, n, t in page:
        if context:
            rows = hits.texts[p]
            for k in range(max(1, n - context), min(len(rows), n + context) + 1):
                mark = ":" if k == n else "-"
                lines.append(f"{shown(p)}{mark}{k}{mark} {_cut(rows[k - 1])}")
            lines.append("--")
        else:
            lines.append(f"{shown(p)}:{n}: {_cut(t)}")
    lines.append(_footer(len(flat), offset, len(page), f"matching lines in {len(hits.rows)} files"))
    structured = {"mode": "search", "output": "content", "total": len(flat), "offset": offset,
                  "matches": [{"path": shown(p), "row": n, "text": t[:LINE_CHARS]} for p, n, t in page]}
    return "\n".join(lines), structured


def _files_page(hits: _Hits, offset: int, limit: int) -> tuple[str, dict[str, Any]]:
    paths = sorted(hits.rows)
    page = paths[offset:offset + limit]
    lines: list[str] = []
    files: list[dict[str, Any]] = []
    for p in page:
        rows = hits.rows[p]
        lines.append(f"{shown(p)} ({len(rows)} matching line{'s' if len(rows) != 1 else ''})")
        lines.extend(f"  {n}: {_cut(t)}" for n, t in rows[:FIRST_ROWS])
        files.append({"path": shown(p), "count": len(rows), "rows": [n for n, _ in rows[:FIRST_ROWS]]})
    lines.append(_footer(len(paths), offset, len(page), "files"))
    return "\n".join(lines), {"mode": "search", "output": "files", "total": len(paths), "offset": offset,
                              "files": files}



DESCRIPTOR = descriptors.FIND_FILES
TOOLS = [BuiltinTool(DESCRIPTOR, find_files)]
