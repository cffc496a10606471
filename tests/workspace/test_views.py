"""Read-only views: spilled tool results read back page by page, mounted skills, Profile roots."""

from __future__ import annotations

import random
import string
from pathlib import Path

import tooldeck
from tests.workspace.conftest import Model, page_text
from tooldeck.projection import WRAP_CHARS, hard_wrap
from tooldeck.workspace import errors as E
from tooldeck.workspace import for_run


def test_spilled_200k_result_reads_back_completely(runtime: tooldeck.Runtime) -> None:
    rng = random.Random(7)
    big = "".join(rng.choice(string.ascii_letters + " .,") for _ in range(200_000))

    @runtime.tool("bench")
    def big_result() -> str:
        """Return a very large text."""
        return big

    model = Model(runtime.invocation())
    spilled = model.inv.run([{"id": "c1", "name": "big_result", "arguments": {}}])[0]
    assert spilled.structured["externalized"]
    path = spilled.structured["path"]
    assert path.startswith("tool-results/") and "`workspace_read_file`" in spilled.content
    pages: list[str] = []
    start, calls = 1, 0
    while True:
        r = model.ok("read_file", path=path, start_line=start)
        calls += 1
        assert not (r.structured or {}).get("externalized"), "a page must never be spilled again"
        pages += page_text(r)
        s = r.structured
        if s["endLine"] == s["totalLines"]:
            break
        assert f"Continue with start_line={s['endLine'] + 1}" in r.content
        start = s["endLine"] + 1
    assert all(len(line) <= WRAP_CHARS for line in pages)
    assert "\n".join(pages) == hard_wrap(big)
    assert "".join(pages) == big
    assert 4 <= calls <= 6
    # the view is searchable by path and never writable
    hit = model.ok("search_files", pattern=big[100_000:100_020].replace(".", r"\."), path=path)
    assert hit.structured["total"] >= 1
    model.err("write_file", E.PATH_NOT_WRITABLE, path=path, content="x", mode="append")
    model.err("apply_patch", E.PATH_NOT_WRITABLE, path=path, old_string="a", new_string="b")
    model.err("remove_file", E.PATH_NOT_WRITABLE, path=path)
    assert (model.root / path).read_text() == hard_wrap(big)


def test_mounted_skills_view(runtime: tooldeck.Runtime, tmp_path: Path) -> None:
    library = tmp_path / "library"
    (library / "writer").mkdir(parents=True)
    (library / "writer" / "SKILL.md").write_text("---\nname: writer\n---\nWrite well.\n")
    (tmp_path / "outside.txt").write_text("not part of the library")
    (library / "writer" / "escape.md").symlink_to(tmp_path / "outside.txt")
    model = Model(runtime.invocation())
    for_run(model.inv.run_state).views.mount("skills", library)
    r = model.ok("read_file", path="skills/writer/SKILL.md")
    assert "Write well." in r.content
    assert "skills/" in model.ok("list_files").content
    listed = model.ok("list_files", path="skills")
    assert [e["path"] for e in listed.structured["entries"]] == ["skills/writer", "skills/writer/SKILL.md"]
    model.err("read_file", E.SYMLINK_REFUSED, path="skills/writer/escape.md")
    model.err("write_file", E.PATH_NOT_WRITABLE, path="skills/writer/SKILL.md", content="x")
    assert model.ok("search_files", pattern="Write well").structured["total"] == 0  # not searched by default
    assert model.ok("search_files", pattern="Write well", path="skills").structured["total"] == 1
    assert not (model.root / "skills").exists()


def test_session_profile_roots(runtime: tooldeck.Runtime) -> None:
    profile = {"workspace": {"writable": ["work", "tmp"], "read_only": ["tool-results"], "body_file": "work/reply.md"}}
    model = Model(runtime.invocation(profile=profile))
    model.ok("write_file", path="work/reply.md", content="hi\n")
    model.err("write_file", E.PATH_NOT_WRITABLE, path="output/main.md", content="x")
    r = model.ok("commit")
    assert r.structured["path"] == "work/reply.md"
    root = model.ok("list_files")
    assert [e["path"] for e in root.structured["entries"]] == ["tmp", "work", "work/reply.md"]
