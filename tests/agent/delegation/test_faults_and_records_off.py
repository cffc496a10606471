"""Delegation with records off, and a fault of the host inside a child: raised in the caller, never
swallowed."""

from __future__ import annotations

import pytest

from tests.agent.delegation.support import DELEGATION, Router, answer, call, calls, model, requests_of, write_agent
from tests.agent.mock_provider import MockProvider
from tests.conftest import MakeRuntime
from tooldeck.agent.events import AgentEvent
from tooldeck.catalog.profile import DEFAULT_ALLOW
from tooldeck.core.errors import HostFault


async def test_records_off(make_runtime: MakeRuntime, mock_provider: MockProvider) -> None:
    rt = make_runtime(records=False, allow=[*DEFAULT_ALLOW, *DELEGATION])
    write_agent(rt.home, "worker", 'instructions = "WORKER"\n')
    router = Router(mock_provider)
    router.on("PARENT", calls(call("d1", "agent_delegate", {"agentId": "worker", "task": {"objective": "o"}}),
                              call("w1", "agent_await", {"mode": "allCompleted"})), answer("fine"))
    router.on("WORKER", calls(call("r1", "task_return", {"summary": "no records needed"})))
    events: list[AgentEvent] = []
    result = await rt.agent(model(mock_provider), instructions="PARENT", on_event=events.append).run("go")
    assert result.ok and result.text == "fine"
    assert "no records needed" in requests_of(mock_provider, router, "PARENT")[1].json["messages"][-1]["content"]
    kinds = [e.kind for e in events]
    assert "task_started" in kinds and "task_finished" in kinds
    child = [e.data for e in events if e.kind == "child_event"]
    assert child[0]["event"] == "run_started" and child[-1]["event"] == "run_finished"
    assert (rt.home / "workspaces" / result.run_id / "summaries" / "worker-result.md").is_file()


async def test_a_fault_in_a_child_is_raised_in_the_caller(make_runtime: MakeRuntime,
                                                          mock_provider: MockProvider) -> None:
    rt = make_runtime(allow=[*DEFAULT_ALLOW, *DELEGATION])

    @rt.tool(extension_id="host", name="explode")
    def explode() -> str:
        """Fails like a full disk."""
        raise HostFault("host.disk_full", "no space left on the records disk")

    write_agent(rt.home, "worker", 'instructions = "WORKER"\n')
    router = Router(mock_provider)
    router.on("PARENT", calls(call("d1", "agent_delegate", {"agentId": "worker", "task": {"objective": "o"}})),
              calls(call("w1", "agent_await", {"mode": "allCompleted"})))
    router.on("WORKER", calls(call("x1", "explode", {})))
    agent = rt.agent(model(mock_provider), instructions="PARENT")
    with pytest.raises(HostFault, match="no space left on the records disk"):
        await agent.run("go")
    assert agent.result is not None and agent.result.status == "failed"
    events = rt.recorder.run_events(agent.result.run_id, "agent")
    [finished] = [e for e in events if e["type"] == "task_finished"]
    assert finished["status"] == "failed" and "HostFault" in finished["error"]
    assert events[-1]["type"] == "run_finished" and events[-1]["status"] == "failed"
