"""`chat_history` (Agenvoy's): the conversations of this home — agent runs (from the records) and imported
chat logs — to list, read or search.

`mode` list | read | search (omitted: `task_id` → read, `keyword` → search, else list); `task_id` (a run
id or an imported chat id; `current` = this run); `keyword`; `match` keyword (every word or "phrase"
must occur: the `chat_search` query language) | semantic (a lexical stand-in, no embeddings: any word
may occur, ranked by how many do); `time_range` 1h | 6h | 24h | 7d | 30d | 1y | all (default all, by
when the conversation started); `limit` (default 10, at most 50). Answers JSON.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Final

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.conversation.model import FIELD_REQUIRED, INVALID_TIME_RANGE, NOT_FOUND, UNKNOWN_MODE, Chat
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.jsontext import json_text
from tooldeck.core.results import ToolOutput

if TYPE_CHECKING:  # loaded on the first call, not with the catalog (start-up time)
    from tooldeck.conversation.binding import RunConversation


def _conversation(ctx: CallContext) -> RunConversation:
    from tooldeck.conversation.binding import RunConversation

    return RunConversation.of(ctx)

MODES: Final = ("list", "read", "search")
TIME_RANGES: Final = {"1h": 3600, "6h": 6 * 3600, "24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400,
                      "1y": 365 * 86400, "all": None}
DEFAULT_LIMIT: Final = 10
MAX_LIMIT: Final = 50
SEARCHED_CHATS: Final = 200
READ_MESSAGE_CHARS: Final = 2_000
READ_TOTAL_CHARS: Final = 20_000


def _since(args: dict[str, Any]) -> float | None:
    value = args.get("time_range") or "all"
    if value not in TIME_RANGES:
        raise ToolCallError(INVALID_TIME_RANGE, f'unknown time_range "{value}"; available: {", ".join(TIME_RANGES)}')
    span = TIME_RANGES[value]
    return None if span is None else time.time() - span


def _load(conv: RunConversation, chat_id: str) -> Chat:
    chat = conv.source.load(chat_id)
    if chat is None:
        raise ToolCallError(NOT_FOUND, f'no conversation "{chat_id}"; mode=list shows the task ids')
    return chat


def _list(conv: RunConversation, args: dict[str, Any], limit: int) -> ToolOutput:
    listed = []
    for info in conv.source.chats(_since(args), limit):
        chat = conv.source.load(info.chat_id) if info.kind == "run" else None  # a run's count is of events
        listed.append({"task_id": info.chat_id, "kind": info.kind, "title": info.title,
                       "started": info.started_at, "messages": len(chat) if chat is not None else info.messages})
    return ToolOutput(json_text(listed), {"conversations": listed})


def _read(conv: RunConversation, task_id: str) -> ToolOutput:
    chat = _load(conv, task_id)
    out: list[dict[str, Any]] = []
    total = 0
    for m in reversed(chat.messages):  # the newest are kept when the whole does not fit
        text = m.text if len(m.text) <= READ_MESSAGE_CHARS else m.text[:READ_MESSAGE_CHARS] + "…[cut]"
        if total + len(text) > READ_TOTAL_CHARS:
            break
        total += len(text)
        out.append({"index": m.index, "role": m.role, "name": m.name, "sent": m.sent, "text": text})
    out.reverse()
    body = {"task_id": task_id, "title": chat.title, "messages": out, "total_messages": len(chat),
            "omitted_before": out[0]["index"] if out else len(chat)}
    return ToolOutput(json_text(body), body)


def _semantic(chat: Chat, words: list[str], limit: int) -> list[tuple[int, int]]:
    found = []
    for i in range(len(chat)):
        text = chat.lowered(i)
        score = sum(1 for w in words if w in text)
        if score:
            found.append((score, i))
    found.sort(reverse=True)
    return found[:limit]


def _search(conv: RunConversation, args: dict[str, Any], keyword: str, limit: int) -> ToolOutput:
    from tooldeck.conversation.query import parse_query
    from tooldeck.conversation.search import search, snippet

    query = parse_query(keyword)
    semantic = args.get("match") == "semantic"
    words = sorted({w for t in query.required for w in t.split()}, key=len, reverse=True)
    hits: list[dict[str, Any]] = []
    for info in conv.source.chats(_since(args), SEARCHED_CHATS):
        chat = conv.source.load(info.chat_id)
        if chat is None or not len(chat):
            continue
        pairs = _semantic(chat, words, limit) if semantic else \
            [(h.score, h.index) for h in search(chat, query, 0, len(chat) - 1, None, limit).hits]
        for score, i in pairs:
            m = chat.messages[i]
            hits.append({"task_id": info.chat_id, "index": i, "role": m.role, "score": score, "sent": m.sent,
                         "snippet": snippet(m.text, chat.lowered(i), words[0] if semantic else query.required[0])})
        if len(hits) >= limit:
            break
    hits = hits[:limit]
    return ToolOutput(json_text(hits), {"hits": hits})


def handle(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    mode = args.get("mode") or ("read" if args.get("task_id") else "search" if args.get("keyword") else "list")
    if mode not in MODES:
        raise ToolCallError(UNKNOWN_MODE, f'unknown mode "{mode}"; available: {", ".join(MODES)}')
    conv = _conversation(ctx)
    limit = args.get("limit") or DEFAULT_LIMIT
    if mode == "list":
        return _list(conv, args, limit)
    if mode == "read":
        task_id = args.get("task_id")
        if not isinstance(task_id, str) or not task_id.strip():
            raise ToolCallError(FIELD_REQUIRED, "task_id is required when mode=read")
        return _read(conv, ctx.run.run_id if task_id.strip() == "current" else task_id.strip())
    keyword = args.get("keyword")
    if not isinstance(keyword, str) or not keyword.strip():
        raise ToolCallError(FIELD_REQUIRED, "keyword is required when mode=search")
    return _search(conv, args, keyword, limit)


DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("chat_history"),
    title="Earlier conversations",
    description="List, read or search earlier conversations (agent runs and imported chats). mode list "
                "(time_range?, limit?), read (task_id; `current` = this run) or search (keyword, match?, "
                "time_range?, limit?).",
    input_schema={
        "type": "object",
        "properties": {
            "mode": {"type": "string", "description": "list | read | search; omitted: task_id → read, keyword → "
                                                      "search, else list."},
            "task_id": {"type": "string"},
            "keyword": {"type": "string", "description": "Words or \"phrases\"; -word excludes (keyword match)."},
            "match": {"type": "string", "enum": ["keyword", "semantic"],
                      "description": "keyword: all words; semantic: any word, ranked by how many."},
            "time_range": {"type": "string", "description": "1h | 6h | 24h | 7d | 30d | 1y | all (default)."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Default 10."},
        },
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True, concurrency_safe=True),
)

TOOLS = [BuiltinTool(DESCRIPTOR, handle, blocking=True)]
