"""The tools array in each provider's own JSON shape."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tooldeck.snapshot.schema_transforms import transform

EMPTY_OBJECT_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}


def render_tool(call_name: str, description: str, schema: Mapping[str, Any], provider: str) -> dict[str, Any]:
    """One tool entry, schema already passed through the provider's transform."""
    params = transform(schema or EMPTY_OBJECT_SCHEMA, provider)
    if provider == "anthropic":
        return {"name": call_name, "description": description, "input_schema": params}
    if provider == "gemini":
        decl: dict[str, Any] = {"name": call_name, "description": description}
        if params.get("properties"):
            decl["parameters"] = params
        return decl
    if provider == "bedrock":
        return {"toolSpec": {"name": call_name, "description": description, "inputSchema": {"json": params}}}
    return {"type": "function", "function": {"name": call_name, "description": description, "parameters": params}}


def wrap_tools_array(entries: list[dict[str, Any]], provider: str) -> list[dict[str, Any]]:
    """Gemini groups declarations in one tool object; an empty group is a 400, so it is omitted."""
    if provider == "gemini":
        return [{"functionDeclarations": entries}] if entries else []
    return entries
