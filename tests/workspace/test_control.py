"""commit (the reply body) and finish (the completion tool): effects and ordering rules."""

from __future__ import annotations

from tests.workspace.conftest import Model
from tooldeck.workspace import effects
from tooldeck.workspace import errors as E


def test_commit_publishes_the_body_file_by_default(model: Model) -> None:
    model.ok("write_file", path="output/main.md", content="The reply.\n")
    r = model.ok("commit", reason="first draft")
    assert r.content.startswith("Requested chat commit of output/main.md with mode Replace.")
    assert "call `workspace_finish`" in r.content
    [commit] = effects.commits(model.inv)
    assert (commit.path, commit.mode, commit.reason, commit.text) == ("output/main.md", "replace", "first draft",
                                                                     "The reply.\n")
    assert commit.sha256 == r.structured["sha256"]
    # the effect holds the text at commit time, whatever happens to the file later
    model.ok("write_file", path="output/main.md", content="changed\n")
    assert effects.commits(model.inv)[0].text == "The reply.\n"
    assert [c.kind for c in effects.changed_files(model.inv)] == ["workspace_file_written"] * 2


def test_commit_of_other_visible_files_and_errors(model: Model) -> None:
    (model.root / "tool-results").mkdir()
    (model.root / "tool-results" / "r.txt").write_text("a result\n")
    r = model.ok("commit", path="tool-results/r.txt", mode="append")
    assert "with mode Append" in r.content
    model.err("commit", E.COMMIT_MODE_INVALID, mode="merge")
    model.err("commit", E.FILE_NOT_FOUND)  # output/main.md does not exist yet
    (model.root / "input").mkdir()
    (model.root / "input" / "x.md").write_text("x")
    model.err("commit", E.PATH_NOT_VISIBLE, path="input/x.md")
    assert [c.mode for c in effects.commits(model.inv)] == ["append"]


def test_finish_must_be_the_last_call(model: Model) -> None:
    results = model.turn(("finish", {}), ("list_files", {}))
    assert results[0].error_code == E.TOOL_AFTER_FINISH and not results[1].is_error
    assert "must be the last call" in results[0].content
    assert effects.finish(model.inv) is None


def test_finish_after_a_failed_call_is_refused(model: Model) -> None:
    results = model.turn(("read_file", {"path": "output/missing.md"}), ("finish", {"reason": "done"}))
    assert results[0].error_code == E.FILE_NOT_FOUND
    assert results[1].error_code == E.FINISH_AFTER_FAILED_CALL
    assert results[1].content == "`workspace_read_file` failed earlier in this turn; fix it, then finish."
    # a refused unknown tool counts as a failure too
    results = model.inv.run([{"id": "x1", "name": "no_such_tool", "arguments": {}},
                             {"id": "x2", "name": "workspace_finish", "arguments": {}}])
    assert results[1].error_code == E.FINISH_AFTER_FAILED_CALL
    assert effects.finish(model.inv) is None


def test_finish_admitted(model: Model) -> None:
    model.ok("write_file", path="output/main.md", content="Done.\n")
    results = model.turn(("commit", {"reason": "final"}), ("finish", {"reason": "reply complete"}))
    assert [r.is_error for r in results] == [False, False]
    assert results[1].content == "Finished the Agent run."
    done = effects.finish(model.inv)
    assert done is not None and done.reason == "reply complete" and done.call_id == results[1].call_id
    assert [e.kind for _, e in model.inv.effects][-2:] == [effects.COMMIT_REQUESTED, effects.FINISH]
