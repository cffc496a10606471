"""tooldeck as a pydantic-ai toolset (`pip install 'tooldeck[pydantic-ai]'`).

    agent = Agent(model, toolsets=[TooldeckToolset(rt, provider="openai", run_id="run-1")])

Given a `Runtime`, the toolset opens a fresh tooldeck invocation for every agent run (in
`for_run`, with the keyword arguments given for `Runtime.invocation`): the run's budget, records
and deferred-mode fetched schemas are its own, and every run step (one model response) is one turn
of that invocation. Given an `Invocation`, every run through the toolset shares it.

- The tool definitions are tooldeck's call names, descriptions and rendered schemas as they are.
- pydantic-ai validates a call's arguments before it calls the toolset; here that validation
  accepts anything and keeps the raw value, so the raw arguments (even invalid JSON) reach
  tooldeck's gate verbatim, and tooldeck decodes, validates and records them.
- pydantic-ai starts the function calls of a run step as sibling tasks (per segment between
  `sequential` barriers), so they arrive together and run as one tooldeck turn (`_turns.py`).
  tooldeck's tools are never marked `sequential`: tooldeck orders the calls of a turn itself.
- A tooldeck error is pydantic-ai's `ToolFailed`: the model gets a failed tool return with
  tooldeck's message, and the tool's retry budget is not spent (a `ModelRetry` would end the run
  with `UnexpectedModelBehavior` after `max_retries`); tooldeck's own budget bounds the calls.
- A result is a `ToolReturn`: tooldeck's text for the model, and `AgentToolResult.to_dict()` as
  its `metadata` (tool id, structured data, resource refs) for the application.
- In the deferred modes the toolset's instructions are the invocation's turn context (the listed
  tools by name), so the model knows what `find_tools` and `run_tool` can reach.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from tooldeck.adapters._extras import missing_extra

try:
    from pydantic_ai import RunContext, ToolReturn
    from pydantic_ai.exceptions import ToolFailed
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset
    from pydantic_ai.toolsets.abstract import ToolsetTool
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise missing_extra("pydantic-ai", "pydantic-ai", exc) from exc

from tooldeck.adapters._specs import tool_specs
from tooldeck.adapters._turns import TurnBatcher
from tooldeck.core.errors import TooldeckError
from tooldeck.runtime import Invocation, Runtime

__all__ = ["TooldeckToolset"]

RAW = "__tooldeck_raw_arguments__"
"""The one key of the dict pydantic-ai passes to `call_tool`: the call's arguments as the model sent them."""

UNBOUND = "adapters.toolset_unbound"


class _RawArguments:
    """An `args_validator` that accepts anything and keeps it as it came, for tooldeck's gate to judge."""

    def validate_json(self, input: str | bytes | bytearray, *,
                      allow_partial: bool | Literal["off", "on", "trailing-strings"] = False, **kwargs: Any) -> Any:
        return {RAW: input.decode("utf-8", "surrogateescape") if isinstance(input, bytes | bytearray) else input}

    def validate_python(self, input: Any, *,
                        allow_partial: bool | Literal["off", "on", "trailing-strings"] = False, **kwargs: Any) -> Any:
        return {RAW: input}


_ACCEPT_ANY = _RawArguments()


class TooldeckToolset(AbstractToolset[Any]):
    """A tooldeck invocation's tools, called through its gate, records and sandbox."""

    def __init__(self, source: Runtime | Invocation, *, id: str | None = "tooldeck",
                 **invocation_options: Any) -> None:
        if isinstance(source, Invocation):
            if invocation_options:
                raise TooldeckError("adapters.options_with_invocation", "invocation options "
                                    f"({', '.join(sorted(invocation_options))}) only apply when the toolset is given "
                                    "a Runtime; the Invocation given was already opened with its own")
            self.runtime = source.runtime
            self._bind(source)
        else:
            self.runtime = source
            self._invocation: Invocation | None = None
        self._id = id
        self._options = invocation_options

    def _bind(self, invocation: Invocation) -> None:
        self._invocation = invocation
        self._batcher = TurnBatcher(invocation)
        self._specs = tool_specs(invocation.tools())
        self._tools: dict[str, ToolsetTool[Any]] = {}

    @property
    def id(self) -> str | None:
        return self._id

    @property
    def invocation(self) -> Invocation:
        """The invocation this toolset's calls go to (a Runtime-given toolset has one per agent run)."""
        if self._invocation is None:
            raise TooldeckError(UNBOUND, "this TooldeckToolset was given a Runtime and opens an invocation per agent "
                                "run; use it through an Agent run (or give it an Invocation)")
        return self._invocation

    def _require(self) -> TurnBatcher:
        self.invocation  # noqa: B018 - raises the clear error when the toolset is not bound to one
        return self._batcher

    async def for_run(self, ctx: RunContext[Any]) -> AbstractToolset[Any]:
        if self._invocation is not None:
            return self
        return TooldeckToolset(self.runtime.invocation(**self._options), id=self._id)

    async def get_instructions(self, ctx: RunContext[Any]) -> str | None:
        return self.invocation.turn_context() or None

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        self._require()
        if not self._tools:
            self._tools = {
                spec.name: ToolsetTool(
                    toolset=self, max_retries=1, args_validator=_ACCEPT_ANY,
                    tool_def=ToolDefinition(name=spec.name, description=spec.description,
                                            parameters_json_schema=spec.parameters))
                for spec in self._specs
            }
        return self._tools

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any],
                        tool: ToolsetTool[Any]) -> Any:
        raw = tool_args[RAW] if len(tool_args) == 1 and RAW in tool_args else tool_args
        call_id = ctx.tool_call_id or f"pyd_{uuid.uuid4().hex[:16]}"
        result = await self._require().call(call_id, name, raw)
        if result.is_error:
            raise ToolFailed(result.content)
        return ToolReturn(return_value=result.content, metadata=result.to_dict())
