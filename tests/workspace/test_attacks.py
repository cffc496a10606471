"""Path attacks: nothing outside the workspace is ever read or written through the file tools."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.workspace.conftest import Model
from tooldeck.workspace import for_run
from tooldeck.workspace.errors import INVALID_PATH, PATH_NOT_VISIBLE, PATH_NOT_WRITABLE, SYMLINK_REFUSED

SECRET = "top secret sentinel\n"
BAD_PATHS = ["../x", "/etc/passwd", "output/../../x", "C:\\x", "out\0put/x", "\\\\server\\share", "..\\..\\x"]


@pytest.fixture
def sentinel(tmp_path: Path) -> Path:
    path = tmp_path / "sentinel.txt"
    path.write_text(SECRET)
    return path


def assert_untouched(sentinel: Path) -> None:
    assert sentinel.read_text() == SECRET
    assert sorted(p.name for p in sentinel.parent.iterdir()) == ["home", "sentinel.txt"]


@pytest.mark.parametrize("raw", BAD_PATHS)
def test_bad_paths_are_refused_by_every_file_tool(model: Model, sentinel: Path, raw: str) -> None:
    calls = [("read_file", {"path": raw}), ("write_file", {"path": raw, "content": "x"}),
             ("apply_patch", {"path": raw, "old_string": "a", "new_string": "b"}),
             ("remove_file", {"path": raw}), ("restore_file", {"path": raw}), ("commit", {"path": raw}),
             ("list_files", {"path": raw}), ("search_files", {"pattern": "secret", "path": raw})]
    for result in model.turn(*calls):
        assert result.is_error and result.error_code == INVALID_PATH, result.content
        assert "secret" not in result.content.replace("`secret`", "")
    assert_untouched(sentinel)


def test_hidden_and_read_only_roots(model: Model) -> None:
    (model.root / "input").mkdir()
    (model.root / "input" / "request.md").write_text("hidden")
    model.err("read_file", PATH_NOT_VISIBLE, path="input/request.md")
    model.err("list_files", PATH_NOT_VISIBLE, path="input")
    model.err("write_file", PATH_NOT_WRITABLE, path="input/request.md", content="x")
    model.err("write_file", PATH_NOT_WRITABLE, path="tool-results/x.txt", content="x")
    model.err("write_file", PATH_NOT_WRITABLE, path="output", content="x")
    model.err("read_file", PATH_NOT_VISIBLE, path=".tooldeck/versions")
    listing = model.ok("list_files")
    assert "input" not in listing.content and ".tooldeck" not in listing.content
    assert model.ok("search_files", pattern="hidden").structured["total"] == 0


@pytest.mark.parametrize("absolute", [True, False])
def test_symlinked_file_leaving_the_workspace_is_refused(model: Model, sentinel: Path, absolute: bool) -> None:
    link = model.root / "scratch" / "leak.txt"
    model.ok("list_files")  # creates the writable roots
    target = sentinel if absolute else Path(os.path.relpath(sentinel, link.parent))
    link.symlink_to(target)
    r = model.err("read_file", SYMLINK_REFUSED, path="scratch/leak.txt")
    assert SECRET.strip() not in r.content
    model.err("write_file", SYMLINK_REFUSED, path="scratch/leak.txt", content="pwned", mode="append")
    model.err("write_file", SYMLINK_REFUSED, path="scratch/leak.txt", content="pwned")
    model.err("apply_patch", SYMLINK_REFUSED, path="scratch/leak.txt", old_string="top", new_string="x")
    model.err("remove_file", SYMLINK_REFUSED, path="scratch/leak.txt")
    model.err("commit", SYMLINK_REFUSED, path="scratch/leak.txt")
    search = model.ok("search_files", pattern="sentinel")
    assert "No visible workspace files matched" in search.content
    assert "leak.txt" not in model.ok("list_files", path="scratch").content
    assert_untouched(sentinel)
    assert link.is_symlink()


@pytest.mark.parametrize("absolute", [True, False])
def test_symlinked_folder_leaving_the_workspace_is_refused(model: Model, sentinel: Path, absolute: bool) -> None:
    model.ok("list_files")
    link = model.root / "scratch" / "out"
    outside = sentinel.parent
    link.symlink_to(outside if absolute else Path(os.path.relpath(outside, link.parent)))
    model.err("read_file", SYMLINK_REFUSED, path="scratch/out/sentinel.txt")
    model.err("write_file", SYMLINK_REFUSED, path="scratch/out/new.txt", content="x")
    model.err("write_file", SYMLINK_REFUSED, path="scratch/out/sentinel.txt", content="x", mode="append")
    model.err("list_files", SYMLINK_REFUSED, path="scratch/out")
    model.err("search_files", SYMLINK_REFUSED, pattern="secret", path="scratch/out")
    assert_untouched(sentinel)


def test_symlink_to_a_hidden_or_read_only_place_inside_is_refused(model: Model) -> None:
    model.ok("list_files")
    (model.root / "input").mkdir()
    (model.root / "input" / "brief.md").write_text("hidden brief")
    (model.root / "tool-results").mkdir()
    (model.root / "tool-results" / "r.txt").write_text("result")
    (model.root / "scratch" / "brief").symlink_to("../input/brief.md")
    (model.root / "scratch" / "result").symlink_to("../tool-results/r.txt")
    model.err("read_file", SYMLINK_REFUSED, path="scratch/brief")
    assert "result" in model.ok("read_file", path="scratch/result").content  # visible target: readable
    model.err("write_file", SYMLINK_REFUSED, path="scratch/result", content="x", mode="append")
    assert (model.root / "tool-results" / "r.txt").read_text() == "result"


def test_symlink_inside_the_writable_area_is_followed(model: Model) -> None:
    model.ok("write_file", path="output/real.md", content="one\n")
    (model.root / "scratch" / "alias.md").symlink_to("../output/real.md")
    model.ok("read_file", path="scratch/alias.md")
    model.ok("write_file", path="scratch/alias.md", content="two\n")
    assert (model.root / "output" / "real.md").read_text() == "two\n"
    assert (model.root / "scratch" / "alias.md").is_symlink()


def test_symlink_swapped_in_after_the_check_is_not_followed(model: Model, sentinel: Path, tmp_path: Path) -> None:
    """TOCTOU: a folder checked as real and then replaced by a symlink is refused at open time."""
    model.ok("write_file", path="scratch/dir/file.txt", content="inside\n")
    store = for_run(model.inv.run_state)
    policy = store.policy(model.inv.profile.workspace)
    loc = store.locate(policy, "scratch/dir/file.txt")
    shutil.rmtree(model.root / "scratch" / "dir")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "file.txt").write_text(SECRET)
    (model.root / "scratch" / "dir").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(Exception) as info:
        store.read(loc)
    assert getattr(info.value, "code", None) == SYMLINK_REFUSED
    with pytest.raises(Exception) as info:
        store.swap(loc, None, lambda _old: b"pwned")
    assert getattr(info.value, "code", None) == SYMLINK_REFUSED
    assert (tmp_path / "elsewhere" / "file.txt").read_text() == SECRET
    assert sorted(os.listdir(tmp_path / "elsewhere")) == ["file.txt"]
