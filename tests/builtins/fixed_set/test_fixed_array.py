"""Deferred loading keeps the conversation's fixed tools in the tools array beside find_tools / run_tool, in
Agenvoy's order, called directly, and the array byte-identical on the wire turn after turn while other tools
come and go (agent loop against the loopback mock provider)."""

from __future__ import annotations

from tests.agent import chat_replies as chat
from tests.agent.mock_provider import MockProvider
from tests.agent.test_loop import model, tool_messages, tools_text
from tests.builtins.fixed_set.support import call, names
from tests.conftest import MakeRuntime
from tooldeck.builtins import reasoning_guide
from tooldeck.catalog.profile import DEFAULT_ALLOW
from tooldeck.snapshot.deferred import FIXED_IDS

ARRAY = ["find_tools", "run_tool", "reasoning_guide", "write_todo", "chat_history", "ask_user", "write_result"]


async def test_the_array_is_byte_stable_on_the_wire_and_the_fixed_tools_run_directly(
        make_runtime: MakeRuntime, mock_provider: MockProvider) -> None:
    rt = make_runtime(loading="deferred")
    rt.ask_user = lambda request: ["yes"]
    seen_turns: list[int] = []

    def churn(request: object) -> object:  # a catalog change between model turns
        seen_turns.append(len(seen_turns))
        rt.extensions.register(lambda: "x", "churn", f"tool_{len(seen_turns)}", description="Churn.")
        return None

    todo = '{"todos": [{"content": "Look it up", "status": "in_progress"}]}'
    mock_provider.script(
        lambda r: churn(r) or chat.stream(calls=[("t1", "write_todo", todo)]),
        lambda r: churn(r) or chat.stream(calls=[("g1", "reasoning_guide", '{"topic": "ask_user"}')]),
        lambda r: churn(r) or chat.stream(calls=[("f1", "find_tools", '{"names": ["tool_1"]}')]),
        chat.stream("Done."))
    result = await rt.agent(model(mock_provider)).run("Plan it.")
    assert result.ok and result.turns == 4
    requests = mock_provider.requests
    texts = {tools_text(r) for r in requests}
    assert len(texts) == 1  # byte-identical on every turn
    assert [t["function"]["name"] for t in requests[0].json["tools"]] == ARRAY
    # the turn context (instructions) lists the tools that came; the array does not change
    system = [r.json["messages"][0]["content"] for r in requests]
    assert "tool_1" not in system[0] and "tool_1" in system[1] and "tool_3" in system[3]
    first, guide, found = tool_messages(requests[3])
    assert first["content"] == "checklist saved: 1 step(s) — 0 done, 1 in progress, 0 pending"
    assert guide["content"] == reasoning_guide.guide("ask_user")
    assert '"name":"tool_1"' in found["content"].replace(" ", "")


def test_the_fixed_order_holds_whatever_the_allow_order_and_deny_removes_one(make_runtime: MakeRuntime) -> None:
    allow = ["builtin:write_result", "builtin:write_todo", "builtin:dice.roll", "builtin:reasoning_guide"]
    rt = make_runtime(loading="deferred", allow=allow, pinned=["builtin:dice.roll"])
    inv = rt.invocation()
    assert names(inv) == ["find_tools", "run_tool", "reasoning_guide", "write_todo", "write_result", "dice_roll"]
    assert inv.turn_context() == ""  # nothing is left to list
    denied = make_runtime(loading="deferred", deny=["builtin:write_todo"]).invocation()
    assert names(denied) == ["find_tools", "run_tool", "reasoning_guide", "chat_history", "write_result"]
    assert "write_todo" not in denied.turn_context()


def test_names_only_keeps_their_full_schemas_and_eager_treats_them_as_any_tool(make_runtime: MakeRuntime) -> None:
    inv = make_runtime(loading="names_only").invocation()
    by_name = {t["function"]["name"]: t["function"] for t in inv.tools()}
    assert by_name["write_todo"]["parameters"]["required"] == ["todos"]
    assert by_name["dice_roll"]["parameters"] == {"type": "object", "properties": {}}  # a listed stub
    assert not call(inv, "write_todo", {"todos": [{"content": "a", "status": "pending"}]}).is_error
    eager = make_runtime().invocation()
    assert {"reasoning_guide", "write_todo", "write_result"} <= set(names(eager))


def test_the_fixed_tools_are_on_by_default_and_listed_in_agenvoys_order() -> None:
    assert FIXED_IDS == ("builtin:reasoning_guide", "builtin:write_todo", "builtin:chat_history",
                         "builtin:ask_user", "builtin:write_result")
    assert {"builtin:reasoning_guide", "builtin:write_todo", "builtin:ask_user", "builtin:write_result"} <= set(
        DEFAULT_ALLOW)
