"""`edit_file`'s patch targets, resolved against the text before the edit (pure: text in, text out).

A target is `{old_string, new_string[, replace_all][, row]}` or `{insert_string, row}`. Every target is
matched against the pre-edit text; `row` (1-based) says on which row an anchor starts, or before which
row an insertion goes (one past the last row appends). Replacing a whole row with nothing also removes
its newline. Overlapping targets, a missing or ambiguous anchor, or a result that empties the file
reject the whole batch: nothing is applied unless everything is.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from tooldeck.builtins.agenvoy_files.common import (
    ANCHOR_AMBIGUOUS,
    ANCHOR_NOT_FOUND,
    NO_EDIT,
    TARGET_INVALID,
    TARGETS_OVERLAP,
    WOULD_EMPTY,
)
from tooldeck.core.errors import ToolCallError

MAX_HINTS: Final = 5
HINT_CHARS: Final = 160
MAX_ROWS_COMPARED: Final = 50_000


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    text: str
    index: int
    """The target's position in `targets` (0-based): equal starts apply in this order."""


class Rows:
    """Row numbers of offsets in a text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        pos = text.find("\n")
        while pos >= 0:
            self.starts.append(pos + 1)
            pos = text.find("\n", pos + 1)
        if text.endswith("\n") or not text:
            self.starts.pop()  # no row after a final newline
        self.count = len(self.starts)

    def row_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def start_of(self, row: int) -> int:
        return self.starts[row - 1] if row <= self.count else len(self.text)

    def line(self, row: int) -> str:
        start = self.starts[row - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]


def validate(targets: Sequence[Mapping[str, Any]]) -> None:
    for i, t in enumerate(targets, 1):
        if "insert_string" in t:
            if "old_string" in t or "new_string" in t or "replace_all" in t:
                raise ToolCallError(TARGET_INVALID, f"target #{i} mixes insert_string with old_string/new_string; "
                                    "an insertion is {insert_string, row}, a replacement {old_string, new_string}")
            if t.get("row") is None:
                raise ToolCallError(TARGET_INVALID, f"target #{i}: insert_string needs row (the row it goes before; "
                                    "one past the last row appends)")
            continue
        if not t.get("old_string"):
            raise ToolCallError(TARGET_INVALID, f"target #{i} needs a non-empty old_string (with new_string), or "
                                "insert_string with row")
        if "new_string" not in t:
            raise ToolCallError(TARGET_INVALID, f"target #{i} needs new_string (\"\" deletes old_string)")
        if t.get("replace_all") and t.get("row") is not None:
            raise ToolCallError(TARGET_INVALID, f"target #{i} sets both row and replace_all; use one")


def apply(path: str, text: str, targets: Sequence[Mapping[str, Any]]) -> str:
    """The patched text, or a `ToolCallError` naming the first target that cannot apply."""
    validate(targets)
    rows = Rows(text)
    spans: list[Span] = []
    for i, t in enumerate(targets):
        spans.extend(_resolve(path, text, rows, i, t))
    spans.sort(key=lambda s: (s.start, s.end > s.start, s.index))  # an insertion goes before a replacement
    for a, b in itertools.pairwise(spans):
        if b.start < a.end or (a.start == b.start and a.end > a.start and b.end > b.start):
            raise ToolCallError(TARGETS_OVERLAP, f"targets #{a.index + 1} and #{b.index + 1} overlap (rows "
                                f"{rows.row_of(a.start)} and {rows.row_of(b.start)}); merge them into one target. "
                                "Nothing was changed")
    out = text
    for s in reversed(spans):
        out = out[:s.start] + s.text + out[s.end:]
    if out == text:
        raise ToolCallError(NO_EDIT, f"no edit needed: the targets leave {path} as it is")
    if not out and text:
        raise ToolCallError(WOULD_EMPTY, f"the patch would leave {path} empty, so nothing was written; to remove "
                            "the file use remove_file, to rewrite it use mode=write")
    return out


def _resolve(path: str, text: str, rows: Rows, index: int, t: Mapping[str, Any]) -> list[Span]:
    row = t.get("row")
    if "insert_string" in t:
        if row < 1 or row > rows.count + 1:
            raise ToolCallError(TARGET_INVALID, f"target #{index + 1}: row {row} is outside {path} ({rows.count} "
                                f"rows); use 1-{rows.count + 1} (row {rows.count + 1} appends)")
        return [Span(rows.start_of(row), rows.start_of(row), _as_rows(text, row > rows.count, t["insert_string"]),
                     index)]
    old: str = t["old_string"]
    new: str = t["new_string"]
    found = _occurrences(text, old)
    if not found:
        raise ToolCallError(ANCHOR_NOT_FOUND, _not_found(path, rows, index, old))
    if row is not None:
        on_row = [p for p in found if rows.row_of(p) == row]
        if not on_row:
            where = ", ".join(str(rows.row_of(p)) for p in found[:20])
            raise ToolCallError(ANCHOR_NOT_FOUND, f"old_string of target #{index + 1} does not start on row {row} of "
                                f"{path}; it occurs on rows [{where}]")
        found = on_row[:1]
    elif len(found) > 1 and not t.get("replace_all"):
        where = " ".join(str(rows.row_of(p)) for p in found[:20])
        raise ToolCallError(ANCHOR_AMBIGUOUS, f"old_string of target #{index + 1} occurs on rows [{where}] of {path}; "
                            "set row to one of them or replace_all")
    return [_span(text, p, p + len(old), new, index) for p in found]


def _as_rows(text: str, appending: bool, insert: str) -> str:
    """Inserted text is whole rows: it ends with a newline before a row; appended after a last row that has
    none, it starts with one (and then the file keeps ending without one)."""
    if not appending:
        return insert if insert.endswith("\n") else insert + "\n"
    if text and not text.endswith("\n"):
        return "\n" + insert.removesuffix("\n")
    return insert if insert.endswith("\n") or not text else insert + "\n"


def _span(text: str, start: int, end: int, new: str, index: int) -> Span:
    """Deleting whole rows also deletes the newline after them."""
    if new == "" and (start == 0 or text[start - 1] == "\n") and end < len(text) and text[end] == "\n":
        end += 1
    return Span(start, end, new, index)


def _occurrences(text: str, old: str) -> list[int]:
    out: list[int] = []
    pos = text.find(old)
    while pos >= 0:
        out.append(pos)
        pos = text.find(old, pos + len(old))
    return out


def _not_found(path: str, rows: Rows, index: int, old: str) -> str:
    head = f"old_string of target #{index + 1} is not found in {path}"
    first = next((line.strip() for line in old.split("\n") if line.strip()), "")
    hints = _resembling(rows, first) if first else []
    if not hints:
        return f"{head}; read it with read_files and copy the anchor from the file's exact bytes"
    quoted = ", ".join(f'row {n} is "{_clip(rows.line(n))}"' for n in hints)
    return (f"{head}, but {quoted} — copy the anchor from those exact bytes (without the row numbers read_files "
            "shows)")


def _resembling(rows: Rows, first: str) -> list[int]:
    """Up to `MAX_HINTS` rows that look like the anchor's first non-blank line, best first."""
    import difflib

    scored: list[tuple[float, int]] = []
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(first)
    squeezed = "".join(first.split())
    for n in range(1, min(rows.count, MAX_ROWS_COMPARED) + 1):
        line = rows.line(n).strip()
        if not line:
            continue
        if squeezed and squeezed == "".join(line.split()):
            scored.append((2.0, n))  # the same text but for whitespace
            continue
        matcher.set_seq1(line[:1000])
        if matcher.real_quick_ratio() < 0.6 or matcher.quick_ratio() < 0.6:
            continue
        ratio = matcher.ratio()
        if ratio >= 0.6:
            scored.append((ratio, n))
    scored.sort(key=lambda s: (-s[0], s[1]))
    return sorted(n for _, n in scored[:MAX_HINTS])


def _clip(line: str) -> str:
    line = line.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t").replace("\r", "\\r")
    return line if len(line) <= HINT_CHARS else line[:HINT_CHARS] + "…"
