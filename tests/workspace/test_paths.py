"""Path parsing, the visibility/writability policy and OS-error classification (TT workspace/tests.rs)."""

from __future__ import annotations

import errno

import pytest

from tooldeck.catalog.profile import WorkspaceRoots
from tooldeck.core.errors import ToolCallError
from tooldeck.workspace.errors import (
    FILE_NOT_FOUND,
    INVALID_PATH,
    PATH_IS_DIRECTORY,
    PATH_NOT_VISIBLE,
    PATH_NOT_WRITABLE,
    SYMLINK_REFUSED,
    classify_os_error,
)
from tooldeck.workspace.paths import PathPolicy, parse_dir, parse_path

POLICY = PathPolicy.from_roots(WorkspaceRoots())


def code_of(fn, *args) -> str:
    with pytest.raises(ToolCallError) as info:
        fn(*args)
    return info.value.code


@pytest.mark.parametrize("raw, expected", [
    ("output/main.md", "output/main.md"),
    ("output\\notes\\a.md", "output/notes/a.md"),
    ("./output//./a.md", "output/a.md"),
    ("scratch/x/", "scratch/x"),
    ("output/ spaced name.md", "output/ spaced name.md"),
])
def test_parse_normalises(raw: str, expected: str) -> None:
    assert parse_path(raw) == expected


@pytest.mark.parametrize("raw", ["", "   ", ".", "./", "/etc/passwd", "\\x", "C:\\x", "c:x", "../x", "output/../../x",
                                 "output/..", "a\0b", "scratch\\..\\..\\x"])
def test_parse_rejects(raw: str) -> None:
    assert code_of(parse_path, raw) == INVALID_PATH


def test_invalid_path_message_says_how_to_fix() -> None:
    with pytest.raises(ToolCallError) as info:
        parse_path("../x")
    assert "`..` is not allowed" in info.value.message and "output/main.md" in info.value.message


def test_writable_policy_rejects_input_paths() -> None:
    assert not POLICY.is_writable("input/request.md")
    assert code_of(POLICY.check_writable, "input/request.md") == PATH_NOT_WRITABLE
    assert code_of(POLICY.check_writable, "tool-results/inv/x.txt") == PATH_NOT_WRITABLE
    assert code_of(POLICY.check_writable, "skills/a/SKILL.md") == PATH_NOT_WRITABLE
    assert code_of(POLICY.check_visible, "input/request.md") == PATH_NOT_VISIBLE
    assert code_of(POLICY.check_visible, ".tooldeck/trash") == PATH_NOT_VISIBLE


def test_visible_policy_allows_workspace_artifact_roots() -> None:
    for path in ("output/main.md", "scratch/a", "plan/p.md", "summaries/s.md", "persist/state.json",
                 "tool-results/inv_1/round-001-call_x.txt", "skills/writer/SKILL.md"):
        assert POLICY.check_visible(path) == path


def test_writable_policy_requires_child_path() -> None:
    assert not POLICY.is_writable("output")
    with pytest.raises(ToolCallError) as info:
        POLICY.check_writable("output")
    assert info.value.code == PATH_NOT_WRITABLE and "output/main.md" in info.value.message
    assert POLICY.check_writable("output/main.md") == "output/main.md"
    assert POLICY.check_writable("scratch/deep/er/x.txt") == "scratch/deep/er/x.txt"


@pytest.mark.parametrize("raw", [None, "", ".", "./", "  "])
def test_list_path_arg_treats_empty_and_dot_as_workspace_root(raw: str | None) -> None:
    assert parse_dir(raw) == ""


def test_list_path_arg_keeps_real_folders() -> None:
    assert parse_dir("output/") == "output"
    assert code_of(parse_dir, "../x") == INVALID_PATH


def test_policy_follows_the_profile_roots() -> None:
    policy = PathPolicy.from_roots(WorkspaceRoots(writable=["work", "tmp"], read_only=["tool-results"],
                                                  body_file="work/reply.md"))
    assert policy.is_writable("work/a") and not policy.is_visible("output/main.md")
    assert policy.default_search_roots == ("work", "tmp")


def test_classify_workspace_path_is_directory_error_maps_to_tool_error() -> None:
    err = classify_os_error(IsADirectoryError(errno.EISDIR, "Is a directory"), "output")
    assert err is not None and err.code == PATH_IS_DIRECTORY


def test_classify_not_found_error_maps_to_file_not_found() -> None:
    err = classify_os_error(FileNotFoundError(errno.ENOENT, "No such file"), "output/x.md")
    assert err is not None and err.code == FILE_NOT_FOUND and "output/x.md" in err.message
    assert classify_os_error(NotADirectoryError(errno.ENOTDIR, "Not a directory"), "a/b").code == FILE_NOT_FOUND
    assert classify_os_error(OSError(errno.ELOOP, "Too many levels"), "scratch/l").code == SYMLINK_REFUSED


@pytest.mark.parametrize("exc", [OSError(errno.EIO, "I/O error"), OSError(errno.ENOSPC, "No space left on device"),
                                 OSError(errno.EROFS, "Read-only file system"), OSError(errno.EDQUOT, "Quota")])
def test_classify_unknown_error_bubbles_up_for_host_failure(exc: OSError) -> None:
    assert classify_os_error(exc, "output/main.md") is None
