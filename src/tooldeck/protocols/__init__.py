"""Provider wire shapes: render replayed tool history, decode tool calls from responses, and
validate message lists against each provider's pairing and shape rules.

Formats: `openai` (Chat Completions), `openai_responses`, `anthropic` (Messages), `gemini`
(`contents`), `mistral` (Chat with 9-character ids). These modules know wire shapes only, nothing
about execution or storage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from tooldeck.core.errors import TooldeckError
from tooldeck.core.jsonvalue import find_problem
from tooldeck.protocols import anthropic, gemini, mistral, openai_chat, openai_responses
from tooldeck.protocols.common import DecodedCall, ReplayCall, ReplayTurn, Violation

FORMATS: dict[str, ModuleType] = {
    "openai": openai_chat,
    "openai_responses": openai_responses,
    "anthropic": anthropic,
    "gemini": gemini,
    "mistral": mistral,
}
ALIASES = {"openai_chat": "openai", "chat": "openai", "responses": "openai_responses", "claude": "anthropic"}
NAME_PROTOCOL = {"openai": "openai", "openai_responses": "openai", "anthropic": "anthropic", "gemini": "gemini",
                 "mistral": "mistral"}
"""The `tooldeck.naming` rule set each format's call names must satisfy."""


def format_name(provider: str) -> str:
    fmt = ALIASES.get(provider, provider)
    if fmt not in FORMATS:
        raise TooldeckError("protocol.unknown_format", f"unknown provider format {provider!r}; expected one of "
                            f"{', '.join(FORMATS)}")
    return fmt


def render(turns: Sequence[ReplayTurn], provider: str) -> list[dict[str, Any]]:
    return FORMATS[format_name(provider)].render(turns)


def decode_calls(response: Any, provider: str, *, id_seed: str = "") -> list[DecodedCall]:
    """Tool calls of a provider response; raises `model.invalid_tool_call` for a call without id or name."""
    fmt = format_name(provider)
    if fmt == "gemini":
        return gemini.decode(response, id_seed)
    return FORMATS[fmt].decode(response)


def decode_items(response: Any, provider: str) -> list[dict[str, Any]]:
    """The provider items of a response that must travel back with its calls (reasoning items,
    thinking blocks, text parts; see `protocols/items.py`), verbatim and in order."""
    return FORMATS[format_name(provider)].items(response)


def runtime_calls(response: Any, provider: str, *, id_seed: str = "") -> list[dict[str, Any]]:
    """`decode_calls` as the `{"id", "name", "arguments"}` dicts `Invocation.run` takes."""
    return [c.to_call() for c in decode_calls(response, provider, id_seed=id_seed)]


def validate(messages: Sequence[Mapping[str, Any]], provider: str) -> list[Violation]:
    """Every rule violation of `messages` that the provider would answer with a 400 (or that could not
    even be sent: a value JSON cannot carry, such as a lone surrogate, NaN or bytes)."""
    out = FORMATS[format_name(provider)].validate(messages)
    problem = find_problem(messages, None)
    if problem is not None:
        out.append(Violation("not_json", "messages", f"the messages are not JSON: {problem.message}"))
    return out


__all__ = ["FORMATS", "DecodedCall", "ReplayCall", "ReplayTurn", "Violation", "decode_calls", "decode_items",
           "format_name", "render", "runtime_calls", "validate"]
