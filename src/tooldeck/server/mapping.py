"""Shapes between tooldeck and MCP: snapshot bindings → `Tool`s, `AgentToolResult` → `CallToolResult`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import mcp_types as types

from tooldeck.core.results import AgentToolResult
from tooldeck.projection import TOOL_RESULTS_ROOT
from tooldeck.snapshot.snapshot import Binding, Snapshot

META_PREFIX = "tooldeck/"
"""Prefix of the `_meta` keys tooldeck adds to results (`tooldeck/tool_id`, `tooldeck/error_code`)."""


def tool_description(binding: Binding) -> str:
    """The descriptor's description, or a generated one when the source gave none."""
    text = (binding.descriptor.description or "").strip()
    if text:
        return text
    schema = binding.descriptor.input_schema
    props = list((schema.get("properties") or {}).keys()) if isinstance(schema, Mapping) else []
    required = set(schema.get("required") or []) if isinstance(schema, Mapping) else set()
    params = ", ".join(f"{p}{'' if p in required else ' (optional)'}" for p in props) or "none"
    return f"Runs `{binding.call_name}` ({binding.tool_id}). Parameters: {params}."


def _plain(value: Any) -> Any:
    """Mappings and sequences as plain dicts and lists (descriptors may hold read-only mappings)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def to_mcp_tool(binding: Binding) -> types.Tool:
    d = binding.descriptor
    a = d.annotations
    if binding.tool_id.startswith("mcp/"):
        # The upstream server's hints: only those it stated true are known, so a false one is left out
        # (absent means the spec's default to a client: destructive and open-world unless read-only).
        annotations = types.ToolAnnotations(read_only_hint=a.read_only or None, destructive_hint=a.destructive or None,
                                            idempotent_hint=a.idempotent or None, open_world_hint=a.open_world or None)
    else:
        annotations = types.ToolAnnotations(read_only_hint=a.read_only, destructive_hint=a.mutating and not a.read_only,
                                            idempotent_hint=a.idempotent, open_world_hint=a.open_world or None)
    return types.Tool(
        name=binding.call_name,
        title=d.title,
        description=tool_description(binding),
        input_schema=_plain(d.input_schema),
        output_schema=_plain(d.output_schema) if d.output_schema is not None else None,
        annotations=annotations,
        meta={f"{META_PREFIX}tool_id": binding.tool_id},
    )


def list_tools(snapshot: Snapshot, turn_context: str = "") -> types.ListToolsResult:
    """Eager loading: every binding, in snapshot order, with the descriptor's JSON Schema unchanged.

    Deferred modes: what the snapshot's tools array holds (`find_tools`, `run_tool`, the pinned tools; in
    `names_only` every tool by name), and the text that names the other tools - which a model would get in
    its turn context - appended to the description of the tool that reaches them.
    """
    if snapshot.loading == "eager":
        return types.ListToolsResult(tools=[to_mcp_tool(b) for b in snapshot.bindings])
    by_name = snapshot.by_name()
    host = "run_tool" if snapshot.loading == "deferred" else "find_tools"
    tools: list[types.Tool] = []
    for entry in snapshot.tools:
        fn = entry.get("function", entry)
        name = fn.get("name", "")
        binding = by_name.get(name)
        tool = to_mcp_tool(binding) if binding is not None else types.Tool(name=name, input_schema={"type": "object"})
        description = fn.get("description") or tool.description or ""
        if name == host and turn_context:
            description = f"{description}\n\n{turn_context}"
        params = fn.get("parameters") or fn.get("input_schema") or {"type": "object"}
        tools.append(tool.model_copy(update={"description": description, "input_schema": _plain(params)}))
    return types.ListToolsResult(tools=tools)


def to_call_result(result: AgentToolResult, output_schema: Mapping[str, Any] | None) -> types.CallToolResult:
    """One text block with the projected content; structured content only for tools that declared an
    output schema (and not for errors, which do not follow it)."""
    meta: dict[str, Any] = {}
    if result.tool_id is not None:
        meta[f"{META_PREFIX}tool_id"] = result.tool_id
    if result.error_code is not None:
        meta[f"{META_PREFIX}error_code"] = result.error_code
    structured = None
    if output_schema is not None and not result.is_error and isinstance(result.structured, Mapping):
        structured = _plain(result.structured)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result.content)],
        structured_content=structured,
        is_error=result.is_error,
        meta=meta or None,
    )


RELAYED_ERRORS = frozenset((None, "mcp.tool_error"))
"""A proxied call whose result tooldeck kept as the server's (a success, or the tool's own `isError`); every
other outcome (refused, timed out, not sent, ...) is tooldeck's own result and is not relayed."""


def relayed_call_result(result: AgentToolResult, upstream: types.CallToolResult, workspace_root: Path,
                        invocation_id: str) -> types.CallToolResult:
    """A proxied tool's result as its server sent it: content blocks, `structuredContent`, `_meta` and `isError`
    unchanged, plus tooldeck's `_meta` keys. When the text was over the inline limit (the projection spilled
    it), the text blocks give way to the projected text (a preview and the path of the full text) and a
    `resource_link` to the spilled file (`tooldeck://tool-results/<invocation>/<file>`, which `resources/read`
    of the same session serves: `spilled_uri`); the other blocks stay as sent."""
    meta: dict[str, Any] = dict(upstream.meta or {})
    if result.tool_id is not None:
        meta[f"{META_PREFIX}tool_id"] = result.tool_id
    if result.error_code is not None:
        meta[f"{META_PREFIX}error_code"] = result.error_code
    content: list[types.ContentBlock] = list(upstream.content)
    spilled = _spilled_file(result, workspace_root, invocation_id)
    if spilled is not None:
        rel, path = spilled
        content = [types.TextContent(type="text", text=result.content),
                   *(b for b in content if not isinstance(b, types.TextContent)),
                   types.ResourceLink(type="resource_link", uri=spilled_uri(rel), name=rel, mime_type="text/plain",
                                      size=path.stat().st_size,
                                      description=f"The full result ({result.structured.get('char_count')} "
                                                  "characters).")]
    return types.CallToolResult(content=content, structured_content=upstream.structured_content,
                                is_error=upstream.is_error, meta=meta or None)


SPILLED_SCHEME = "tooldeck://"


def spilled_uri(rel: str) -> str:
    """The URI of a spilled result file (`rel`: `tool-results/<invocation>/<file>`, workspace-relative)."""
    return SPILLED_SCHEME + rel


def spilled_file(result: AgentToolResult, workspace_root: Path, invocation_id: str) -> tuple[str, Path] | None:
    return _spilled_file(result, workspace_root, invocation_id)


def _spilled_file(result: AgentToolResult, workspace_root: Path, invocation_id: str) -> tuple[str, Path] | None:
    """The text file the projection spilled this result to, or None. The upstream server's own structured
    content may look like a spill marker, so the path must be one the projector wrote for this invocation
    (listed in the result's refs, under `tool-results/<invocation>/`, inside the workspace)."""
    marker = result.structured
    if not isinstance(marker, Mapping) or marker.get("externalized") is not True:
        return None
    rel = marker.get("path")
    if not isinstance(rel, str) or rel not in result.resource_refs \
            or not rel.startswith(f"{TOOL_RESULTS_ROOT}/{invocation_id}/"):
        return None
    root = workspace_root.resolve()
    path = (root / rel).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        return None
    return rel, path
