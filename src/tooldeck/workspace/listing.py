"""`list_files`: a breadth-first listing of visible workspace folders, rendered as a tree.

Paths are shown escaped (`names.shown`). A subfolder that vanishes while it is listed (another
process removed it) is left out, not an error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Final

from tooldeck.core.errors import ToolCallError
from tooldeck.workspace import fs
from tooldeck.workspace.errors import PATH_NOT_FOUND
from tooldeck.workspace.names import shown, shown_name
from tooldeck.workspace.paths import PathPolicy
from tooldeck.workspace.store import Location, WorkspaceStore, os_error

DEFAULT_LIST_DEPTH: Final = 2
MAX_LIST_DEPTH: Final = 4
MAX_LIST_ENTRIES: Final = 200


@dataclass(frozen=True, slots=True)
class Entry:
    path: str
    kind: str
    size: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {"path": shown(self.path), "kind": self.kind}


@dataclass(frozen=True, slots=True)
class Listing:
    path: str
    entries: list[Entry]
    truncated: bool


def not_found(rel: str) -> ToolCallError:
    parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
    where = f"`{shown(parent)}`" if parent else "the workspace root"
    return ToolCallError(PATH_NOT_FOUND, f"`{shown(rel)}` does not exist. List {where} to see what is there.")


def list_tree(store: WorkspaceStore, policy: PathPolicy, rel: str, depth: int) -> Listing:
    if rel:
        loc = store.locate(policy, rel)
        kind = store.kind(loc)
        if kind is None:
            raise not_found(rel)
        if kind == "file":
            return Listing(rel, [Entry(rel, "file")], False)
        if kind != "directory":
            raise not_found(rel)
        frontier = [(rel, loc)]
    else:
        frontier = []
        for root in policy.visible_roots:
            try:
                loc = store.locate_dir(policy, root)
                if store.kind(loc) == "directory":
                    frontier.append((root, loc))
            except ToolCallError:
                continue
    entries: list[Entry] = []
    if not rel:
        entries = [Entry(r, "directory") for r, _ in frontier]
        depth -= 1
    truncated = False
    level = 0
    while frontier and level < depth and not truncated:
        level += 1
        nxt: list[tuple[str, Location]] = []
        for dir_rel, loc in frontier:
            for child in _children(store, policy, dir_rel, loc, top=level == 1 and bool(rel)):
                if len(entries) >= MAX_LIST_ENTRIES:
                    truncated = True
                    break
                entries.append(child[0])
                if child[1] is not None:
                    nxt.append((child[0].path, child[1]))
            if truncated:
                break
        frontier = nxt
    entries.sort(key=lambda e: e.path.split("/"))
    return Listing(rel, entries, truncated)


def _children(store: WorkspaceStore, policy: PathPolicy, dir_rel: str, loc: Location,
              top: bool = False) -> list[tuple[Entry, Location | None]]:
    """The entries of one folder. Only the folder the model named (`top`) may fail; a subfolder or a
    root that vanished or cannot be opened meanwhile is listed as empty."""
    try:
        fd = fs.open_dir(loc.base, loc.parts)
    except OSError as exc:
        error = os_error(loc, exc, folder=True)
        if top or not isinstance(error, ToolCallError):
            raise error from None
        return []
    try:
        scanned = fs.scan(fd)
    finally:
        os.close(fd)
    out: list[tuple[Entry, Location | None]] = []
    for d in scanned:
        child_rel = f"{dir_rel}/{d.name}"
        if d.kind == "file":
            out.append((Entry(child_rel, "file", d.size), None))
        elif d.kind == "directory":
            out.append((Entry(child_rel, "directory"), Location(child_rel, loc.base, (*loc.parts, d.name),
                                                                loc.mounted)))
        elif d.kind == "symlink":
            try:
                target = store.locate(policy, child_rel)
                kind = store.kind(target)
            except ToolCallError:
                continue
            if kind == "file":
                out.append((Entry(child_rel, "file"), None))
            elif kind == "directory":
                out.append((Entry(child_rel, "directory"), None))
    return out


def render(listing: Listing, policy: PathPolicy) -> str:
    if listing.path:
        head = f"{shown(listing.path)}/" if not (len(listing.entries) == 1 and listing.entries[0].path == listing.path
                                          and listing.entries[0].kind == "file") else ""
        base_depth = listing.path.count("/") + 1
    else:
        head = f"Workspace root ({policy.roots_text()}; the reply body is {policy.body_file})"
        base_depth = 0
    lines = [head] if head else []
    for e in listing.entries:
        indent = "  " * (e.path.count("/") + 1 - base_depth) if head else ""
        name = shown(e.path) if not head else shown_name(e.path.rsplit("/", 1)[-1])
        if e.kind == "directory":
            lines.append(f"{indent}{name}/")
        else:
            size = f" ({e.size:,} bytes)" if e.size is not None else ""
            lines.append(f"{indent}{name}{size}")
    if not listing.entries:
        lines.append("  (empty)")
    if listing.truncated:
        lines.append(f"Listing stopped at {MAX_LIST_ENTRIES} entries; list a subfolder or use a smaller depth "
                     "to see the rest.")
    return "\n".join(lines)
