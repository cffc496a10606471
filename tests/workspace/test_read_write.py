"""read_file paging and read-state; write_file with read-state and compare-and-swap."""

from __future__ import annotations

from tests.workspace.conftest import Model, page_text
from tooldeck.workspace.errors import (
    FILE_NOT_FOUND,
    FILE_NOT_TEXT,
    INVALID_LINE_RANGE,
    PATH_IS_DIRECTORY,
    WRITE_MODE_INVALID,
    WRITE_REQUIRES_READ,
    WRITE_STALE_FILE,
)
from tooldeck.workspace.reading import MAX_READ_CHARS, MAX_READ_LINES


def test_full_read_shows_numbered_lines_and_structured(model: Model) -> None:
    model.ok("write_file", path="output/main.md", content="alpha beta\ngamma\n")
    r = model.ok("read_file", path="output/main.md")
    assert r.content.split("\n")[0] == "output/main.md lines 1-2 of 2, chars 16 of 17, words 3 of 3"
    assert page_text(r) == ["alpha beta", "gamma"]
    s = r.structured
    assert s["fullRead"] and s["startLine"] == 1 and s["endLine"] == 2 and s["totalLines"] == 2
    assert s["totalChars"] == 17 and s["totalWords"] == 3 and not s["lineTruncated"] and len(s["sha256"]) == 64
    assert r.resource_refs == ["output/main.md"]


def test_range_read(model: Model) -> None:
    model.ok("write_file", path="scratch/n.txt", content="".join(f"line {i}\n" for i in range(1, 11)))
    r = model.ok("read_file", path="scratch/n.txt", start_line=3, line_count=2)
    assert page_text(r) == ["line 3", "line 4"]
    assert not r.structured["fullRead"]
    assert "Continue with start_line=5 and line_count=6" in r.content


def test_long_file_gives_a_preview_that_says_where_to_continue(model: Model) -> None:
    n = MAX_READ_LINES + 300
    model.ok("write_file", path="scratch/long.txt", content="".join(f"{i}\n" for i in range(1, n + 1)))
    first = model.ok("read_file", path="scratch/long.txt")
    assert first.content.split("\n")[0].endswith("(preview)")
    assert f"Preview ended before the end of the file. Continue with start_line={MAX_READ_LINES + 1} and " \
           f"line_count=300." in first.content
    assert first.structured["endLine"] == MAX_READ_LINES and not first.structured["fullRead"]
    rest = model.ok("read_file", path="scratch/long.txt", start_line=MAX_READ_LINES + 1, line_count=300)
    assert page_text(first) + page_text(rest) == [str(i) for i in range(1, n + 1)]


def test_char_cap_and_cut_line(model: Model) -> None:
    big_line = "x" * (MAX_READ_CHARS + 10)
    model.ok("write_file", path="scratch/wide.txt", content=f"{big_line}\nshort\n")
    r = model.ok("read_file", path="scratch/wide.txt")
    assert r.structured["lineTruncated"] and r.structured["endLine"] == 1
    shown = page_text(r)
    assert len(shown) == 1 and 40_000 < len(shown[0]) < 50_000 and set(shown[0]) == {"x"}
    assert f"Line 1 has {MAX_READ_CHARS + 10:,} characters" in r.content
    assert "workspace_search_files" in r.content and "start_line=2" in r.content
    assert len(r.content) <= model.inv.profile.result_inline_limit  # a page is never spilled


def test_pages_fit_the_profile_inline_limit(runtime) -> None:
    small = Model(runtime.invocation(profile={"result_inline_limit": 5_000}))
    text = "".join(f"{i:05d} " + "y" * 90 + "\n" for i in range(1, 301))
    small.ok("write_file", path="scratch/t.txt", content=text)
    shown: list[str] = []
    start = 1
    while True:
        r = small.ok("read_file", path="scratch/t.txt", start_line=start)
        assert len(r.content) <= 5_000 and not (r.structured or {}).get("externalized")
        shown += page_text(r)
        if r.structured["endLine"] == 300:
            break
        start = r.structured["endLine"] + 1
    assert "\n".join(shown) + "\n" == text


def test_invalid_line_ranges(model: Model) -> None:
    model.ok("write_file", path="scratch/a.txt", content="one\ntwo\n")
    model.err("read_file", INVALID_LINE_RANGE, path="scratch/a.txt", start_line=0)
    model.err("read_file", INVALID_LINE_RANGE, path="scratch/a.txt", start_line=1, line_count=0)
    r = model.err("read_file", INVALID_LINE_RANGE, path="scratch/a.txt", start_line=3)
    assert "2 lines" in r.content


def test_read_errors(model: Model) -> None:
    model.err("read_file", FILE_NOT_FOUND, path="output/missing.md")
    model.err("read_file", PATH_IS_DIRECTORY, path="output")
    (model.root / "scratch" / "bin").write_bytes(b"\xff\xfe\x00binary")
    model.err("read_file", FILE_NOT_TEXT, path="scratch/bin")


def test_empty_file(model: Model) -> None:
    model.ok("write_file", path="scratch/empty.txt", content="")
    r = model.ok("read_file", path="scratch/empty.txt")
    assert r.structured["fullRead"] and r.structured["totalLines"] == 0


