"""Parse a host's chat log into messages. Format (docs/conversation.md#chat-log-format): JSON Lines,
one object per line, blank lines skipped, UTF-8 (a BOM is dropped).

- SillyTavern: an optional first header line (an object without `mes`, e.g. `{"user_name": …,
  "character_name": …, "create_date": …, "chat_metadata": {…}}`), then one line per message:
  `{"name", "is_user", "is_system", "send_date", "mes", "extra"?}`. Role: `is_system` or
  `extra.type == "narrator"` → system, `is_user` → user, else assistant.
- Plain role/content lines: `{"role": user|assistant|system|tool, "content": str | [{"text": str}, …],
  "name"?}`.

Any other line is `chat.import_invalid`, naming its line number; nothing is imported then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import orjson

from tooldeck.conversation.model import IMPORT_INVALID, ROLES, Message
from tooldeck.core.errors import TooldeckError

MAX_MESSAGE_CHARS: Final = 1_000_000


@dataclass(frozen=True, slots=True)
class ParsedChat:
    title: str | None
    messages: tuple[Message, ...]


def _bad(line_no: int, what: str) -> TooldeckError:
    return TooldeckError(IMPORT_INVALID, f"line {line_no}: {what}; each line must be a SillyTavern message "
                                         "(`mes`, `is_user`, `name`) or a `role`/`content` object")


def _content(value: Any, line_no: int) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    raise _bad(line_no, f"`content` is {type(value).__name__}, not a string or a list of text parts")


def _sent(value: Any) -> str | None:
    if isinstance(value, str):
        return value or None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def _message(obj: dict[str, Any], index: int, line_no: int) -> Message:
    name = obj.get("name")
    name = name if isinstance(name, str) and name else None
    if "mes" in obj:
        text = obj["mes"]
        if not isinstance(text, str):
            raise _bad(line_no, f"`mes` is {type(text).__name__}, not a string")
        extra = obj.get("extra")
        narrator = isinstance(extra, dict) and extra.get("type") == "narrator"
        role = "system" if obj.get("is_system") is True or narrator else "user" if obj.get("is_user") is True \
            else "assistant"
        sent = _sent(obj.get("send_date"))
    else:
        role = obj.get("role")
        if role not in ROLES:
            raise _bad(line_no, f"`role` is {role!r}, not one of {', '.join(ROLES)}")
        if "content" not in obj:
            raise _bad(line_no, "no `content`")
        text = _content(obj["content"], line_no)
        sent = _sent(obj.get("send_date", obj.get("created_at")))
    if len(text) > MAX_MESSAGE_CHARS:
        raise _bad(line_no, f"the message has {len(text):,} characters; at most {MAX_MESSAGE_CHARS:,} are imported")
    return Message(index, role, text, name, sent)  # type: ignore[arg-type]


def parse_jsonl(data: bytes | str) -> ParsedChat:
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    title: str | None = None
    messages: list[Message] = []
    seen_line = False
    for line_no, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise _bad(line_no, f"not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise _bad(line_no, f"a JSON {type(obj).__name__}, not an object")
        first, seen_line = not seen_line, True
        if first and "mes" not in obj and "role" not in obj:
            name = obj.get("character_name")
            title = name if isinstance(name, str) and name else None
            continue
        messages.append(_message(obj, len(messages), line_no))
    if not messages:
        raise TooldeckError(IMPORT_INVALID, "the chat log has no messages; give one JSON object per line")
    return ParsedChat(title, tuple(messages))
