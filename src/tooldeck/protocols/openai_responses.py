"""OpenAI Responses: `function_call` items (arguments as a JSON string) and one
`function_call_output` item per `call_id`, after its call.

Provider items of a turn are its other output items: `reasoning` items (with `encrypted_content`
when the request asked for it, and `summary`) and assistant `message` items. Replay sends them in
the order the model sent them, before the turn's `function_call` items; a `function_call` keeps its
own item `id` (`fc_…`, the call's provider data), which the API pairs with the reasoning item
before it. A reasoning item must be followed by the item it produced, never stand last or before a
function_call_output."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tooldeck.core.arguments import MISSING
from tooldeck.naming import RULES
from tooldeck.protocols.common import (
    DecodedCall,
    ReplayCall,
    ReplayTurn,
    Violation,
    clean_name,
    data_url,
    decoded,
    require_id,
)
from tooldeck.protocols.ids import id_problem
from tooldeck.protocols.openai_chat import _arguments_problem, _image_url_problem

FAMILY = "openai"
ITEM_KINDS = frozenset({"reasoning", "message"})
"""The output items replay sends back before the turn's function_call items."""
CALL_KEYS = ("id", "status")
"""The keys of a call's provider data that go on its function_call item."""
OUTPUT_KINDS = frozenset({"input_text", "input_image", "input_file"})
"""The parts a function_call_output's `output` list may hold."""


def item_problem(item: Mapping[str, Any]) -> str | None:
    """Why an output item cannot be sent back as it is, or None."""
    kind = item.get("type")
    if kind == "reasoning":
        if not isinstance(item.get("summary"), list):
            return "a reasoning item needs its `summary` (a list, possibly empty) to be sent back"
        encrypted = item.get("encrypted_content")
        if encrypted is not None and not isinstance(encrypted, str):
            return "a reasoning item's `encrypted_content` must be the string the API sent"
        if encrypted is None and not isinstance(item.get("id"), str):
            return ("a reasoning item needs its `encrypted_content` (ask for `include: "
                    "[\"reasoning.encrypted_content\"]`) or its stored `id` to be sent back")
    elif kind == "message" and item.get("role", "assistant") != "assistant":
        return "a message item of a model turn has the role `assistant`"
    elif kind in ("function_call", "function_call_output"):
        return f"a {kind} item is not a provider item: pass tool calls as calls"
    return None


def items(response: Any) -> list[dict[str, Any]]:
    """The provider items of a Responses response (`output`) or of an item list: reasoning and
    assistant message items, verbatim, in order."""
    output = response.get("output") if isinstance(response, Mapping) else response
    return [dict(i) for i in (output if isinstance(output, list) else [])
            if isinstance(i, Mapping) and i.get("type") in ITEM_KINDS]


def _call(c: ReplayCall, own: bool) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments_json()}
    data = c.provider_data
    if own and data:
        for key in CALL_KEYS:
            if key in data:
                item[key] = data[key]
    return item


