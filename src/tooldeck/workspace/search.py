"""`search_files`: a per-line regular-expression search over visible workspace files.

Python `re` syntax (`(?i)` for case-insensitive). A file is first tested as a whole (cheap, in C)
when the pattern cannot behave differently there than on single lines; only files that can match
are split into lines.
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass, field
from typing import Final

from tooldeck.core.errors import ToolCallError
from tooldeck.workspace import fs
from tooldeck.workspace.errors import GREP_PATTERN_INVALID
from tooldeck.workspace.listing import not_found
from tooldeck.workspace.paths import PathPolicy
from tooldeck.workspace.store import Location, WorkspaceStore, os_error

MAX_SEARCH_DEPTH: Final = 8
MAX_SEARCH_FILES: Final = 5_000
MAX_SEARCH_FILE_BYTES: Final = 4 * 1024 * 1024
MAX_LISTED_LINES: Final = 100
LINE_WINDOW: Final = 300
# Constructs that look past a line's ends, where a whole-text test could miss a per-line match.
_CONTEXT_SENSITIVE = ("(?=", "(?!", "(?<=", "(?<!", "\\A", "\\Z", "\\z")


@dataclass(frozen=True, slots=True)
class Pattern:
    source: str
    line: re.Pattern[str]
    whole: re.Pattern[str] | None


def compile_pattern(source: str) -> Pattern:
    try:
        line = re.compile(source)
    except (re.error, OverflowError, RecursionError) as exc:
        raise ToolCallError(GREP_PATTERN_INVALID, f"`{source}` is not a valid regular expression ({exc}). "
                            "Use Python `re` syntax, e.g. `foo.*bar` or `(?i)todo`; escape literal characters "
                            "such as `\\(`.") from None
    whole = None
    if not any(tok in source for tok in _CONTEXT_SENSITIVE):
        whole = re.compile(source, line.flags | re.MULTILINE)
    return Pattern(source, line, whole)


@dataclass(slots=True)
class SearchResult:
    pattern: str
    path: str | None
    matches: list[tuple[str, int, str]] = field(default_factory=list)
    files: set[str] = field(default_factory=set)
    searched: int = 0
    skipped: int = 0
    stopped: bool = False


def search(store: WorkspaceStore, policy: PathPolicy, pattern: Pattern, rel: str) -> SearchResult:
    result = SearchResult(pattern.source, rel or None)
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
            except ToolCallError:
                continue
            targets.append((root, loc, store.kind(loc)))
    for target_rel, loc, kind in targets:
        if kind == "directory":
            _walk(store, policy, pattern, result, target_rel, loc, 1)
        elif kind in ("file", "symlink"):
            _search_located(store, pattern, result, target_rel, loc)
    result.matches.sort(key=lambda m: (m[0], m[1]))
    return result


def _walk(store: WorkspaceStore, policy: PathPolicy, pattern: Pattern, result: SearchResult,
          dir_rel: str, loc: Location, depth: int) -> None:
    try:
        dfd = fs.open_dir(loc.base, loc.parts)
    except OSError as exc:
        raise os_error(loc, exc) from None
    try:
        for entry in fs.scan(dfd):
            if result.stopped:
                return
            child_rel = f"{dir_rel}/{entry.name}"
            if entry.kind == "file":
                if _budget(result):
                    if entry.size > MAX_SEARCH_FILE_BYTES:
                        result.skipped += 1
                        continue
                    try:
                        data = fs.read_at(dfd, entry.name, MAX_SEARCH_FILE_BYTES)
                    except (FileNotFoundError, fs.FileTooLarge, fs.NotRegularFile, IsADirectoryError):
                        result.skipped += 1
                        continue
                    except OSError as exc:
                        if exc.errno != errno.ELOOP:  # a symlink swapped in since the scan: skip it
                            raise
                        result.skipped += 1
                        continue
                    _scan_bytes(pattern, result, child_rel, data)
            elif entry.kind == "directory":
                if depth < MAX_SEARCH_DEPTH:
                    sub = Location(child_rel, loc.base, (*loc.parts, entry.name), loc.mounted)
                    _walk(store, policy, pattern, result, child_rel, sub, depth + 1)
            elif entry.kind == "symlink":
                try:
                    target = store.locate(policy, child_rel)
                except ToolCallError:
                    result.skipped += 1
                    continue
                if store.kind(target) == "file":
                    _search_located(store, pattern, result, child_rel, target)
    finally:
        os.close(dfd)


def _budget(result: SearchResult) -> bool:
    if result.searched >= MAX_SEARCH_FILES:
        result.stopped = True
        return False
    return True


def _search_located(store: WorkspaceStore, pattern: Pattern, result: SearchResult, rel: str, loc: Location) -> None:
    if not _budget(result):
        return
    try:
        data = fs.read_bytes(loc.base, loc.parts, MAX_SEARCH_FILE_BYTES)
    except (fs.FileTooLarge, fs.NotRegularFile):
        result.skipped += 1
        return
    except OSError as exc:
        raise os_error(loc, exc) from None
    _scan_bytes(pattern, result, rel, data)


def _scan_bytes(pattern: Pattern, result: SearchResult, rel: str, data: bytes) -> None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        result.skipped += 1
        return
    result.searched += 1
    if pattern.whole is not None and pattern.whole.search(text) is None:
        return
    search = pattern.line.search
    found = False
    for n, line in enumerate(text.split("\n"), 1):
        if search(line) is not None:
            result.matches.append((rel, n, line))
            found = True
    if found:
        result.files.add(rel)


def trim(line: str, rx: re.Pattern[str]) -> str:
    """About `LINE_WINDOW` characters of a long line around its first match."""
    if len(line) <= LINE_WINDOW:
        return line
    m = rx.search(line)
    at = m.start() if m else 0
    start = max(0, min(at - LINE_WINDOW // 3, len(line) - LINE_WINDOW))
    end = start + LINE_WINDOW
    return ("…" if start else "") + line[start:end] + ("…" if end < len(line) else "")


def render(result: SearchResult, rx: re.Pattern[str]) -> str:
    scope = f" under `{result.path}`" if result.path else ""
    counts = f"searched {result.searched} files" + (f", skipped {result.skipped} (not UTF-8 text or over "
                                                    f"{MAX_SEARCH_FILE_BYTES // (1024 * 1024)} MiB)"
                                                    if result.skipped else "")
    stop = (f" Stopped after {MAX_SEARCH_FILES} files; pass a narrower `path` to search the rest."
            if result.stopped else "")
    total = len(result.matches)
    if total == 0:
        return f"No visible workspace files matched `{result.pattern}`{scope} ({counts}).{stop}"
    lines = [f"Found {total} matching line{'s' if total != 1 else ''} in {len(result.files)} "
             f"file{'s' if len(result.files) != 1 else ''}{scope} ({counts}).{stop}"]
    lines.extend(f"{p}:{n}: {trim(text, rx)}" for p, n, text in result.matches[:MAX_LISTED_LINES])
    if total > MAX_LISTED_LINES:
        lines.append(f"Showing the first {MAX_LISTED_LINES} of {total} matching lines (sorted by path and line). "
                     "Narrow the pattern or pass a `path` to see the rest.")
    return "\n".join(lines)


def structured(result: SearchResult, rx: re.Pattern[str]) -> dict[str, object]:
    return {
        "pattern": result.pattern,
        "path": result.path,
        "matches": [{"path": p, "line": n, "text": trim(t, rx)} for p, n, t in result.matches[:MAX_LISTED_LINES]],
        "total": len(result.matches),
        "files": len(result.files),
        "searchedFiles": result.searched,
        "skippedFiles": result.skipped,
        "truncated": len(result.matches) > MAX_LISTED_LINES or result.stopped,
    }
