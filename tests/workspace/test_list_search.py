"""list_files and search_files."""

from __future__ import annotations

from tests.workspace.conftest import Model
from tooldeck.workspace import errors as E
from tooldeck.workspace.listing import MAX_LIST_ENTRIES
from tooldeck.workspace.search import MAX_LISTED_LINES


def write(model: Model, rel: str, text: str) -> None:
    path = model.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_empty_and_dot_list_the_workspace_root(model: Model) -> None:
    write(model, "output/main.md", "x")
    write(model, "input/secret.md", "hidden")
    results = model.turn(("list_files", {}), ("list_files", {"path": ""}), ("list_files", {"path": "."}),
                         ("list_files", {"path": "./"}), ("list_files", {"path": None}))
    assert len({r.content for r in results}) == 1
    r = results[0]
    assert not r.is_error
    paths = [e["path"] for e in r.structured["entries"]]
    assert paths == ["output", "output/main.md", "persist", "plan", "scratch", "summaries"]
    assert "input" not in r.content and "read-only: tool-results/, skills/" in r.content


def test_depth_and_tree(model: Model) -> None:
    write(model, "scratch/a/b/c/d/e.txt", "deep")
    r = model.ok("list_files", path="scratch", depth=2)
    assert [e["path"] for e in r.structured["entries"]] == ["scratch/a", "scratch/a/b"]
    assert r.content == "scratch/\n  a/\n    b/"
    r = model.ok("list_files", path="scratch", depth=4)
    assert r.structured["entries"][-1] == {"path": "scratch/a/b/c/d", "kind": "directory"}
    model.err("list_files", E.LIST_DEPTH_TOO_LARGE, path="scratch", depth=5)
    model.err("list_files", E.LIST_DEPTH_INVALID, path="scratch", depth=0)
    model.err("list_files", E.PATH_NOT_FOUND, path="scratch/missing")


def test_listing_is_capped_breadth_first(model: Model) -> None:
    for i in range(150):
        write(model, f"scratch/d{i:03d}/f.txt", "x")
    r = model.ok("list_files", path="scratch", depth=2)
    assert r.structured["truncated"] and len(r.structured["entries"]) == MAX_LIST_ENTRIES
    kinds = [e["kind"] for e in r.structured["entries"]]
    assert kinds.count("directory") == 150  # every folder of the first level before any deeper entry
    assert "Listing stopped at 200 entries" in r.content


def test_list_of_a_file(model: Model) -> None:
    write(model, "output/main.md", "x")
    r = model.ok("list_files", path="output/main.md")
    assert r.structured["entries"] == [{"path": "output/main.md", "kind": "file"}]


def test_search_sorted_by_path_and_line_with_case_flag(model: Model) -> None:
    write(model, "scratch/b.txt", "Alpha\nbeta\nALPHA again\n")
    write(model, "output/main.md", "nothing\nalpha here\n")
    write(model, "tool-results/inv/r.txt", "alpha in a result\n")
    write(model, "skills/s/SKILL.md", "alpha skill\n")
    write(model, "input/x.md", "alpha hidden\n")
    r = model.ok("search_files", pattern="(?i)alpha")
    got = [(m["path"], m["line"]) for m in r.structured["matches"]]
    assert got == [("output/main.md", 2), ("scratch/b.txt", 1), ("scratch/b.txt", 3)]
    assert r.structured["total"] == 3 and r.structured["files"] == 2
    assert r.content.split("\n")[1:] == ["output/main.md:2: alpha here", "scratch/b.txt:1: Alpha",
                                         "scratch/b.txt:3: ALPHA again"]
    assert model.ok("search_files", pattern="alpha").structured["total"] == 1  # case-sensitive by default
    # read-only roots are searched when named
    assert model.ok("search_files", pattern="alpha", path="tool-results").structured["total"] == 1
    assert model.ok("search_files", pattern="alpha", path="skills/s/SKILL.md").structured["total"] == 1
    model.err("search_files", E.PATH_NOT_VISIBLE, pattern="alpha", path="input")
    model.err("search_files", E.PATH_NOT_FOUND, pattern="alpha", path="scratch/nope")


def test_search_caps_listed_lines_and_reports_the_total(model: Model) -> None:
    write(model, "scratch/many.txt", "".join(f"hit {i}\n" for i in range(250)))
    r = model.ok("search_files", pattern="^hit")
    assert r.structured["total"] == 250 and len(r.structured["matches"]) == MAX_LISTED_LINES
    assert r.structured["truncated"]
    assert "Showing the first 100 of 250 matching lines" in r.content


def test_search_trims_long_lines_and_skips_binary(model: Model) -> None:
    write(model, "scratch/wide.txt", "a" * 5_000 + "NEEDLE" + "b" * 5_000 + "\n")
    (model.root / "scratch" / "blob.bin").write_bytes(b"\xff\xfeNEEDLE\x00")
    r = model.ok("search_files", pattern="NEEDLE")
    [m] = r.structured["matches"]
    assert "NEEDLE" in m["text"] and len(m["text"]) <= 302
    assert r.structured["skippedFiles"] == 1


def test_search_patterns(model: Model) -> None:
    write(model, "scratch/a.txt", "start middle end\nend start\n")
    r = model.ok("search_files", pattern="^end")
    assert [m["line"] for m in r.structured["matches"]] == [2]
    r = model.ok("search_files", pattern=r"\Aend")  # context-sensitive patterns are matched per line too
    assert [m["line"] for m in r.structured["matches"]] == [2]
    r = model.ok("search_files", pattern="start$")  # `$` is the end of each line
    assert [m["line"] for m in r.structured["matches"]] == [2]
    r = model.err("search_files", E.GREP_PATTERN_INVALID, pattern="foo(")
    assert "cannot be used as a search pattern: missing )" in r.content
    r = model.ok("search_files", pattern="zzz")
    assert r.content.startswith("No visible workspace files matched `zzz`")
