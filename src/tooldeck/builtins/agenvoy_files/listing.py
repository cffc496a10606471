"""`find_files` mode=list: `{dir: [entries] | "error: …"}`, names below each folder (folders end with `/`),
`recursive` for the whole tree below it, Agenvoy's exclude list left out, `MAX_LIST_ENTRIES` per folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, Final

from tooldeck.builtins.agenvoy_files.common import EXCLUDED_NAMES, batch_json, item_error, unique_key, workspace
from tooldeck.catalog.sources import CallContext
from tooldeck.core.errors import ToolCallError
from tooldeck.core.results import ToolOutput
from tooldeck.workspace import fs, grep
from tooldeck.workspace.names import shown
from tooldeck.workspace.paths import parse_dir
from tooldeck.workspace.store import os_error

MAX_LIST_ENTRIES: Final = 1000


def list_dirs(queries: list[dict[str, Any]], ctx: CallContext, stop: grep.Stop) -> ToolOutput:
    store, policy = workspace(ctx)
    answer: dict[str, Any] = {}
    for q in queries:
        raw = q.get("dir") or "."
        try:
            rel = parse_dir(raw)
            entries = _entries(store, policy, rel, bool(q.get("recursive")), stop)
        except ToolCallError as exc:
            answer[unique_key(answer, raw)] = item_error(exc)
            continue
        except grep.Stopped:
            answer[unique_key(answer, raw)] = "error: the listing ran out of time; list a smaller folder"
            continue
        answer[unique_key(answer, shown(rel) or ".")] = entries
    return ToolOutput(batch_json(answer), answer)


def _entries(store: Any, policy: Any, rel: str, recursive: bool, stop: grep.Stop) -> list[str]:
    if not rel:
        roots = [r for r in policy.visible_roots if _is_dir(store, policy, r)]
        if not recursive:
            return [f"{r}/" for r in roots]
    out: list[str] = []
    if rel:
        found = _children(store, policy, rel, recursive, stop, "")
    else:
        found = (e for r in roots for e in _children(store, policy, r, True, stop, f"{r}/", with_self=True))
    for entry in found:
        if len(out) >= MAX_LIST_ENTRIES:
            out.append(f"… listing stopped at {MAX_LIST_ENTRIES} entries; list a subfolder to see the rest")
            break
        out.append(entry)
    return out


def _is_dir(store: Any, policy: Any, root: str) -> bool:
    try:
        return store.kind(store.locate_dir(policy, root)) == "directory"
    except ToolCallError:
        return False


def _children(store: Any, policy: Any, rel: str, recursive: bool, stop: grep.Stop, prefix: str,
              with_self: bool = False) -> Iterator[str]:
    """Names below `rel`: files as they are, folders with a trailing `/` (recursive: paths below `rel`)."""
    loc = store.locate(policy, rel)
    if with_self:
        yield prefix
    kind = store.kind(loc)
    if kind is None:
        raise ToolCallError("workspace.path_not_found", f"`{shown(rel)}` does not exist")
    if kind != "directory":
        raise ToolCallError("workspace.path_not_found", f"`{shown(rel)}` is a file, not a folder; read it with "
                            "read_files")
    try:
        dfd = fs.open_dir(loc.base, loc.parts)
    except OSError as exc:
        raise os_error(loc, exc, folder=True) from None
    try:
        scanned = fs.scan(dfd, sizes=False)
    finally:
        os.close(dfd)
    for entry in scanned:
        stop.check()
        if entry.name in EXCLUDED_NAMES:
            continue
        name = prefix + shown(entry.name)
        if entry.kind == "directory":
            yield name + "/"
            if recursive:
                yield from _children(store, policy, f"{rel}/{entry.name}", True, stop, name + "/")
        elif entry.kind == "file":
            yield name
        elif entry.kind == "symlink":
            try:
                target_kind = store.kind(store.locate(policy, f"{rel}/{entry.name}"))
            except ToolCallError:
                continue
            if target_kind == "file":
                yield name
            elif target_kind == "directory":
                yield name + "/"
