from collections.abc import Callable
from typing import Any

import pytest

import tooldeck
from tests.conftest import MakeRuntime
from tests.core.helpers import builtin, static_source
from tooldeck.core.results import ToolOutput

ECHO_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "description": "A count."},
                                                "mode": {"type": "string", "enum": ["a", "b"]}},
               "required": ["n"], "additionalProperties": False}


def ok(args, ctx):
    return ToolOutput(f"ran {ctx.call_name} {args}")


@pytest.fixture
def runtime(make_runtime: MakeRuntime) -> Callable[..., tooldeck.Runtime]:
    """`runtime(**profile_keys)`: three builtins and an MCP tool also named `search`."""
    def build(**profile: Any) -> tooldeck.Runtime:
        tools = [builtin("echo.it", ok, ECHO_SCHEMA), builtin("search", ok), builtin("other.tool", ok)]
        mcp = static_source("mcp", [("mcp/x:search", ok)])
        return make_runtime(builtins=tools, sources=[mcp], allow=["builtin:*", "mcp/*"], **profile)

    return build


def call(i, name, args=None):
    c = {"id": f"c{i}", "name": name}
    if args is not None:
        c["arguments"] = args
    return c


def test_unknown_invalid_and_valid_calls_each_charge_the_budget(runtime):
    inv = runtime(max_calls_per_invocation=3).invocation()
    results = inv.run([call(1, "nope"), call(2, "echo_it", "[1"), call(3, "echo_it", '{"n": 1}'),
                       call(4, "echo_it", '{"n": 2}')])
    assert [r.error_code for r in results] == [
        "tool.unknown_tool", "tool.invalid_arguments", None, "tool.budget_exhausted"]
    assert "(3 calls)" in results[3].content
    assert results[2].content == "ran echo_it {'n': 1}"
    assert inv.gate.budget.total == 3


def test_unknown_tool_lists_names_and_suggests_the_closest(runtime):
    inv = runtime().invocation()
    [r] = inv.run([call(1, "echo.it")])
    assert r.error_code == "tool.unknown_tool" and r.is_error and r.tool_id is None
    assert "Did you mean `echo_it`?" in r.content
    listed = r.content.split("Available tools: ", 1)[1]
    assert all(name in listed for name in inv.call_names())
    [r] = inv.run([call(2, "ech_it")])
    assert "Did you mean `echo_it`?" in r.content


def test_budget_is_keyed_by_tool_id_so_builtin_and_mcp_search_count_separately(runtime):
    inv = runtime(max_calls_per_tool={"builtin:search": 1, "mcp/x:search": 1}).invocation()
    names = inv.call_names()
    mcp_name = next(n for n, tid in names.items() if tid == "mcp/x:search")
    assert mcp_name != "search"
    results = inv.run([call(1, "search"), call(2, mcp_name), call(3, "search"), call(4, mcp_name)])
    assert [r.error_code for r in results] == [None, None, "tool.budget_exhausted", "tool.budget_exhausted"]
    assert "`search` has reached its call limit for this invocation (1 calls)" in results[2].content
    assert results[3].tool_id == "mcp/x:search"


def test_validation_names_each_missing_or_wrong_field(runtime):
    inv = runtime().invocation()
    [r] = inv.run([call(1, "echo_it", {"mode": "c", "zzz": 1})])
    assert r.error_code == "tool.invalid_arguments"
    assert "missing required field `n` (integer; A count.)" in r.content
    assert "`mode`" in r.content and "one of 'a', 'b'" in r.content
    assert "unexpected field `zzz`; accepted fields: `n`, `mode`" in r.content
    [r] = inv.run([call(2, "echo_it", {"n": "3"})])
    assert "`n`" in r.content and "integer" in r.content


def test_permissions_deny_and_ask(runtime):
    rt = runtime(permissions={"builtin:other.tool": "deny", "builtin:echo.*": "ask"})
    inv = rt.invocation()
    r1, r2 = inv.run([call(1, "other_tool"), call(2, "echo_it", {"n": 1})])
    assert r1.error_code == "tool.permission_denied" and "not permitted" in r1.content
    assert r2.error_code == "tool.permission_denied" and "needs confirmation" in r2.content

    asked = []

    def confirm(req):
        asked.append((req.tool_id, req.arguments))
        return req.arguments["n"] == 1

    inv = rt.invocation(confirm=confirm)
    r1, r2 = inv.run([call(1, "echo_it", {"n": 1}), call(2, "echo_it", {"n": 2})])
    assert r1.error_code is None and r2.error_code == "tool.permission_denied"
    assert asked == [("builtin:echo.it", {"n": 1}), ("builtin:echo.it", {"n": 2})]


