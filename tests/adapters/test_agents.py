"""A real agent of each framework calls tooldeck's tools through its adapter: the files are really in
the workspace, every call is in tooldeck's SQLite records, the model sees tooldeck's own messages
for refusals, and the calls of one model response are one tooldeck turn."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import MakeRuntime, history, workspace
from .drivers import BATCHED, DRIVERS, Outcome

pytestmark = pytest.mark.parametrize("framework", sorted(DRIVERS))


def write(call_id: str, path: str, content: str) -> tuple[str, str, str]:
    return call_id, "workspace_write_file", json.dumps({"path": path, "content": content})


def records_by_call(rt: Any, outcome: Outcome) -> dict[str, Any]:
    return {c.call_id: c for c in history(rt, outcome.invocation_id).calls}


def assert_model_saw_records(rt: Any, outcome: Outcome) -> None:
    """What the model saw for each call is exactly the result tooldeck recorded for it."""
    recorded = records_by_call(rt, outcome)
    assert set(outcome.seen) == set(recorded)
    for call_id, seen in outcome.seen.items():
        result = recorded[call_id].result
        assert seen.text == result.content.strip(), call_id
        assert seen.is_error == result.is_error, call_id


async def test_workspace_and_extension_tools_through_the_gate_into_the_records(
        framework: str, make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    script = [
        [write("c1", "output/notes.md", "tooldeck was here"), ("c2", "forecast", '{"city": "Oslo", "days": 2}')],
        [("c3", "workspace_read_file", '{"path": "output/notes.md"}')],
    ]
    outcome = await DRIVERS[framework](rt, {}, script, "run-1")

    assert (workspace(rt, "run-1") / "output" / "notes.md").read_text() == "tooldeck was here"
    assert outcome.seen["c1"] == outcome.seen["c1"].__class__("Wrote 17 chars / 3 words to output/notes.md.", False)
    assert json.loads(outcome.seen["c2"].text) == {"city": "Oslo", "days": 2, "sky": "clear"}
    assert outcome.seen["c3"].text.endswith("1\ttooldeck was here") and not outcome.seen["c3"].is_error

    calls = records_by_call(rt, outcome)
    assert {cid: (c.tool_id, c.status) for cid, c in calls.items()} == {
        "c1": ("builtin:workspace.write_file", "completed"),
        "c2": ("extension/weather:forecast", "completed"),
        "c3": ("builtin:workspace.read_file", "completed"),
    }
    assert calls["c2"].arguments == {"city": "Oslo", "days": 2}
    if framework in BATCHED:  # the two calls of the first response are one turn, the next response the next
        assert [(c.round, c.index) for c in (calls["c1"], calls["c2"], calls["c3"])] == [(1, 0), (1, 1), (2, 0)]
    else:  # the sync path: one call per turn, in order
        assert sorted(c.round for c in calls.values()) == [1, 2, 3]
    assert_model_saw_records(rt, outcome)


async def test_the_framework_is_given_the_snapshot_schemas(framework: str, make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    outcome = await DRIVERS[framework](rt, {}, [], "run-1")
    expected = {t["function"]["name"]: (t["function"]["description"], t["function"]["parameters"])
                for t in rt.invocation().tools()}
    assert outcome.tools == expected
    assert "forecast" in outcome.tools and "workspace_write_file" in outcome.tools


async def test_invalid_arguments_come_back_as_tooldecks_message(framework: str, make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    script = [[("c1", "workspace_write_file", '{"path": "output/x.md"}'),
               ("c2", "forecast", '{"city": 7}')]]
    outcome = await DRIVERS[framework](rt, {}, script, "run-1")

    assert not (workspace(rt, "run-1") / "output" / "x.md").exists()
    for call_id, field in (("c1", "content"), ("c2", "city")):
        seen = outcome.seen[call_id]
        assert seen.is_error and seen.text.startswith("Invalid arguments for"), seen
        assert f"`{field}`" in seen.text
    calls = records_by_call(rt, outcome)
    assert {c.result.error_code for c in calls.values()} == {"tool.invalid_arguments"}
    assert {c.status for c in calls.values()} == {"failed"}
    assert_model_saw_records(rt, outcome)


async def test_a_denied_tool_is_refused_and_nothing_is_written(framework: str, make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"permissions": {"builtin:workspace.write_file": "deny"}})
    outcome = await DRIVERS[framework](rt, {}, [[write("c1", "output/x.md", "no")]], "run-1")

    assert not (workspace(rt, "run-1") / "output" / "x.md").exists()
    assert outcome.seen["c1"].is_error
    calls = records_by_call(rt, outcome)
    assert calls["c1"].result.error_code == "tool.permission_denied"
    assert calls["c1"].tool_id == "builtin:workspace.write_file"
    assert_model_saw_records(rt, outcome)


async def test_the_invocation_budget_holds_across_the_calls_of_a_response(
        framework: str, make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"max_calls_per_invocation": 3})
    script = [[write("c1", "output/a.md", "a"), write("c2", "output/b.md", "b")],
              [write("c3", "output/c.md", "c"), write("c4", "output/d.md", "d")]]
    outcome = await DRIVERS[framework](rt, {}, script, "run-1")

    root = workspace(rt, "run-1") / "output"
    assert sorted(p.name for p in root.iterdir()) == ["a.md", "b.md", "c.md"]
    assert [outcome.seen[c].is_error for c in ("c1", "c2", "c3", "c4")] == [False, False, False, True]
    assert "3" in outcome.seen["c4"].text
    calls = records_by_call(rt, outcome)
    assert calls["c4"].result.error_code == "tool.budget_exhausted"
    assert_model_saw_records(rt, outcome)


async def test_deferred_mode_find_tools_then_run_tool(framework: str, make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"loading": "deferred"})
    script = [
        [("c1", "find_tools", '{"names": ["workspace_write_file"]}')],
        [("c2", "run_tool", json.dumps({"name": "workspace_write_file",
                                        "args": {"path": "output/d.md", "content": "deferred"}}))],
    ]
    outcome = await DRIVERS[framework](rt, {}, script, "run-1")

    assert sorted(outcome.tools) == ["chat_history", "find_tools", "reasoning_guide", "run_tool", "write_result",
                                     "write_todo"]
    assert (workspace(rt, "run-1") / "output" / "d.md").read_text() == "deferred"
    assert '"workspace_write_file"' in outcome.seen["c1"].text  # the schema came back from find_tools
    calls = records_by_call(rt, outcome)
    assert calls["c2"].call_name == "run_tool" and calls["c2"].tool_id == "builtin:workspace.write_file"
    assert calls["c2"].status == "completed"
    assert_model_saw_records(rt, outcome)


async def test_names_only_mode_returns_the_schema_first_then_runs(framework: str, make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"loading": "names_only"})
    script = [[write("c1", "output/n.md", "named")], [write("c2", "output/n.md", "named")]]
    outcome = await DRIVERS[framework](rt, {}, script, "run-1")

    assert "workspace_write_file" in outcome.tools and "find_tools" in outcome.tools
    assert outcome.seen["c1"].is_error and '"content"' in outcome.seen["c1"].text  # the schema, not a run
    assert not outcome.seen["c2"].is_error
    assert (workspace(rt, "run-1") / "output" / "n.md").read_text() == "named"
    calls = records_by_call(rt, outcome)
    assert calls["c1"].result.error_code == "tool.schema_required" and calls["c2"].status == "completed"
    assert_model_saw_records(rt, outcome)
