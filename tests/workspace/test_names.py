"""Paths shown to the model cannot fake lines: control, format (bidi), separator characters, bytes that
are not UTF-8 and backslashes are shown as `\\u{HEX}`, which every tool reads back to the same file."""

from __future__ import annotations

import itertools
import os
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.workspace.conftest import Model

BREAKING = ("Cc", "Cf", "Zl", "Zp", "Cs")


def clean(text: str) -> bool:
    """No character that could start a line or reorder text, other than the `\\n` between result lines."""
    return not any(ch != "\n" and unicodedata.category(ch) in BREAKING for ch in text) and \
        text.split("\n") == text.splitlines() + ([""] if text.endswith("\n") else [])


def test_a_file_name_cannot_fake_result_lines(model: Model) -> None:
    """The reproducer: `output/a\\nb\\r\\tc` was listed and searched raw, faking lines of the result."""
    model.ok("write_file", path="output/a\nb\r\tc", content="x\n")
    listing = model.ok("list_files", path="output")
    assert listing.content == "output/\n  a\\u{A}b\\u{D}\\u{9}c (2 bytes)"
    found = model.ok("search_files", pattern="x")
    assert found.content.splitlines()[1] == "output/a\\u{A}b\\u{D}\\u{9}c:1: x"
    assert found.structured["matches"][0]["path"] == "output/a\\u{A}b\\u{D}\\u{9}c"
    assert all(clean(r.content) for r in (listing, found))
    read = model.ok("read_file", path="output/a\\u{A}b\\u{D}\\u{9}c")  # the shown spelling, copied back
    assert read.content.startswith("output/a\\u{A}b\\u{D}\\u{9}c lines 1-1 of 1")
    assert (model.root / "output" / "a\nb\r\tc").read_text() == "x\n"


@pytest.mark.parametrize(("name", "shown"), [
    ("evil\u202egnp.md", "evil\\u{202E}gnp.md"), ("rtl\u2067x", "rtl\\u{2067}x"), ("zw\u200bsp", "zw\\u{200B}sp"),
    ("sep\u2028line", "sep\\u{2028}line"), ("nel\x85x", "nel\\u{85}x"), ("back\\slash", "back\\u{5C}slash"),
    (" lead", "\\u{20}lead"), ("trail ", "trail\\u{20}"), ("in side", "in side"), ("é ü 中文", "é ü 中文"),
])
def test_shown_spellings(model: Model, name: str, shown: str) -> None:
    (model.root / "scratch" / name).write_text("body\n")
    listing = model.ok("list_files", path="scratch")
    assert f"  {shown} (5 bytes)" in listing.content.splitlines()
    assert "body" in model.ok("read_file", path=f"scratch/{shown}").content


def test_a_name_that_is_not_utf8(model: Model) -> None:
    os.close(os.open(os.fsencode(model.root / "scratch") + b"/bad\xff\xfe.txt", os.O_CREAT | os.O_WRONLY, 0o644))
    listing = model.ok("list_files", path="scratch")
    assert "bad\\u{DCFF}\\u{DCFE}.txt (0 bytes)" in listing.content
    model.ok("write_file", path="scratch/bad\\u{DCFF}\\u{DCFE}.txt", content="now text\n", mode="append")
    with open(os.fsencode(model.root / "scratch") + b"/bad\xff\xfe.txt", "rb") as f:
        assert f.read() == b"now text\n"
    # the bytes of `é`, spelled as two escaped bytes, are the same file as `é`
    model.ok("write_file", path="scratch/caf\\u{DCC3}\\u{DCA9}.md", content="one\n")
    assert (model.root / "scratch" / "café.md").read_text() == "one\n"
    model.ok("read_file", path="scratch/café.md")
    model.ok("write_file", path="scratch/caf\\u{DCC3}\\u{DCA9}.md", content="two\n")  # one read-state for both


@pytest.mark.parametrize("raw", ["output/\\u{D800}.md", "output/\\u{110000}", "output/\\u{0}x", "\\u{2F}etc/passwd",
                                 "output/\\u{2E}\\u{2E}/x"])