async def test_async_confirmation_callback(runtime):
    async def confirm(req):
        return True

    inv = runtime(permissions={"*": "ask"}).invocation(confirm=confirm)
    [r] = await inv.arun([call(1, "search")])
    assert r.error_code is None


def test_tool_choice_rules(runtime):
    inv = runtime().invocation()
    [r] = inv.run([call(1, "search")], tool_choice="none")
    assert r.error_code == "tool.choice_violation"
    r1, r2 = inv.run([call(2, "search"), call(3, "other_tool")], tool_choice={"tool": "builtin:search"})
    assert r1.error_code is None
    assert r2.error_code == "tool.choice_violation" and "requires `search`" in r2.content
    [r] = inv.run([call(4, "search")], tool_choice="required")
    assert r.error_code is None


@pytest.mark.parametrize("choice", [{"tool": "builtin:search"}, {"name": "search"}, "none"])
def test_invalid_arguments_are_named_before_the_tool_choice_refuses_the_call(runtime, choice):
    """The gate's order: schema validation (step 4) before tool choice (step 5). A wrong-tool call with bad
    arguments is told about its arguments, whichever way the arguments arrive."""
    inv = runtime().invocation()
    results = inv.run([call(1, "echo_it", {"n": "three"}), call(2, "echo_it", '{"mode": "a"}'),
                       call(3, "echo_it", "[1"), call(4, "echo_it", {"n": 3})], tool_choice=choice)
    assert [r.error_code for r in results] == ["tool.invalid_arguments"] * 3 + ["tool.choice_violation"]
    assert results[0].content.startswith("Invalid arguments for `echo_it`: ") and "`n`" in results[0].content
    assert "missing required field `n`" in results[1].content
    assert all(r.tool_id == "builtin:echo.it" for r in results)


@pytest.mark.parametrize("choice", [{"tool": "builtin:search"}, "none"])
def test_an_ask_tool_that_breaks_the_tool_choice_is_refused_without_asking_anyone(runtime, choice):
    asked: list[str] = []

    def confirm(req):
        asked.append(req.tool_id)
        return True

    inv = runtime(permissions={"builtin:echo.*": "ask"}).invocation(confirm=confirm)
    [r] = inv.run([call(1, "echo_it", {"n": 1})], tool_choice=choice)
    assert r.error_code == "tool.choice_violation" and r.tool_id == "builtin:echo.it"
    assert asked == []
    # The same call under a choice that allows it is asked about (the callback is wired, and says yes).
    [r] = inv.run([call(2, "echo_it", {"n": 1})], tool_choice={"tool": "builtin:echo.it"})
    assert r.error_code is None and r.content == "ran echo_it {'n': 1}"
    assert asked == ["builtin:echo.it"]


def test_availability_condition_and_scene_hide_the_tool_and_calls_are_unknown(make_runtime):
    tools = [builtin("chat.only", ok, scenes=["chat"]),
             builtin("interactive", ok, available=lambda ctx: not ctx.headless)]
    rt = make_runtime(builtins=tools, allow=["builtin:*"])
    assert set(rt.invocation(scene="chat").call_names()) == {"chat_only", "interactive"}
    session = rt.invocation(scene="session", headless=True)
    assert session.call_names() == {}
    [r] = session.run([call(1, "interactive")])
    assert r.error_code == "tool.unknown_tool"


def test_a_call_without_an_id_refuses_its_turn_runs_nothing_and_is_recorded(runtime):
    rt = runtime()
    inv = rt.invocation()
    with pytest.raises(tooldeck.TooldeckError) as err:
        inv.run([call(1, "search"), {"name": "search"}])
    assert err.value.code == "model.invalid_tool_call"
    assert inv.gate.budget.total == 0  # nothing was checked or charged
    calls = rt.recorder.history(inv.id).calls
    assert [(c.call_id, c.call_name, c.status, c.result.error_code) for c in calls] == [
        ("c1", "search", "failed", "model.invalid_tool_call"), ("", "search", "failed", "model.invalid_tool_call")]
    assert "no id" in calls[1].result.content and "Not run" in calls[0].result.content
