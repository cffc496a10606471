"""A `ModelTurn` in the shapes of `tooldeck.protocols`, for the providers whose conversation is built by
the protocols' own `render` (Responses, Anthropic, Gemini): the turn the model sent goes back exactly
as replay would render it from the records (its provider items first, each call with its provider
data), so what the loop sends and what `records` replays are one shape."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tooldeck.agent.providers.common import call_arguments
from tooldeck.agent.types import ModelTurn
from tooldeck.core.errors import TooldeckError
from tooldeck.core.results import AgentToolResult
from tooldeck.protocols.common import ReplayCall, ReplayTurn


def replay_turn(turn: ModelTurn, family: str, results: Sequence[AgentToolResult] | None = None) -> ReplayTurn:
    """`turn` as a protocols replay turn of `family` (its items and provider data kept), each call with its
    result (or an empty one when `results` is None)."""
    if results is not None and len(results) != len(turn.calls):
        raise ValueError(f"{len(results)} results for {len(turn.calls)} calls; every call needs exactly one")
    calls = []
    for i, call in enumerate(turn.calls):
        result = results[i] if results is not None else None
        data = call.get("provider_data")
        calls.append(ReplayCall(str(call["id"]), str(call["name"]), call_arguments(call),
                                result.content if result is not None else "",
                                result.is_error if result is not None else False,
                                dict(data) if isinstance(data, Mapping) else None,
                                tuple(result.images) if result is not None else ()))
    return ReplayTurn(tuple(calls), tuple(turn.provider_items), family)


def model_error(exc: TooldeckError, label: str) -> TooldeckError:
    """A decoding error of the protocols (`model.invalid_tool_call`) as the client's `ModelError`."""
    from tooldeck.agent.errors import ModelError

    return ModelError(exc.code, f"{label}: {exc.message}")


def sendable(items: list[dict[str, Any]], family: str, label: str) -> list[dict[str, Any]]:
    """`items` when each can be sent back as the API wants it; else `model.bad_response` (a thinking block
    without its signature would make the next request fail; better to say so now, with the reason)."""
    from tooldeck.agent import errors
    from tooldeck.agent.errors import ModelError
    from tooldeck.protocols.items import item_problem

    for item in items:
        problem = item_problem(item, family)
        if problem:
            raise ModelError(errors.BAD_RESPONSE, f"{label} sent a {item.get('type', 'part')} item that cannot be "
                             f"sent back: {problem}; run again")
    return items


def usage_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