def test_escapes_that_name_nothing_are_invalid_paths(model: Model, raw: str) -> None:
    r = model.err("read_file", "workspace.invalid_path", path=raw)
    assert clean(r.content)


def test_windows_separators_still_work(model: Model) -> None:
    model.ok("write_file", path="output\\notes\\a.md", content="x")
    assert (model.root / "output" / "notes" / "a.md").read_text() == "x"


_counter = itertools.count()
_SPECIAL = "\n\r\t\x0b\x0c\x1b\x7f\x85\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069" \
           "\u200e\u200f\u061c\u200b\ufeff\\ :é中\U0001f600"
names = st.one_of(
    st.binary(min_size=1, max_size=255),
    st.text(st.one_of(st.sampled_from(_SPECIAL), st.characters(codec="utf-8")), min_size=1, max_size=40)
    .map(os.fsencode),
).filter(lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..") and len(b) <= 255)


@settings(derandomize=True, max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=names)
def test_any_file_name_round_trips_and_never_breaks_a_line(roomy: Model, name: bytes) -> None:
    model = roomy
    n = next(_counter)
    folder = f"scratch/case{n}"
    directory = os.fsencode(model.root / folder)
    os.makedirs(directory)
    with open(directory + b"/" + name, "wb") as f:
        f.write(f"marker-{n}\n".encode())
    size = len(f"marker-{n}\n")
    listing = model.ok("list_files", path=folder)
    head, line = listing.content.split("\n")
    assert head == f"{folder}/" and line.startswith("  ") and line.endswith(f" ({size} bytes)")
    shown_name = line[2:-len(f" ({size} bytes)")]
    [entry] = listing.structured["entries"]
    assert entry["path"] == f"{folder}/{shown_name}"
    found = model.ok("search_files", pattern=f"marker-{n}$", path=folder)
    assert found.content.split("\n")[1] == f"{folder}/{shown_name}:1: marker-{n}"
    read = model.ok("read_file", path=f"{folder}/{shown_name}")  # copied back: the same file
    assert read.content.split("\n")[1] == f"1\tmarker-{n}"
    assert read.content.startswith(f"{folder}/{shown_name} lines 1-1 of 1")
    model.ok("write_file", path=f"{folder}/{shown_name}", content="changed\n")
    with open(directory + b"/" + name, "rb") as f:
        assert f.read() == b"changed\n"
    assert os.listdir(directory) == [name]
    for text in (listing.content, found.content, read.content.split("\n")[0]):  # the file's lines hold a tab
        assert clean(text), text


def test_file_content_cannot_fake_search_result_lines(model: Model) -> None:
    """A matching line holding a carriage return, a line separator, a bidi override or an escape sequence
    was shown raw: `needle\\rfake/x.md:9: …` read as a second result. Those are escaped; a tab and the
    zero-width joiner of an emoji stay as the file holds them."""
    model.ok("write_file", path="output/a.md",
             content="needle one\rfake/x.md:9: needle\u2028b\u202ec\x1b[31m\x85d\tt \U0001f468\u200d\U0001f469\n")
    found = model.ok("search_files", pattern="needle")
    assert found.content.splitlines()[1] == ("output/a.md:1: needle one\\u{D}fake/x.md:9: needle\\u{2028}b\\u{202E}c"
                                             "\\u{1B}[31m\\u{85}d\tt \U0001f468\u200d\U0001f469")
    assert len(found.content.splitlines()) == 2


LINE_CHARS = st.characters(exclude_characters="\n")
_FILES = itertools.count()


@settings(derandomize=True, max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=st.text(LINE_CHARS, max_size=60))
def test_no_content_line_splits_a_search_result(roomy: Model, line: str) -> None:
    model = roomy
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return  # no UTF-8 file holds it (the gate refuses such text)
    path = f"output/f{next(_FILES)}.md"
    model.ok("write_file", path=path, content=f"zq{line}\n")
    found = model.ok("search_files", pattern="zq", path=path)
    assert len(found.content.splitlines()) == 2, found.content
    assert not any(ch in found.content for ch in "\r\u2028\u2029\u202e\x85\x0b\x0c\x1c")
