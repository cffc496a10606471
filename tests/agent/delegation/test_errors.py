"""Every refusal of `agent_delegate` and `agent_await`, each with its code and its message, in the
turns of one run; and the tools outside a run of the agent loop."""

from __future__ import annotations

import pytest

from tests.agent.delegation.support import (
    DELEGATION,
    Router,
    answer,
    call,
    calls,
    model,
    write_agent,
)
from tests.agent.mock_provider import MockProvider
from tests.conftest import MakeRuntime
from tooldeck.catalog.profile import DEFAULT_ALLOW
from tooldeck.records.store import SqliteRecorder


def delegate(cid: str, agent: str, objective: object = "x", **task: object) -> tuple[str, str, str]:
    return call(cid, "agent_delegate", {"agentId": agent, "task": {"objective": objective, **task}})


async def test_every_refusal(make_runtime: MakeRuntime, mock_provider: MockProvider,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rt = make_runtime(allow=[*DEFAULT_ALLOW, *DELEGATION])
    write_agent(rt.home, "boss", 'instructions = "BOSS"\n[delegation]\nmax_invocations_per_run = 2\n'
                'max_concurrent_invocations = 1\n'
                'allowed_targets = ["worker", "private", "picky", "broken", "ghost", "modeled"]\n')
    write_agent(rt.home, "worker", 'instructions = "WORKER"\n')
    write_agent(rt.home, "other", 'instructions = "OTHER"\n')
    write_agent(rt.home, "private", 'instructions = "P"\n[delegation]\ncallable = false\n')
    write_agent(rt.home, "picky", 'instructions = "P"\n[delegation]\nallowed_callers = ["someone"]\n')
    write_agent(rt.home, "broken", 'instructions = "P"\nmodel = 3\n')
    write_agent(rt.home, "modeled", 'instructions = "P"\nmodel = "no-such-model"\n')
    router = Router(mock_provider)
    router.on("BOSS",
              calls(call("a1", "agent_await", {}), delegate("a2", "ghost"), delegate("a3", "other"),
                    delegate("a4", "private"), delegate("a5", "picky"), delegate("a6", "broken"),
                    delegate("a7", "worker", "   ", title="t"), delegate("a8", "Bad Id"),
                    call("a9", "agent_await", {"timeoutMs": 300001}), delegate("a10", "worker", "apple"),
                    delegate("a11", "worker", "banana"), call("a12", "agent_await", {"taskIds": ["task_nope"]}),
                    delegate("a13", "modeled"), delegate("a14", "worker", "x" * 8001),
                    call("a15", "agent_await", {"taskIds": ["", "b"]})),
              calls(call("b1", "agent_await", {"mode": "allCompleted"})),
              calls(delegate("c1", "worker", "cherry"), delegate("c2", "worker", "damson")),
              calls(call("e1", "agent_await", {"mode": "allCompleted", "taskIds": []})),
              calls(call("e2", "agent_await", {"mode": "allCompleted"})),
              answer("done"))
    router.on("WORKER", calls(call("r", "task_return", {"summary": "apple done"})), user="apple")
    router.on("WORKER", calls(call("r", "task_return", {"summary": "cherry done"})), user="cherry")

    result = await rt.agent(model(mock_provider), instructions="BOSS", agent_id="boss").run("go")
    assert result.ok, result.error

    store = rt.recorder
    assert isinstance(store, SqliteRecorder)
    got = {c.call_id: c.result for i in result.invocation_ids for c in store.history(i).calls if c.result}
    expected = {
        "a1": ("agent.no_child_tasks", "No delegated tasks are selected."),
        "a2": ("agent.target_profile_not_found", "Agent `ghost` not found (no agents/ghost.toml in the tooldeck "
                                                 "home). Agents you can delegate to: "),
        "a3": ("agent.permission_denied", "profile `boss` may not call Agent `other`"),
        "a4": ("agent.delegation_policy_denied", "agent.target_not_callable: profile `private` is not callable by "
                                                 "other Agents"),
        "a5": ("agent.delegation_policy_denied", "agent.target_caller_denied: profile `boss` is not allowed to call "
                                                 "`picky`"),
        "a6": ("agent.profile_invalid", "broken.toml: model: Input should be a valid string"),
        "a7": ("tool.invalid_arguments", "task.objective must be a non-empty string"),
        "a8": ("tool.invalid_arguments", "agentId 'Bad Id' is not an agent id"),
        "a9": ("tool.invalid_arguments", "timeoutMs must be <= 300000"),
        "a10": (None, "Started delegated task task_"),
        "a11": ("agent.delegation_budget_exhausted", "agent.max_concurrent_invocations_exhausted: profile `boss` may "
                                                     "run at most 1 concurrent subagent tasks"),
        "a12": ("agent.await_task_not_found", "agent.await_task_not_found: task `task_nope` does not belong to this "
                                              "Agent's delegated tasks."),
        "a13": ("agent.delegation_policy_denied", "agent.target_model_invalid: Agent `modeled`'s model cannot be "
                                                  "used: no API key for model 'no-such-model'"),
        "a14": ("tool.invalid_arguments", "task.objective must be <= 8000 chars"),
        "a15": ("tool.invalid_arguments", "taskIds cannot contain empty values"),
        "b1": (None, "### worker - completed"),
        "c1": (None, "Started delegated task"),
        "c2": ("agent.delegation_budget_exhausted", "agent.max_invocations_per_run_exhausted: profile `boss` may "
                                                    "create at most 2 subagent tasks per run"),
        "e1": ("agent.no_child_tasks", "No delegated tasks are selected."),
        "e2": (None, "cherry done"),
    }
    for cid, (code, text) in expected.items():
        assert got[cid].error_code == code, (cid, got[cid].content)
        assert text in got[cid].content, (cid, got[cid].content)
    assert "Agents you can delegate to: " in got["a2"].content and "worker" in got["a2"].content
    assert len(router.numbers("WORKER", "apple")) == 1 and len(router.numbers("WORKER", "cherry")) == 1
    assert not router.unmatched


async def test_outside_the_agent_loop(make_runtime: MakeRuntime) -> None:
    rt = make_runtime(allow=[*DEFAULT_ALLOW, *DELEGATION, "builtin:task.return"])
    inv = rt.invocation("openai")
    results = await inv.arun([
        {"id": "1", "name": "agent_delegate", "arguments": '{"agentId": "w", "task": {"objective": "x"}}'},
        {"id": "2", "name": "agent_await", "arguments": "{}"},
        {"id": "3", "name": "task_return", "arguments": '{"summary": "s"}'},
        {"id": "4", "name": "agent_handoff", "arguments": '{"agentId": "w", "handoff": {"objective": "x"}}'}])
    assert [r.error_code for r in results] == ["agent.delegation_policy_denied", "agent.no_child_tasks",
                                               "agent.task_return_denied", "agent.handoff_policy_denied"]
    assert "`agent_delegate` works only in a run of the agent loop" in results[0].content
    assert "`agent_handoff` works only in a run of the agent loop" in results[3].content
    session = rt.invocation("openai", "session")
    assert not {"agent_delegate", "agent_await", "agent_handoff", "task_return"} & set(session.call_names())
