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
from tooldeck.protocols.common import (
    IMAGE_TYPES,
    DecodedCall,
    ReplayCall,
    ReplayTurn,
    Violation,
    clean_name,
    decoded,
    image_base64,
    require_id,
)
from tooldeck.protocols.ids import id_problem

FAMILY = "anthropic"
ITEM_KINDS = frozenset({"thinking", "redacted_thinking", "text"})
"""The assistant content blocks replay sends back before the tool_use blocks."""
THINKING_KINDS = ("thinking", "redacted_thinking")
RESULT_KINDS = frozenset({"text", "image", "document", "search_result"})
"""The blocks a tool_result's content list may hold."""
MAX_IMAGE_BASE64 = 5 * 1024 * 1024
"""The API refuses an image whose base64 text is longer (`image exceeds 5 MB maximum`)."""


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
            if c.images:
                block["content"] = _result_blocks(c)
            elif c.content:
                block["content"] = c.content
            if c.is_error:
                block["is_error"] = True
            results.append(block)
        messages.append({"role": "user", "content": results})
    return messages


def _result_blocks(c: ReplayCall) -> list[dict[str, Any]]:
    """A result with images: its text block, then one base64 image block per image."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": c.content}] if c.content else []
    blocks.extend({"type": "image", "source": {"type": "base64", "media_type": i.mime, "data": image_base64(i)}}
                  for i in c.images)
    return blocks


def image_problem(block: Mapping[str, Any]) -> tuple[str, str] | None:
    """(code, message) when an image block would be refused, or None."""
    source = block.get("source")
    if not isinstance(source, Mapping):
        return "image_invalid", "an image block needs its `source` object"
    if source.get("type") == "url":
        return None if isinstance(source.get("url"), str) else ("image_invalid", "an url image source needs `url`")
    if source.get("type") != "base64":
        return "image_invalid", "an image source is `base64` (or `url`)"
    if source.get("media_type") not in IMAGE_TYPES:
        return "image_invalid", (f"media_type {source.get('media_type')!r} is not one of "
                                 f"{', '.join(sorted(IMAGE_TYPES))}")
    data = source.get("data")
    if not isinstance(data, str) or not data:
        return "image_invalid", "a base64 image source needs its `data` (a non-empty string)"
    if len(data) > MAX_IMAGE_BASE64:
        return "image_too_large", f"image exceeds 5 MB maximum: {len(data)} bytes > {MAX_IMAGE_BASE64} bytes"
    return None


def _result_problems(block: Mapping[str, Any], path: str) -> list[Violation]:
    content = block.get("content")
    if content is None or isinstance(content, str):
        return []
    if not isinstance(content, list):
        return [Violation("tool_result_invalid", f"{path}.content", "content must be a string or a list of blocks")]
    out = []
    for i, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind not in RESULT_KINDS:
            out.append(Violation("tool_result_invalid", f"{path}.content[{i}]", f"a tool_result holds "
                                 f"{', '.join(sorted(RESULT_KINDS))} blocks, not {kind!r}"))
        elif kind == "image":
            problem = image_problem(part)
            if problem:
                out.append(Violation(problem[0], f"{path}.content[{i}]", problem[1]))
        elif kind == "text" and not isinstance(part.get("text"), str):
            out.append(Violation("tool_result_invalid", f"{path}.content[{i}]", "a text block needs its `text`"))
    return out


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
                if b.get("type") == "tool_result":
                    out.extend(_result_problems(b, f"{path}.content[{b_i}]"))
                elif b.get("type") == "image":
                    problem = image_problem(b)
                    if problem:
                        out.append(Violation(problem[0], f"{path}.content[{b_i}]", problem[1]))
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
