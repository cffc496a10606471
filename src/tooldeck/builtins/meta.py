"""The meta-tools of deferred loading: `find_tools` (schemas by name or by BM25 search) and
`run_tool` (unwrapped by the gate before anything else, so it never runs as itself)."""

from __future__ import annotations

from typing import Any

import orjson

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import INVALID_ARGUMENTS, ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput
from tooldeck.snapshot.schema_transforms import transform

DEFAULT_LIMIT = 5
MAX_LIMIT = 20

FIND_TOOLS = ToolDescriptor(
    id=ToolId.parse("builtin:find_tools"),
    title="Find tools",
    description=(
        "Fetch the full schemas of tools listed by name in the turn context, before calling them. "
        "Give `names` for exact tool names, or `query` (a few words describing the task) to search."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "names": {"type": "array", "items": {"type": "string"}, "description": "Exact tool names."},
            "query": {"type": "string", "description": "Words describing what you want to do."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                      "description": f"How many search results (default {DEFAULT_LIMIT}, at most {MAX_LIMIT})."},
        },
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True, idempotent=True, concurrency_safe=True),
)

RUN_TOOL = ToolDescriptor(
    id=ToolId.parse("builtin:run_tool"),
    title="Run a tool",
    description=(
        "Run a tool listed by name in the turn context. Fetch its schema with find_tools first, then "
        "pass its arguments as `args`."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The tool's name, exactly as listed."},
            "args": {"type": "object", "description": "The tool's arguments, matching its schema."},
        },
        "required": ["name"],
    },
    annotations=ToolAnnotations(control=True),
)


def schema_entry(binding: Any, provider: str) -> dict[str, Any]:
    return {"name": binding.call_name, "description": binding.descriptor.description,
            "parameters": transform(binding.descriptor.input_schema, provider)}


def find_tools(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    inv = ctx.invocation
    names = args.get("names") or []
    query = (args.get("query") or "").strip()
    limit = args.get("limit", DEFAULT_LIMIT)
    if not names and not query:
        raise ToolCallError(INVALID_ARGUMENTS, "Give `names` (exact tool names from the turn context) or `query` "
                                               "(a few words describing the task).")
    catalog = inv.deferred_catalog()
    found: dict[str, Any] = {}
    unknown: list[str] = []
    for name in names:
        binding = catalog.by_folded_name.get(str(name).casefold())
        if binding is None:
            unknown.append(str(name))
        else:
            found.setdefault(binding.call_name, binding)
    if query:
        for call_name, _ in catalog.index.search(query, limit):
            found.setdefault(call_name, catalog.by_folded_name[call_name.casefold()])
    inv.fetched.update(b.tool_id for b in found.values())
    provider = inv.snapshot.provider
    payload: dict[str, Any] = {"tools": [schema_entry(b, provider) for b in found.values()]}
    if unknown:
        payload["unknown"] = unknown
    how = ("Call them with run_tool(name=..., args={...})." if inv.snapshot.loading == "deferred"
           else "Call them directly by name.")
    if not found:
        lead = "No tools matched." + (f" Unknown names: {', '.join(unknown)}." if unknown else "")
        lead += " Try other words, or names from the turn context."
    else:
        lead = f"{len(found)} tool schema(s) below. {how}"
        if unknown:
            lead += f" Unknown names: {', '.join(unknown)}."
    text = lead + "\n" + orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode()
    return ToolOutput(text, structured={"tools": list(found), "unknown": unknown})


def run_tool(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    raise ToolCallError("tool.run_tool_unavailable", "run_tool is only available when tools are loaded on demand; "
                                                     "call the tool directly by name.")


TOOLS = [BuiltinTool(FIND_TOOLS, find_tools), BuiltinTool(RUN_TOOL, run_tool)]
