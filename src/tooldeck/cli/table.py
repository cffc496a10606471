"""Plain-text tables that fit the terminal: ids and names are never wrapped or cut.

A table is a header line and one line per row, columns two spaces apart, no borders, so a row can be
read by `grep`/`cut` and an id double-clicked whole. To fit the width, free text is cut to one line
with `…`, and columns that may go are dropped (lowest `drop` first); an id column always shows in
full, so a table whose ids alone are wider than the terminal is wider than the terminal. Control
characters are shown escaped (`\\x1b`, `\\n`), never sent to the terminal (a call name is whatever a
model sent).

`show_rows` and `show_one` are how every command prints what it lists or did: the table (or one line)
for a person, the same data as JSON with `--json`.

Kept free of rich on purpose: the CLI's start-up budget is a few hundred milliseconds, and rich's
console and table modules cost about 25 ms of it (docs/benchmarks.md, "Start-up").
"""

from __future__ import annotations

import shutil
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

GAP = 2
ELLIPSIS = "…"
MIN_TEXT = 12
FLOOR = 6
"""The narrowest a text column that cannot be dropped gets: five characters and `…`."""

Kind = Literal["id", "text", "number"]


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    kind: Kind = "text"
    """`id`: shown in full, never wrapped or cut; `text`: one line, cut with `…` to fit; `number`: right-aligned."""
    drop: int | None = None
    """None: always shown. Otherwise dropped to fit the width, lowest first."""
    min_width: int = MIN_TEXT
    """A `text` column narrower than this (or its widest cell) is dropped instead, if it may be."""
    weight: int = 1
    """A `text` column's share of the room left, against the other text columns' weights."""


def terminal_width() -> int:
    """`COLUMNS`, else the terminal's width, else 80."""
    return shutil.get_terminal_size((80, 24)).columns


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str, *, one_line: bool) -> str:
    """Text safe to print: control characters escaped; with `one_line`, runs of whitespace (newlines
    included) become one space, else newlines are kept."""
    if one_line:
        text = " ".join(text.split())
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == "\n" else _escape(c) for c in text)


def char_width(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cell_width(text: str) -> int:
    """Terminal cells of `text` (wide East Asian characters take two, combining marks none)."""
    if text.isascii():
        return len(text)
    return sum(char_width(c) for c in text)


def cut(text: str, width: int) -> str:
    """`text` in at most `width` cells: cut with `…` when it is longer."""
    if cell_width(text) <= width:
        return text
    if width <= 0:
        return ""
    out: list[str] = []
    used = 0
    for char in text:
        w = char_width(char)
        if used + w > width - 1:
            break
        out.append(char)
        used += w
    return "".join(out) + ELLIPSIS


def pad(text: str, width: int, *, right: bool = False) -> str:
    space = " " * max(0, width - cell_width(text))
    return space + text if right else text + space


def fit(columns: Sequence[Column], natural: Sequence[int], width: int) -> list[int | None]:
    """The width of each column (None: dropped) for a table of at most `width` cells. Columns that may be
    dropped go (lowest `drop` first) until the rest fits with its text columns at `min_width`; if it
    still does not fit, the text columns left shrink down to `FLOOR`. Ids and numbers never shrink."""
    shown = list(range(len(columns)))
    floor = {i: min(natural[i], c.min_width) for i, c in enumerate(columns) if c.kind == "text"}

    def least(i: int) -> int:
        return floor.get(i, natural[i])

    def need() -> int:
        return sum(least(i) for i in shown) + GAP * (len(shown) - 1)

    droppable = sorted((c.drop, i) for i, c in enumerate(columns) if c.drop is not None)
    for _, i in droppable:
        if need() <= width:
            break
        shown.remove(i)
    if need() > width:
        floor = {i: min(natural[i], FLOOR) for i in floor}
    widths: list[int | None] = [None] * len(columns)
    text = [i for i in shown if columns[i].kind == "text"]
    for i in shown:
        widths[i] = natural[i]
    room = width - sum(natural[i] for i in shown if columns[i].kind != "text") - GAP * (len(shown) - 1)
    # Water-filling: every text column gets its share of the room (by weight), capped at its natural
    # width; what a narrow column leaves goes to the wider ones. None goes below its floor (`least`), and
    # none takes room that the floors of the columns after it need.
    pending = sorted(text, key=lambda i: natural[i] / columns[i].weight)
    for n, i in enumerate(pending):
        rest = pending[n + 1:]
        share = room * columns[i].weight // sum(columns[j].weight for j in pending[n:])
        width_i = min(natural[i], share, room - sum(least(j) for j in rest))
        widths[i] = max(least(i), width_i)
        room -= widths[i]  # type: ignore[operator]
    return widths


def render(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None = None) -> str:
    """The table as text (ending in a newline); `width` defaults to the terminal's."""
    width = terminal_width() if width is None else width
    cells = [[clean(cell, one_line=True) for cell in row] for row in rows]
    headers = [c.header.upper() for c in columns]
    natural = [max([cell_width(headers[i]), *(cell_width(row[i]) for row in cells)]) for i in range(len(columns))]
    widths = fit(columns, natural, width)
    shown = [i for i, w in enumerate(widths) if w is not None]
    lines = []
    for row in [headers, *cells]:
        parts = []
        for i in shown:
            w = widths[i]
            assert w is not None
            text = cut(row[i], w)
            last = i == shown[-1]
            parts.append(pad(text, w, right=True) if columns[i].kind == "number" else
                         (text if last else pad(text, w)))
        lines.append((" " * GAP).join(parts).rstrip())
    return "\n".join(lines) + "\n"


def show_rows(data: Sequence[Any], columns: Sequence[Column], rows: Iterable[Sequence[str]], *, as_json: bool,
              empty: str | None = None, footer: str | None = None) -> None:
    """What a list command prints. `--json`: `data` as a JSON array (`[]` when there is nothing). Else the
    table of `rows` with `footer` under it, or, with no rows, the line `empty` (nothing when None)."""
    import typer

    from tooldeck.cli.common import print_json

    if as_json:
        print_json(list(data))
        return
    table = [tuple(row) for row in rows]
    if not table:
        if empty is not None:
            typer.echo(empty)
        return
    typer.echo(render(columns, table), nl=False)
    if footer is not None:
        typer.echo(footer)


def show_one(data: Any, line: str, *, as_json: bool) -> None:
    """What a command about one thing prints: `data` as JSON with `--json`, else the one `line`."""
    import typer

    from tooldeck.cli.common import print_json

    if as_json:
        print_json(data)
    else:
        typer.echo(line)
