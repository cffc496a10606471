import hashlib
import json

import pytest

from tests.deferred.catalog import runtime
from tooldeck.snapshot.deferred import group_names

FIXED = ["reasoning_guide", "write_todo", "chat_history", "write_result"]
"""The conversation's fixed tools a run without an ask_user answerer binds (docs/deferred.md)."""

QUERIES = {
    "roll dice": "dice_roll",
    "compress a file": "compress_file",
    "cryptocurrency price": "cryptocurrency_price",
    "shuffle a deck of cards": "mcp__bfcl__cards_shuffle_deck",
    "taxi fare": "mcp__bfcl__calculate_taxi_fare",
    "calories in a recipe": "mcp__bfcl__get_calories_in_recipe",
    "generate a password": "mcp__bfcl__generate_password",
    "find a lawyer": "mcp__bfcl__search_lawyer",
    "mortgage payment": "calculate_mortgage_payment",
    "draw a circle": "draw_circle",
    "replace a string in a file": "workspace_apply_patch",
    "delete a to-do item": "mcp__bfcl__todo_delete",
    "order an uber ride": "mcp__bfcl__uber_ride",
    "blues scale": "mcp__bfcl__music_theory_get_blues_scale",
    "sunrise and sunset times": "mcp__bfcl__calculate_sunrise_and_sunset",
    "closest airport": "mcp__bfcl__get_closest_airport",
    "prime numbers in a range": "prime_numbers_in_range",
    "fibonacci sequence": "calculate_fibonacci_sequence",
    "standard deviation": "get_standard_deviation",
    "list files in the workspace": "workspace_list_files",
}


def digest(tools) -> str:
    return hashlib.sha256(json.dumps(tools, sort_keys=False).encode()).hexdigest()


@pytest.fixture
def rt(make_runtime):
    return runtime(make_runtime)


def test_the_tools_array_is_exactly_the_fixed_set_and_the_turn_context_lists_the_rest(rt):
    inv = rt.invocation()
    assert len(inv.snapshot.bindings) >= 297
    assert [t["function"]["name"] for t in inv.tools()] == ["find_tools", "run_tool", *FIXED]
    context = inv.turn_context()
    assert context.startswith("Tools (call through run_tool; fetch schemas with find_tools): ")
    assert "mcp__bfcl__{" in context and "dice_roll" in context
    listed = set(inv.snapshot.extra["listed"])
    assert len(listed) == len(inv.snapshot.bindings) - 2 - len(FIXED)
    for name in listed:
        assert name in context or name.startswith("mcp__bfcl__")
    assert context.count("mcp__bfcl__") == 1


def test_the_array_is_byte_identical_across_turns_while_tools_come_and_go(rt):
    hashes, contexts = set(), []
    for turn in range(10):
        if turn % 2:
            rt.extensions.register(lambda: "x", "churn", f"tool_{turn}", description=f"Churn {turn}.")
        elif turn:
            rt.extensions.unregister(f"extension/churn:tool_{turn - 1}")
        inv = rt.invocation(run_id="run-1")
        hashes.add(digest(inv.tools()))
        contexts.append(inv.turn_context())
    assert len(hashes) == 1
    assert len(set(contexts)) > 1
    for provider in ("anthropic", "gemini", "bedrock", "mistral"):
        assert len({digest(rt.invocation(provider=provider).tools()) for _ in range(3)}) == 1


def test_pinned_tools_stay_in_the_array_and_are_callable_directly(make_runtime):
    rt = runtime(make_runtime, pinned=["builtin:dice.roll"])
    inv = rt.invocation()
    assert [t["function"]["name"] for t in inv.tools()] == ["find_tools", "run_tool", *FIXED, "dice_roll"]
    assert "dice_roll" not in inv.turn_context()
    [r] = inv.run([{"id": "1", "name": "dice_roll", "arguments": {"formula": "d4"}}])
    assert not r.is_error and r.content.startswith("Rolled 1d4")


