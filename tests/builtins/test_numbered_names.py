"""`workspace_common.numbered` and `create_first_free`: the `<stem>-N.<ext>` names that write_result and
the media tools share, on a real workspace store."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.builtins.workspace_common import DEFAULT_POLICY, create_first_free, numbered
from tooldeck.core.errors import ToolCallError
from tooldeck.workspace.store import WorkspaceStore

SEGMENT = st.text(st.characters(codec="utf-8", exclude_characters="/\x00"), min_size=1, max_size=12)


def test_the_number_goes_before_the_extension_of_the_name_only() -> None:
    assert [numbered("output/report.md", n) for n in (1, 2, 10)] == ["output/report.md", "output/report-2.md",
                                                                      "output/report-10.md"]
    assert numbered("out.v1/notes", 2) == "out.v1/notes-2"  # a dot in the folder is not an extension
    assert numbered("output/.env", 2) == "output/.env-2"  # nor is a leading dot
    assert numbered("output/a.tar.gz", 3) == "output/a.tar-3.gz"


@settings(derandomize=True, max_examples=300, deadline=None)
@given(folders=st.lists(SEGMENT, max_size=3), name=SEGMENT, n=st.integers(2, 5000))
def test_numbered_names_keep_the_folder_and_extension_and_never_collide(folders: list[str], name: str,
                                                                       n: int) -> None:
    path = "/".join([*folders, name])
    got = numbered(path, n)
    assert numbered(path, 1) == path and got != path
    assert got.rsplit("/", 1)[:-1] == path.rsplit("/", 1)[:-1]  # same folder
    if "." in name.lstrip("."):
        assert got.rsplit(".", 1)[1] == path.rsplit(".", 1)[1]  # same extension
    assert numbered(path, n + 1) != got


@pytest.fixture
def store(tmp_path: Path) -> WorkspaceStore:
    return WorkspaceStore(tmp_path / "ws")


def test_writers_racing_for_one_name_each_get_their_own_file(store: WorkspaceStore) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def write(i: int) -> str:
        loc, swap = create_first_free(store, DEFAULT_POLICY, "output/r.md", f"{i}".encode(), tries=50,
                                      no_free_name=ToolCallError("x.none", "none"))
        assert swap.old_data is None
        return loc.shown

    with ThreadPoolExecutor(8) as pool:
        shown = list(pool.map(write, range(16)))
    assert sorted(shown) == sorted(["output/r.md", *(f"output/r-{n}.md" for n in range(2, 17))])
    contents = {(Path(store.root) / p).read_text() for p in shown}
    assert contents == {str(i) for i in range(16)}  # nobody's file was overwritten


def test_a_name_made_between_the_look_and_the_write_is_passed_over(store: WorkspaceStore,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    target = Path(store.root) / "output" / "r.md"
    target.parent.mkdir(parents=True)
    target.write_text("theirs")
    monkeypatch.setattr(store, "kind", lambda _loc: None)  # the look sees nothing: only the swap can tell
    loc, _ = create_first_free(store, DEFAULT_POLICY, "output/r.md", b"ours", tries=3,
                               no_free_name=ToolCallError("x.none", "none"))
    assert loc.shown == "output/r-2.md" and target.read_text() == "theirs"


def test_all_names_taken_raises_the_given_error_and_writes_nothing(store: WorkspaceStore) -> None:
    out = Path(store.root) / "output"
    out.mkdir(parents=True)
    for name in ("r.md", "r-2.md"):
        (out / name).write_text("taken")
    with pytest.raises(ToolCallError) as info:
        create_first_free(store, DEFAULT_POLICY, "output/r.md", b"x", tries=2,
                          no_free_name=ToolCallError("x.none", "none free"))
    assert info.value.code == "x.none"
    assert sorted(p.name for p in out.iterdir()) == ["r-2.md", "r.md"]
