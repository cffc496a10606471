"""write_todo: the whole list replaced each call, at most one in_progress, Agenvoy's exact messages, the
list in the records and a `todo` event the host watches (agent loop against the loopback mock provider)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.agent import chat_replies as chat
from tests.agent.mock_provider import MockProvider
from tests.agent.test_loop import model, tool_messages
from tests.builtins.fixed_set.support import call
from tests.conftest import MakeRuntime
from tooldeck.agent.events import AgentEvent
from tooldeck.builtins import todo
from tooldeck.core.errors import ToolCallError


def item(content: str, status: str, **kw: Any) -> dict[str, Any]:
    return {"content": content, "status": status, **kw}


def test_each_call_replaces_the_whole_list(make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    first = call(rt.invocation(run_id="r"), "write_todo", {"todos": [
        item("Read the brief", "in_progress", active_form="Reading the brief"), item("Draft", ""),
        item("Review", "pending")]})
    assert first.content == "checklist saved: 3 step(s) — 0 done, 1 in progress, 2 pending"
    assert first.structured["todos"][0] == {"content": "Read the brief", "status": "in_progress",
                                            "active_form": "Reading the brief"}
    assert first.structured["todos"][1] == {"content": "Draft", "status": "pending"}  # empty status → pending
    second = call(rt.invocation(run_id="r"), "write_todo", {"todos": [
        item("  Read the brief ", "completed"), item("Draft", "in_progress")]})
    assert second.content == "checklist saved: 2 step(s) — 1 done, 1 in progress, 0 pending"
    # replaced, not merged: "Review" is gone, the content was trimmed
    assert todo.current(rt.run_state("r")) == [{"content": "Read the brief", "status": "completed"},
                                               {"content": "Draft", "status": "in_progress"}]


@pytest.mark.parametrize(("todos", "code", "message"), [
    ([], todo.EMPTY_LIST, "todos must contain at least one item"),
    ([item("a", "pending"), item("  ", "pending")], todo.EMPTY_CONTENT, "todo #2 has empty content"),
    ([item("a", "done")], todo.INVALID_STATUS,
     'todo #1 has invalid status "done" (want pending / in_progress / completed)'),
    ([item("a", "in_progress"), item("b", "completed"), item("c", "in_progress"), item("d", "in_progress")],
     todo.TOO_MANY_IN_PROGRESS, "only one todo may be in_progress at a time, got 3"),
])
def test_the_exact_messages_and_nothing_changes(make_runtime: MakeRuntime, todos: list[dict[str, Any]], code: str,
                                                message: str) -> None:
    rt = make_runtime()
    call(rt.invocation(run_id="r"), "write_todo", {"todos": [item("keep me", "in_progress")]})
    result = call(rt.invocation(run_id="r"), "write_todo", {"todos": todos})
    assert result.is_error and result.error_code == code and result.content == message
    assert todo.current(rt.run_state("r")) == [{"content": "keep me", "status": "in_progress"}]


def test_the_records_keep_every_version(make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    inv = rt.invocation(run_id="r")
    call(inv, "write_todo", {"todos": [item("one", "in_progress")]})
    [record] = rt.recorder.history(inv.id).calls  # type: ignore[attr-defined]
    assert record.result.structured == {"todos": [{"content": "one", "status": "in_progress"}], "done": 0,
                                        "in_progress": 1, "pending": 0}
    assert record.result.effects == [{"kind": todo.TODO_UPDATED, **record.result.structured}]


async def test_the_host_watches_todo_events_and_the_run_records_them(make_runtime: MakeRuntime,
                                                                     mock_provider: MockProvider) -> None:
    rt = make_runtime()
    plan = '{"todos": [{"content": "Look", "status": "in_progress"}, {"content": "Answer", "status": "pending"}]}'
    done = '{"todos": [{"content": "Look", "status": "completed"}, {"content": "Answer", "status": "in_progress"}]}'
    mock_provider.script(chat.stream(calls=[("t1", "write_todo", plan)]),
                         chat.stream(calls=[("t2", "write_todo", done)]), chat.stream("Done."))
    events: list[AgentEvent] = []
    result = await rt.agent(model(mock_provider), on_event=events.append).run("Do two things.")
    assert result.ok
    watched = [e.data for e in events if e.kind == "todo"]
    assert [(d["turn"], d["call_id"], d["done"], d["in_progress"], d["pending"]) for d in watched] == [
        (1, "t1", 0, 1, 1), (2, "t2", 1, 1, 0)]
    assert watched[1]["todos"] == [{"content": "Look", "status": "completed"},
                                   {"content": "Answer", "status": "in_progress"}]
    recorded = [e for e in rt.recorder.run_events(result.run_id, "agent") if e["type"] == "todo"]
    assert [e["todos"] for e in recorded] == [d["todos"] for d in watched]
    assert tool_messages(mock_provider.requests[1])[0]["content"] == (
        "checklist saved: 2 step(s) — 0 done, 1 in progress, 1 pending")


statuses = st.one_of(st.sampled_from(["pending", "in_progress", "completed", "", " pending "]), st.text(max_size=12))
items = st.fixed_dictionaries({"content": st.text(max_size=20), "status": statuses},
                              optional={"active_form": st.text(max_size=10)})


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.lists(items, max_size=8))
def test_decoding_any_list_either_saves_it_or_names_the_first_problem(todos: list[dict[str, Any]]) -> None:
    try:
        saved = todo.parse(todos)
    except ToolCallError as exc:
        assert exc.code in (todo.EMPTY_LIST, todo.EMPTY_CONTENT, todo.INVALID_STATUS, todo.TOO_MANY_IN_PROGRESS)
        if exc.code == todo.EMPTY_LIST:
            assert not todos
        elif exc.code == todo.TOO_MANY_IN_PROGRESS:
            assert sum(t["status"].strip() == "in_progress" for t in todos) > 1
        else:
            i = int(exc.message.split("#")[1].split()[0])
            bad = todos[i - 1]
            assert not bad["content"].strip() or bad["status"].strip() not in ("", *todo.STATUSES)
        return
    assert len(saved) == len(todos) and all(t["status"] in todo.STATUSES for t in saved)
    assert sum(t["status"] == "in_progress" for t in saved) <= 1
    assert all(t["content"] == src["content"].strip() for t, src in zip(saved, todos, strict=True))
    n = todo.counts(saved)
    assert n["done"] + n["in_progress"] + n["pending"] == len(saved)
