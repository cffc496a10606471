"""apply_patch: TauriTavern's 11-step check order, the partial-read rules and the CAS write."""

from __future__ import annotations

from tests.workspace.conftest import Model
from tooldeck.workspace import errors as E

TEXT = "".join(f"line {i}\n" for i in range(1, 21)) + "twin\ntwin\n"
PATH = "output/main.md"


def setup(model: Model, text: str = TEXT) -> None:
    (model.root / "output" / "main.md").write_text(text)


def on_disk(model: Model) -> str:
    return (model.root / "output" / "main.md").read_text()


def test_success_after_full_read(model: Model) -> None:
    setup(model)
    model.ok("read_file", path=PATH)
    r = model.ok("apply_patch", path=PATH, old_string="line 7\n", new_string="line seven\n")
    assert r.content.startswith(f"Patched {PATH} with 1 replacement; file now has ")
    s = r.structured
    assert s["replacements"] == 1 and s["oldSha256"] != s["sha256"] and s["path"] == PATH
    assert "line seven\n" in on_disk(model)
    assert [e.kind for _, e in model.inv.effects] == ["workspace_file_patched"]
    # the run knows the new content: a second patch needs no re-read
    model.ok("apply_patch", path=PATH, old_string="twin\n", new_string="pair\n", replace_all=True)
    assert on_disk(model).endswith("pair\npair\n")


def test_check_order_1_to_4(model: Model) -> None:
    setup(model)
    # (1) empty old_string comes before everything, even a bad path
    model.err("apply_patch", E.PATCH_EMPTY_OLD_STRING, path="../bad", old_string="", new_string="x")
    # (2) no change before the path
    model.err("apply_patch", E.PATCH_NO_CHANGE, path="../bad", old_string="a", new_string="a")
    # (3) the path parses and is writable
    model.err("apply_patch", E.INVALID_PATH, path="../bad", old_string="a", new_string="b")
    model.err("apply_patch", E.PATH_NOT_WRITABLE, path="tool-results/x.txt", old_string="a", new_string="b")
    # (4) a read is required
    model.err("apply_patch", E.PATCH_REQUIRES_READ, path=PATH, old_string="line 1\n", new_string="x\n")
    assert on_disk(model) == TEXT


def test_partial_read_rules_6_and_7(model: Model) -> None:
    setup(model)
    model.ok("read_file", path=PATH, start_line=1, line_count=5)
    # (6) replace_all needs a full read
    model.err("apply_patch", E.PATCH_REQUIRES_FULL_READ, path=PATH, old_string="line 2\n", new_string="x\n",
              replace_all=True)


def test_partial_read_old_string_outside_observed_text(model: Model) -> None:
    setup(model)
    model.ok("read_file", path=PATH, start_line=1, line_count=5)
    # (7) old_string outside the lines read
    r = model.err("apply_patch", E.PATCH_REQUIRES_FULL_READ, path=PATH, old_string="line 9\n", new_string="x\n")
    assert "not in the part" in r.content


def test_partial_read_patch_inside_observed_text_succeeds(model: Model) -> None:
    setup(model)
    model.ok("read_file", path=PATH, start_line=1, line_count=3)
    model.ok("read_file", path=PATH, start_line=4, line_count=3)  # contiguous partial reads merge
    model.ok("apply_patch", path=PATH, old_string="line 3\nline 4\n", new_string="line 3-4\n")
    assert "line 3-4\nline 5\n" in on_disk(model)


def test_workspace_patch_partial_failure_requires_full_read_before_retry(model: Model) -> None:
    setup(model)
    model.ok("read_file", path=PATH, start_line=1, line_count=10)
    # fails at (10): "line 1" is in the observed text but occurs 11 times (line 1, 10..19)
    r = model.err("apply_patch", E.PATCH_OLD_STRING_NOT_UNIQUE, path=PATH, old_string="line 1", new_string="L1")
    assert "matched 11 times" in r.content
    # (5) even a patch that would now work is refused until a full read
    model.err("apply_patch", E.PATCH_REQUIRES_FULL_READ, path=PATH, old_string="line 2\n", new_string="L2\n")
    model.ok("read_file", path=PATH, start_line=1, line_count=3)  # another partial read does not clear it
    r = model.err("apply_patch", E.PATCH_REQUIRES_FULL_READ, path=PATH, old_string="line 2\n", new_string="L2\n")
    assert "failed after a partial read" in r.content
    model.ok("read_file", path=PATH)
    model.ok("apply_patch", path=PATH, old_string="line 2\n", new_string="L2\n")
    assert on_disk(model).startswith("line 1\nL2\nline 3\n")


def test_stale_not_found_and_not_unique_after_full_read(model: Model) -> None:
    setup(model)
    model.ok("read_file", path=PATH)
    # (9) not found
    r = model.err("apply_patch", E.PATCH_OLD_STRING_NOT_FOUND, path=PATH, old_string="nope", new_string="x")
    assert "without the line numbers" in r.content
    # (10) not unique
    r = model.err("apply_patch", E.PATCH_OLD_STRING_NOT_UNIQUE, path=PATH, old_string="twin", new_string="x")
    assert "matched 2 times" in r.content and "replace_all" in r.content
    # a failure after a full read sets no flag
    model.ok("apply_patch", path=PATH, old_string="twin", new_string="x", replace_all=True)
    # (8) changed on disk since the read
    (model.root / "output" / "main.md").write_text("new content\n")
    model.err("apply_patch", E.PATCH_STALE_FILE, path=PATH, old_string="line 1\n", new_string="x\n")
    (model.root / "output" / "main.md").unlink()
    r = model.err("apply_patch", E.PATCH_STALE_FILE, path=PATH, old_string="line 1\n", new_string="x\n")
    assert "no longer exists" in r.content


def test_stale_check_comes_before_matching(model: Model) -> None:
    setup(model)
    model.ok("read_file", path=PATH)
    (model.root / "output" / "main.md").write_text(TEXT + "tail\n")
    model.err("apply_patch", E.PATCH_STALE_FILE, path=PATH, old_string="nope", new_string="x")


def test_patch_of_non_text_or_folder(model: Model) -> None:
    (model.root / "output" / "dir").mkdir()
    model.err("apply_patch", E.PATCH_REQUIRES_READ, path="output/dir", old_string="a", new_string="b")
    model.err("read_file", E.PATH_IS_DIRECTORY, path="output/dir")