def test_unwrap_rules_and_their_messages(rt):
    inv = rt.invocation()
    results = inv.run([
        {"id": "1", "name": "dice_roll", "arguments": {"formula": "d6"}},
        {"id": "2", "name": "run_tool", "arguments": {"name": "run_tool", "args": {}}},
        {"id": "3", "name": "run_tool", "arguments": {"name": "dice_rol", "args": {}}},
        {"id": "4", "name": "run_tool", "arguments": {"name": "dice_roll", "args": {"formula": "d6"}}},
        {"id": "5", "name": "run_tool", "arguments": "[1]"},
        {"id": "6", "name": "run_tool", "arguments": {"args": {}}},
    ])
    direct, itself, unknown, schema_first, bad, nameless = results
    assert direct.error_code == "tool.use_run_tool" and direct.tool_id == "builtin:dice.roll"
    assert direct.content == ("`dice_roll` is not callable directly. Fetch its schema with find_tools, then call "
                              'run_tool(name="dice_roll", args={...}).')
    assert itself.error_code == "tool.invalid_arguments" and "cannot run itself" in itself.content
    assert unknown.error_code == "tool.unknown_tool" and unknown.tool_id is None
    assert "Did you mean `dice_roll`?" in unknown.content and "find_tools" in unknown.content
    assert schema_first.error_code == "tool.schema_required" and schema_first.tool_id == "builtin:dice.roll"
    assert '"name": "dice_roll"' in schema_first.content and "was not run" in schema_first.content
    assert 'run_tool(name="dice_roll", args={...}) again' in schema_first.content
    assert bad.error_code == "tool.invalid_arguments" and "JSON object" in bad.content
    assert nameless.error_code == "tool.invalid_arguments" and "needs `name`" in nameless.content
    # After the schema came back, the same call runs, with the real tool's id.
    r1, r2, r3 = inv.run([
        {"id": "7", "name": "run_tool", "arguments": {"name": "dice_roll", "args": {"formula": "d6"}}},
        {"id": "8", "name": "run_tool", "arguments": '{"name": "dice_roll", "args": "{\\"formula\\": \\"2d6\\"}"}'},
        {"id": "9", "name": "run_tool", "arguments": {"name": "dice_roll", "args": {"formula": 6}}},
    ])
    assert r1.tool_id == "builtin:dice.roll" and r1.content.startswith("Rolled 1d6")
    assert r2.content.startswith("Rolled 2d6")
    assert r3.error_code == "tool.invalid_arguments" and "dice_roll" in r3.content


def test_the_gate_sees_the_real_tool_for_budget_and_permission(make_runtime):
    rt = runtime(make_runtime, max_calls_per_tool={"builtin:dice.roll": 2}, permissions={"mcp/*": "deny"})
    inv = rt.invocation()
    inv.run([{"id": "0", "name": "find_tools", "arguments": {"names": ["DICE_ROLL", "mcp__bfcl__uber_ride"]}}])
    wrapped = {"name": "dice_roll", "args": {"formula": "d6"}}
    results = inv.run([{"id": str(i), "name": "run_tool", "arguments": wrapped} for i in range(3)]
                      + [{"id": "u", "name": "run_tool", "arguments": {"name": "mcp__bfcl__uber_ride", "args": {
                          "loc": "1 Main St, Springfield, IL, USA", "type": "plus", "time": 60}}}])
    assert [r.error_code for r in results[:3]] == [None, None, "tool.budget_exhausted"]
    assert "`dice_roll` has reached its call limit" in results[2].content
    assert results[3].error_code == "tool.permission_denied"
    assert results[3].tool_id == "mcp/reg-bfcl:uber.ride"


def test_find_tools_by_names_reports_unknown_and_marks_fetched(rt):
    inv = rt.invocation(run_id="shared")
    [r] = inv.run([{"id": "1", "name": "find_tools", "arguments": {"names": ["Dice_Roll", "nope"]}}])
    payload = json.loads(r.content.split("\n", 1)[1])
    assert [t["name"] for t in payload["tools"]] == ["dice_roll"]
    assert payload["tools"][0]["parameters"]["required"] == ["formula"]
    assert payload["unknown"] == ["nope"] and "Unknown names: nope" in r.content
    # Invocations of the same run share what was fetched.
    [r] = rt.invocation(run_id="shared").run(
        [{"id": "2", "name": "run_tool", "arguments": {"name": "dice_roll", "args": {"formula": "d8"}}}])
    assert r.content.startswith("Rolled 1d8")
    [r] = rt.invocation(run_id="other").run(
        [{"id": "3", "name": "run_tool", "arguments": {"name": "dice_roll", "args": {"formula": "d8"}}}])
    assert r.error_code == "tool.schema_required"


