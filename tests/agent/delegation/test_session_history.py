"""A named subagent session's conversation file (`<home>/subagents/history/<id>.jsonl`): what a leg is
given back (from the last `new` leg on, at most HISTORY_LEGS exchanges), a torn last line of a crash
skipped and cut off by the next append, and — for any exchanges and any crash point — the lines before
the cut read back exactly."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.agent.delegation.sessions import HISTORY_LEGS, Sessions

SESSION = "ses_0123abcd"


def remember(store: Sessions, task: str, answer: str, new: bool = False) -> None:
    store.remember(SESSION, task, answer, new=new, run_id="leg_1", model="m")


def test_the_latest_exchanges_from_the_last_new_leg_on(tmp_path: Path) -> None:
    store = Sessions(tmp_path)
    assert store.history(SESSION) == []
    for i in range(HISTORY_LEGS + 5):
        remember(store, f"task {i}", f"answer {i}")
    assert store.history(SESSION) == [(f"task {i}", f"answer {i}") for i in range(5, HISTORY_LEGS + 5)]
    assert store.history(SESSION, limit=2) == [(f"task {i}", f"answer {i}") for i in (23, 24)]
    remember(store, "again", "fresh", new=True)
    remember(store, "next", "more")
    assert store.history(SESSION) == [("again", "fresh"), ("next", "more")]
    line = json.loads(store.history_path(SESSION).read_text().splitlines()[-1])
    assert line["task"] == "next" and line["run_id"] == "leg_1" and line["model"] == "m" and line["new"] is False


def test_a_torn_last_line_is_skipped_and_cut_off_by_the_next_append(tmp_path: Path) -> None:
    store = Sessions(tmp_path)
    remember(store, "one", "1")
    path = store.history_path(SESSION)
    with open(path, "ab") as f:
        f.write(b'{"task": "two", "answer": "half of it')  # the process died here
    assert store.history(SESSION) == [("one", "1")]
    remember(store, "three", "3")
    assert store.history(SESSION) == [("one", "1"), ("three", "3")]
    assert path.read_bytes().count(b"\n") == 2 and b"half of it" not in path.read_bytes()


def test_a_session_id_cannot_leave_the_folder(tmp_path: Path) -> None:
    for bad in ("../x", "a/b", "", "x" * 65):
        with pytest.raises(ValueError, match="must be 1-64 letters"):
            Sessions(tmp_path).history_path(bad)


TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=30)


@settings(derandomize=True, max_examples=60, deadline=None)
@given(exchanges=st.lists(st.tuples(TEXT, TEXT, st.booleans()), min_size=1, max_size=6), cut=st.floats(0, 1))
def test_any_crash_point_reads_back_the_whole_lines(exchanges: list[tuple[str, str, bool]], cut: float) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = Sessions(Path(folder))
        for task, answer, new in exchanges:
            remember(store, task, answer, new)
        path = store.history_path(SESSION)
        data = path.read_bytes()
        kept = data[:int(len(data) * cut)]
        path.write_bytes(kept)
        whole = kept.count(b"\n")  # the lines that survived the cut

        def expected(items: list[tuple[str, str, bool]]) -> list[tuple[str, str]]:
            out: list[tuple[str, str]] = []
            for task, answer, new in items:
                if new:
                    out.clear()
                out.append((task, answer))
            return out[-HISTORY_LEGS:]

        assert store.history(SESSION) == expected(exchanges[:whole])
        remember(store, "after", "the crash")
        assert store.history(SESSION) == expected([*exchanges[:whole], ("after", "the crash", False)])


@pytest.mark.parametrize("content", ["{not json", "[]", '{"sessions": [1]}', '{"other": []}',
                                     '{"sessions": [{"id": "ses_1"}]}'])
def test_a_hand_edited_sessions_file_is_a_clear_error_and_is_left_as_it_is(tmp_path: Path, content: str) -> None:
    from tooldeck.agent.delegation.sessions import SESSIONS_UNREADABLE
    from tooldeck.core.errors import ToolCallError

    store = Sessions(tmp_path)
    store.choose("writer", None, "You write.", "m")
    store.path.write_text(content, encoding="utf-8")
    for attempt in (store.list, lambda: store.choose("writer", None, "You write.", "m")):
        with pytest.raises(ToolCallError) as caught:
            attempt()
        assert caught.value.code == SESSIONS_UNREADABLE
        assert str(store.path) in str(caught.value) and "Move it aside" in str(caught.value)
    assert store.path.read_text(encoding="utf-8") == content
