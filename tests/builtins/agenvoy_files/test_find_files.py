"""`find_files` against real temp workspaces: mode inference, list | glob | search, the exclude list, the
catch-all glob, paging, and Agenvoy's error texts."""

from __future__ import annotations

import os
import time

import pytest

from tests.builtins.agenvoy_files.support import Session, session
from tests.conftest import MakeRuntime


@pytest.fixture
def s(make_runtime: MakeRuntime) -> Session:
    s = session(make_runtime)
    s.write("output/a.md", "alpha\nneedle one\n")
    s.write("output/sub/b.py", "x = 1\nneedle = 2\n")
    s.write("output/sub/deep/c.md", "nothing here\n")
    s.write("scratch/notes.txt", "needle three\n")
    s.write("output/node_modules/pkg/index.md", "needle hidden\n")
    s.write("output/.git/HEAD.md", "needle hidden\n")
    s.write("input/secret.md", "needle hidden\n")  # not a visible root
    return s


def test_list_is_inferred_and_answers_per_dir(s: Session) -> None:
    got = s.batch("find_files", {"queries": [{"dir": "output"}, {"dir": "output/missing"}, {}]})
    assert got["output"] == ["a.md", "sub/"]  # node_modules and .git are excluded
    assert got["output/missing"].startswith("error: ") and "does not exist" in got["output/missing"]
    assert got["."] == ["output/", "scratch/", "plan/", "summaries/", "persist/"]


def test_list_recursive(s: Session) -> None:
    got = s.batch("find_files", {"queries": [{"dir": "output", "recursive": True}]})
    assert got["output"] == ["a.md", "sub/", "sub/b.py", "sub/deep/", "sub/deep/c.md"]


def test_a_hidden_root_is_an_error_for_that_dir(s: Session) -> None:
    got = s.batch("find_files", {"mode": "list", "queries": [{"dir": "input"}]})
    assert got["input"].startswith("error: ") and "not in the visible workspace" in got["input"]


def test_glob_is_inferred_from_pattern_and_lists_newest_first(s: Session) -> None:
    os.utime(s.root / "output/a.md", (1_000_000, 1_000_000))
    os.utime(s.root / "output/sub/deep/c.md", (2_000_000, 2_000_000))
    r = s.ok("find_files", {"queries": [{"pattern": "*.md"}]})
    assert r.content.splitlines()[:2] == ["output/sub/deep/c.md", "output/a.md"]
    assert "(1-2 of 2 files, newest first)" in r.content  # the excluded folders' .md files are not there
    r = s.ok("find_files", {"queries": [{"dir": "output", "pattern": "sub/*.py"},
                                        {"dir": "output", "pattern": "*.py"}]})
    assert r.content.splitlines()[0] == "output/sub/b.py" and r.structured["total"] == 1  # merged, deduplicated
    r = s.ok("find_files", {"queries": [{"pattern": "*.{py,txt}"}]})
    assert sorted(r.structured["paths"]) == ["output/sub/b.py", "scratch/notes.txt"]


@pytest.mark.parametrize("pattern", ["*", "**/*", "**", "*.*", "./**/*", "?"])
def test_a_catch_all_glob_is_refused(s: Session, pattern: str) -> None:
    r = s.call("find_files", {"queries": [{"pattern": pattern}]})
    assert r.error_code == "files.glob_catch_all"
    assert r.content.startswith(f'pattern "{pattern}" matches every file and narrows nothing; use mode=list')


def test_search_is_inferred_from_pattern_and_file_pattern(s: Session) -> None:
    r = s.ok("find_files", {"queries": [{"pattern": "needle", "file_pattern": "**/*"}]})
    assert r.content.splitlines()[:3] == ["output/a.md:2: needle one", "output/sub/b.py:2: needle = 2",
                                          "scratch/notes.txt:1: needle three"]
    assert "hidden" not in r.content  # the exclude list and hidden roots
    r = s.ok("find_files", {"queries": [{"pattern": "needle", "file_pattern": "*.py"}]})
    assert r.content.splitlines()[0] == "output/sub/b.py:2: needle = 2" and r.structured["total"] == 1


