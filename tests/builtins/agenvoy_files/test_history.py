"""`remove_file`, `restore_file` and `file_history` over the workspace engine's trash and versions."""

from __future__ import annotations

import json
import time

import pytest

from tests.builtins.agenvoy_files.support import Session, session
from tests.conftest import MakeRuntime


@pytest.fixture
def s(make_runtime: MakeRuntime) -> Session:
    return session(make_runtime)


def write(s: Session, rel: str, text: str) -> None:
    if (s.root / rel).exists():
        s.ok("read_files", {"files": [{"path": rel}]})
    s.ok("edit_file", {"path": rel, "content": text})


def test_remove_and_restore_from_the_trash(s: Session) -> None:
    write(s, "output/a.md", "one\n")
    r = s.ok("remove_file", {"path": "output/a.md"})
    assert r.content == ("removed: output/a.md (4 bytes), moved to the workspace trash; "
                         'restore_file(path="output/a.md") brings it back')
    assert not (s.root / "output/a.md").exists()
    r = s.ok("restore_file", {"path": "output/a.md"})
    assert r.content.startswith("restored: output/a.md (4 bytes) from the trash")
    assert (s.root / "output/a.md").read_text() == "one\n"
    r = s.call("restore_file", {"path": "output/a.md"})
    assert (r.error_code, r.content) == ("workspace.restore_nothing_to_restore", "output/a.md has nothing to restore: "
                                         "it was not removed and has no recorded versions")
    assert s.call("remove_file", {"path": "output/none.md"}).error_code == "workspace.file_not_found"
    assert s.call("restore_file", {}).error_code == "files.field_required"


def test_restore_a_version_and_the_errors_that_list_versions(s: Session) -> None:
    write(s, "output/a.md", "one\n")
    write(s, "output/a.md", "two\n")
    write(s, "output/a.md", "three\n")
    r = s.call("restore_file", {"path": "output/a.md"})
    assert r.error_code == "workspace.restore_version_required" and "recorded versions, newest first: 2 (4 bytes" \
        in r.content
    r = s.call("restore_file", {"path": "output/a.md", "version": 9})
    assert r.error_code == "workspace.restore_version_not_found" and r.content.startswith("output/a.md has no version "
                                                                                          "9; recorded versions")
    r = s.ok("restore_file", {"path": "output/a.md", "version": 1})
    assert r.content == "restored: output/a.md to version 1 (4 bytes); the content it replaced is version 3"
    assert (s.root / "output/a.md").read_text() == "one\n"
    # the read-state is gone: the model reads the restored file before it overwrites it
    assert s.call("edit_file", {"path": "output/a.md", "content": "x"}).error_code == "workspace.write_requires_read"


def test_restore_the_runs_task_undoes_every_change(s: Session) -> None:
    s.write("output/kept.md", "before\n")
    s.write("output/gone.md", "old\n")
    write(s, "output/kept.md", "after 1\n")
    write(s, "output/kept.md", "after 2\n")
    write(s, "output/new.md", "made in the run\n")
    s.ok("remove_file", {"path": "output/gone.md"})
    r = s.ok("restore_file", {"task_id": "current"})
    assert json.loads(json.dumps(r.structured)) == {
        "output/gone.md": "brought back from the trash",
        "output/kept.md": "back to its content before this run (version 1)",
        "output/new.md": "removed to the trash (the run created it)",
    }
    assert (s.root / "output/kept.md").read_text() == "before\n"
    assert (s.root / "output/gone.md").read_text() == "old\n"
    assert not (s.root / "output/new.md").exists()
    assert s.ok("restore_file", {"task_id": "current"}).content.startswith("nothing to restore")
    r = s.call("restore_file", {"task_id": "yesterday"})
    assert r.error_code == "files.task_unknown" and 'use "current"' in r.content


def test_file_history_lists_and_diffs(s: Session) -> None:
    write(s, "output/a.md", "one\ntwo\n")
    write(s, "output/a.md", "one\n2\n")
    write(s, "output/b.md", "bee\n")
    s.ok("remove_file", {"path": "output/b.md"})
    r = s.ok("file_history", {})
    kinds = [(e["path"], e["kind"], e["version"]) for e in r.structured["events"]]
    assert sorted(kinds, key=str) == sorted([("output/a.md", "version", 1), ("output/b.md", "removed", None)], key=str)
    only_a = s.ok("file_history", {"path": "output/a.md"}).structured["events"]
    assert [(e["path"], e["version"], e["bytes"]) for e in only_a] == [("output/a.md", 1, 8)]
    got = json.loads(s.ok("file_history", {"paths": ["output/a.md", "output/b.md", "output/c.md"]}).content)
    diff = got["output/a.md"].split("\n")
    assert diff[0].startswith("--- output/a.md @ version 1 (") and diff[1] == "+++ output/a.md (on disk)"
    assert diff[2:] == ["@@ -1,2 +1,2 @@", " one", "-two", "+2"]
    assert got["output/b.md"].startswith("removed at ") and "restore_file(path) brings it back" in got["output/b.md"]
    assert got["output/c.md"] == "error: output/c.md has no recorded history"


def test_file_history_time_range_limit_and_task(s: Session) -> None:
    for i in range(30):
        write(s, "output/a.md", f"v{i}\n")
    r = s.ok("file_history", {"limit": 5})
    assert len(r.structured["events"]) == 5 and r.structured["total"] == 20  # the engine keeps the newest 20
    assert "(5 of 20 shown, newest first" in r.content
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert s.ok("file_history", {"from": today, "to": today}).structured["total"] == 20
    assert s.ok("file_history", {"to": "2001-01-01"}).content == "no recorded history in that time range"
    assert s.ok("file_history", {"task_id": "current"}).structured["total"] == 20
    bad = s.call("file_history", {"from": "yesterday"})
    assert (bad.error_code, bad.content) == ("files.time_invalid", 'from must be YYYY-MM-DD[ HH:MM[:SS]], got '
                                             '"yesterday"')
    bad = s.call("file_history", {"to": "2026-02-30"})
    assert bad.error_code == "files.time_invalid" and "not a real date" in bad.content
    bad = s.call("file_history", {"mode": "diff"})
    assert bad.content == 'unknown mode "diff"; available: list, read'
    bad = s.call("file_history", {"mode": "read"})
    assert (bad.error_code, bad.content) == ("files.field_required", "paths is required when mode=read")