def test_workspace_write_existing_file_requires_prior_read(model: Model) -> None:
    (model.root / "output" / "main.md").write_text("made by the host\n")
    r = model.err("write_file", WRITE_REQUIRES_READ, path="output/main.md", content="x")
    assert "workspace_read_file" in r.content
    assert (model.root / "output" / "main.md").read_text() == "made by the host\n"
    model.ok("read_file", path="output/main.md", start_line=1, line_count=1)  # a partial read is enough
    model.ok("write_file", path="output/main.md", content="x")
    assert (model.root / "output" / "main.md").read_text() == "x"


def test_read_state_is_per_run_in_a_shared_session_workspace(runtime) -> None:
    from tooldeck.runtime import RunState

    first = Model(runtime.invocation(run_id="run-a"))
    first.ok("write_file", path="output/main.md", content="by run a\n")
    runtime.runs["run-b"] = RunState("run-b", first.root)  # a session workspace reused by a second run
    second = Model(runtime.invocation(run_id="run-b"))
    second.err("write_file", WRITE_REQUIRES_READ, path="output/main.md", content="by run b\n")
    second.ok("read_file", path="output/main.md")
    second.ok("write_file", path="output/main.md", content="by run b\n")
    first.err("write_file", WRITE_STALE_FILE, path="output/main.md", content="by run a again\n")
    assert (first.root / "output" / "main.md").read_text() == "by run b\n"


def test_write_of_a_file_changed_since_the_read_is_stale(model: Model) -> None:
    model.ok("write_file", path="output/main.md", content="v1\n")
    model.ok("read_file", path="output/main.md")
    (model.root / "output" / "main.md").write_text("edited by the shell\n")
    r = model.err("write_file", WRITE_STALE_FILE, path="output/main.md", content="v2\n")
    assert "changed since you read it" in r.content
    assert (model.root / "output" / "main.md").read_text() == "edited by the shell\n"
    model.ok("read_file", path="output/main.md")
    model.ok("write_file", path="output/main.md", content="v2\n")


def test_write_modes_and_effect(model: Model) -> None:
    model.err("write_file", WRITE_MODE_INVALID, path="scratch/a.txt", content="x", mode="overwrite")
    r = model.ok("write_file", path="scratch/deep/new/a.txt", content="hello world")
    assert r.content == "Wrote 11 chars / 2 words to scratch/deep/new/a.txt."
    assert r.structured == {"path": "scratch/deep/new/a.txt", "mode": "replace", "chars": 11, "words": 2,
                            "sha256": r.structured["sha256"]}
    a = model.ok("write_file", path="scratch/deep/new/a.txt", content="!\n", mode="append")
    assert a.content == "Appended 2 chars / 1 words to scratch/deep/new/a.txt."
    assert (model.root / "scratch/deep/new/a.txt").read_text() == "hello world!\n"
    model.ok("write_file", path="scratch/log.txt", content="first\n", mode="append")  # creates it
    kinds = [(e.kind, e.data["path"], e.data["mode"]) for _, e in model.inv.effects]
    assert kinds == [("workspace_file_written", "scratch/deep/new/a.txt", "replace"),
                     ("workspace_file_written", "scratch/deep/new/a.txt", "append"),
                     ("workspace_file_written", "scratch/log.txt", "append")]
    # after replace + append of a fully known file, it is still fully known: replace works without a read
    model.ok("write_file", path="scratch/deep/new/a.txt", content="replaced\n")


def test_append_to_an_unread_file_does_not_make_it_known(model: Model) -> None:
    (model.root / "scratch" / "host.log").write_text("host line\n")
    model.ok("write_file", path="scratch/host.log", content="model line\n", mode="append")
    assert (model.root / "scratch" / "host.log").read_text() == "host line\nmodel line\n"
    model.err("write_file", WRITE_REQUIRES_READ, path="scratch/host.log", content="all mine\n")
    model.ok("read_file", path="scratch/host.log", start_line=1, line_count=1)
    model.ok("write_file", path="scratch/host.log", content="more\n", mode="append")  # partial state follows
    model.ok("write_file", path="scratch/host.log", content="all mine\n")


def test_write_to_a_folder_is_refused(model: Model) -> None:
    (model.root / "scratch" / "sub").mkdir()
    model.err("write_file", PATH_IS_DIRECTORY, path="scratch/sub", content="x")
    model.ok("write_file", path="scratch/file.txt", content="x")
    r = model.err("write_file", FILE_NOT_FOUND, path="scratch/file.txt/inner.txt", content="x")
    assert "part of it is a file" in r.content


def test_special_and_oversized_files(model: Model) -> None:
    import os

    from tooldeck.workspace.errors import FILE_TOO_LARGE, NOT_REGULAR_FILE
    from tooldeck.workspace.store import MAX_FILE_BYTES

    os.mkfifo(model.root / "scratch" / "pipe")
    model.err("read_file", NOT_REGULAR_FILE, path="scratch/pipe")  # never blocks on the pipe
    with open(model.root / "scratch" / "huge.log", "wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: no real disk use
    r = model.err("read_file", FILE_TOO_LARGE, path="scratch/huge.log")
    assert "shell" in r.content
    model.err("write_file", FILE_TOO_LARGE, path="scratch/huge.log", content="x", mode="append")
    assert (model.root / "scratch" / "huge.log").stat().st_size == MAX_FILE_BYTES + 1
    search = model.ok("search_files", pattern="x", path="scratch")
    assert search.structured["skippedFiles"] == 1  # the big log; the pipe is not a file
