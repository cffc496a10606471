"""`edit_file` against real temp workspaces: mode inference, write receipts, the read-before-overwrite rule
and compare-and-swap, patch targets (row anchors, insertions, the "row 12 is …" hint, ambiguity, overlap,
a whole row's newline, refusing to empty a file), all-or-nothing batches."""

from __future__ import annotations

import pytest

from tests.builtins.agenvoy_files.support import Session, session
from tests.conftest import MakeRuntime


@pytest.fixture
def s(make_runtime: MakeRuntime) -> Session:
    return session(make_runtime)


def read(s: Session, rel: str) -> None:
    s.ok("read_files", {"files": [{"path": rel}]})


def patch(s: Session, rel: str, *targets: dict[str, object]) -> object:
    return s.call("edit_file", {"path": rel, "targets": list(targets)})


def test_mode_inference_and_its_errors(s: Session) -> None:
    r = s.call("edit_file", {"path": "output/a.md"})
    assert (r.error_code, r.content) == ("files.mode_required", "mode is required; available: write, patch")
    r = s.call("edit_file", {"path": "output/a.md", "mode": "remove"})
    assert (r.error_code, r.content) == ("files.unknown_mode", 'unknown mode "remove"; available: write, patch')
    r = s.call("edit_file", {"path": "output/a.md", "mode": "write"})
    assert (r.error_code, r.content) == ("files.field_required", "content is required when mode=write")
    r = s.call("edit_file", {"path": "output/a.md", "mode": "patch"})
    assert (r.error_code, r.content) == ("files.field_required", "targets is required when mode=patch")
    r = s.call("edit_file", {"path": " ", "content": "x"})
    assert (r.error_code, r.content) == ("files.field_required", "path is required when mode=write")


def test_write_creates_with_a_receipt_and_a_bare_name_goes_to_output(s: Session) -> None:
    r = s.ok("edit_file", {"path": "report.md", "content": "# Title\nbody\nend line\n"})
    assert r.content == ("successfully created: output/report.md (22 bytes, 3 lines on disk)\nfirst line: # Title\n"
                         "last line: end line")
    assert (s.root / "output/report.md").read_text() == "# Title\nbody\nend line\n"
    read(s, "output/report.md")
    r = s.ok("edit_file", {"path": "output/report.md", "content": "x" * 300})
    assert r.content.startswith("successfully updated: output/report.md (300 bytes, 1 lines on disk)\nfirst line: ")
    assert r.content.endswith("x" * 128 + "…")


def test_overwrite_needs_a_read_of_the_unchanged_file(s: Session) -> None:
    s.write("output/a.md", "one\n")
    r = s.call("edit_file", {"path": "output/a.md", "content": "two\n"})
    assert r.error_code == "workspace.write_requires_read" and "read it with read_files" in r.content
    read(s, "output/a.md")
    s.write("output/a.md", "changed behind the tool's back\n")
    r = s.call("edit_file", {"path": "output/a.md", "content": "two\n"})
    assert r.error_code == "workspace.write_stale_file"
    assert (s.root / "output/a.md").read_text() == "changed behind the tool's back\n"  # nothing written


def test_overwriting_a_file_over_one_mib_is_refused(s: Session) -> None:
    s.write("output/big.txt", "y" * (2 * 1024 * 1024))
    r = s.call("edit_file", {"path": "output/big.txt", "content": "small\n"})
    assert r.error_code == "files.too_large" and "2.0 MB, over edit_file's 1 MB limit" in r.content


def test_writing_empty_content_over_a_file_is_refused(s: Session) -> None:
    s.write("output/a.md", "keep\n")
    read(s, "output/a.md")
    r = s.call("edit_file", {"path": "output/a.md", "content": ""})
    assert r.error_code == "files.would_empty" and (s.root / "output/a.md").read_text() == "keep\n"


def test_a_read_only_or_hidden_path_is_refused(s: Session) -> None:
    assert s.call("edit_file", {"path": "tool-results/x.md", "content": "x"}).error_code == \
        "workspace.path_not_writable"
    assert s.call("edit_file", {"path": "../x.md", "content": "x"}).error_code == "workspace.invalid_path"


TEXT = "def f():\n    return 1\n\ndef g():\n    return 1\n"


def test_a_missing_anchor_quotes_the_rows_that_resemble_it(s: Session) -> None:
    s.write("output/m.py", TEXT)
    read(s, "output/m.py")
    r = patch(s, "output/m.py", {"old_string": "def  g():\n  return 1", "new_string": "x"})
    assert r.error_code == "files.anchor_not_found"
    assert r.content == ('old_string of target #1 is not found in output/m.py, but row 1 is "def f():", row 4 is '
                         '"def g():" — copy the anchor from those exact bytes (without the row numbers read_files '
                         "shows)")
    r = patch(s, "output/m.py", {"old_string": "zzzz qqqq", "new_string": "x"})
    assert r.content.endswith("read it with read_files and copy the anchor from the file's exact bytes")