def render(turns: Sequence[ReplayTurn]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for turn in turns:
        own = turn.source == FAMILY
        if own and turn.items:
            items.extend(dict(i) for i in turn.items if i.get("type") in ITEM_KINDS)
        items.extend(_call(c, own) for c in turn.calls)
        items.extend({"type": "function_call_output", "call_id": c.id, "output": _output(c)} for c in turn.calls)
    return items


def _output(c: ReplayCall) -> str | list[dict[str, Any]]:
    """The result text, or with images the output list: an `input_text` part, then an `input_image` per image."""
    text = c.marked_text()
    if not c.images:
        return text
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": text}] if text else []
    parts.extend({"type": "input_image", "image_url": data_url(i), "detail": "auto"} for i in c.images)
    return parts


def _output_problems(output: list[Any], path: str) -> list[Violation]:
    out = []
    for i, part in enumerate(output):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind not in OUTPUT_KINDS:
            out.append(Violation("tool_output_invalid", f"{path}[{i}]", f"an output list holds "
                                 f"{', '.join(sorted(OUTPUT_KINDS))} parts, not {kind!r}"))
        elif kind == "input_text" and not isinstance(part.get("text"), str):
            out.append(Violation("tool_output_invalid", f"{path}[{i}]", "an input_text part needs its `text`"))
        elif kind == "input_image" and not isinstance(part.get("file_id"), str):
            problem = _image_url_problem({"image_url": {"url": part.get("image_url")}})
            if problem:
                out.append(Violation("image_invalid", f"{path}[{i}]", problem))
    return out


def decode(response: Any) -> list[DecodedCall]:
    """The function calls of a Responses API response (`output` items) or of a bare item list."""
    items = response.get("output") if isinstance(response, Mapping) else response
    out: list[DecodedCall] = []
    for i, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, Mapping) or item.get("type") != "function_call":
            continue
        where = f"output[{i}] (function_call)"
        call_id = require_id(item.get("call_id"), where)
        name = clean_name(item.get("name"), where)
        item_id = item.get("id")
        out.append(decoded(call_id, name, item.get("arguments", MISSING),
                           provider_data={"id": item_id} if isinstance(item_id, str) and item_id else None))
    return out


def validate(items: Sequence[Mapping[str, Any]]) -> list[Violation]:
    out: list[Violation] = []
    rule = RULES["openai"]
    calls: dict[str, int] = {}
    answered: set[str] = set()
    for i, item in enumerate(items):
        kind = item.get("type")
        path = f"input[{i}]"
        if kind == "reasoning":
            problem = item_problem(item)
            if problem:
                out.append(Violation("reasoning_invalid", path, problem))
            if not _produced(items[i + 1] if i + 1 < len(items) else None):
                out.append(Violation("reasoning_without_following_item", path, f"Item {item.get('id')!r} of type "
                                     "'reasoning' was provided without its required following item (the "
                                     "function_call or message the model produced after it)"))
        if kind == "function_call":
            call_id, name = item.get("call_id"), item.get("name")
            problem = id_problem(call_id, "openai_responses")
            if problem:
                out.append(Violation("call_id_invalid", f"{path}.call_id", problem))
            elif call_id in calls:
                out.append(Violation("call_id_duplicate", f"{path}.call_id", f"call id {call_id!r} is used twice"))
            if not isinstance(name, str) or not rule.is_valid(name):
                out.append(Violation("call_name_invalid", f"{path}.name", f"{name!r} breaks the openai name rule"))
            problem = _arguments_problem(item.get("arguments"))
            if problem:
                out.append(Violation("call_arguments_invalid", f"{path}.arguments", problem.replace("function.", "")))
            if isinstance(call_id, str):
                calls.setdefault(call_id, i)
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if call_id not in calls:
                out.append(Violation("tool_output_orphaned", path,
                                     f"no function_call with call_id {call_id!r} precedes this output"))
            elif call_id in answered:
                out.append(Violation("tool_output_duplicate", path, f"call {call_id!r} is answered twice"))
            answered.add(call_id)
            output = item.get("output")
            if not isinstance(output, str | list):
                out.append(Violation("tool_output_invalid", f"{path}.output", "output must be a string"))
            elif isinstance(output, list):
                out.extend(_output_problems(output, f"{path}.output"))
    for call_id, i in calls.items():
        if call_id not in answered:
            out.append(Violation("tool_call_unanswered", f"input[{i}]", f"No tool output found for function call "
                                 f"{call_id}"))
    return out


def _produced(item: Mapping[str, Any] | None) -> bool:
    """Whether `item` can follow a reasoning item: an output the model produced (a call of any kind
    or an assistant message), not its result, not user input, not another reasoning item."""
    if not isinstance(item, Mapping):
        return False
    kind = item.get("type")
    if kind == "message" or (kind is None and "role" in item):
        return item.get("role") == "assistant"
    return isinstance(kind, str) and kind.endswith("_call")
