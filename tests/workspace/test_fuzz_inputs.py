"""Every workspace tool input a model controls (paths, patterns, patch texts, contents, numbers), fuzzed:
no exception leaves `Invocation.run` (a host fault would, and none happens on a healthy disk), every
error carries a code documented in docs/, and nothing outside the workspace is touched."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.workspace.conftest import Model

DOCS = Path(__file__).resolve().parents[2] / "docs"
DOCUMENTED = set(re.findall(r"`((?:workspace|tool|agent)\.[a-z_]+)`",
                            (DOCS / "workspace.md").read_text() + (DOCS / "errors.md").read_text()))

PIECES = ["output/", "scratch/", "tool-results/", "skills/", "input/", ".tooldeck/", "plan/", "a.md", "sub/",
          "/", "\\", ".", "..", "./", "\0", "\n", "\r", "\t", "\u202e", "\u2066", "\u200b", "\ud800", "\udcff",
          "\\u{", "}", "\\u{A}", "\\u{5C}", "\\u{2F}", "\\u{D800}", "\\u{DCFF}", "\\u{110000}", "\\u{0}", "C:",
          "a" * 300, "é", "中", " ", "~", "*", "?", "$", ":"]
paths = st.one_of(st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=4)), max_size=8).map("".join),
                  st.sampled_from(["output/a.md", "output/a.md/x", "output", "scratch/deep/er/f.txt"]))
texts = st.one_of(st.text(max_size=30), st.sampled_from(["", "alpha", "\ud800", "a" * 1_000, "beta\n", "\\"]))
REGEX = ["(", ")", "[", "]", "*", "+", "?", "{", "}", "|", "^", "$", "\\", ".", "\\1", "(?=", "(?<", "(?P",
         "\\Z", "\\A", "\\z", "\\C", "(?i)", "(?x)", "{1001}", "a", "b", "\ud800", "\n", "\\p{", "[[:", "\\Q", "\\E"]
regexes = st.lists(st.one_of(st.sampled_from(REGEX), st.text(max_size=3)), max_size=10).map("".join)
numbers = st.one_of(st.none(), st.integers(-3, 3), st.integers(-(2**70), 2**70))


def calls(path: str, other: str, text: str, old: str, new: str, pattern: str, n: int | None,
          m: int | None, flag: bool) -> list[tuple[str, dict[str, Any]]]:
    def some(**args: Any) -> dict[str, Any]:
        return {k: v for k, v in args.items() if v is not None}

    return [
        ("read_file", some(path=path, start_line=n, line_count=m)),
        ("write_file", {"path": path, "content": text}),
        ("write_file", {"path": path, "content": text, "mode": "append"}),
        ("read_file", {"path": path}),
        ("apply_patch", {"path": path, "old_string": old, "new_string": new, "replace_all": flag}),
        ("list_files", some(path=other, depth=n)),
        ("search_files", some(pattern=pattern, path=other if flag else None)),
        ("restore_file", some(path=path, version=m)),
        ("remove_file", {"path": path}),
        ("restore_file", {"path": path}),
        ("commit", some(path=other, mode="append" if flag else None)),
    ]


@pytest.fixture
def seeded(roomy: Model, tmp_path: Path) -> Model:
    roomy.ok("write_file", path="output/a.md", content="alpha\nbeta\n")
    roomy.ok("read_file", path="output/a.md")
    (tmp_path / "outside.txt").write_text("untouched")
    return roomy


@settings(derandomize=True, max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=paths, other=paths, text=texts, old=texts, new=texts, pattern=regexes, n=numbers, m=numbers,
       flag=st.booleans())
def test_no_input_escapes_as_an_exception(seeded: Model, path: str, other: str, text: str, old: str, new: str,
                                          pattern: str, n: int | None, m: int | None, flag: bool) -> None:
    results = seeded.turn(*calls(path, other, text, old, new, pattern, n, m, flag))
    for r in results:
        if r.is_error:
            assert r.error_code in DOCUMENTED, (r.error_code, r.content)
            assert r.error_code != "tool.execution_failed", r.content
    outside = seeded.root.parents[2]  # <tmp>/home/workspaces/<run>
    assert (outside / "outside.txt").read_text() == "untouched"
    assert sorted(p.name for p in outside.iterdir()) == ["home", "outside.txt"]
