"""Walking workspace folders for `find_files`, and its globs.

The walk goes through the workspace engine's symlink-safe layer (`fs.open_dir` / `fs.scan`), skips
Agenvoy's exclude list (`.git`, `node_modules`, …) and what the path policy hides, never descends into
linked folders, checks a `Stop` between entries, and passes over what vanishes meanwhile.

Globs (`glob_regex`): `**` spans folders (`**/` also matches no folder), `*` and `?` stay within one
name, `[…]` is a class, `{a,b}` an alternation. A pattern without `/` is matched against the file
name at any depth (as `.gitignore` does), one with `/` against the path below the query's folder.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from tooldeck.builtins.agenvoy_files.common import EXCLUDED_NAMES, GLOB_CATCH_ALL, GLOB_INVALID
from tooldeck.core.errors import ToolCallError
from tooldeck.workspace import fs
from tooldeck.workspace.grep import Stop
from tooldeck.workspace.listing import not_found
from tooldeck.workspace.names import visible
from tooldeck.workspace.paths import PathPolicy
from tooldeck.workspace.store import Location, WorkspaceStore, os_error

MAX_WALK_DEPTH: Final = 16
MAX_GLOB_CHARS: Final = 1000
_CATCH_ALL = frozenset("*/.?")


@dataclass(slots=True)
class Found:
    """A file met by the walk: its workspace path, and how to read it while the walk stands on it (the open
    folder `dir_fd` and the name in it; or, for a symbolic link, the located target)."""

    rel: str
    below: str
    """The path below the query's folder."""
    dir_fd: int
    name: str
    target: Location | None = None

    def read(self, limit: int) -> bytes:
        if self.target is not None:
            return fs.read_bytes(self.target.base, self.target.parts, limit)
        return fs.read_at(self.dir_fd, self.name, limit)

    def mtime(self) -> float:
        if self.target is not None:
            return os.stat(os.path.join(self.target.base, *self.target.parts)).st_mtime
        return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False).st_mtime


def refuse_catch_all(pattern: str) -> None:
    if pattern and set(pattern) <= _CATCH_ALL:
        raise ToolCallError(GLOB_CATCH_ALL, f'pattern "{visible(pattern)}" matches every file and narrows nothing; '
                            "use mode=list to see what a folder holds, or mode=search with a pattern (a regular "
                            "expression for the lines) and file_pattern to look inside files")


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """The compiled glob (see the module docstring). Raises `files.glob_invalid` for a bad one."""
    if len(pattern) > MAX_GLOB_CHARS:
        raise ToolCallError(GLOB_INVALID, f"the glob is {len(pattern):,} characters long; at most "
                            f"{MAX_GLOB_CHARS:,} are accepted")
    glob = pattern.strip()
    while glob.startswith("./"):
        glob = glob[2:]
    body = _translate(glob)
    if "/" not in glob:
        body = f"(?:.*/)?{body}"
    try:
        return re.compile(f"(?s:{body})\\Z")
    except re.error as exc:
        raise ToolCallError(GLOB_INVALID, f'the glob "{visible(pattern)}" is not valid: {exc}') from None


def _translate(glob: str) -> str:
    out: list[str] = []
    i, n, depth = 0, len(glob), 0
    while i < n:
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                i += 2
                if i < n and glob[i] == "/":
                    out.append("(?:[^/]*/)*")
                    i += 1
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = glob.find("]", i + 2 if glob.startswith(("[!", "[^"), i) else i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                inner = glob[i + 1:end]
                if inner[:1] in ("!", "^"):
                    inner = "^" + inner[1:]
                out.append("[" + inner.replace("\\", "\\\\") + "]")
                i = end
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out) + ")" * depth


def matches(pattern: str, below: str) -> bool:
    return glob_regex(pattern).match(below) is not None


def walk(store: WorkspaceStore, policy: PathPolicy, dir_rel: str, stop: Stop, *,
         recursive: bool = True) -> Iterator[Found]:
    """Every visible file below `dir_rel` (`""`: every visible root), depth-first in name order."""
    if dir_rel:
        loc = store.locate(policy, dir_rel)
        kind = store.kind(loc)
        if kind is None:
            raise not_found(dir_rel)
        if kind != "directory":
            raise ToolCallError("workspace.path_not_found", f"`{loc.shown}` is a file, not a folder. Pass its folder "
                                "as dir.")
        yield from _walk(store, policy, dir_rel, "", loc, stop, recursive, top=True)
        return
    for root in policy.visible_roots:
        try:
            loc = store.locate_dir(policy, root)
        except ToolCallError:
            continue
        if store.kind(loc) == "directory":
            yield from _walk(store, policy, root, root, loc, stop, recursive)


def _walk(store: WorkspaceStore, policy: PathPolicy, dir_rel: str, below: str, loc: Location, stop: Stop,
          recursive: bool, top: bool = False) -> Iterator[Found]:
    """Depth-first with a stack (no generator per folder): a folder's files, then its subfolders by name."""
    stack: list[tuple[str, str, Location, int]] = [(dir_rel, below, loc, 1)]
    while stack:
        dir_rel, below, loc, depth = stack.pop()
        try:
            dfd = fs.open_dir(loc.base, loc.parts)
        except OSError as exc:
            error = os_error(loc, exc, folder=True)
            if (top and depth == 1) or not isinstance(error, ToolCallError):
                raise error from None
            continue  # a subfolder removed or made unreadable meanwhile
        subdirs: list[tuple[str, str, Location, int]] = []
        try:
            for entry in fs.scan(dfd, sizes=False):
                stop.check()
                name = entry.name
                if name in EXCLUDED_NAMES:
                    continue
                rel = f"{dir_rel}/{name}"
                sub = f"{below}/{name}" if below else name
                kind = entry.kind
                if kind == "file":
                    yield Found(rel, sub, dfd, name)
                elif kind == "directory":
                    if recursive and depth < MAX_WALK_DEPTH:
                        subdirs.append((rel, sub, Location(rel, loc.base, (*loc.parts, name), loc.mounted), depth + 1))
                elif kind == "symlink":
                    try:
                        target = store.locate(policy, rel)
                        if store.kind(target) != "file":
                            continue
                    except ToolCallError:
                        continue
                    yield Found(rel, sub, dfd, name, target)
        finally:
            os.close(dfd)
        stack.extend(reversed(subdirs))
