"""`file_history`: Agenvoy's list | read over the workspace engine's versions and trash.

Mode inference: `paths` → read, else list. list names the recorded versions (and removals) of `path`,
of the files this run changed (`task_id`), or of every file, newest first, within `from` / `to`
(`YYYY-MM-DD[ HH:MM[:SS]]`, UTC) and `limit` (≤ 24). read diffs the newest recorded version of each
path against the file on disk (a unified diff; a removed file is diffed against nothing).
"""

from __future__ import annotations

import calendar
import os
import re
import time
from dataclasses import dataclass
from typing import Any, Final

from tooldeck.builtins.agenvoy_files import descriptors, task
from tooldeck.builtins.agenvoy_files.common import (
    TIME_INVALID,
    batch_json,
    choose_mode,
    item_error,
    unique_key,
    workspace,
)
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput
from tooldeck.workspace.names import shown
from tooldeck.workspace.store import WorkspaceStore

TOOL_ID = ToolId.builtin("file_history")
MODES: Final = descriptors.HISTORY_MODES
MAX_LIMIT: Final = descriptors.MAX_LIMIT
MAX_DIFF_BYTES: Final = 1024 * 1024
MAX_DIFF_LINES: Final = 2000
_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?)?$")


@dataclass(frozen=True, slots=True)
class Event:
    rel: str
    kind: str
    """`version` (the content before a write) or `removed`."""
    at: float
    size: int
    version: int | None = None


def parse_time(raw: str | None, field: str, end: bool = False) -> float | None:
    """`YYYY-MM-DD[ HH:MM[:SS]]` (UTC) as a timestamp; a `to` without a time covers that whole day."""
    if raw is None or raw == "":
        return None
    m = _TIME.match(raw.strip())
    if m is None:
        raise ToolCallError(TIME_INVALID, f'{field} must be YYYY-MM-DD[ HH:MM[:SS]], got "{raw[:64]}"')
    y, mo, d, h, mi, s = (int(g) if g is not None else None for g in m.groups())
    try:
        ts = calendar.timegm(time.struct_time((y, mo, d, h or 0, mi or 0, s or 0, 0, 1, 0)))
        time.strptime(f"{y:04d}-{mo:02d}-{d:02d} {h or 0:02d}:{mi or 0:02d}:{s or 0:02d}", "%Y-%m-%d %H:%M:%S")
    except (ValueError, OverflowError):
        raise ToolCallError(TIME_INVALID, f'{field} "{raw[:64]}" is not a real date and time') from None
    if end:
        ts += 86400 - 1 if h is None else (60 - 1 if s is None else 0)
    return float(ts)


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts))


