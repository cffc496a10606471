"""`chat.search` and `chat.read_messages` (TauriTavern's): search and read the chat bound to the run,
up to the input message count the run froze (conversation/binding.py).

`chat_search`: `query` (words, `"phrases"`, `-exclusions`; conversation/query.py), `limit` (default 20,
at most 50), `role` (user | assistant | system | tool), `start_message` / `end_message` (inclusive
indexes), `scan_limit` (how many of the newest messages of that window are scanned; default the
Profile's `conversation.search_scan_limit`, at most 100,000). Hits carry index, role, score, snippet and
the ref `chat:current#<i>`; no hit is a success.

`chat_read_messages`: `messages` (at least one) of `{index, start_line?, line_count?}`; caps and
codes in conversation/ranges.py and docs/conversation.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.conversation.model import INVALID_RANGE, MESSAGE_NOT_FOUND, READ_TOO_LARGE, ROLES
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput

if TYPE_CHECKING:  # loaded on the first call, not with the catalog (start-up time)
    from tooldeck.conversation import ranges
    from tooldeck.conversation.binding import RunConversation


def _conversation(ctx: CallContext) -> RunConversation:
    from tooldeck.conversation.binding import RunConversation

    return RunConversation.of(ctx)

DEFAULT_LIMIT: Final = 20
MAX_LIMIT: Final = 50
MAX_SCAN: Final = 100_000


def ref(index: int, piece: ranges.Piece | None = None) -> str:
    base = f"chat:current#{index}"
    return base if piece is None or piece.whole else f"{base}:L{piece.start_line}-L{piece.end_line}"


def search_handler(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    from tooldeck.conversation.query import parse_query
    from tooldeck.conversation.search import search

    query = parse_query(args["query"])
    settings = ctx.invocation.profile.conversation
    given = _conversation(ctx).input(settings)
    count = given.count
    if count == 0:
        return ToolOutput("The chat has no input messages to search.", {"query": args["query"], "hits": [],
                                                                         "inputMessageCount": 0, "scanned": 0})
    start = args.get("start_message", 0)
    end = args.get("end_message", count - 1)
    if start >= count:
        raise ToolCallError(INVALID_RANGE, f"start_message {start} is past the last input message ({count - 1}).")
    end = min(end, count - 1)
    if start > end:
        raise ToolCallError(INVALID_RANGE, f"start_message {start} is after end_message {end}.")
    scan = args.get("scan_limit") or settings.search_scan_limit
    lo = max(start, end - scan + 1)
    limit = args.get("limit", DEFAULT_LIMIT)
    role = args.get("role")
    found = search(given.chat, query, lo, end, role, limit)
    messages = given.chat.messages
    hits = [{"index": h.index, "role": messages[h.index].role, "name": messages[h.index].name, "score": h.score,
             "snippet": h.snippet, "ref": ref(h.index)} for h in found.hits]
    structured = {"query": args["query"], "hits": hits, "matched": found.matched, "scanned": end - lo + 1,
                  "window": [lo, end], "inputMessageCount": count, "truncated": found.matched > len(hits)}
    if not hits:
        return ToolOutput(f"No message matched `{args['query']}` in messages {lo}-{end}.", structured)
    lines = [f"{len(hits)} of {found.matched} matching message(s) in {lo}-{end} (best first):"]
    for h in hits:
        who = f"{h['role']}" + (f" {h['name']}" if h["name"] else "")
        lines.append(f"#{h['index']} [{who}] score {h['score']}: {h['snippet']} ({h['ref']})")
    return ToolOutput("\n".join(lines), structured)


def read_handler(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    from tooldeck.conversation import ranges

    items = args["messages"]
    ranges.check_counts(len(items), "messages", READ_TOO_LARGE)
    given = _conversation(ctx).input(ctx.invocation.profile.conversation)
    messages = given.chat.messages
    out: list[dict[str, Any]] = []
    for item in items:
        i = item["index"]
        if not 0 <= i < given.count:
            last = f"0-{given.count - 1}" if given.count else "none"
            raise ToolCallError(MESSAGE_NOT_FOUND, f"there is no input message #{i}; the run's input messages are "
                                                   f"{last}.")
        m = messages[i]
        piece = ranges.cut(m.text, item, f"message #{i}", INVALID_RANGE, READ_TOO_LARGE)
        out.append({"index": i, "role": m.role, "name": m.name, "sent": m.sent, "startLine": piece.start_line,
                    "endLine": piece.end_line, "totalLines": piece.total_lines, "text": piece.text,
                    "ref": ref(i, piece)})
    ranges.check_total(sum(len(o["text"]) for o in out), READ_TOO_LARGE)
    blocks = []
    for o in out:
        who = o["role"] + (f" {o['name']}" if o["name"] else "")
        blocks.append(f"[#{o['index']} {who} · L{o['startLine']}-L{o['endLine']} of {o['totalLines']}] {o['ref']}\n"
                      f"{o['text']}")
    return ToolOutput("\n\n".join(blocks), {"messages": out})


_INDEX = {"type": "integer", "minimum": 0}
SEARCH = ToolDescriptor(
    id=ToolId.builtin("chat.search"),
    title="Search the chat",
    description="Search the messages of the chat this run works in (up to the messages it started with). "
                "Words and \"quoted phrases\" must all occur (case-insensitive); -word excludes. Hits are "
                "best first with a snippet and a ref chat:current#<index> to read with chat_read_messages.",
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "e.g. `dragon \"old mill\" -dream`."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Hits, default 20."},
            "role": {"type": "string", "enum": list(ROLES)},
            "start_message": {**_INDEX, "description": "First message index to search (inclusive)."},
            "end_message": {**_INDEX, "description": "Last message index to search (inclusive)."},
            "scan_limit": {"type": "integer", "minimum": 1, "maximum": MAX_SCAN,
                           "description": "Scan at most this many of the newest messages of the window."},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True, concurrency_safe=True),
)

READ = ToolDescriptor(
    id=ToolId.builtin("chat.read_messages"),
    title="Read chat messages",
    description="Read messages of the chat this run works in by index, whole or as line ranges (start_line from 1, "
                "line_count). At most 20 messages, 8,000 characters per message or range, 20,000 per call.",
    input_schema={
        "type": "object",
        "properties": {
            "messages": {
                "type": "array", "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "index": _INDEX,
                        "start_line": {"type": "integer", "minimum": 1},
                        "line_count": {"type": "integer", "minimum": 1},
                    },
                    "required": ["index"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["messages"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True, concurrency_safe=True),
)

TOOLS = [BuiltinTool(SEARCH, search_handler, blocking=True), BuiltinTool(READ, read_handler, blocking=True)]
