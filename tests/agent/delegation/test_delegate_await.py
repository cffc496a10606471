"""A parent delegates two tasks to the same agent profile and awaits them (nextCompleted, then
allCompleted), against the loopback mock provider: what each run sent and got, the summary files,
and the records that link the child runs to the parent."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

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
from tooldeck.catalog.profile import DEFAULT_ALLOW
from tooldeck.cli.app import app

WORKER = 'description = "Does one small job and reports back."\ninstructions = "WORKER: do the job."\n'


def tool_names(request: object) -> list[str]:
    return [t["function"]["name"] for t in request.json["tools"]]  # type: ignore[attr-defined]


async def test_two_children_awaited_next_then_all(make_runtime: MakeRuntime, mock_provider: MockProvider,
                                                  tmp_path: Path) -> None:
    rt = make_runtime(allow=[*DEFAULT_ALLOW, *DELEGATION])
    write_agent(rt.home, "worker", WORKER)
    router = Router(mock_provider)
    router.on("PARENT",
              calls(call("d1", "agent_delegate", {"agentId": "worker", "task": {"objective": "alpha job",
                                                                               "title": "Alpha"}}),
                    call("d2", "agent_delegate", {"agentId": "worker", "task": {
                        "objective": "beta job", "context": {"draft": "output/main.md"},
                        "expectedOutput": {"format": "one line"}, "deadline": "today"}})),
              calls(call("w1", "agent_await", {"mode": "nextCompleted"})),
              calls(call("w2", "agent_await", {"mode": "allCompleted"})),
              answer("Both done."))
    router.on("WORKER", calls(call("r1", "task_return", {"summary": "alpha ok", "findings": ["f1"],
                                                          "confidence": "high"})), user="alpha job")
    # beta answers slowly (0.6 s before each of its chunks), so the first await sees alpha only
    router.on("WORKER", calls(call("r2", "task_return", {"summary": "beta ok"}), delay=0.6), user="beta job")

    result = await rt.agent(model(mock_provider), instructions="PARENT: delegate.").run("Do two jobs.")

    assert result.ok and result.text == "Both done." and result.turns == 4
    parent = requests_of(mock_provider, router, "PARENT")
    started = tool_messages(parent[1])
    assert started["d1"].startswith("Started delegated task task_") and "with Agent worker" in started["d1"]
    assert "use agent_await only when" in started["d1"]
    first_wait = tool_messages(parent[2])["w1"]
    assert first_wait.startswith("## Delegated Task Results\n")
    assert "### worker - completed" in first_wait and "alpha ok" in first_wait and "Findings:\n  - f1" in first_wait
    assert "### worker - running" in first_wait and "beta ok" not in first_wait
    second_wait = tool_messages(parent[3])["w2"]
    assert second_wait.count("### worker - completed") == 2 and "beta ok" in second_wait
    assert "Timed out" not in second_wait and "## Continue Current Agent Flow" in second_wait

    # the children: their own instructions, the task prompt, the return-mode tools
    alpha = requests_of(mock_provider, router, "WORKER", "alpha job")
    beta = requests_of(mock_provider, router, "WORKER", "beta job")
    assert len(alpha) == 1 and len(beta) == 1
    prompt = beta[0].json["messages"][1]["content"]
    assert prompt.startswith("# Delegated Task\n") and "## Objective\nbeta job" in prompt
    assert "## Context\n- **draft**: output/main.md" in prompt and "- **deadline**:\n  today" in prompt
    names = tool_names(alpha[0])
    assert "task_return" in names
    descriptions = {t["function"]["name"]: t["function"]["description"] for t in alpha[0].json["tools"]}
    assert "You are working on a delegated task: write only what it asks for" in descriptions["workspace_write_file"]
    assert "The reply body is" not in descriptions["workspace_write_file"]
    parent_descriptions = {t["function"]["name"]: t["function"]["description"] for t in parent[0].json["tools"]}
    assert "The reply body is `output/main.md`." in parent_descriptions["workspace_write_file"]
    assert not {"workspace_commit", "workspace_finish", "agent_delegate", "agent_await", "agent_handoff"} & set(names)
    assert "## Agents you can call\n- `worker` (delegate, handoff): Does one small job" in parent[0].json[
        "messages"][0]["content"]

    # the summaries: the run's first task of `worker`, then `worker-002`
    workspace = rt.home / "workspaces" / result.run_id
    first = (workspace / "summaries" / "worker-result.md").read_text()
    assert first.startswith("# Delegated Task Result\n\nTask: task_") and "Status: completed\n\nalpha ok" in first
    assert "Confidence: high" in first
    assert "beta ok" in (workspace / "summaries" / "worker-002-result.md").read_text()

    # the records: each child run names its parent run, task and invocation; the parent lists its tasks
    events = rt.recorder.run_events(result.run_id, "agent")
    started_tasks = [e for e in events if e["type"] == "task_started"]
    finished_tasks = [e for e in events if e["type"] == "task_finished"]
    assert [e["workspace_key"] for e in started_tasks] == ["worker", "worker-002"]
    assert sorted(e["status"] for e in finished_tasks) == ["completed", "completed"]
    child_run = started_tasks[0]["child_run_id"]
    child_events = rt.recorder.run_events(child_run, "agent")
    assert child_events[0]["type"] == "run_started" and child_events[0]["parent_run_id"] == result.run_id
    assert child_events[0]["task_id"] == started_tasks[0]["task_id"] and child_events[0]["agent_id"] == "worker"
    assert child_events[0]["parent_invocation_id"] == result.invocation_ids[0]
    assert child_events[-1]["status"] == "completed" and child_events[-1]["completed_by"] == "task_return"
    [child_inv] = [s.invocation_id for s in rt.recorder.list_invocations(10, child_run)]
    rt.recorder.flush()
    shown = CliRunner().invoke(app, ["records", "show", child_inv, "--home", str(rt.home)], env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.output
    assert f"parent      run {result.run_id} (task {started_tasks[0]['task_id']}, agent worker" in shown.output
    assert "task_return" in shown.output