@pytest.mark.parametrize(("query", "expected"), sorted(QUERIES.items()))
def test_find_tools_query_ranks_the_right_tool_first(rt, query, expected):
    inv = rt.invocation()
    [r] = inv.run([{"id": "1", "name": "find_tools", "arguments": {"query": query}}])
    payload = json.loads(r.content.split("\n", 1)[1])
    assert payload["tools"][0]["name"] == expected
    assert len(payload["tools"]) <= 5


def test_find_tools_limits_and_errors(rt):
    inv = rt.invocation()
    r1, r2, r3 = inv.run([{"id": "1", "name": "find_tools", "arguments": {"query": "calculate", "limit": 20}},
                          {"id": "2", "name": "find_tools", "arguments": {"query": "calculate", "limit": 21}},
                          {"id": "3", "name": "find_tools", "arguments": {}}])
    assert len(json.loads(r1.content.split("\n", 1)[1])["tools"]) == 20
    assert r2.error_code == "tool.invalid_arguments"
    assert r3.error_code == "tool.invalid_arguments" and "`names`" in r3.content


def test_names_only_lists_every_tool_and_returns_the_schema_on_the_first_call(make_runtime):
    rt = runtime(make_runtime, loading="names_only")
    inv = rt.invocation()
    names = [t["function"]["name"] for t in inv.tools()]
    assert names[0] == "find_tools" and "run_tool" not in names and "dice_roll" in names
    dice = next(t for t in inv.tools() if t["function"]["name"] == "dice_roll")
    assert dice["function"]["parameters"] == {"type": "object", "properties": {}}
    first, second = inv.run([{"id": "1", "name": "dice_roll", "arguments": {"formula": "d6"}}]), inv.run(
        [{"id": "2", "name": "dice_roll", "arguments": {"formula": "d6"}}])
    assert first[0].error_code == "tool.schema_required" and '"formula"' in first[0].content
    assert second[0].content.startswith("Rolled 1d6")
    [r] = inv.run([{"id": "3", "name": "run_tool", "arguments": {"name": "dice_roll"}}])
    assert r.error_code == "tool.unknown_tool"


def test_native_search_renders_provider_tool_search(make_runtime):
    rt = runtime(make_runtime, native_search=True, pinned=["builtin:dice.roll"])
    tools = rt.invocation(provider="anthropic").tools()
    assert tools[0] == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    kept = 1 + len(FIXED)
    assert [t["name"] for t in tools[1:kept + 1]] == [*FIXED, "dice_roll"]
    assert not any("defer_loading" in t for t in tools[1:kept + 1])
    assert all(t.get("defer_loading") is True for t in tools[kept + 1:]) and len(tools) > 290
    inv = rt.invocation(provider="openai")
    tools = inv.tools()
    assert tools[0] == {"type": "tool_search"} and tools[kept + 1]["defer_loading"] is True
    assert "name" in tools[kept + 1]
    [r] = inv.run([{"id": "1", "name": "draw_circle", "arguments": {"radius": 1}}])
    assert r.error_code != "tool.use_run_tool"
    gemini = rt.invocation(provider="gemini")
    assert [d["name"] for d in gemini.tools()[0]["functionDeclarations"]] == ["find_tools", "run_tool", *FIXED,
                                                                              "dice_roll"]
    assert any(d.code == "tool.native_search_unsupported" for d in gemini.diagnostics)


def test_group_names_is_deterministic():
    names = ["b", "mcp__gh__list", "a", "mcp__gh__create", "mcp__fs__read", "mcp__x__y__2"]
    assert group_names(names) == ["a", "b", "mcp__fs__read", "mcp__gh__{create, list}", "mcp__x__y__2"]


@pytest.mark.parametrize("target", ["no_such_tool", "run_tools", "find_tool", "rn_tool"])
def test_a_run_tool_target_is_never_guessed_to_be_a_meta_tool(rt, target):
    [result] = rt.invocation().run([{"id": "1", "name": "run_tool", "arguments": {"name": target, "args": {}}}])
    assert result.error_code == "tool.unknown_tool" and result.content.startswith(f"`{target}` is not an available")
    assert "Did you mean `run_tool`" not in result.content and "Did you mean `find_tools`" not in result.content
