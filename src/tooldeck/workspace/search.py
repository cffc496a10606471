"""`search_files`: a per-line regular-expression search over visible workspace files.

Patterns are RE2 (`grep`): linear time, with the interpreter lock released while matching. The
walk checks a `Stop` (deadline and cancel flag) between files, and the matcher between pieces of a
file, so a search ends within milliseconds of its time limit or of its call being cancelled. Files
and folders that vanish while the walk runs (another process removed them) are passed over.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from tooldeck.core.errors import ToolCallError
from tooldeck.workspace import fs
from tooldeck.workspace.errors import classify_os_error
from tooldeck.workspace.grep import Pattern, Stop, Stopped, first_match, matching_lines
from tooldeck.workspace.listing import not_found
from tooldeck.workspace.names import shown, shown_line, visible
from tooldeck.workspace.paths import PathPolicy
from tooldeck.workspace.store import Location, WorkspaceStore, os_error

MAX_SEARCH_DEPTH: Final = 8
MAX_SEARCH_FILES: Final = 5_000
MAX_SEARCH_FILE_BYTES: Final = 4 * 1024 * 1024
MAX_SEARCH_SECONDS: Final = 10.0
MAX_LISTED_LINES: Final = 100
LINE_WINDOW: Final = 300


class _Latest:
    """A heap entry ordered backwards, so the heap's top is the largest of the lines kept."""

    __slots__ = ("key", "text")

    def __init__(self, key: tuple[str, int], text: str) -> None:
        self.key = key
        self.text = text

    def __lt__(self, other: _Latest) -> bool:
        return self.key > other.key


@dataclass(slots=True)
class SearchResult:
    pattern: str
    path: str | None
    total: int = 0
    files: set[str] = field(default_factory=set)
    searched: int = 0
    skipped: int = 0
    stopped: bool = False
    """Stopped at `MAX_SEARCH_FILES`."""
    interrupted: str | None = None
    """`time` when the search's time limit ran out, `cancelled` when its call was cancelled."""
    seconds: float = 0.0
    _kept: list[_Latest] = field(default_factory=list)

    def add(self, rel: str, line_no: int, text: str) -> None:
        """Count a match; keep it only while it is among the first `MAX_LISTED_LINES` by path and line."""
        self.total += 1
        key = (rel, line_no)
        kept = self._kept
        if len(kept) < MAX_LISTED_LINES:
            heapq.heappush(kept, _Latest(key, text))
        elif key < kept[0].key:
            heapq.heapreplace(kept, _Latest(key, text))

    @property
    def matches(self) -> list[tuple[str, int, str]]:
        """The listed matches, sorted by path and line."""
        return sorted(((e.key[0], e.key[1], e.text) for e in self._kept), key=lambda m: (m[0], m[1]))


def search(store: WorkspaceStore, policy: PathPolicy, pattern: Pattern, rel: str, stop: Stop) -> SearchResult:
    result = SearchResult(pattern.source, rel or None, seconds=stop.seconds)
    if rel:
        loc = store.locate(policy, rel)
        kind = store.kind(loc)
        if kind is None:
            raise not_found(rel)
        targets = [(rel, loc, kind)]
    else:
        targets = []
        for root in policy.default_search_roots:
            try:
                loc = store.locate_dir(policy, root)
                targets.append((root, loc, store.kind(loc)))
            except ToolCallError:
                continue
    try:
        for target_rel, loc, kind in targets:
            if kind == "directory":
                _walk(store, policy, pattern, result, target_rel, loc, 1, stop, top=bool(rel))
            elif kind in ("file", "symlink"):
                _search_located(pattern, result, target_rel, loc, stop, top=bool(rel))
    except Stopped as exc:
        result.interrupted = exc.reason
    return result


def _walk(store: WorkspaceStore, policy: PathPolicy, pattern: Pattern, result: SearchResult,
          dir_rel: str, loc: Location, depth: int, stop: Stop, top: bool = False) -> None:
    try:
        dfd = fs.open_dir(loc.base, loc.parts)
    except OSError as exc:
        error = os_error(loc, exc, folder=True)
        if top or not isinstance(error, ToolCallError):
            raise error from None
        return  # a subfolder removed or made unreadable meanwhile
    try:
        for entry in fs.scan(dfd, sizes=False):  # read_at checks each file's size
            stop.check()
            if result.stopped:
                return
            child_rel = f"{dir_rel}/{entry.name}"
            if entry.kind == "file":
                if _budget(result):
                    data = _read(result, child_rel, lambda e=entry: fs.read_at(dfd, e.name, MAX_SEARCH_FILE_BYTES))
                    if data is not None:
                        _scan_bytes(pattern, result, child_rel, data, stop)
            elif entry.kind == "directory":
                if depth < MAX_SEARCH_DEPTH:
                    sub = Location(child_rel, loc.base, (*loc.parts, entry.name), loc.mounted)
                    _walk(store, policy, pattern, result, child_rel, sub, depth + 1, stop)
            elif entry.kind == "symlink":
                try:
                    target = store.locate(policy, child_rel)
                    kind = store.kind(target)
                except ToolCallError:
                    result.skipped += 1
                    continue
                if kind == "file":
                    _search_located(pattern, result, child_rel, target, stop)
    finally:
        os.close(dfd)


