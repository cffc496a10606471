"""Tables that fit the terminal and never wrap or cut an id (issue 13.7): the layout function under
hypothesis, then the real commands at 80 columns, through a pipe and in a real terminal (pty)."""

from __future__ import annotations

import json
import os
import pty
import select
import struct
import subprocess
import termios
import time
from fcntl import ioctl
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.cli.table import FLOOR, GAP, Column, cell_width, clean, cut, render

from .support import TOOLDECK, env, tooldeck, write_fixture_mcp

DICE = '{"formula": "d6"}'
# Ids as tooldeck and the providers make them, names as models send them, text with wide characters,
# combining marks, newlines and terminal escapes.
ID_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40)
FREE_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200)


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[Column], list[list[str]]]:
    n = draw(st.integers(1, 6))
    columns = []
    for i in range(n):
        kind = draw(st.sampled_from(["id", "text", "number"]))
        drop = None if i == 0 else draw(st.one_of(st.none(), st.integers(1, 5)))
        columns.append(Column(draw(st.text("abcdef ", min_size=1, max_size=12)), kind, drop,
                              draw(st.integers(1, 30))))
    rows = [[draw(ID_TEXT if c.kind == "id" else FREE_TEXT) for c in columns] for _ in range(draw(st.integers(0, 6)))]
    return columns, rows


@settings(derandomize=True, max_examples=300, deadline=None)
@given(tables(), st.integers(20, 200))
def test_a_table_fits_the_width_its_ids_allow_and_keeps_every_id_whole(table, width) -> None:
    columns, rows = table
    text = render(columns, rows, width)
    lines = text.splitlines()
    assert text.endswith("\n") and len(lines) == len(rows) + 1
    assert all(line.isprintable() for line in lines)  # controls and newlines never reach the terminal
    for row, line in zip(rows, lines[1:], strict=True):
        for i, col in enumerate(columns):
            if col.kind == "id" and col.drop is None:
                assert clean(row[i], one_line=True) in line  # in full, on its row's one line
    # What must show (the columns that are never dropped, text at its floor) decides whether it fits.
    cells = [[clean(cell, one_line=True) for cell in row] for row in rows]
    natural = [max([cell_width(c.header.upper()), *(cell_width(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    least = sum(min(natural[i], FLOOR) if c.kind == "text" else natural[i]
                for i, c in enumerate(columns) if c.drop is None)
    kept = sum(1 for c in columns if c.drop is None)
    if least + GAP * (kept - 1) <= width:
        assert max(cell_width(line) for line in lines) <= width, (width, text)


@settings(derandomize=True, max_examples=200, deadline=None)
@given(FREE_TEXT, st.integers(0, 60))
def test_cut_fits_the_width_and_keeps_a_prefix(text, width) -> None:
    out = cut(clean(text, one_line=True), width)
    assert cell_width(out) <= width
    kept = out.removesuffix("…")
    assert clean(text, one_line=True).startswith(kept)


def test_clean_escapes_what_a_terminal_would_obey() -> None:
    assert clean("a\x1b[31mred\x07", one_line=True) == "a\\x1b[31mred\\x07"
    assert clean("bidi\u202eevil", one_line=True) == "bidi\\u202eevil"
    assert clean("two\nlines\ttab", one_line=True) == "two lines tab"
    assert clean("two\nlines", one_line=False) == "two\nlines"
    assert cell_width("表格") == 4 and cut("表格表格", 5) == "表格…"


def _assert_fits(text: str, width: int = 80) -> list[str]:
    lines = text.splitlines()
    assert lines and max(cell_width(line) for line in lines) <= width, text
    return lines


def test_records_list_keeps_ids_whole_at_80_columns(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    for _ in range(3):
        assert tooldeck("call", "dice_roll", DICE, "--home", home, cwd=tmp_path).returncode == 0
    ids = [s["invocation_id"] for s in json.loads(tooldeck("records", "list", "--json", "--home", home,
                                                           cwd=tmp_path).stdout)]
    out = tooldeck("records", "list", "--home", home, cwd=tmp_path, columns=80)
    assert out.returncode == 0, out.stderr
    lines = _assert_fits(out.stdout)
    assert [line.split()[0] for line in lines[1:4]] == ids  # one line per invocation, its id whole and first
    wide = tooldeck("records", "list", "--home", home, cwd=tmp_path, columns=200).stdout
    runs = [s["run_id"] for s in json.loads(tooldeck("records", "list", "--json", "--home", home, cwd=tmp_path).stdout)]
    assert all(run in wide for run in runs)  # wide enough: the run column comes back

    shown = tooldeck("records", "show", ids[0], "--home", home, cwd=tmp_path, columns=80)
    assert shown.returncode == 0, shown.stderr
    assert ids[0] in _assert_fits(shown.stdout)[0]


def test_tools_shows_one_line_per_tool_at_80_columns(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    data = json.loads(tooldeck("tools", "--json", "--home", home, cwd=tmp_path).stdout)
    out = tooldeck("tools", "--home", home, cwd=tmp_path, columns=80)
    assert out.returncode == 0, out.stderr
    lines = _assert_fits(out.stdout)
    names = [t["call_name"] for t in data["tools"]]
    assert [line.split()[0] for line in lines[1:1 + len(names)]] == names  # no description wraps onto a line
    # header, the tools, a blank line, the summary and the note on ask_user, left out without an answerer
    assert len(lines) == 1 + len(names) + 3
    assert lines[-1] == "1 allowed tools left out (scene or conditions); --all shows which and why."
    long = tooldeck("tools", "--long", "--home", home, cwd=tmp_path, columns=80)
    assert long.returncode == 0
    long_lines = _assert_fits(long.stdout)
    dice = next(t for t in data["tools"] if t["call_name"] == "dice_roll")
    assert " ".join(" ".join(long_lines).split()).count(" ".join(dice["description"].split())) == 1
    assert "builtin:dice.roll" in long.stdout and "formula* (string)" in long.stdout


def test_mcp_list_and_tools_fit_80_columns(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_fixture_mcp(home, "fixture_server_with_a_long_name")
    tools = tooldeck("mcp", "tools", "fixture_server_with_a_long_name", "--home", str(home), cwd=tmp_path)
    assert tools.returncode == 0, tools.stderr
    lines = _assert_fits(tools.stdout)
    assert any(line.startswith("mcp__fixture_server_with_a_long_name__echo ") for line in lines)
    listed = tooldeck("mcp", "list", "--home", str(home), cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert _assert_fits(listed.stdout)[1].startswith("fixture_server_with_a_long_name ")


def _in_terminal(argv: list[str], cwd: Path, cols: int) -> str:
    """Run `argv` with a real terminal of `cols` columns as stdout (and no COLUMNS variable)."""
    controller, terminal = pty.openpty()
    ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal, cwd=cwd,
                            env=env(columns=None))
    os.close(terminal)
    out = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal closed: the process ended
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    proc.wait(timeout=30)
    os.close(controller)
    assert proc.returncode == 0, out
    return out.decode().replace("\r\n", "\n")


def test_a_real_80_column_terminal_gets_tables_that_fit(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    assert tooldeck("call", "dice_roll", DICE, "--home", home, cwd=tmp_path).returncode == 0
    listed = _in_terminal([TOOLDECK, "records", "list", "--home", home], tmp_path, 80)
    _assert_fits(listed)
    assert listed.splitlines()[1].startswith("inv_")
    narrow = _in_terminal([TOOLDECK, "tools", "--home", home], tmp_path, 60)
    _assert_fits(narrow, 60)
