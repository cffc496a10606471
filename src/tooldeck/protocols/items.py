"""Provider items and provider data: what of an assistant turn must travel back besides its calls.

- **Provider items** belong to the turn: Responses `reasoning` items (with `encrypted_content` and
  `summary`) and assistant `message` items, Anthropic `thinking` (with `signature`),
  `redacted_thinking` (with `data`) and `text` blocks, Gemini model parts that are not calls (text,
  thoughts, each with its `thoughtSignature`), Chat `text` / `refusal` content parts.
- **Provider data** belongs to one call: the keys that go beside it in its wire object (Gemini's
  `thoughtSignature` in the `functionCall`'s part, a Responses `function_call` item's own `id`).

Both are provider-native and verbatim. They belong to a provider *family* — the provider an
invocation was made for (`Runtime.invocation(provider=…)`: `openai` covers Chat and Responses) —
and a format renders them only for its own family: on a cross-family replay they are dropped, never
emitted in a shape the target provider would reject. Within a family each format takes the item
kinds it knows (Chat takes `text` parts, Responses `reasoning` and `message` items) and drops the rest.

`check_items` / `check_data` are the rules a host's input must meet before it is recorded; the same
rules make `protocols.validate` report a message list that breaks them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tooldeck.core.errors import TooldeckError
from tooldeck.core.jsonvalue import find_problem
from tooldeck.protocols import anthropic, gemini, openai_chat, openai_responses

ITEMS_INVALID = "invocation.provider_items_invalid"
DATA_INVALID = "invocation.provider_data_invalid"

FORMAT_FAMILY = {"openai": "openai", "openai_responses": "openai", "anthropic": "anthropic", "gemini": "gemini",
                 "mistral": "mistral"}
"""Each format's provider family: the items and provider data it renders."""

_ItemRule = Callable[[Mapping[str, Any]], "str | None"]
_ITEM_RULES: dict[str, tuple[_ItemRule, ...]] = {
    "openai": (openai_responses.item_problem, openai_chat.item_problem),
    "anthropic": (anthropic.item_problem,),
    "gemini": (gemini.item_problem,),
    "mistral": (openai_chat.item_problem,),
}
"""Per family, the rules an item must meet (a family without rules takes any JSON object)."""


def family_of(fmt: str) -> str:
    return FORMAT_FAMILY[fmt]


def item_problem(item: Any, family: str) -> str | None:
    """Why `item` cannot be kept as a provider item of `family`, or None."""
    if not isinstance(item, Mapping):
        return f"an item must be a JSON object, not {type(item).__name__}"
    problem = find_problem(item, None)
    if problem is not None:
        return f"the item is not JSON: {problem.message}"
    for rule in _ITEM_RULES.get(family, ()):
        text = rule(item)
        if text:
            return text
    return None


def data_problem(data: Any, family: str) -> str | None:
    """Why `data` cannot be kept as a call's provider data for `family`, or None."""
    if not isinstance(data, Mapping):
        return f"provider_data must be a JSON object, not {type(data).__name__}"
    problem = find_problem(data, None)
    if problem is not None:
        return f"provider_data is not JSON: {problem.message}"
    if family == "gemini" and "thoughtSignature" in data:
        signature = data["thoughtSignature"]
        if not isinstance(signature, str) or not signature:
            return "`thoughtSignature` must be the non-empty string the API sent"
    if family == "openai" and "id" in data and not isinstance(data["id"], str):
        return "a function_call item's `id` must be the string the API sent"
    return None


def check_items(items: Any, family: str) -> list[dict[str, Any]]:
    """`items` as they are recorded (each a dict, verbatim), or TooldeckError `invocation.provider_items_invalid`."""
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise TooldeckError(ITEMS_INVALID, f"provider_items must be a list of the provider's items (JSON objects), "
                            f"not {type(items).__name__}; nothing was run")
    out = []
    for i, item in enumerate(items):
        problem = item_problem(item, family)
        if problem:
            raise TooldeckError(ITEMS_INVALID, f"provider_items[{i}] cannot be kept for {family}: {problem}; "
                                "nothing was run")
        out.append(dict(item))
    return out


def check_data(data: Any, family: str, index: int) -> dict[str, Any]:
    """A call's provider data as it is recorded, or TooldeckError `invocation.provider_data_invalid`."""
    problem = data_problem(data, family)
    if problem:
        raise TooldeckError(DATA_INVALID, f"call {index + 1} of the turn: {problem}; nothing was run")
    return dict(data)