def _budget(result: SearchResult) -> bool:
    if result.searched >= MAX_SEARCH_FILES:
        result.stopped = True
        return False
    return True


def _read(result: SearchResult, rel: str, read: Callable[[], bytes]) -> bytes | None:
    """The file's bytes, or None when it is to be passed over: gone since the listing (not counted),
    too large, not a regular file, or not readable for a reason the model caused (counted as skipped).
    A host fault propagates."""
    try:
        return read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except fs.FileTooLarge:
        result.skipped += 1
        return None
    except OSError as exc:
        if classify_os_error(exc, rel) is None:
            raise
        result.skipped += 1
        return None


def _search_located(pattern: Pattern, result: SearchResult, rel: str, loc: Location, stop: Stop,
                    top: bool = False) -> None:
    if not _budget(result):
        return
    if top:  # the file the model named: its errors are the answer
        try:
            data: bytes | None = fs.read_bytes(loc.base, loc.parts, MAX_SEARCH_FILE_BYTES)
        except fs.FileTooLarge:
            result.skipped += 1
            return
        except OSError as exc:
            raise os_error(loc, exc) from None
    else:
        data = _read(result, rel, lambda: fs.read_bytes(loc.base, loc.parts, MAX_SEARCH_FILE_BYTES))
    if data is not None:
        _scan_bytes(pattern, result, rel, data, stop)


def _scan_bytes(pattern: Pattern, result: SearchResult, rel: str, data: bytes, stop: Stop) -> None:
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            result.skipped += 1
            return
    result.searched += 1
    found = False
    for line_no, start, end in matching_lines(pattern, data, stop):
        result.add(rel, line_no, data[start:end].decode("utf-8"))
        found = True
    if found:
        result.files.add(rel)


def trim(line: str, pattern: Pattern) -> str:
    """About `LINE_WINDOW` characters of a long line around its first match."""
    if len(line) <= LINE_WINDOW:
        return line
    at = first_match(pattern, line)
    start = max(0, min(at - LINE_WINDOW // 3, len(line) - LINE_WINDOW))
    end = start + LINE_WINDOW
    return ("…" if start else "") + line[start:end] + ("…" if end < len(line) else "")


def render(result: SearchResult, pattern: Pattern) -> str:
    scope = f" under `{shown(result.path)}`" if result.path else ""
    counts = f"searched {result.searched} files" + (f", skipped {result.skipped} (not UTF-8 text, over "
                                                    f"{MAX_SEARCH_FILE_BYTES // (1024 * 1024)} MiB, or unreadable)"
                                                    if result.skipped else "")
    stop = ""
    if result.stopped:
        stop = f" Stopped after {MAX_SEARCH_FILES} files; pass a narrower `path` to search the rest."
    elif result.interrupted == "time":
        stop = (f" Stopped at the search time limit ({result.seconds:g} s) before every file was searched; pass a "
                "narrower `path` to search the rest.")
    total = result.total
    source = visible(pattern.source if len(pattern.source) <= 200 else pattern.source[:200] + "…")
    if total == 0:
        return f"No visible workspace files matched `{source}`{scope} ({counts}).{stop}"
    lines = [f"Found {total} matching line{'s' if total != 1 else ''} in {len(result.files)} "
             f"file{'s' if len(result.files) != 1 else ''}{scope} ({counts}).{stop}"]
    lines.extend(f"{shown(p)}:{n}: {shown_line(trim(text, pattern))}" for p, n, text in result.matches)
    if total > MAX_LISTED_LINES:
        lines.append(f"Showing the first {MAX_LISTED_LINES} of {total} matching lines (sorted by path and line). "
                     "Narrow the pattern or pass a `path` to see the rest.")
    return "\n".join(lines)


def structured(result: SearchResult, pattern: Pattern) -> dict[str, object]:
    return {
        "pattern": result.pattern,
        "path": shown(result.path) if result.path else None,
        "matches": [{"path": shown(p), "line": n, "text": trim(t, pattern)} for p, n, t in result.matches],
        "total": result.total,
        "files": len(result.files),
        "searchedFiles": result.searched,
        "skippedFiles": result.skipped,
        "truncated": result.total > MAX_LISTED_LINES or result.stopped or result.interrupted is not None,
    }
