"""`worldinfo.read_activated` (TauriTavern's): read the world-info entries the run's activation holds
(frozen once per session, conversation/binding.py). No arguments: the active refs without content, and the
entries that matched but were skipped (budget, probability, inclusion group) with why.
`entries` (at least one) of `{ref, start_line?, line_count?}`: their content, whole or as line ranges,
under the same caps as `chat_read_messages` (conversation/ranges.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.conversation.model import WI_INVALID_RANGE, WI_NOT_FOUND, WI_TOO_LARGE
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput

if TYPE_CHECKING:  # loaded on the first call, not with the catalog (start-up time)
    from tooldeck.conversation.binding import RunConversation
    from tooldeck.conversation.worldinfo import Activated


def _conversation(ctx: CallContext) -> RunConversation:
    from tooldeck.conversation.binding import RunConversation

    return RunConversation.of(ctx)


def handle(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    from tooldeck.conversation import ranges

    items = args.get("entries")
    if items is not None:
        ranges.check_counts(len(items), "entries", WI_TOO_LARGE)
    activation = _conversation(ctx).activation(ctx.invocation.profile.conversation)
    active = [a for a in activation if a.skipped is None]
    if items is None:
        return _listing(active, [a for a in activation if a.skipped is not None])
    by_ref = {a.ref: a for a in active}
    skipped = {a.ref: a.skipped for a in activation if a.skipped is not None}
    out: list[dict[str, Any]] = []
    for item in items:
        entry = by_ref.get(item["ref"])
        if entry is None:
            refs = ", ".join(by_ref) or "none"
            why = f"it matched but was skipped ({skipped[item['ref']]})" if item["ref"] in skipped else \
                "it is not an active world-info entry of this run"
            raise ToolCallError(WI_NOT_FOUND, f"{item['ref']!r}: {why}; the active refs are: {refs}.")
        piece = ranges.cut(entry.content, item, entry.ref, WI_INVALID_RANGE, WI_TOO_LARGE)
        suffix = "" if piece.whole else f":L{piece.start_line}-L{piece.end_line}"
        out.append({"ref": entry.ref + suffix, "comment": entry.comment, "startLine": piece.start_line,
                    "endLine": piece.end_line, "totalLines": piece.total_lines, "text": piece.text})
    ranges.check_total(sum(len(o["text"]) for o in out), WI_TOO_LARGE)
    blocks = [f"[{o['ref']} · {o['comment'] or '(untitled)'} · L{o['startLine']}-L{o['endLine']} of "
              f"{o['totalLines']}]\n{o['text']}" for o in out]
    return ToolOutput("\n\n".join(blocks), {"entries": out})


def _listing(active: list[Activated], skipped: list[Activated]) -> ToolOutput:
    listed = [{"ref": a.ref, "book": a.book, "uid": a.uid, "comment": a.comment, "order": a.order,
               "reason": a.reason} for a in active]
    left = [{"ref": a.ref, "book": a.book, "uid": a.uid, "comment": a.comment, "order": a.order,
             "reason": a.reason, "skipped": a.skipped} for a in skipped]
    data: dict[str, Any] = {"entries": listed}
    if left:
        data["skipped"] = left
    if listed:
        lines = [f"{len(listed)} active world-info entr{'y' if len(listed) == 1 else 'ies'} (in order):"]
        lines += [f"{e['ref']} · {e['comment'] or '(untitled)'} · order {e['order']} · {e['reason']}" for e in listed]
    else:
        lines = ["No world-info entry is active in this run."]
    if left:
        lines.append(f"Matched but skipped ({len(left)}):")
        lines += [f"{e['ref']} · {e['comment'] or '(untitled)'} · order {e['order']} · {e['skipped']}" for e in left]
    return ToolOutput("\n".join(lines), data)


DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("worldinfo.read_activated"),
    title="Read the active world info",
    description="Read the world-info (lore) entries active in this run. No arguments: list their refs (and the "
                "entries skipped for the budget, probability or a group). With "
                "entries: their content, whole or as line ranges (start_line from 1, line_count).",
    input_schema={
        "type": "object",
        "properties": {
            "entries": {
                "type": "array", "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "ref": {"type": "string", "description": "e.g. worldinfo:<book>#<uid>."},
                        "start_line": {"type": "integer", "minimum": 1},
                        "line_count": {"type": "integer", "minimum": 1},
                    },
                    "required": ["ref"],
                    "additionalProperties": False,
                },
            },
        },
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True, concurrency_safe=True),
)

TOOLS = [BuiltinTool(DESCRIPTOR, handle, blocking=True)]
