"""OpenAI Responses: `function_call` items (arguments as a JSON string) and one
`function_call_output` item per `call_id`, after its call."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tooldeck.core.arguments import MISSING
from tooldeck.naming import RULES
from tooldeck.protocols.common import DecodedCall, ReplayTurn, Violation, clean_name, decoded, require_id
from tooldeck.protocols.ids import id_problem
from tooldeck.protocols.openai_chat import _arguments_problem


def render(turns: Sequence[ReplayTurn]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for turn in turns:
        items.extend({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments_json()}
                     for c in turn.calls)
        items.extend({"type": "function_call_output", "call_id": c.id, "output": c.marked_text()}
                     for c in turn.calls)
    return items


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
        out.append(decoded(call_id, name, item.get("arguments", MISSING)))
    return out


def validate(items: Sequence[Mapping[str, Any]]) -> list[Violation]:
    out: list[Violation] = []
    rule = RULES["openai"]
    calls: dict[str, int] = {}
    answered: set[str] = set()
    for i, item in enumerate(items):
        kind = item.get("type")
        path = f"input[{i}]"
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
            if not isinstance(item.get("output"), str | list):
                out.append(Violation("tool_output_invalid", f"{path}.output", "output must be a string"))
    for call_id, i in calls.items():
        if call_id not in answered:
            out.append(Violation("tool_call_unanswered", f"input[{i}]", f"No tool output found for function call "
                                 f"{call_id}"))
    return out
