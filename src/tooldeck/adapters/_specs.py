"""The tools of an invocation as (name, description, JSON Schema) triples, read from its tools array.

The adapters hand a framework exactly what tooldeck's snapshot renders for the invocation's
provider (names already valid for it, schemas after its transform), so the framework's model sees
the same tools a tooldeck host would send. Every provider shape of `snapshot/render.py` is read;
provider-native tool search (`native_search = true`) is not: the framework, not tooldeck, owns the
request, so its entries (`defer_loading`, the provider's search tool) have no meaning there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tooldeck.core.errors import TooldeckError

NATIVE_SEARCH_UNSUPPORTED = "adapters.native_search_unsupported"
TOOL_SHAPE_UNSUPPORTED = "adapters.tool_shape_unsupported"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


def tool_specs(tools: Sequence[dict[str, Any]]) -> list[ToolSpec]:
    """`Invocation.tools()` → one spec per tool, in the array's order."""
    if any(_native_search(entry) for entry in tools):
        raise TooldeckError(NATIVE_SEARCH_UNSUPPORTED, "provider-native tool search (`native_search = true`) "
                            "cannot be used through a framework adapter, whose framework builds the request; "
                            "set `native_search = false` (find_tools and run_tool then do the search)")
    specs: list[ToolSpec] = []
    for entry in tools:
        if not isinstance(entry, Mapping):
            raise _unsupported(entry)
        group = entry.get("functionDeclarations")
        if isinstance(group, list):  # gemini: one object holding every declaration
            for decl in group:
                specs.append(_spec(decl, decl.get("parameters") if isinstance(decl, Mapping) else None))
            continue
        if entry.get("type") == "function" and isinstance(entry.get("function"), Mapping):
            fn = entry["function"]
            specs.append(_spec(fn, fn.get("parameters")))
        elif isinstance(entry.get("toolSpec"), Mapping):  # bedrock
            spec = entry["toolSpec"]
            schema = spec.get("inputSchema")
            specs.append(_spec(spec, schema.get("json") if isinstance(schema, Mapping) else None))
        elif "input_schema" in entry:  # anthropic
            specs.append(_spec(entry, entry.get("input_schema")))
        else:
            raise _unsupported(entry)
    return specs


def _native_search(entry: Any) -> bool:
    """An entry only provider-native search has: a deferred tool, or the provider's search tool."""
    if not isinstance(entry, Mapping):
        return False
    kind = entry.get("type")
    return "defer_loading" in entry or (isinstance(kind, str) and kind.startswith("tool_search"))


def _spec(entry: Any, parameters: Any) -> ToolSpec:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) or not entry["name"]:
        raise _unsupported(entry)
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    if not isinstance(parameters, Mapping):
        raise _unsupported(entry)
    description = entry.get("description")
    return ToolSpec(entry["name"], description if isinstance(description, str) else "", dict(parameters))


def _unsupported(entry: Any) -> TooldeckError:
    shown = repr(entry)
    if len(shown) > 200:
        shown = shown[:200] + "…"
    return TooldeckError(TOOL_SHAPE_UNSUPPORTED, f"a tools-array entry an adapter cannot read: {shown}; "
                         "adapters read the function-tool shapes tooldeck renders for its providers")
