"""Line ranges of a message or a world-info entry, and the read caps both tools share (TauriTavern's):
at most 20 items per call, 8,000 characters per whole item or range, 20,000 in all."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from tooldeck.core.errors import ToolCallError

MAX_ITEMS: Final = 20
MAX_PIECE_CHARS: Final = 8_000
MAX_TOTAL_CHARS: Final = 20_000


@dataclass(frozen=True, slots=True)
class Piece:
    text: str
    start_line: int
    end_line: int
    total_lines: int
    whole: bool


def cut(text: str, item: dict[str, Any], what: str, invalid_code: str, too_large_code: str) -> Piece:
    """The lines `start_line .. start_line + line_count - 1` (1-based; all lines without a range)."""
    start, count = item.get("start_line"), item.get("line_count")
    lines = text.split("\n")
    total = len(lines)
    if count is not None and start is None:
        raise ToolCallError(invalid_code, f"{what}: line_count needs start_line (the first line to read, from 1).")
    if start is None:
        if len(text) > MAX_PIECE_CHARS:
            raise ToolCallError(too_large_code, f"{what} has {len(text):,} characters in {total} lines, over the "
                                                f"{MAX_PIECE_CHARS:,} a whole read may return; read it in line "
                                                "ranges (start_line, line_count).")
        return Piece(text, 1, total, total, True)
    if start > total:
        raise ToolCallError(invalid_code, f"{what} has {total} line(s); start_line {start} is past its end.")
    end = total if count is None else min(total, start + count - 1)
    body = "\n".join(lines[start - 1:end])
    if len(body) > MAX_PIECE_CHARS:
        raise ToolCallError(too_large_code, f"{what} lines {start}-{end} hold {len(body):,} characters, over the "
                                            f"{MAX_PIECE_CHARS:,} one range may return; ask for fewer lines.")
    return Piece(body, start, end, total, False)


def check_counts(n: int, noun: str, too_large_code: str) -> None:
    if n > MAX_ITEMS:
        raise ToolCallError(too_large_code, f"{n} {noun} asked for; at most {MAX_ITEMS} per call. Split the read.")


def check_total(total: int, too_large_code: str) -> None:
    if total > MAX_TOTAL_CHARS:
        raise ToolCallError(too_large_code, f"the read would return {total:,} characters, over the {MAX_TOTAL_CHARS:,} "
                                            "one call may return; ask for fewer items or shorter line ranges.")
