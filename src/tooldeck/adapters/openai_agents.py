"""An invocation's tools as OpenAI Agents SDK `FunctionTool`s (`pip install 'tooldeck[openai-agents]'`).

    inv = rt.invocation(provider="openai", run_id="run-1")
    agent = Agent(name="helper", instructions="...\\n" + inv.turn_context(), tools=function_tools(inv))
    await Runner.run(agent, "...")

Each tool keeps tooldeck's call name, description and rendered schema as they are
(`strict_json_schema=False`, so the SDK does not rewrite the schema into its strict form), and
its `on_invoke_tool` hands the raw argument string, verbatim, to the invocation. The SDK runs the
function calls of one model response as sibling tasks, so they arrive together and run as one
tooldeck turn (`_turns.py`). The SDK's wire formats (Chat Completions, Responses) carry no error
flag for a tool result, so a tooldeck error comes back as a string result marked `## Tool error`
with tooldeck's message, as tooldeck's own loop would send it; the run goes on.

Use one invocation per agent run (`Runner.run`): its budget, records and deferred-mode fetched
schemas belong to that run; build the tools again for the next run.
"""

from __future__ import annotations

from typing import Any

from tooldeck.adapters._extras import missing_extra

try:
    from agents import FunctionTool
    from agents.tool_context import ToolContext
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise missing_extra("openai-agents", "openai-agents", exc) from exc

from tooldeck.adapters._specs import ToolSpec, tool_specs
from tooldeck.adapters._turns import TurnBatcher
from tooldeck.runtime import Invocation

__all__ = ["function_tools"]


def function_tools(invocation: Invocation) -> list[FunctionTool]:
    """One `FunctionTool` per tool of `invocation`'s tools array, all sharing one turn batcher."""
    batcher = TurnBatcher(invocation)
    return [_function_tool(spec, batcher) for spec in tool_specs(invocation.tools())]


def _function_tool(spec: ToolSpec, batcher: TurnBatcher) -> FunctionTool:
    name = spec.name

    async def on_invoke_tool(ctx: ToolContext[Any], arguments: str) -> str:
        result = await batcher.call(ctx.tool_call_id, name, arguments)
        return result.model_text()

    return FunctionTool(name=name, description=spec.description, params_json_schema=spec.parameters,
                        on_invoke_tool=on_invoke_tool, strict_json_schema=False)
