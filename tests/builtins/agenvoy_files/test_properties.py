"""Property tests (fixed seed, bounded) of the family's inputs: globs, patch targets, times, paths, and any
arguments the schemas admit reaching each tool: an answer or a recoverable `files.*` / `workspace.*` error,
never a fault."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builtins.agenvoy_files.support import Session, session
from tests.conftest import MakeRuntime
from tooldeck.builtins.agenvoy_files import patching, walk
from tooldeck.builtins.agenvoy_files.file_history import parse_time
from tooldeck.core.errors import ToolCallError

FAST = settings(derandomize=True, max_examples=200, deadline=None)
TOOLS = settings(derandomize=True, max_examples=40, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])

segment = st.text(st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)), min_size=1, max_size=8)
plain = st.text("abcxyz._-", min_size=1, max_size=6).filter(lambda t: t not in (".", ".."))


def _literal(name: str) -> str:
    return re.sub(r"([*?\[\]{},])", r"[\1]", name)


@FAST
@given(st.lists(plain, min_size=1, max_size=4))
def test_a_literal_glob_matches_its_path_and_star_stays_in_one_name(parts: list[str]) -> None:
    path = "/".join(parts)
    pattern = "/".join(_literal(p) for p in parts)
    if len(parts) > 1:
        assert walk.matches(pattern, path)
    assert walk.matches(_literal(parts[-1]), path)  # a name glob matches at any depth
    assert walk.matches("**/" + _literal(parts[-1]), path)
    assert walk.matches("*/" + _literal(parts[-1]), path) == (len(parts) == 2)  # `*` is one name, never a path


@FAST
@given(st.text(max_size=40))
def test_any_glob_text_compiles_or_is_refused_cleanly(text: str) -> None:
    catch_all = bool(text) and set(text) <= set("*/.?")
    try:
        walk.refuse_catch_all(text)
        rx = walk.glob_regex(text)
    except ToolCallError as exc:
        assert exc.code == ("files.glob_catch_all" if catch_all else "files.glob_invalid")
        return
    assert not catch_all
    rx.match("output/a.md")  # a compiled glob matches any path without raising


@st.composite
def texts_and_targets(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]]]:
    lines = draw(st.lists(st.text("ab \t", max_size=6), min_size=1, max_size=8))
    text = "\n".join(lines) + draw(st.sampled_from(["", "\n"]))
    targets: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            targets.append({"insert_string": draw(st.text("ab\n", max_size=4)), "row": draw(st.integers(1, 10))})
        else:
            t: dict[str, Any] = {"old_string": draw(st.text("ab \n", min_size=1, max_size=4)),
                                 "new_string": draw(st.text("ab\n", max_size=4))}
            choice = draw(st.sampled_from(["none", "all", "row"]))
            if choice == "all":
                t["replace_all"] = True
            elif choice == "row":
                t["row"] = draw(st.integers(1, 10))
            targets.append(t)
    return text, targets


@FAST
@given(texts_and_targets())
def test_patch_targets_apply_or_are_refused_with_a_files_code(case: tuple[str, list[dict[str, Any]]]) -> None:
    text, targets = case
    try:
        out = patching.apply("output/x.md", text, targets)
    except ToolCallError as exc:
        assert exc.code.startswith("files.")
        return
    assert out != text and (out or not text)


@FAST
@given(st.lists(st.text("abc", max_size=5), min_size=1, max_size=6), st.text("xyz", min_size=1, max_size=5),
       st.integers(1, 7))
def test_an_insertion_is_whole_rows_before_its_row(lines: list[str], insert: str, row: int) -> None:
    text = "".join(f"{line}\n" for line in lines)
    if row > len(lines) + 1:
        with pytest.raises(ToolCallError):
            patching.apply("x", text, [{"insert_string": insert, "row": row}])
        return
    out = patching.apply("x", text, [{"insert_string": insert, "row": row}])
    assert out.split("\n")[:-1] == [*lines[:row - 1], insert, *lines[row - 1:]]


@FAST
@given(st.lists(st.text("abc", min_size=1, max_size=5), min_size=1, max_size=6), st.data())
def test_a_unique_anchor_replaces_exactly_that_text(lines: list[str], data: st.DataObject) -> None:
    text = "\n".join(lines) + "\n"
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    old, new = text[start:end], data.draw(st.text("XY", min_size=1, max_size=3))
    if text.count(old) != 1:
        return
    assert patching.apply("x", text, [{"old_string": old, "new_string": new}]) == text.replace(old, new)


@FAST
@given(st.one_of(st.text(max_size=30), st.from_regex(r"\A\d{4}-\d{2}-\d{2}( \d{2}:\d{2}(:\d{2})?)?\Z")))
def test_times_parse_or_are_refused(raw: str) -> None:
    try:
        assert isinstance(parse_time(raw, "from"), float | type(None))
    except ToolCallError as exc:
        assert exc.code == "files.time_invalid"


@pytest.fixture
def s(make_runtime: MakeRuntime) -> Session:
    s = session(make_runtime)
    s.write("output/a.md", "alpha\nbeta\n")
    return s


@TOOLS
@given(name=segment, body=st.text(max_size=30).filter(lambda t: t.strip() != ""))
def test_any_file_name_round_trips_through_find_and_read(s: Session, name: str, body: str) -> None:
    """A file edit_file writes under any name is listed by find_files under its shown path, and that path
    reads it back (control and bidi characters are shown as `\\u{HEX}` and read back)."""
    if name in (".", "..") or body.strip() == "":
        return
    made = s.call("edit_file", {"path": f"scratch/p/{name}", "content": body})
    if made.is_error:
        assert made.error_code.startswith("workspace.")
        return
    path = made.structured["path"]
    listed = s.batch("find_files", {"queries": [{"dir": "scratch/p", "recursive": True}]})["scratch/p"]
    assert path in [f"scratch/p/{entry}" for entry in listed]
    got = s.batch("read_files", {"files": [{"path": path}]})
    assert not got[path].startswith("error:") or "binary" in got[path]
    s.ok("remove_file", {"path": path})


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5000), st.text(max_size=12))
anything = st.recursive(json_leaf, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
    st.sampled_from(["path", "dir", "pattern", "file_pattern", "offset", "limit", "row", "old_string",
                     "new_string", "insert_string", "replace_all", "recursive"]), kids, max_size=4), max_leaves=8)
ARGS = {
    "find_files": ["mode", "queries", "output", "context", "offset", "limit"],
    "read_files": ["files"],
    "edit_file": ["mode", "path", "content", "targets"],
    "file_history": ["mode", "path", "paths", "task_id", "from", "to", "limit"],
    "restore_file": ["path", "version", "task_id"],
    "remove_file": ["path"],
}


@TOOLS
@given(data=st.data())
def test_any_arguments_get_an_answer_or_a_recoverable_error(s: Session, data: st.DataObject) -> None:
    tool = data.draw(st.sampled_from(sorted(ARGS)))
    args = data.draw(st.dictionaries(st.sampled_from(ARGS[tool]), anything, max_size=4))
    result = s.call(tool, args)
    if result.is_error:
        assert result.error_code != "tool.execution_failed", result.content
        assert re.fullmatch(r"(files|workspace|tool)\.[a-z_]+", result.error_code or "")
        assert not re.search(r"`workspace_(list|search|read|write|apply|remove|restore)_?[a-z]*`", result.content)


@FAST
@given(st.lists(st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=12),
                min_size=1, max_size=6).filter(lambda a: a[0].strip() and a[0] not in ("sh", "bash")))
def test_run_command_quotes_every_word_so_the_shell_sees_the_same_argv(argv: list[str]) -> None:
    """Outside `sh -c`, no word is interpreted: the bash text splits back into exactly the argv."""
    import shlex

    from tooldeck.builtins.agenvoy_files.run_command import script_of

    assert shlex.split(script_of(argv)) == argv
