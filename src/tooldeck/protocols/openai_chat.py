"""OpenAI Chat Completions: assistant `tool_calls` (arguments as a JSON string) answered by
`role: tool` messages, one per `tool_call_id`, right after the assistant message.

Provider items of a turn are the assistant's content parts (`text`, `refusal`) that came with the
calls; replay sends them as the assistant message's `content` (else `content` is null)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from tooldeck.core.arguments import MISSING
from tooldeck.naming import RULES
from tooldeck.protocols.common import (
    IMAGE_TYPES,
    DecodedCall,
    ReplayCall,
    ReplayTurn,
    Violation,
    clean_name,
    data_url,
    decoded,
    image_label,
    require_id,
)
from tooldeck.protocols.ids import id_problem

FAMILY = "openai"
ITEM_KINDS = frozenset({"text", "refusal"})
"""The assistant content parts replay sends back with the turn's tool calls."""


def item_problem(item: Mapping[str, Any]) -> str | None:
    """Why an assistant content part cannot be sent back as it is, or None."""
    kind = item.get("type")
    if kind in ITEM_KINDS and not isinstance(item.get(kind), str):
        return f"a {kind} part needs its `{kind}` (a string)"
    return None


def items(response: Any) -> list[dict[str, Any]]:
    """The provider items of a Chat Completions response (or message): its text as a `text` part and
    its refusal as a `refusal` part."""
    message = _message(response)
    out: list[dict[str, Any]] = []
    content = message.get("content")
    if isinstance(content, str) and content:
        out.append({"type": "text", "text": content})
    elif isinstance(content, list):
        out.extend(dict(p) for p in content if isinstance(p, Mapping) and p.get("type") in ITEM_KINDS)
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        out.append({"type": "refusal", "refusal": refusal})
    return out


def render(turns: Sequence[ReplayTurn], family: str = FAMILY) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for turn in turns:
        content = None
        if turn.items and turn.source == family:
            content = [dict(i) for i in turn.items if i.get("type") in ITEM_KINDS] or None
        messages.append({"role": "assistant", "content": content, "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json()}}
            for c in turn.calls]})
        messages.extend({"role": "tool", "tool_call_id": c.id, "content": c.marked_text()} for c in turn.calls)
        shown = image_message(turn.calls)
        if shown is not None:
            messages.append(shown)
    return messages


def image_message(calls: Sequence[ReplayCall]) -> dict[str, Any] | None:
    """The results' images for Chat, whose tool messages take text only: one user message after the turn's
    tool messages (all of them: they must follow the assistant message directly), each image after a text
    part naming its call and its copy, as Agenvoy does; None when no result has an image."""
    parts: list[dict[str, Any]] = []
    for c in calls:
        for n, image in enumerate(c.images, 1):
            parts.append({"type": "text", "text": image_label(c, n)})
            parts.append({"type": "image_url", "image_url": {"url": data_url(image), "detail": "auto"}})
    return {"role": "user", "content": parts} if parts else None


def _image_url_problem(part: Mapping[str, Any]) -> str | None:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else None
    if not isinstance(url, str):
        return "an image_url part needs `image_url.url` (a string)"
    if url.startswith("data:"):
        head, sep, data = url.partition(",")
        mime = head[5:].split(";", 1)[0]
        if not sep or not head.endswith(";base64") or mime not in IMAGE_TYPES or not data:
            return f"a data URL image is `data:<{'|'.join(sorted(IMAGE_TYPES))}>;base64,<data>`"
        return None
    return None if url.startswith(("http://", "https://")) else "an image URL is an http(s) or a data URL"


def _message(response: Any) -> Mapping[str, Any]:
    if isinstance(response, Mapping) and isinstance(response.get("choices"), list):
        choices = response["choices"]
        if not choices:
            return {}
        first = choices[0]
        return (first.get("message") or first.get("delta") or {}) if isinstance(first, Mapping) else {}
    return response if isinstance(response, Mapping) else {}


