"""Anthropic Messages: `tool_use` blocks (input as an object) in an assistant message, answered by
`tool_result` blocks at the start of the very next user message; errors carry `is_error`.

Provider items of a turn are its other assistant content blocks: `thinking` (with the `signature`
that must come back unchanged), `redacted_thinking` (with its `data`) and `text`. They go first in
the assistant content, before the `tool_use` blocks, in the order the model sent them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tooldeck.core.arguments import MISSING
from tooldeck.naming import RULES
from tooldeck.protocols.common import DecodedCall, ReplayTurn, Violation, clean_name, decoded, require_id
from tooldeck.protocols.ids import id_problem

FAMILY = "anthropic"
ITEM_KINDS = frozenset({"thinking", "redacted_thinking", "text"})
"""The assistant content blocks replay sends back before the tool_use blocks."""
THINKING_KINDS = ("thinking", "redacted_thinking")


def item_problem(item: Mapping[str, Any]) -> str | None:
    """Why an assistant content block cannot be sent back as it is, or None."""
    kind = item.get("type")
    if kind == "thinking":
        if not isinstance(item.get("thinking"), str):
            return "a thinking block needs its `thinking` text (a string)"
        signature = item.get("signature")
        if not isinstance(signature, str) or not signature:
            return ("a thinking block must keep its `signature` (the non-empty string the API sent with it); "
                    "send it back unchanged")
    elif kind == "redacted_thinking":
        data = item.get("data")
        if not isinstance(data, str) or not data:
            return "a redacted_thinking block must keep its `data` (the non-empty string the API sent); send it back"
    elif kind == "text" and not isinstance(item.get("text"), str):
        return "a text block needs its `text` (a string)"
    elif kind in ("tool_use", "tool_result"):
        return f"a {kind} block is not a provider item: pass tool calls as calls"
    return None


def items(response: Any) -> list[dict[str, Any]]:
    """The provider items of a Messages response (or of its content list): thinking, redacted_thinking
    and text blocks, verbatim, in order."""
    blocks = response.get("content") if isinstance(response, Mapping) else response
    return [dict(b) for b in (blocks if isinstance(blocks, list) else [])
            if isinstance(b, Mapping) and b.get("type") in ITEM_KINDS]


def render(turns: Sequence[ReplayTurn]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for turn in turns:
        content: list[dict[str, Any]] = []
        if turn.items and turn.source == FAMILY:
            content.extend(dict(i) for i in turn.items if i.get("type") in ITEM_KINDS)
        content.extend({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in turn.calls)
        messages.append({"role": "assistant", "content": content})
        results: list[dict[str, Any]] = []
        for c in turn.calls:
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": c.id}
            if c.content:
                block["content"] = c.content
            if c.is_error:
                block["is_error"] = True
            results.append(block)
        messages.append({"role": "user", "content": results})
    return messages


def decode(response: Any) -> list[DecodedCall]:
    """The tool_use blocks of a Messages API response (or of a bare content list)."""
    blocks = response.get("content") if isinstance(response, Mapping) else response
    out: list[DecodedCall] = []
    for i, block in enumerate(blocks if isinstance(blocks, list) else []):
        if not isinstance(block, Mapping) or block.get("type") != "tool_use":
            continue
        where = f"content[{i}] (tool_use)"
        call_id = require_id(block.get("id"), where)
        name = clean_name(block.get("name"), where)
        out.append(decoded(call_id, name, block.get("input", MISSING)))
    return out


def _blocks(msg: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = msg.get("content")
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def validate(messages: Sequence[Mapping[str, Any]]) -> list[Violation]:
    out: list[Violation] = []
    rule = RULES["anthropic"]
    seen: set[str] = set()
    pending: list[str] = []
    for m_i, msg in enumerate(messages):
        path = f"messages[{m_i}]"
        role = msg.get("role")
        blocks = _blocks(msg)
        if role == "user":
            lead = 0
            while lead < len(blocks) and blocks[lead].get("type") == "tool_result":
                lead += 1
            answered = [b.get("tool_use_id") for b in blocks[:lead]]
            for b_i, b in enumerate(blocks):
                if b.get("type") == "tool_result" and b_i >= lead:
                    out.append(Violation("tool_result_not_first", f"{path}.content[{b_i}]",
                                         "tool_result blocks must come first in the user message"))
                if b.get("type") == "tool_result" and "is_error" in b and not isinstance(b["is_error"], bool):
                    out.append(Violation("tool_result_invalid", f"{path}.content[{b_i}].is_error",
                                         "is_error must be a boolean"))
            missing = [i for i in pending if i not in answered]
            if missing:
                out.append(Violation("tool_use_unanswered", path, "tool_use ids were found without tool_result "
                                     f"blocks immediately after: {missing}"))
            extra = [i for i in answered if i not in pending]
            if extra:
                out.append(Violation("tool_result_orphaned", path, f"tool_result blocks for unknown tool_use ids: "
                                     f"{extra}"))
            if len(set(answered)) != len(answered):
                out.append(Violation("tool_result_duplicate", path, "a tool_use id is answered twice"))
            pending = []
            continue
        if pending:
            out.append(Violation("tool_use_unanswered", path, "tool_use ids were found without tool_result blocks "
                                 f"immediately after: {pending}"))
            pending = []
        if role != "assistant":
            continue
        other = False
        for b_i, b in enumerate(blocks):
            kind = b.get("type")
            if kind in ITEM_KINDS:
                problem = item_problem(b)
                if problem:
                    out.append(Violation("thinking_invalid" if kind in THINKING_KINDS else "content_invalid",
                                         f"{path}.content[{b_i}]", problem))
                if kind in THINKING_KINDS and other:
                    out.append(Violation("thinking_not_first", f"{path}.content[{b_i}]", "thinking blocks must "
                                         "come first in the assistant message, before its text and tool_use blocks"))
            if kind not in THINKING_KINDS:
                other = True
            if kind != "tool_use":
                continue
            b_path = f"{path}.content[{b_i}]"
            call_id, name = b.get("id"), b.get("name")
            problem = id_problem(call_id, "anthropic")
            if problem:
                out.append(Violation("call_id_invalid", f"{b_path}.id", problem))
            elif call_id in seen:
                out.append(Violation("call_id_duplicate", f"{b_path}.id", f"tool_use id {call_id!r} is used twice"))
            if not isinstance(name, str) or not rule.is_valid(name):
                out.append(Violation("call_name_invalid", f"{b_path}.name", f"{name!r} breaks the anthropic name "
                                     "rule (charset, length)"))
            if not isinstance(b.get("input"), dict):
                out.append(Violation("call_arguments_invalid", f"{b_path}.input", "input must be a JSON object"))
            if isinstance(call_id, str):
                seen.add(call_id)
                pending.append(call_id)
    if pending:
        out.append(Violation("tool_use_unanswered", f"messages[{len(messages)}]",
                             f"the history ends with tool_use blocks that have no tool_result: {pending}"))
    return out
