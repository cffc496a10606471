"""`grep.matching_lines` finds a file's matching lines with one RE2 search per match (multi-line mode,
`never_nl`), cut into pieces at line ends; it must give exactly the lines a per-line search gives, and
on the patterns both engines read alike, the lines Python's `re` gave before."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.core.errors import ToolCallError
from tooldeck.workspace import grep
from tooldeck.workspace.grep import Stop, compile_pattern, matching_lines


def lines_of(data: bytes) -> list[bytes]:
    if not data:
        return []
    parts = data.split(b"\n")
    return parts[:-1] if data.endswith(b"\n") else parts


def per_line(pattern: grep.Pattern, data: bytes) -> list[int]:
    return [n for n, line in enumerate(lines_of(data), 1) if pattern.line.search(line) is not None]


def found(pattern: grep.Pattern, data: bytes) -> list[int]:
    spans = list(matching_lines(pattern, data, Stop(60)))
    for n, start, end in spans:
        assert lines_of(data)[n - 1] == data[start:end]
    return [n for n, _, _ in spans]


ATOMS = ["a", "b", "x", ".", "\\s", "\\w", "\\d", "[ab]", "[^a]", "[^\\n]", "\\n", "\\b", "\\B", "^", "$", "é",
         "\\pL", "(?i:A)", "\\x20", "[[:space:]]", "\\A", "\\z", "(?s:.)"]


@st.composite
def patterns(draw: st.DrawFn, atoms: list[str] = ATOMS) -> str:
    def piece(depth: int) -> str:
        kind = draw(st.integers(0, 5 if depth < 3 else 1))
        if kind <= 1:
            return draw(st.sampled_from(atoms))
        if kind == 2:
            return piece(depth + 1) + draw(st.sampled_from(["*", "+", "?", "{1,3}", "*?"]))
        if kind == 3:
            return "(" + piece(depth + 1) + "|" + piece(depth + 1) + ")"
        return piece(depth + 1) + piece(depth + 1)

    flags = draw(st.sampled_from(["", "(?i)", "(?m)", "(?s)", "(?U)", "(?-m)"]))
    return flags + piece(0)


texts = st.lists(st.sampled_from([b"a", b"b", b"x", b" ", b"\n", b"\r", b"\t", b"ab", b"1", "é".encode(),
                                  b"\n\n", b"aaaa"]), max_size=40).map(b"".join)


@settings(derandomize=True, max_examples=600, deadline=None)
@given(patterns(), texts, st.sampled_from([1, 3, 64, 1 << 18]))
def test_whole_file_search_finds_exactly_the_matching_lines(pattern: str, data: bytes, chunk: int) -> None:
    try:
        compiled = compile_pattern(pattern)
    except ToolCallError:
        return
    grep.CHUNK_BYTES = chunk  # small pieces exercise the cuts at line ends
    try:
        assert found(compiled, data) == per_line(compiled, data), (pattern, data)
    finally:
        grep.CHUNK_BYTES = 256 * 1024


COMMON = ["a", "b", "x", ".", "[ab]", "[^a]", "^", "$", " ", "ab"]


@settings(derandomize=True, max_examples=400, deadline=None)
@given(patterns(COMMON), texts.map(lambda b: b.replace("é".encode(), b"e")))
def test_same_lines_as_pythons_re_where_the_syntax_agrees(pattern: str, data: bytes) -> None:
    if "(?U)" in pattern or "(?-m)" in pattern:
        return  # RE2-only flags
    try:
        compiled = compile_pattern(pattern)
        rx = re.compile(pattern)
    except (ToolCallError, re.error):
        return  # one of the two refuses it (`^*` is fine for RE2, not for `re`)
    expected = [n for n, line in enumerate(lines_of(data), 1) if rx.search(line.decode()) is not None]
    assert found(compiled, data) == expected, (pattern, data)


def test_chunks_end_at_line_ends_only() -> None:
    data = b"".join(b"line %d needle\n" % i if i % 7 == 0 else b"line %d\n" % i for i in range(5_000))
    compiled = compile_pattern("needle$")
    old = grep.CHUNK_BYTES
    grep.CHUNK_BYTES = 100
    try:
        assert found(compiled, data) == [i + 1 for i in range(0, 5_000, 7)]
    finally:
        grep.CHUNK_BYTES = old
