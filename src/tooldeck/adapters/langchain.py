"""An invocation's tools as LangChain `BaseTool`s, for LangChain and LangGraph (`pip install 'tooldeck[langchain]'`).

    inv = rt.invocation(provider="openai", run_id="run-1")
    graph.add_node("tools", ToolNode(tools(inv)))        # LangGraph
    model.bind_tools(tools(inv))                          # the same schemas the model is given

Each tool's `args_schema` is tooldeck's rendered JSON Schema as it is, so LangChain neither
validates nor rewrites the arguments: they go to tooldeck's gate as the model's parsed tool call
gave them. The model's tool call id is kept (it is tooldeck's call id, and the records key).

- Async (`ainvoke`, LangGraph's async `ToolNode`, which gathers the calls of one AI message): the
  calls of one model response arrive together and run as one tooldeck turn (`_turns.py`).
- Sync (`invoke`, LangGraph's sync `ToolNode`, which runs calls on worker threads): one call per
  turn, serialised per runtime (see `_turns.run_sync`); use the async path for batched turns.
- A result is `(content, artifact)` (`response_format="content_and_artifact"`): tooldeck's text
  for the model, and `AgentToolResult.to_dict()` as the `ToolMessage.artifact`.
- A tooldeck error is a `ToolException` handled by the tool (`handle_tool_error=True`): the model
  gets a `ToolMessage` with `status="error"` and tooldeck's message; nothing is raised.
- A model message whose tool-call arguments are not JSON never reaches a tool: LangChain moves it
  to `AIMessage.invalid_tool_calls` while parsing, before any tool runs.
"""

from __future__ import annotations

import uuid
from typing import Any

from tooldeck.adapters._extras import missing_extra

try:
    from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
    from langchain_core.tools import BaseTool, ToolException
    from pydantic import PrivateAttr
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise missing_extra("langchain-core", "langchain", exc) from exc

from tooldeck.adapters._specs import ToolSpec, tool_specs
from tooldeck.adapters._turns import TurnBatcher, run_sync
from tooldeck.core.results import AgentToolResult
from tooldeck.runtime import Invocation

__all__ = ["TooldeckTool", "tools"]


def tools(invocation: Invocation) -> list[BaseTool]:
    """One `TooldeckTool` per tool of `invocation`'s tools array, all sharing one turn batcher."""
    batcher = TurnBatcher(invocation)
    return [TooldeckTool.from_spec(spec, batcher) for spec in tool_specs(invocation.tools())]


class TooldeckTool(BaseTool):
    """One tooldeck tool of one invocation; its calls go through the invocation's gate and records."""

    _batcher: TurnBatcher = PrivateAttr()

    @classmethod
    def from_spec(cls, spec: ToolSpec, batcher: TurnBatcher) -> TooldeckTool:
        tool = cls(name=spec.name, description=spec.description, args_schema=spec.parameters,
                   handle_tool_error=True, response_format="content_and_artifact")
        tool._batcher = batcher
        return tool

    def _to_args_and_kwargs(self, tool_input: str | dict[str, Any], tool_call_id: str | None
                            ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        # The model's arguments stay one value (a kwarg named like `config` or `run_manager` cannot
        # collide with LangChain's own), and the tool call id, which BaseTool keeps to itself, comes along.
        return (tool_input, tool_call_id), {}

    def _run(self, tool_input: Any, tool_call_id: str | None,
             run_manager: CallbackManagerForToolRun | None = None) -> tuple[str, dict[str, Any]]:
        return _reply(run_sync(self._batcher.invocation, _call_id(tool_call_id), self.name, tool_input))

    async def _arun(self, tool_input: Any, tool_call_id: str | None,
                    run_manager: AsyncCallbackManagerForToolRun | None = None) -> tuple[str, dict[str, Any]]:
        return _reply(await self._batcher.call(_call_id(tool_call_id), self.name, tool_input))


def _call_id(tool_call_id: str | None) -> str:
    """A tool invoked with bare arguments (no model tool call) still needs a call id for the records."""
    return tool_call_id or f"lc_{uuid.uuid4().hex[:16]}"


def _reply(result: AgentToolResult) -> tuple[str, dict[str, Any]]:
    if result.is_error:
        raise ToolException(result.content)
    return result.content, result.to_dict()
