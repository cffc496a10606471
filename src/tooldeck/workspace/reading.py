"""Paging a text file for `read_file` (pure: text in, page out).

A full read is given only when the whole file is selected and it fits `MAX_READ_BYTES`,
`MAX_READ_LINES` and `MAX_READ_CHARS`; anything else is a page capped by the same line limit and a
char budget (`page_budget`: at most `MAX_READ_CHARS`, and small enough that the rendered page stays
under the Profile's inline limit), which says where to continue.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from tooldeck.core.errors import ToolCallError
from tooldeck.workspace.errors import INVALID_LINE_RANGE
from tooldeck.workspace.text import PIECE

MAX_READ_BYTES: Final = 256 * 1024
MAX_READ_LINES: Final = 1200
MAX_READ_CHARS: Final = 80_000
NOTES_RESERVE: Final = 600
MIN_PAGE_CHARS: Final = 1_000


def line_count(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


_WORD_MARKS = bytes(32 if b in b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f" else 120 for b in range(256))


def count_words(text: str | bytes) -> int:
    """Runs of non-whitespace (ASCII whitespace; any other character is part of a word), counted in C
    without building the words: about 20× faster than `len(text.split())` on a large file. A megabyte
    at a time, so a large file does not hold the interpreter lock for long."""
    words, after_space = 0, True
    for i in range(0, len(text), PIECE):
        piece = text[i:i + PIECE]
        marks = (piece.encode("utf-8", "surrogatepass") if isinstance(piece, str) else piece).translate(_WORD_MARKS)
        if marks:
            words += marks.count(b" x") + (1 if after_space and marks[0] == 120 else 0)
            after_space = marks[-1] == 32
    return words


@dataclass(frozen=True, slots=True)
class Page:
    start: int
    end: int
    total_lines: int
    lines: list[str]
    line_truncated: bool
    capped: bool
    full: bool
    next_start: int | None
    next_count: int | None
    cut_from: int = 0
    """The full length of a cut line."""

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def page_budget(inline_limit: int, path: str) -> int:
    """Characters a page may take so the rendered result stays inline (never spilled to `tool-results/`
    and read back in a loop): at most `MAX_READ_CHARS`, minus room for the header and notes."""
    return max(MIN_PAGE_CHARS, min(MAX_READ_CHARS, inline_limit - NOTES_RESERVE - 2 * len(path)))


def _fit(lines: list[str], start: int, limit_end: int, max_chars: int) -> tuple[int, bool]:
    """Last line number (1-based) from `start` whose rendered lines (number, tab, text, newline) fit
    `max_chars`, up to `limit_end` and `MAX_READ_LINES`; and whether the first line alone does not fit
    (then it is shown cut)."""
    last = min(limit_end, start + MAX_READ_LINES - 1)
    overhead = len(str(last)) + 2
    chars = 0
    end = start - 1
    for n in range(start, last + 1):
        size = len(lines[n - 1]) + overhead
        if chars + size > max_chars:
            if n == start:
                return start, True
            break
        chars += size
        end = n
    return end, False


_STATS: OrderedDict[str, tuple[int, int]] = OrderedDict()
_STATS_LOCK = threading.Lock()
_STATS_MAX: Final = 256


def text_stats(sha256: str, text: str, data: bytes) -> tuple[int, int]:
    """(lines, words) of a file's bytes, memoised by sha256: paging through a large file counts once."""
    with _STATS_LOCK:
        hit = _STATS.get(sha256)
        if hit is not None:
            _STATS.move_to_end(sha256)
            return hit
    stats = (line_count(text), count_words(data))
    with _STATS_LOCK:
        _STATS[sha256] = stats
        if len(_STATS) > _STATS_MAX:
            _STATS.popitem(last=False)
    return stats


def _head(text: str, splits: int) -> list[str]:
    """The first `splits + 1` lines of `text` (fewer if it has fewer): what `text.split("\n", splits)` gives,
    except that the last piece is that line alone, not the whole rest of the file (a copy of up to 64 MiB).
    Split from a prefix that grows until it holds enough lines."""
    size = (splits + 1) * 128
    while True:
        pieces = text[:size].split("\n", splits + 1)
        if len(pieces) > splits + 1 or size >= len(text):
            return pieces[:splits + 1]
        size *= 4


def page(text: str, n_bytes: int, start: int | None, count: int | None, max_chars: int = MAX_READ_CHARS,
         total_lines: int | None = None) -> Page:
    total = line_count(text) if total_lines is None else total_lines
    first = 1 if start is None else start
    if first < 1:
        raise ToolCallError(INVALID_LINE_RANGE, f"start_line must be 1 or more (got {first}).")
    if count is not None and count < 1:
        raise ToolCallError(INVALID_LINE_RANGE, f"line_count must be 1 or more (got {count}).")
    if total == 0:
        if first != 1:
            raise ToolCallError(INVALID_LINE_RANGE, f"start_line {first} is past the end: the file is empty.")
        return Page(1, 0, 0, [], False, False, True, None, None)
    if first > total:
        raise ToolCallError(INVALID_LINE_RANGE, f"start_line {first} is past the end of the file ({total} lines); "
                            f"use a start_line from 1 to {total}.")
    # Split only as far as this page and the next can reach, not the whole file (nor copy the rest of it).
    lines = _head(text, first - 1 + 2 * MAX_READ_LINES)
    wanted_end = total if count is None else min(total, first + count - 1)
    end, cut = _fit(lines, first, wanted_end, max_chars)
    shown = lines[first - 1:end]
    if cut:
        shown = [shown[0][:max(1, max_chars - len(str(first)) - 2)]]
    capped = cut or end < wanted_end
    fits = n_bytes <= MAX_READ_BYTES and total <= MAX_READ_LINES and len(text) <= MAX_READ_CHARS
    full = first == 1 and end == total and not cut and fits
    next_start = next_count = None
    if end < total:
        next_start = end + 1
        next_end, _ = _fit(lines, next_start, min(total, len(lines)), max_chars)
        next_count = max(1, next_end - next_start + 1)
    return Page(first, end, total, shown, cut, capped, full, next_start, next_count,
                len(lines[first - 1]) if cut else 0)


def render(path: str, pg: Page, total_chars: int, total_words: int, shown_words: int,
           search_name: str | None) -> str:
    header = (f"{path} lines {pg.start}-{pg.end} of {pg.total_lines}, chars {len(pg.text)} of {total_chars}, "
              f"words {shown_words} of {total_words}")
    if pg.capped:
        header += " (preview)"
    if pg.total_lines == 0:
        return header + "\n(The file is empty.)"
    width = len(str(pg.end))
    out = [header, *(f"{n:>{width}}\t{line}" for n, line in enumerate(pg.lines, pg.start))]
    if pg.line_truncated:
        tip = f" Use `{search_name}` with path `{path}` to find text in it." if search_name else ""
        out.append(f"Line {pg.start} has {pg.cut_from:,} characters, more than one page holds; only its first "
                   f"{len(pg.lines[0]):,} are shown.{tip}")
    if pg.next_start is not None:
        lead = ("Preview ended before the end of the file." if pg.capped
                else f"The file continues after line {pg.end}.")
        out.append(f"{lead} Continue with start_line={pg.next_start} and line_count={pg.next_count}.")
    return "\n".join(out)
