"""The pydantic-ai toolset beyond the shared scenarios: an invocation per agent run, tooldeck errors
as ToolFailed (never a crash, however many), the result dict as metadata, deferred-mode
instructions, and the clear errors of a misused toolset."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent, RunContext
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RunUsage

import tooldeck
from tooldeck.adapters.pydantic_ai import TooldeckToolset
from tooldeck.core.errors import TooldeckError
from tooldeck.records.store import SqliteRecorder

from .conftest import MakeRuntime, add_extension_tools, history, workspace


def scripted(steps: list[list[tuple[str, str, str | dict]]], seen_instructions: list[str] | None = None
             ) -> FunctionModel:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if seen_instructions is not None:
            seen_instructions.append(info.instructions or "")
        step = sum(1 for m in messages if isinstance(m, ModelResponse))
        if step < len(steps):
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=cid) for cid, name, args in steps[step]])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(model)


def returns(messages: list[ModelMessage]) -> dict[str, ToolReturnPart]:
    return {p.tool_call_id: p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)}


async def test_errors_are_tool_failures_and_never_end_the_run(make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    raw = '{"path": "output/x.md", "content": "hi"'
    steps = [[(f"c{i}", "workspace_write_file", raw)] for i in range(4)]  # more failures than max_retries
    agent = Agent(scripted(steps), toolsets=[TooldeckToolset(rt, run_id="r")])
    result = await agent.run("go")

    assert result.output == "done"
    parts = returns(result.all_messages())
    assert [parts[f"c{i}"].outcome for i in range(4)] == ["failed"] * 4
    reader = SqliteRecorder(rt.home / "records.sqlite")
    [summary] = reader.list_invocations(run_id="r")
    reader.close()
    calls = history(rt, summary.invocation_id).calls
    assert [c.raw_arguments for c in calls] == [raw] * 4  # verbatim, though not JSON
    assert parts["c0"].content == calls[0].result.content


async def test_a_result_carries_tooldecks_result_as_metadata(make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    steps = [[("c1", "workspace_write_file", {"path": "output/m.md", "content": "meta"})]]
    result = await Agent(scripted(steps), toolsets=[TooldeckToolset(rt, run_id="r")]).run("go")
    part = returns(result.all_messages())["c1"]
    assert part.metadata["tool_id"] == "builtin:workspace.write_file"
    assert part.metadata["resource_refs"] == ["output/m.md"]
    assert part.metadata["structured"]["chars"] == 4
    assert (workspace(rt, "r") / "output" / "m.md").read_text() == "meta"


async def test_a_runtime_given_toolset_opens_one_invocation_per_agent_run(make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"max_calls_per_invocation": 1})
    agent = Agent(scripted([[("c1", "forecast", '{"city": "Oslo"}')]]), toolsets=[TooldeckToolset(rt, run_id="r")])
    first, second = await agent.run("go"), await agent.run("again")
    for result in (first, second):  # each run has its own budget of one call
        assert returns(result.all_messages())["c1"].outcome != "failed"
    reader = SqliteRecorder(rt.home / "records.sqlite")
    summaries = reader.list_invocations(run_id="r")
    reader.close()
    assert len(summaries) == 2 and all(s.calls == 1 for s in summaries)


async def test_an_invocation_given_toolset_shares_it_across_runs(make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    inv = rt.invocation(run_id="r")
    agent = Agent(scripted([[("c1", "forecast", '{"city": "Oslo"}')]]), toolsets=[TooldeckToolset(inv)])
    await agent.run("go")
    await agent.run("again")
    assert [c.round for c in history(rt, inv.id).calls] == [1, 2]


async def test_deferred_mode_lists_the_tools_in_the_instructions(make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"loading": "deferred"})
    seen: list[str] = []
    await Agent(scripted([], seen), toolsets=[TooldeckToolset(rt, run_id="r")]).run("go")
    expected = rt.invocation().turn_context()
    assert expected and "forecast" in expected
    assert expected in seen[0]


def test_a_misused_toolset_says_what_to_do(make_runtime: MakeRuntime) -> None:
    rt = make_runtime(records=False)
    with pytest.raises(TooldeckError) as caught:
        TooldeckToolset(rt.invocation(), provider="anthropic")
    assert caught.value.code == "adapters.options_with_invocation"
    with pytest.raises(TooldeckError) as caught:
        TooldeckToolset(rt).invocation  # noqa: B018
    assert caught.value.code == "adapters.toolset_unbound"


RAW_ARGUMENTS = st.one_of(
    st.text(max_size=30),
    st.binary(max_size=20),
    st.sampled_from(['{"city": "Oslo"}', '{"city": "Oslo", "days": "2"}', '{"city"', "[]", "", "null"]),
    st.dictionaries(st.sampled_from(["city", "days", "x"]), st.one_of(st.integers(-3, 3), st.text(max_size=4)),
                    max_size=3),
)


@settings(derandomize=True, max_examples=60, deadline=None)
@given(raw=RAW_ARGUMENTS)
def test_any_raw_arguments_reach_the_gate_as_a_direct_call_would(tmp_path_factory: pytest.TempPathFactory,
                                                                 raw: Any) -> None:
    """pydantic-ai's validation step keeps whatever came; the toolset's result is the direct arun's."""
    home = tmp_path_factory.mktemp("raw")
    rt = tooldeck.open(home, records=False)
    add_extension_tools(rt)
    try:
        async def both() -> tuple[Any, Any]:
            toolset = TooldeckToolset(rt.invocation())
            ctx = RunContext(deps=None, model=FunctionModel(lambda m, i: ModelResponse(parts=[])), usage=RunUsage(),
                             tool_call_id="c1")
            tool = (await toolset.get_tools(ctx))["forecast"]
            args = (tool.args_validator.validate_python(raw) if isinstance(raw, dict)
                    else tool.args_validator.validate_json(raw))
            try:
                got = await toolset.call_tool("forecast", args, ctx, tool)
            except ToolFailed as failed:
                got = failed
            wire = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
            [direct] = await rt.invocation().arun([{"id": "c1", "name": "forecast", "arguments": wire}])
            return got, direct

        got, direct = asyncio.run(both())
        if direct.is_error:
            assert isinstance(got, ToolFailed) and got.message == direct.content
        else:
            assert got.return_value == direct.content and got.metadata == direct.to_dict()
    finally:
        rt.close()