def test_an_ambiguous_anchor_names_its_rows_and_row_picks_one(s: Session) -> None:
    s.write("output/m.py", TEXT)
    read(s, "output/m.py")
    r = patch(s, "output/m.py", {"old_string": "return 1", "new_string": "return 2"})
    assert (r.error_code, r.content) == ("files.anchor_ambiguous", "old_string of target #1 occurs on rows [2 5] of "
                                         "output/m.py; set row to one of them or replace_all")
    s.ok("edit_file", {"path": "output/m.py", "targets": [{"old_string": "return 1", "new_string": "return 2",
                                                           "row": 5}]})
    assert (s.root / "output/m.py").read_text() == TEXT.replace("return 1\n", "return 2\n").replace(
        "return 2\n\n", "return 1\n\n", 1)
    r = patch(s, "output/m.py", {"old_string": "return 1", "new_string": "x", "row": 3})
    assert r.content == "old_string of target #1 does not start on row 3 of output/m.py; it occurs on rows [2]"


def test_insertions_by_row_and_replace_all_in_one_batch(s: Session) -> None:
    s.write("output/m.py", TEXT)
    read(s, "output/m.py")
    s.ok("edit_file", {"path": "output/m.py", "targets": [
        {"insert_string": "# top", "row": 1},
        {"old_string": "return 1", "new_string": "return 0", "replace_all": True},
        {"insert_string": "# end\n", "row": 6},
        {"insert_string": "# before g", "row": 4},
    ]})
    assert (s.root / "output/m.py").read_text() == ("# top\ndef f():\n    return 0\n\n# before g\ndef g():\n"
                                                    "    return 0\n# end\n")


def test_deleting_a_whole_row_takes_its_newline(s: Session) -> None:
    s.write("output/a.md", "keep\ndrop me\nkeep too\n")
    read(s, "output/a.md")
    s.ok("edit_file", {"path": "output/a.md", "targets": [{"old_string": "drop me", "new_string": ""}]})
    assert (s.root / "output/a.md").read_text() == "keep\nkeep too\n"


def test_overlapping_targets_reject_the_whole_batch(s: Session) -> None:
    s.write("output/a.md", "alpha beta gamma\n")
    read(s, "output/a.md")
    r = patch(s, "output/a.md", {"old_string": "alpha", "new_string": "A"},
              {"old_string": "alpha beta", "new_string": "AB"})
    assert r.error_code == "files.targets_overlap" and "targets #1 and #2 overlap" in r.content
    r = patch(s, "output/a.md", {"old_string": "gamma", "new_string": "G"},
              {"old_string": "nope", "new_string": "x"})
    assert r.error_code == "files.anchor_not_found"
    assert (s.root / "output/a.md").read_text() == "alpha beta gamma\n"  # neither batch changed anything


def test_a_patch_that_empties_the_file_or_changes_nothing_is_refused(s: Session) -> None:
    s.write("output/a.md", "only\n")
    read(s, "output/a.md")
    r = patch(s, "output/a.md", {"old_string": "only\n", "new_string": ""})
    assert r.error_code == "files.would_empty" and "use remove_file" in r.content
    r = patch(s, "output/a.md", {"old_string": "only", "new_string": "only"})
    assert (r.error_code, r.content) == ("files.no_edit", "no edit needed: the targets leave output/a.md as it is")
    assert (s.root / "output/a.md").read_text() == "only\n"


@pytest.mark.parametrize(("target", "words"), [
    ({"new_string": "x"}, "target #1 needs a non-empty old_string"),
    ({"old_string": "a"}, "target #1 needs new_string"),
    ({"insert_string": "x"}, "target #1: insert_string needs row"),
    ({"insert_string": "x", "row": 1, "old_string": "a"}, "target #1 mixes insert_string"),
    ({"insert_string": "x", "row": 9}, "target #1: row 9 is outside output/a.md (1 rows); use 1-2"),
    ({"old_string": "a", "new_string": "b", "row": 1, "replace_all": True}, "sets both row and replace_all"),
])
def test_bad_targets(s: Session, target: dict[str, object], words: str) -> None:
    s.write("output/a.md", "a\n")
    read(s, "output/a.md")
    r = patch(s, "output/a.md", target)
    assert r.error_code == "files.target_invalid" and words in r.content


def test_patch_of_a_missing_file_and_effects(s: Session) -> None:
    r = patch(s, "output/none.md", {"old_string": "a", "new_string": "b"})
    assert r.error_code == "workspace.file_not_found" and "create it with mode=write" in r.content
    inv = s.rt.invocation(run_id=s.run_id)
    inv.run([{"id": "w", "name": "edit_file", "arguments": {"path": "output/e.md", "content": "a\n"}}])
    assert [(cid, e.kind, e.data["path"]) for cid, e in inv.effects] == [("w", "workspace_file_written", "output/e.md")]
