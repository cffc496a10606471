"""`error_history` and `write_error` (Agenvoy's error memory, split as in its 1.x): look up what went
wrong with a tool before and what fixed it, and record a fix or a dead end for later runs.

`error_history`: `mode` search | read (omitted: `hash` → read, else search); search takes `keyword`
(required), `tool_name` (optional) and `limit` (default 4, at most 16) and answers a JSON array, `[]`
when nothing matches (never a `NONE` that reads like a hit); read takes `hash` and answers the record
or `not found`. `write_error`: `tool_name`, `keywords`, `symptom`, `action`, `outcome` (resolved |
failed | abandoned) and optional `cause` → `recorded <id>`. The store: `records/error_memory.py`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Final

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.jsontext import json_text
from tooldeck.core.results import ToolOutput

if TYPE_CHECKING:  # the store loads on the first call, not with the catalog (start-up time)
    from tooldeck.records.error_memory import ErrorMemory

MODES: Final = ("search", "read")
OUTCOMES: Final = ("resolved", "failed", "abandoned")
DEFAULT_LIMIT: Final = 4
MAX_LIMIT: Final = 16
UNKNOWN_MODE: Final = "memory.unknown_mode"
FIELD_REQUIRED: Final = "memory.field_required"
UNAVAILABLE: Final = "memory.unavailable"


def _memory(ctx: CallContext) -> ErrorMemory:
    from tooldeck.records.error_memory import ErrorMemory

    home = ctx.run.home
    if home is None:
        raise ToolCallError(UNAVAILABLE, "the error memory needs a tooldeck home; this run has none.")
    return ErrorMemory(home / "records.sqlite")


def _required(args: dict[str, Any], field: str, mode: str) -> str:
    value = args.get(field)
    if not isinstance(value, str) or not value.strip():
        raise ToolCallError(FIELD_REQUIRED, f"{field} is required when mode={mode}")
    return value


async def history(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    mode = args.get("mode") or ("read" if args.get("hash") else "search")
    if mode not in MODES:
        raise ToolCallError(UNKNOWN_MODE, f'unknown mode "{mode}"; available: {", ".join(MODES)}')
    memory = _memory(ctx)
    if mode == "read":
        record = await asyncio.to_thread(memory.read, _required(args, "hash", mode))
        return ToolOutput("not found") if record is None else ToolOutput(json_text(record.to_dict()),
                                                                          record.to_dict())
    keyword = _required(args, "keyword", mode)
    found = await asyncio.to_thread(memory.search, keyword, args.get("tool_name") or None,
                                    args.get("limit") or DEFAULT_LIMIT)
    listed = [r.to_dict() for r in found]
    return ToolOutput(json_text(listed), {"records": listed})


async def write(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    for field in ("tool_name", "symptom", "action"):
        _required(args, field, "write")
    keywords = [k for k in args["keywords"] if k.strip()]
    if not keywords:
        raise ToolCallError(FIELD_REQUIRED, "keywords is required when mode=write (at least one non-empty word)")
    record = await asyncio.to_thread(_memory(ctx).write, args["tool_name"].strip(), keywords, args["symptom"],
                                     args["action"], args["outcome"], args.get("cause") or None)
    return ToolOutput(f"recorded {record.id}", record.to_dict())


HISTORY = ToolDescriptor(
    id=ToolId.builtin("error_history"),
    title="Search the error memory",
    description="Before retrying a failing tool a second time, look up earlier failures of it and what fixed "
                "them (resolved: apply; failed or abandoned: avoid). mode search (keyword, tool_name?, limit?) "
                "or read (hash).",
    input_schema={
        "type": "object",
        "properties": {
            "mode": {"type": "string", "description": "search | read; omitted: hash → read, else search."},
            "keyword": {"type": "string", "description": "Words of the error, e.g. `timeout` or `not found`."},
            "tool_name": {"type": "string", "description": "Only this tool's records."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Default 4."},
            "hash": {"type": "string", "description": "A record's id (read)."},
        },
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True, concurrency_safe=True),
)

WRITE = ToolDescriptor(
    id=ToolId.builtin("write_error"),
    title="Record an error and its outcome",
    description="Record a non-trivial tool failure and what you did about it, so later runs can reuse the fix "
                "or avoid the dead end. Skip trivial or transient errors.",
    input_schema={
        "type": "object",
        "properties": {
            "tool_name": {"type": "string"},
            "keywords": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 20},
            "symptom": {"type": "string", "description": "What went wrong (the error text)."},
            "cause": {"type": "string", "description": "Why, when known."},
            "action": {"type": "string", "description": "What you did."},
            "outcome": {"type": "string", "enum": list(OUTCOMES)},
        },
        "required": ["tool_name", "keywords", "symptom", "action", "outcome"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(),
)

TOOLS = [BuiltinTool(HISTORY, history), BuiltinTool(WRITE, write)]
