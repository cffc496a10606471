"""`task_return`: a child that calls it twice in one turn, a task already finished, a run that is not
a delegated task; `workspace_finish` in a child."""

from __future__ import annotations

from tests.agent.delegation.support import (
    DELEGATION,
    Router,
    answer,
    call,
    calls,
    model,
    requests_of,
    tool_messages,
    write_agent,
)
from tests.agent.mock_provider import MockProvider
from tests.conftest import MakeRuntime
from tooldeck.agent.delegation.children import return_mode
from tooldeck.catalog.profile import DEFAULT_ALLOW
from tooldeck.records.store import SqliteRecorder

WORKER = 'instructions = "WORKER: do the job."\n'


async def test_a_child_calling_task_return_twice(make_runtime: MakeRuntime, mock_provider: MockProvider) -> None:
    rt = make_runtime(allow=[*DEFAULT_ALLOW, *DELEGATION, "builtin:task.return"])
    write_agent(rt.home, "worker", WORKER)
    router = Router(mock_provider)
    router.on("PARENT",
              calls(call("d1", "agent_delegate", {"agentId": "worker", "task": {"objective": "job"}})),
              calls(call("w1", "agent_await", {"mode": "allCompleted"}),
                    call("t1", "task_return", {"summary": "not mine to return"})),
              answer("ok"))
    # two task_return calls in one turn: the first is not last, the second comes after a failed call; both
    # are refused, the model sees why, and its next turn returns
    router.on("WORKER", calls(call("r1", "task_return", {"summary": "first"}),
                              call("r2", "task_return", {"summary": "second"})),
              calls(call("r3", "task_return", {"summary": "third", "status": "failed", "warnings": ["late"]})))
    result = await rt.agent(model(mock_provider), instructions="PARENT").run("go")
    assert result.ok
    parent = requests_of(mock_provider, router, "PARENT")
    waited = tool_messages(parent[2])
    assert "### worker - failed" in waited["w1"] and "third" in waited["w1"] and "Warnings:\n  - late" in waited["w1"]
    assert "task_return is available only while completing a delegated task." in waited["t1"]
    store = rt.recorder
    assert isinstance(store, SqliteRecorder)
    [t1] = [c for inv in result.invocation_ids for c in store.history(inv).calls if c.call_id == "t1"]
    assert t1.result is not None and t1.result.error_code == "agent.task_return_denied"

    [started] = [e for e in store.run_events(result.run_id, "agent") if e["type"] == "task_started"]
    child_run = started["child_run_id"]
    child_invs = [s.invocation_id for s in store.list_invocations(10, child_run)]
    assert len(child_invs) == 2
    refused = tool_messages(requests_of(mock_provider, router, "WORKER")[1])
    assert "task_return must be the final tool call in a model turn; complete the other work first, then call it " \
        "again." in refused["r1"]
    assert "`task_return` failed earlier in this turn; fix it, then call `task_return`." in refused["r2"]
    codes = {c.call_id: c.result.error_code for inv in child_invs for c in store.history(inv).calls if c.result}
    assert codes == {"r1": "agent.tool_after_finish", "r2": "agent.finish_after_failed_call", "r3": None}
    [r3] = [c for inv in child_invs for c in store.history(inv).calls if c.call_id == "r3"]
    assert r3.result is not None and r3.result.content == \
        f"Returned failed result for delegated task {started['task_id']}."
    summary = (rt.home / "workspaces" / result.run_id / "summaries" / "worker-result.md").read_text()
    assert "Status: failed\n\nthird" in summary and "first" not in summary and "second" not in summary

    # the task is finished: another task_return in the child's run is refused, and so is workspace_finish
    inv = rt.invocation("openai", profile=return_mode(rt.profile), run_id=child_run)
    [again] = await inv.arun([{"id": "x1", "name": "task_return", "arguments": '{"summary": "fourth"}'}])
    assert again.error_code == "agent.task_already_finished"
    assert "already finished and cannot accept another task_return" in again.content
    finisher = rt.invocation("openai", run_id=child_run)
    [fin] = await finisher.arun([{"id": "x2", "name": "workspace_finish", "arguments": "{}"}])
    assert fin.error_code == "agent.child_finish_denied" and "call `task_return`" in fin.content
    assert "fourth" not in (
        rt.home / "workspaces" / result.run_id / "summaries" / "worker-result.md").read_text()
