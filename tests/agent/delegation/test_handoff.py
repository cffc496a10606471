"""`agent_handoff`: the target agent continues the same run on a fresh conversation; refused while a
delegated task is unfinished, to an agent that is no handoff target, and past the depth limit."""

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
from tooldeck.catalog.profile import DEFAULT_ALLOW
from tooldeck.records.store import SqliteRecorder

HANDOFF = {"objective": "polish the draft", "contextSummary": "the draft is written",
           "workspaceRefs": ["output/main.md"], "mustPreserve": ["the ending"]}


async def test_handoff_continues_the_same_run(make_runtime: MakeRuntime, mock_provider: MockProvider) -> None:
    rt = make_runtime(allow=[*DEFAULT_ALLOW, *DELEGATION])
    write_agent(rt.home, "lead", 'instructions = "LEAD: write, then hand off."\n')
    write_agent(rt.home, "worker", 'instructions = "WORKER"\n')
    write_agent(rt.home, "shy", 'instructions = "SHY"\n[delegation]\nallow_as_handoff_target = false\n')
    write_agent(rt.home, "editor", 'description = "Polishes drafts."\ninstructions = "EDITOR: polish."\n'
                '[delegation]\nmax_handoff_depth = 1\n')
    router = Router(mock_provider)
    router.on("LEAD",
              calls(call("d1", "agent_delegate", {"agentId": "worker", "task": {"objective": "facts"}})),
              calls(call("h1", "agent_handoff", {"agentId": "editor", "handoff": HANDOFF})),
              calls(call("w1", "agent_await", {"mode": "allCompleted"})),
              calls(call("h2", "agent_handoff", {"agentId": "shy", "handoff": HANDOFF})),
              calls(call("h3", "agent_handoff", {"agentId": "editor", "handoff": HANDOFF,
                                                 "pendingTaskPolicy": "denyIfPending"})))
    router.on("WORKER", calls(call("r1", "task_return", {"summary": "facts found"}), delay=0.4))
    router.on("EDITOR",
              calls(call("h4", "agent_handoff", {"agentId": "lead", "handoff": {"objective": "again"}})),
              answer("Polished."))

    agent = rt.agent(model(mock_provider), instructions="LEAD: write, then hand off.", agent_id="lead")
    result = await agent.run("Write a story.")

    assert result.ok and result.text == "Polished." and result.completed_by == "answer" and result.turns == 7
    lead = requests_of(mock_provider, router, "LEAD")
    assert "You still have unfinished delegated tasks. Use agent_await before handing off." in \
        tool_messages(lead[2])["h1"]
    assert "agent.target_not_handoff: Agent `shy` is not available as a handoff target" in tool_messages(lead[4])["h2"]
    editor = requests_of(mock_provider, router, "EDITOR")
    first = editor[0].json["messages"]
    assert [m["role"] for m in first] == ["system", "user"]  # a fresh conversation: the run's task and the brief
    assert first[0]["content"].startswith("EDITOR: polish.")
    brief = first[1]["content"]
    assert brief.startswith("Write a story.\n\n# Handoff Brief\n\nYou are now responsible for the next stage")
    assert "## Objective\npolish the draft" in brief and "## Workspace References\n- output/main.md" in brief
    assert "## Must Preserve\n- the ending" in brief
    assert "agent.max_handoff_depth_exhausted: this run has reached the handoff limit for your current Agent " \
           "configuration (1)" in tool_messages(editor[1])["h4"]

    store = rt.recorder
    assert isinstance(store, SqliteRecorder)
    invocations = {s.invocation_id for s in store.list_invocations(20, result.run_id)}
    assert invocations == set(result.invocation_ids) and len(invocations) == 7  # one run, both stages
    codes = {c.call_id: c.result.error_code for i in result.invocation_ids for c in store.history(i).calls
             if c.result is not None}
    assert codes["h1"] == "agent.handoff_pending_tasks" and codes["h2"] == "agent.handoff_policy_denied"
    assert codes["h3"] is None and codes["h4"] == "agent.handoff_depth_exhausted"
    [h3] = [c for i in result.invocation_ids for c in store.history(i).calls if c.call_id == "h3"]
    assert h3.result is not None and h3.result.content == "Handoff accepted for Agent editor. Your part is complete."
    events = store.run_events(result.run_id, "agent")
    [handoff] = [e for e in events if e["type"] == "handoff"]
    assert handoff["from_agent"] == "lead" and handoff["to_agent"] == "editor" and handoff["stage"] == 2
    assert events[-1]["type"] == "run_finished" and events[-1]["status"] == "completed"