def decode(response: Any) -> list[DecodedCall]:
    """The tool calls of a Chat Completions response (or of its first choice's message)."""
    calls = _message(response).get("tool_calls") or []
    out: list[DecodedCall] = []
    for i, tc in enumerate(calls if isinstance(calls, list) else []):
        where = f"tool_calls[{i}]"
        tc = tc if isinstance(tc, Mapping) else {}
        fn = tc.get("function") if isinstance(tc.get("function"), Mapping) else {}
        call_id = require_id(tc.get("id"), where)
        name = clean_name(fn.get("name"), where)
        out.append(decoded(call_id, name, fn.get("arguments", MISSING)))
    return out


def _arguments_problem(arguments: Any) -> str | None:
    if not isinstance(arguments, str):
        return "function.arguments must be a JSON string"
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return "function.arguments must be valid JSON"
    return None if isinstance(value, dict) else "function.arguments must encode a JSON object"


def validate(messages: Sequence[Mapping[str, Any]], fmt: str = "openai") -> list[Violation]:
    """Pairing and shape rules: every tool_call_id answered by the tool messages right after its
    assistant message; no orphan tool message; valid ids and names."""
    out: list[Violation] = []
    rule = RULES["mistral" if fmt == "mistral" else "openai"]
    pending: dict[str, str] = {}
    seen_ids: set[str] = set()
    for m_i, msg in enumerate(messages):
        role = msg.get("role")
        path = f"messages[{m_i}]"
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if call_id not in pending:
                out.append(Violation("tool_message_orphaned", path, f"tool message for {call_id!r} does not answer "
                                     "a tool call of the preceding assistant message"))
            else:
                del pending[call_id]
            content = msg.get("content")
            if not isinstance(content, str | list):
                out.append(Violation("tool_content_invalid", path, "tool message content must be a string"))
            elif isinstance(content, list) and any(not isinstance(p, Mapping) or p.get("type") != "text"
                                                   for p in content):
                out.append(Violation("tool_content_invalid", path, "tool message content parts must be text (send "
                                     "images in a user message after the tool messages)"))
            continue
        if role == "user" and isinstance(msg.get("content"), list):
            for p_i, part in enumerate(msg["content"]):
                problem = _image_url_problem(part) if isinstance(part, Mapping) and \
                    part.get("type") == "image_url" else None
                if problem:
                    out.append(Violation("image_invalid", f"{path}.content[{p_i}]", problem))
        if pending:
            out.append(Violation("tool_call_unanswered", path, "an assistant message with 'tool_calls' must be "
                                 f"followed by tool messages responding to each 'tool_call_id': {sorted(pending)}"))
            pending = {}
        if role == "assistant" and "tool_calls" in msg and not msg["tool_calls"]:
            out.append(Violation("tool_calls_empty", f"{path}.tool_calls", "tool_calls must not be an empty array; "
                                 "leave the field out"))
        for c_i, tc in enumerate(msg.get("tool_calls") or [] if role == "assistant" else []):
            c_path = f"{path}.tool_calls[{c_i}]"
            fn = tc.get("function") or {}
            call_id, name = tc.get("id"), fn.get("name")
            problem = id_problem(call_id, fmt)
            if problem:
                out.append(Violation("call_id_invalid", f"{c_path}.id", problem))
            elif call_id in seen_ids:
                out.append(Violation("call_id_duplicate", f"{c_path}.id", f"call id {call_id!r} is used twice"))
            if tc.get("type") != "function":
                out.append(Violation("call_type_invalid", f"{c_path}.type", "type must be 'function'"))
            if not isinstance(name, str) or not rule.is_valid(name):
                out.append(Violation("call_name_invalid", f"{c_path}.function.name",
                                     f"{name!r} breaks the {fmt} name rule (charset, length)"))
            problem = _arguments_problem(fn.get("arguments"))
            if problem:
                out.append(Violation("call_arguments_invalid", f"{c_path}.function.arguments", problem))
            if isinstance(call_id, str):
                seen_ids.add(call_id)
                pending[call_id] = name
    if pending:
        out.append(Violation("tool_call_unanswered", f"messages[{len(messages)}]",
                             f"the history ends with unanswered tool calls: {sorted(pending)}"))
    return out