def test_search_by_mode_with_context_and_files_output(s: Session) -> None:
    r = s.ok("find_files", {"mode": "search", "context": 1, "queries": [{"dir": "output", "pattern": "needle ="}]})
    assert r.content.splitlines()[:3] == ["output/sub/b.py-1- x = 1", "output/sub/b.py:2: needle = 2", "--"]
    r = s.ok("find_files", {"mode": "search", "output": "files", "queries": [{"pattern": "needle"}]})
    assert r.content.splitlines()[0] == "output/a.md (1 matching line)"
    assert r.structured["files"][0] == {"path": "output/a.md", "count": 1, "rows": [2]}


def test_no_match_says_no_files_found(s: Session) -> None:
    assert s.ok("find_files", {"mode": "search", "queries": [{"pattern": "zzz"}]}).content == "no files found"
    assert s.ok("find_files", {"queries": [{"pattern": "*.rs"}]}).content == "no files found"


def test_search_pages(make_runtime: MakeRuntime) -> None:
    s = session(make_runtime)
    s.write("output/many.txt", "".join(f"hit {i}\n" for i in range(600)))
    first = s.ok("find_files", {"mode": "search", "queries": [{"pattern": "hit"}]})
    assert len(first.structured["matches"]) == 256 and "(1-256 of 600 matching lines in 1 files; next page: " \
        "offset=256)" in first.content
    last = s.ok("find_files", {"mode": "search", "offset": 512, "limit": 100, "queries": [{"pattern": "hit"}]})
    assert last.structured["matches"][0]["row"] == 513 and "(513-600 of 600" in last.content
    past = s.ok("find_files", {"mode": "search", "offset": 900, "queries": [{"pattern": "hit"}]})
    assert "offset 900 is past the end" in past.content


def test_mode_errors_in_agenvoys_words(s: Session) -> None:
    r = s.call("find_files", {"mode": "grep", "queries": [{}]})
    assert (r.error_code, r.content) == ("files.unknown_mode", 'unknown mode "grep"; available: list, glob, search')
    r = s.call("find_files", {"mode": "glob", "queries": [{"dir": "output"}]})
    assert (r.error_code, r.content) == ("files.field_required", "pattern is required when mode=glob")
    r = s.call("find_files", {"mode": "search", "queries": [{"pattern": "(a"}]})
    assert r.error_code == "workspace.grep_pattern_invalid"
    r = s.call("find_files", {"queries": [{"pattern": "[z-a]"}]})
    assert r.error_code == "files.glob_invalid"


def test_a_listing_stops_at_its_entry_cap(make_runtime: MakeRuntime) -> None:
    s = session(make_runtime)
    for i in range(1005):
        s.write(f"scratch/many/f{i:04d}.txt", "")
    got = s.batch("find_files", {"queries": [{"dir": "scratch/many"}]})["scratch/many"]
    assert len(got) == 1001 and got[999] == "f0999.txt"
    assert got[-1] == "… listing stopped at 1000 entries; list a subfolder to see the rest"


def test_a_search_past_its_time_limit_answers_what_it_found_and_stops_working(make_runtime: MakeRuntime,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`\\A` makes RE2 go line by line (about 3 µs a line): 2 million rows take seconds, the limit is 1 s. After
    the answer, the walk and the matcher make no more `Stop.check` calls: the work itself stopped."""
    from tooldeck.workspace import grep

    s = session(make_runtime, tool_timeouts={"builtin:find_files": 2.0})
    s.write("scratch/slow.txt", "a\n" * 2_000_000)
    s.write("scratch/hit.txt", "b\n")
    checks: list[float] = []
    original = grep.Stop.check

    def counted(self: grep.Stop) -> None:
        checks.append(time.monotonic())
        original(self)

    monkeypatch.setattr(grep.Stop, "check", counted)
    r = s.ok("find_files", {"mode": "search", "queries": [{"dir": "scratch", "pattern": "\\Ab"}]})
    returned = time.monotonic()
    assert "note: stopped at the time limit (1 s) before every file was seen" in r.content
    time.sleep(1.0)
    assert checks and not [t for t in checks if t > returned]
