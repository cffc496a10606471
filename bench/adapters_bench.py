"""Each framework's own function tool against the same tool through tooldeck's adapter, in the same
run, measured round-robin (`bench.timing.ainterleaved_us`) and printed as ratios to the framework's
own tool. The tool is `async def add(a: int, b: int) -> int` everywhere.

- OpenAI Agents SDK: `FunctionTool.on_invoke_tool` of `@function_tool` vs the adapter's FunctionTool;
- LangChain: `.ainvoke(tool_call)` of `@tool` (a StructuredTool) vs the adapter's BaseTool;
- pydantic-ai: what its ToolManager does per call (`args_validator` then `toolset.call_tool`) on a
  `FunctionToolset` vs `TooldeckToolset`; and, for scale, a whole `Agent.run` with `FunctionModel`
  (one step calling the tool once, then the answer) with `agent.tool_plain` vs the toolset.

tooldeck rows with records off and on (SQLite in a temp dir); "1 call" is one call per model
response, "10 calls" ten calls of one response started together (one tooldeck turn), per call.

    python -m bench.adapters_bench
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import tooldeck
from bench.timing import REPEATS_ALLOWED, ainterleaved_us, report

ARGS = '{"a": 1, "b": 2}'
UNLIMITED = {"allow": ["extension/*"], "max_calls_per_invocation": 10**9,
    "max_identical_calls": REPEATS_ALLOWED}
Variants = dict[str, Callable[[], Awaitable[object]]]


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def runtime(home: Path, records: bool) -> tooldeck.Runtime:
    rt = tooldeck.Runtime(home, builtins=[], records=records, profile=UNLIMITED)
    rt.tool(extension_id="bench")(add)
    return rt


def three(out: Any) -> None:
    """The check of a timed batch's last value: each call answered 3 (a refused or failed call through an
    adapter comes back as its error text, not as an exception)."""
    for value in out if isinstance(out, list) else [out]:
        # pydantic-ai's ToolReturn holds it in return_value, LangChain's ToolMessage in content
        value = value.return_value if hasattr(value, "return_value") else getattr(value, "content", value)
        if str(value) != "3":
            raise AssertionError(f"a timed call returned {str(value)[:300]!r}, not 3")


def tool_returned_three(run: Any) -> None:
    """The check of a whole pydantic-ai run: its one tool call returned 3 (the scripted model answers anyway)."""
    returns = [part.content for message in run.all_messages() for part in message.parts
               if part.part_kind == "tool-return"]
    if [str(r) for r in returns] != ["3"]:
        raise AssertionError(f"the run's tool returned {returns!r}")


def ten(fn: Callable[[int], Awaitable[object]]) -> Callable[[], Awaitable[object]]:
    async def gathered() -> object:
        return await asyncio.gather(*(fn(i) for i in range(10)))
    return gathered


def print_ratios(title: str, rows: list[tuple[str, float]], pairs: list[tuple[str, str]]) -> None:
    print(title)
    report(rows, pairs[0][1])
    times = dict(rows)
    for mine, theirs in pairs:
        print(f"  {mine:<44} {times[mine] / times[theirs]:5.2f}× {theirs}")


async def openai_agents(homes: dict[bool, Path]) -> None:
    from agents import function_tool
    from agents.tool_context import ToolContext

    from tooldeck.adapters.openai_agents import function_tools

    own = function_tool(add)
    mine = {rec: next(t for t in function_tools(runtime(homes[rec], rec).invocation()) if t.name == "add")
            for rec in (False, True)}

    def ctx(i: int) -> ToolContext[Any]:
        return ToolContext(context=None, tool_name="add", tool_call_id=f"c{i}", tool_arguments=ARGS)

    def one(tool: Any) -> Callable[[int], Awaitable[object]]:
        async def call(i: int = 0) -> object:
            return await tool.on_invoke_tool(ctx(i), ARGS)
        return call

    assert str(await one(own)()) == "3" and await one(mine[True])() == "3"
    variants: Variants = {
        "openai-agents own, 1 call": one(own),
        "adapter records off, 1 call": one(mine[False]),
        "adapter records on, 1 call": one(mine[True]),
        "openai-agents own, 10 calls": ten(one(own)),
        "adapter records off, 10 calls": ten(one(mine[False])),
        "adapter records on, 10 calls": ten(one(mine[True])),
    }
    rows = await ainterleaved_us(variants, 100, per_call_divisor={k: 10 for k in variants if "10 calls" in k},
                                 warmup=20, check=three)
    print_ratios("OpenAI Agents SDK 0.24.0, FunctionTool.on_invoke_tool (median µs per call):", rows, [
        ("adapter records off, 1 call", "openai-agents own, 1 call"),
        ("adapter records on, 1 call", "openai-agents own, 1 call"),
        ("adapter records off, 10 calls", "openai-agents own, 10 calls"),
        ("adapter records on, 10 calls", "openai-agents own, 10 calls")])


async def langchain(homes: dict[bool, Path]) -> None:
    from langchain_core.tools import tool

    from tooldeck.adapters.langchain import tools

    own = tool(add)
    mine = {rec: next(t for t in tools(runtime(homes[rec], rec).invocation()) if t.name == "add")
            for rec in (False, True)}

    def one(t: Any) -> Callable[[int], Awaitable[object]]:
        async def call(i: int = 0) -> object:
            return await t.ainvoke({"type": "tool_call", "id": f"c{i}", "name": "add", "args": {"a": 1, "b": 2}})
        return call

    assert (await one(own)()).content == "3" and (await one(mine[True])()).content == "3"
    variants: Variants = {
        "langchain own @tool, 1 call": one(own),
        "adapter records off, 1 call": one(mine[False]),
        "adapter records on, 1 call": one(mine[True]),
        "langchain own @tool, 10 calls": ten(one(own)),
        "adapter records off, 10 calls": ten(one(mine[False])),
        "adapter records on, 10 calls": ten(one(mine[True])),
    }
    rows = await ainterleaved_us(variants, 20, per_call_divisor={k: 10 for k in variants if "10 calls" in k},
                                 warmup=10, check=three)
    print_ratios("LangChain core 1.8.3, BaseTool.ainvoke(tool_call) (median µs per call):", rows, [
        ("adapter records off, 1 call", "langchain own @tool, 1 call"),
        ("adapter records on, 1 call", "langchain own @tool, 1 call"),
        ("adapter records off, 10 calls", "langchain own @tool, 10 calls"),
        ("adapter records on, 10 calls", "langchain own @tool, 10 calls")])


async def pydantic_ai(homes: dict[bool, Path]) -> None:
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.toolsets import FunctionToolset
    from pydantic_ai.usage import RunUsage

    from tooldeck.adapters.pydantic_ai import TooldeckToolset

    # The toolset layer: what pydantic-ai's ToolManager does per call (validate, then call_tool).
    ctx = RunContext(deps=None, model=FunctionModel(lambda m, i: ModelResponse(parts=[])), usage=RunUsage())
    own_set: Any = FunctionToolset([add])
    sets: dict[str, Any] = {"own": own_set, **{f"records {'on' if rec else 'off'}": TooldeckToolset(
        runtime(homes[rec], rec).invocation()) for rec in (False, True)}}
    tools = {name: (await ts.get_tools(ctx))["add"] for name, ts in sets.items()}
    contexts = [replace(ctx, tool_call_id=f"c{i}") for i in range(10)]

    def one(name: str) -> Callable[[int], Awaitable[object]]:
        toolset, tool = sets[name], tools[name]

        async def call(i: int = 0) -> object:
            return await toolset.call_tool("add", tool.args_validator.validate_json(ARGS), contexts[i], tool)
        return call

    variants: Variants = {
        "pydantic-ai FunctionToolset, 1 call": one("own"),
        "toolset records off, 1 call": one("records off"),
        "toolset records on, 1 call": one("records on"),
        "pydantic-ai FunctionToolset, 10 calls": ten(one("own")),
        "toolset records off, 10 calls": ten(one("records off")),
        "toolset records on, 10 calls": ten(one("records on")),
    }
    rows = await ainterleaved_us(variants, 100, per_call_divisor={k: 10 for k in variants if "10 calls" in k},
                                 warmup=20, check=three)
    print_ratios("pydantic-ai-slim 2.68.0, args_validator + toolset.call_tool (median µs per call):", rows, [
        ("toolset records off, 1 call", "pydantic-ai FunctionToolset, 1 call"),
        ("toolset records on, 1 call", "pydantic-ai FunctionToolset, 1 call"),
        ("toolset records off, 10 calls", "pydantic-ai FunctionToolset, 10 calls"),
        ("toolset records on, 10 calls", "pydantic-ai FunctionToolset, 10 calls")])

    # A whole run, for scale: one step calling the tool once, then the answer.
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("add", ARGS, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("done")])

    own_agent = Agent(FunctionModel(respond))
    own_agent.tool_plain(add)
    agents = {"pydantic-ai own tool_plain, Agent.run": own_agent,
              "toolset records off, Agent.run": Agent(FunctionModel(respond), toolsets=[
                  TooldeckToolset(runtime(homes[False] / "runs", False))]),
              "toolset on one invocation, Agent.run": Agent(FunctionModel(respond), toolsets=[
                  TooldeckToolset(runtime(homes[False] / "shared", False).invocation())])}

    def run(agent: Any) -> Callable[[], Awaitable[object]]:
        async def go() -> object:
            return await agent.run("go")
        return go

    rows = await ainterleaved_us({name: run(agent) for name, agent in agents.items()}, 3, repeats=25, warmup=3,
                                 check=tool_returned_three)
    print_ratios("pydantic-ai-slim 2.68.0, a whole Agent.run with FunctionModel, one call, records off (median µs "
                 "per run; given a Runtime the toolset opens an invocation per run, given an Invocation it shares it):",
                 rows, [("toolset records off, Agent.run", "pydantic-ai own tool_plain, Agent.run"),
                        ("toolset on one invocation, Agent.run", "pydantic-ai own tool_plain, Agent.run")])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, bench in (("openai_agents", openai_agents), ("langchain", langchain), ("pydantic_ai", pydantic_ai)):
            homes = {rec: Path(tmp) / name / ("on" if rec else "off") for rec in (False, True)}
            try:
                asyncio.run(bench(homes))
            except ImportError as exc:
                print(f"  ({name}: {exc})")
            print()


if __name__ == "__main__":
    main()