def file_history(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    mode = choose_mode(args, MODES, "read" if args.get("paths") else "list")
    store, policy = workspace(ctx)
    if mode == "read":
        paths = list(args.get("paths") or ([args["path"]] if args.get("path") else []))
        if not paths:
            raise ToolCallError("files.field_required", "paths is required when mode=read")
        return _read(store, policy, paths)
    since = parse_time(args.get("from"), "from")
    until = parse_time(args.get("to"), "to", end=True)
    limit = min(args.get("limit") or MAX_LIMIT, MAX_LIMIT)
    if args.get("task_id"):
        task.check_task_id(ctx, args["task_id"])
        rels = [rel for rel, _ in task.touched(ctx).items()]
    elif args.get("path") or args.get("paths"):
        rels = [store.locate(policy, p).real_rel for p in ([args["path"]] if args.get("path") else args["paths"])]
    else:
        rels = None
    events = [e for e in _events(store, rels) if (since is None or e.at >= since) and (until is None or e.at <= until)]
    events.sort(key=lambda e: (-e.at, e.rel))
    page = events[:limit]
    rows = [{"path": shown(e.rel), "kind": e.kind, "version": e.version, "bytes": e.size, "at": _when(e.at) + " UTC"}
            for e in page]
    if not rows:
        return ToolOutput("no recorded history" + (" in that time range" if since or until else ""),
                          {"total": 0, "events": []})
    lines = [f"{r['at']}  {r['path']}  " + _event_text(r) for r in rows]
    if len(events) > limit:
        lines.append(f"({limit} of {len(events)} shown, newest first; narrow with path, from or to)")
    lines.append("read a version's changes with mode=read; put one back with restore_file(path, version)")
    return ToolOutput("\n".join(lines), {"total": len(events), "events": rows})


def _event_text(row: dict[str, Any]) -> str:
    if row["kind"] == "version":
        return f"version {row['version']} ({row['bytes']:,} bytes before a write)"
    return f"removed ({row['bytes']:,} bytes, in the trash)"


def _events(store: WorkspaceStore, rels: list[str] | None) -> list[Event]:
    out: list[Event] = []
    for rel in rels if rels is not None else _all_versioned(store):
        out.extend(Event(rel, "version", v.saved_at, v.size, v.number) for v in store.history.versions(rel))
    out.extend(_removed(store, None if rels is None else set(rels)))
    return out


def _all_versioned(store: WorkspaceStore) -> list[str]:
    """Every file with recorded versions (each version folder names its file in `path`)."""
    rels: list[str] = []
    try:
        names = os.listdir(store.history.versions_dir)
    except FileNotFoundError:
        return rels
    for name in sorted(names):
        try:
            rels.append(os.fsdecode((store.history.versions_dir / name / "path").read_bytes()))
        except (FileNotFoundError, NotADirectoryError):
            continue
    return rels


def _removed(store: WorkspaceStore, wanted: set[str] | None) -> list[Event]:
    import orjson

    from tooldeck.workspace.paths import parse_path

    out: list[Event] = []
    try:
        names = os.listdir(store.history.trash_dir)
    except FileNotFoundError:
        return out
    for name in names:
        directory = store.history.trash_dir / name
        try:
            meta = orjson.loads((directory / "meta.json").read_bytes())
            if not (directory / "content").exists():
                continue
            rel = parse_path(meta["path"])
        except (FileNotFoundError, NotADirectoryError, orjson.JSONDecodeError, KeyError, ToolCallError):
            continue
        if wanted is None or rel in wanted:
            out.append(Event(rel, "removed", float(meta.get("removed_at", 0)), int(meta.get("size", 0))))
    return out


def _read(store: WorkspaceStore, policy: Any, paths: list[str]) -> ToolOutput:
    answer: dict[str, str] = {}
    for raw in paths:
        try:
            loc = store.locate(policy, raw)
            answer[unique_key(answer, loc.shown)] = _diff(store, loc)
        except ToolCallError as exc:
            answer[unique_key(answer, shown(raw))] = item_error(exc)
    return ToolOutput(batch_json(answer), answer)


def _diff(store: WorkspaceStore, loc: Any) -> str:
    versions = store.history.versions(loc.real_rel)
    if not versions:
        removed = store.history.latest_removed(loc.real_rel)
        if removed is None:
            raise ToolCallError("workspace.restore_version_not_found", f"{loc.shown} has no recorded history")
        return f"removed at {_when(removed.removed_at)} UTC ({removed.size:,} bytes); restore_file(path) brings it back"
    import difflib

    newest = versions[-1]
    old = store.history.version_bytes(loc.real_rel, newest.number, MAX_DIFF_BYTES)
    disk = store.read_if_exists(loc)
    if old is None:
        raise ToolCallError("workspace.restore_version_not_found", f"version {newest.number} of {loc.shown} is gone")
    if len(old) > MAX_DIFF_BYTES or (disk is not None and len(disk) > MAX_DIFF_BYTES):
        return f"version {newest.number} or the file on disk is over 1 MB; compare them with run_command"
    old_lines = old.decode("utf-8", "replace").splitlines(keepends=True)
    new_lines = [] if disk is None else disk.decode("utf-8", "replace").splitlines(keepends=True)
    diff = list(difflib.unified_diff(old_lines, new_lines, f"{loc.shown} @ version {newest.number} "
                                     f"({_when(newest.saved_at)} UTC)", f"{loc.shown} (on disk)"
                                     if disk is not None else "(removed)", n=3))
    if not diff:
        return f"version {newest.number} ({_when(newest.saved_at)} UTC) equals the file on disk"
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff)
    lines = text.split("\n")
    if len(lines) > MAX_DIFF_LINES:
        text = "\n".join(lines[:MAX_DIFF_LINES]) + f"\n… diff cut at {MAX_DIFF_LINES} lines of {len(lines)}"
    return text.rstrip("\n")



DESCRIPTOR = descriptors.FILE_HISTORY
TOOLS = [BuiltinTool(DESCRIPTOR, file_history, blocking=True)]
