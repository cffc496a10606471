"""remove_file → restore_file, and restoring earlier versions."""

from __future__ import annotations

from tests.workspace.conftest import Model
from tooldeck.workspace import effects
from tooldeck.workspace import errors as E
from tooldeck.workspace.history import MAX_VERSIONS

PATH = "scratch/notes.md"


def disk(model: Model) -> str:
    return (model.root / PATH).read_text()


def test_remove_restore_round_trip(model: Model) -> None:
    model.ok("write_file", path=PATH, content="keep me\n")
    r = model.ok("remove_file", path=PATH)
    assert "workspace_restore_file" in r.content and r.structured["size"] == 8
    assert not (model.root / PATH).exists()
    model.err("read_file", E.FILE_NOT_FOUND, path=PATH)
    assert "notes.md" not in model.ok("list_files", path="scratch").content
    r = model.ok("restore_file", path=PATH)
    assert r.structured["source"] == "trash" and disk(model) == "keep me\n"
    # the read-state was dropped: replacing needs a read again
    model.err("write_file", E.WRITE_REQUIRES_READ, path=PATH, content="x")
    model.err("restore_file", E.RESTORE_NOTHING_TO_RESTORE, path="scratch/never.md")
    kinds = [e.kind for _, e in model.inv.effects]
    assert kinds == ["workspace_file_written", "workspace_file_removed", "workspace_file_restored"]


def test_restore_refuses_to_overwrite(model: Model) -> None:
    model.ok("write_file", path=PATH, content="old\n")
    model.ok("remove_file", path=PATH)
    model.ok("write_file", path=PATH, content="new\n")
    model.err("restore_file", E.RESTORE_TARGET_EXISTS, path=PATH)
    assert disk(model) == "new\n"


def test_remove_errors(model: Model) -> None:
    model.err("remove_file", E.FILE_NOT_FOUND, path=PATH)
    (model.root / "scratch" / "sub").mkdir()
    model.err("remove_file", E.PATH_IS_DIRECTORY, path="scratch/sub/")
    model.err("remove_file", E.PATH_NOT_WRITABLE, path="scratch")
    (model.root / "tool-results").mkdir()
    (model.root / "tool-results" / "r.txt").write_text("r")
    model.err("remove_file", E.PATH_NOT_WRITABLE, path="tool-results/r.txt")
    assert (model.root / "tool-results" / "r.txt").exists()


def test_restore_an_earlier_version(model: Model) -> None:
    model.ok("write_file", path=PATH, content="v1\n")
    model.ok("write_file", path=PATH, content="v2\n")
    model.ok("write_file", path=PATH, content="v3\n", mode="append")
    assert disk(model) == "v2\nv3\n"
    r = model.err("restore_file", E.RESTORE_VERSION_REQUIRED, path=PATH)
    assert "Earlier versions, newest first: 2 (" in r.content and ", 1 (" in r.content
    r = model.ok("restore_file", path=PATH, version=1)
    assert disk(model) == "v1\n"
    assert "kept as version 3" in r.content
    model.ok("restore_file", path=PATH, version=3)
    assert disk(model) == "v2\nv3\n"
    r = model.err("restore_file", E.RESTORE_VERSION_NOT_FOUND, path=PATH, version=99)
    assert "newest first" in r.content


def test_versions_are_bounded(model: Model) -> None:
    for i in range(MAX_VERSIONS + 5):
        model.ok("write_file", path=PATH, content=f"v{i}\n")
    r = model.err("restore_file", E.RESTORE_VERSION_NOT_FOUND, path=PATH, version=1)
    assert f"{MAX_VERSIONS + 4} (" in r.content
    model.ok("restore_file", path=PATH, version=MAX_VERSIONS + 4)
    assert disk(model) == f"v{MAX_VERSIONS + 3}\n"


def test_patches_keep_versions_too(model: Model) -> None:
    model.ok("write_file", path=PATH, content="alpha\n")
    model.ok("apply_patch", path=PATH, old_string="alpha", new_string="beta")
    model.ok("restore_file", path=PATH, version=1)
    assert disk(model) == "alpha\n"
    changes = [(c.kind, c.path) for c in effects.changed_files(model.inv)]
    assert changes == [("workspace_file_written", PATH), ("workspace_file_patched", PATH),
                       ("workspace_file_restored", PATH)]
