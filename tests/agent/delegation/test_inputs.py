"""Generated inputs for what the delegation tools decode: task and handoff packets, agent ids, the
Markdown of packets and results, and any arguments to the six tools (a result, never a fault)."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import MakeRuntime
from tooldeck.agent.delegation import render
from tooldeck.agent.delegation.profiles import check_id
from tooldeck.builtins.delegate_common import MAX_FIELD_CHARS, packet_problem

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)
packets = st.dictionaries(st.sampled_from(["objective", "title", "context", "expectedOutput", "reason", "x"]),
                          json_values | st.text(min_size=0, max_size=30), max_size=5) | json_values
FAST = settings(derandomize=True, max_examples=150, deadline=None)


@FAST
@given(packets)
def test_a_packet_is_refused_exactly_when_it_breaks_a_rule(packet: Any) -> None:
    problem = packet_problem(packet, "task", "objective", ("title",))
    if not isinstance(packet, dict):
        assert problem == "task must be an object"
        return
    objective, title = packet.get("objective"), packet.get("title")
    ok = isinstance(objective, str) and 0 < len(objective.strip()) <= MAX_FIELD_CHARS and (
        title is None or (isinstance(title, str) and len(title.strip()) <= MAX_FIELD_CHARS))
    assert (problem is None) == ok, (packet, problem)
    if problem is not None:
        assert problem.startswith(("task.objective ", "task.title "))


@FAST
@given(st.text(max_size=70) | json_values)
def test_agent_ids(raw: Any) -> None:
    ok = isinstance(raw, str) and re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", raw) is not None
    problem = check_id(raw)
    assert (problem is None) == ok
    if problem:
        assert problem.startswith("agentId ") and "is not an agent id" in problem


@FAST
@given(packets)
def test_the_prompts_and_results_render_any_packet(packet: Any) -> None:
    packet = packet if isinstance(packet, dict) else {"objective": "o", "extra": packet}
    text = render.child_prompt(packet)
    assert text.startswith("# Delegated Task\n") and text.endswith("Reference useful note or artifact paths in "
                                                                     "task_return.")
    assert render.handoff_prompt(packet).startswith("# Handoff Brief\n")
    summary = render.summary_file({"status": "completed", "summary": "s", "result": packet,
                                   "runtime": {"taskId": "t"}})
    assert summary.startswith("# Delegated Task Result\n\nTask: t\nStatus: completed\n\ns")
    view = {"taskId": "t", "agentId": "a", "status": "completed", **{k: v for k, v in packet.items()
                                                                      if k in ("findings", "warnings")}}
    assert "### a - completed" in render.await_content([view], False, None)


CODES = {"tool.invalid_arguments", "agent.delegation_policy_denied", "agent.no_child_tasks",
         "agent.handoff_policy_denied", "agent.task_return_denied", "subagent.unavailable",
         "subagent.unknown_mode", "subagent.field_required"}


@settings(derandomize=True, max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["agent_delegate", "agent_await", "agent_handoff", "task_return", "subagents",
                        "background_subagents"]),
       st.dictionaries(st.sampled_from(["agentId", "task", "handoff", "mode", "taskIds", "timeoutMs", "summary",
                                        "status", "model", "pendingTaskPolicy", "artifacts", "zz"]),
                       json_values, max_size=4))
def test_any_arguments_get_a_result(make_runtime: MakeRuntime, name: str, args: dict[str, Any]) -> None:
    rt = _runtime(make_runtime)
    inv = rt.invocation("openai")
    [result] = asyncio.run(inv.arun([{"id": "c", "name": name, "arguments": json.dumps(args)}]))
    assert result.is_error and result.error_code in CODES, (name, args, result.content)


_RUNTIMES: dict[int, Any] = {}


def _runtime(make_runtime: MakeRuntime) -> Any:
    key = id(make_runtime)
    if key not in _RUNTIMES:
        _RUNTIMES.clear()
        _RUNTIMES[key] = make_runtime(records=False, allow=[
            "builtin:agent.*", "builtin:task.return", "builtin:subagents", "builtin:background.subagents"])
    return _RUNTIMES[key]
