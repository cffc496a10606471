"""A child stops when its caller finishes (no further request reaches the provider, its records say
cancelled), and when its own budgets, taken from the caller's, run out."""

from __future__ import annotations

import asyncio

from tests.agent import chat_replies as chat
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

DICE = call("x", "dice_roll", {"formula": "d6"})


async def test_finish_cancels_a_running_child(make_runtime: MakeRuntime, mock_provider: MockProvider) -> None:
    rt = make_runtime(allow=[*DEFAULT_ALLOW, *DELEGATION])
    write_agent(rt.home, "worker", 'instructions = "WORKER"\n')
    router = Router(mock_provider)
    router.on("PARENT",
              calls(call("d1", "agent_delegate", {"agentId": "worker", "task": {"objective": "slow job"}})),
              calls(call("w1", "agent_await", {"timeoutMs": 1500})),
              calls(call("f1", "workspace_finish", {"reason": "enough"})))
    # the child's answer starts streaming, then never ends
    router.on("WORKER", chat.stream("Thinking", hang=True))

    result = await rt.agent(model(mock_provider), instructions="PARENT").run("go")

    assert result.ok and result.completed_by == "workspace_finish"
    waited = tool_messages(requests_of(mock_provider, router, "PARENT")[2])["w1"]
    assert "Timed out before all selected tasks finished." in waited and "### worker - running" in waited
    [child_request] = router.numbers("WORKER")
    await mock_provider.await_for(lambda: child_request in mock_provider.disconnects)  # the stream was closed
    events = rt.recorder.run_events(result.run_id, "agent")
    [finished] = [e for e in events if e["type"] == "task_finished"]
    assert finished["status"] == "cancelled"
    assert finished["error"] == "cancelled: the calling run ended before the task returned"
    [started] = [e for e in events if e["type"] == "task_started"]
    child_events = rt.recorder.run_events(started["child_run_id"], "agent")
    assert child_events[-1]["type"] == "run_finished" and child_events[-1]["status"] == "cancelled"
    count = len(mock_provider.requests)
    await asyncio.sleep(0.5)
    assert len(mock_provider.requests) == count and router.numbers("WORKER") == [child_request]


async def test_a_child_runs_out_of_turns(make_runtime: MakeRuntime, mock_provider: MockProvider) -> None:
    rt = make_runtime(allow=[*DEFAULT_ALLOW, *DELEGATION])
    write_agent(rt.home, "worker", 'instructions = "WORKER"\n')
    router = Router(mock_provider)
    router.on("PARENT",
              calls(call("d1", "agent_delegate", {"agentId": "worker", "task": {"objective": "endless"}})),
              calls(call("w1", "agent_await", {"mode": "allCompleted"})),
              answer("It gave up."))
    router.on("WORKER", calls(DICE), calls(DICE), calls(DICE), calls(DICE))  # one more than its budget

    result = await rt.agent(model(mock_provider), instructions="PARENT", max_turns=3).run("go")

    assert result.ok and result.turns == 3
    waited = tool_messages(requests_of(mock_provider, router, "PARENT")[2])["w1"]
    assert "### worker - failed" in waited
    assert "Error: the delegated run ended with status max_turns after 3 turn(s) without task_return" in waited
    assert len(router.numbers("WORKER")) == 3  # the caller's max_turns: no fourth request


async def test_a_child_gets_the_tokens_its_caller_has_left(make_runtime: MakeRuntime,
                                                           mock_provider: MockProvider) -> None:
    rt = make_runtime(allow=[*DEFAULT_ALLOW, *DELEGATION])
    write_agent(rt.home, "worker", 'instructions = "WORKER"\n')
    router = Router(mock_provider)
    router.on("PARENT",
              calls(call("d1", "agent_delegate", {"agentId": "worker", "task": {"objective": "costly"}}),
                    use=chat.usage(60, 10)),
              calls(call("w1", "agent_await", {"mode": "allCompleted"}), use=chat.usage(10, 5)),
              calls(call("d2", "agent_delegate", {"agentId": "worker", "task": {"objective": "more"}}),
                    use=chat.usage(10, 5)))
    # 100 - 70 = 30 tokens left for the child: its first turn spends 35, so it gets no second turn
    router.on("WORKER", calls(DICE, use=chat.usage(20, 15)), calls(DICE))

    result = await rt.agent(model(mock_provider), instructions="PARENT", max_tokens=100).run("go")

    assert result.status == "max_tokens" and result.usage.total_tokens == 100
    assert len(router.numbers("WORKER")) == 1
    events = rt.recorder.run_events(result.run_id, "agent")
    [finished] = [e for e in events if e["type"] == "task_finished"]
    assert finished["error"].startswith("the delegated run ended with status max_tokens after 1 turn(s)")
    # the third turn's delegation came with no tokens left
    store = rt.recorder
    [d2] = [c for i in result.invocation_ids for c in store.history(i).calls if c.call_id == "d2"]
    assert d2.result is not None and d2.result.error_code == "agent.delegation_budget_exhausted"
    assert "agent.run_tokens_exhausted: this run has used its max_tokens (100)" in d2.result.content
